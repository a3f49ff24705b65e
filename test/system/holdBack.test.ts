import { randomUUID } from 'node:crypto';
import t from 'tap';
import { startHarness } from '../helpers/harness.js';
import { serverProcessesOf } from '../helpers/processes.js';

// Floods of cheap public requests slow themselves down: past an allowance per process and
// second, probes (/healthz, /readyz), the JWKS and unknown keys at check-quota are answered about a second
// late (0.75 to 1.25 s), and a history refusal always is. Every request is still answered, in its published
// shape; what shows from outside is when: no held answer arrives before 0.75 s.

interface Answered {
  status: number;
  /** from the burst's start to the body's end */
  ms: number;
  body: string;
  /** every header but Date, as "name: value" lines */
  headers: string;
}

/** Sends every request at once; resolves with each answer and how long it took. */
async function burst(url: string, paths: string[]): Promise<Answered[]> {
  const started = performance.now();
  return Promise.all(paths.map(async (p) => {
    const res = await fetch(`${url}${p}`, { headers: { connection: 'close' } });
    const body = await res.text();
    const headers = [...res.headers].filter(([name]) => name !== 'date').map(([name, value]) => `${name}: ${value}`).join('\n');
    return { status: res.status, ms: performance.now() - started, body, headers };
  }));
}

t.test('floods of public requests are answered, the excess a second late', async (t) => {
  const h = await startHarness(t, 'hold-back');
  const processes = serverProcessesOf({});

  for (const path of ['/healthz', '/readyz']) {
    const answers = await burst(h.url, Array.from({ length: 300 }, () => path));
    t.same([...new Set(answers.map((a) => a.status))], [200], `${path}: all 300 answered 200`);
    const early = answers.filter((a) => a.ms < 700).length;
    // at most 50 a second per process at once (a window turning over during the burst may allow as many again); held ones wait 0.75 to 1.25 s
    t.ok(early <= processes * 2 * 50, `${path}: ${early} answered within 0.7 s (allowance ${processes} × 50 a second)`);
    t.ok(answers.some((a) => a.ms >= 750), `${path}: the rest held about a second`);
  }

  const keys = Array.from({ length: 150 }, () => `/api/License/check-quota/${randomUUID()}`);
  const unknown = await burst(h.url, keys);
  t.same([...new Set(unknown.map((a) => a.status))], [404], 'unknown keys: all 150 answered 404');
  const early = unknown.filter((a) => a.ms < 700).length;
  t.ok(early <= processes * 2 * 20, `unknown keys: ${early} answered within 0.7 s (allowance ${processes} × 20 a second)`);

  const lic = await h.createLicense();
  const { accessToken } = (await h.getToken(lic.licenseKey, lic.password)).body as { accessToken: string };
  for (let i = 0; i < h.config.rate.history; i++) {
    const page = await h.history(lic.licenseKey, accessToken);
    if (page.status !== 200) t.fail(`page ${i + 1}: ${page.status}`);
  }
  const sent = performance.now();
  const refused = await h.history(lic.licenseKey, accessToken);
  const took = performance.now() - sent;
  t.equal(refused.status, 429);
  t.match(refused.body, { success: false, message: 'Çok fazla istek. Lütfen bekleyiniz.', retryAfter: Number });
  t.ok(took >= 700 || Number(refused.headers.get('retry-after')) <= 1, `the refusal held about a second (${Math.round(took)} ms), unless the window ended sooner`);
});

t.test('a flood of JWKS fetches is answered in full, the excess a second late and unchanged', async (t) => {
  const h = await startHarness(t, 'hold-back-jwks');
  const processes = serverProcessesOf({});
  const path = '/.well-known/jwks.json';

  // within the allowance (20 a second per process): answered at once
  const few = await burst(h.url, Array.from({ length: 10 }, () => path));
  const slowest = Math.max(...few.map((a) => a.ms));
  t.ok(slowest < 700, `10 fetches at once all answered within 0.7 s (the slowest ${Math.round(slowest)} ms)`);
  const first = few[0] as Answered;
  t.equal(first.status, 200);
  t.match(JSON.parse(first.body), { keys: [{ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' }] }, 'the set holds the signing key');
  t.match(first.headers, /^content-type: application\/json; charset=utf-8$/m);
  t.match(first.headers, /^cache-control: public, max-age=3600$/m);

  // past it: more than every process's allowance, twice over (a window may turn during the burst)
  const allowance = processes * 2 * 20;
  const answers = await burst(h.url, Array.from({ length: allowance + 100 }, () => path));
  t.same([...new Set(answers.map((a) => a.status))], [200], `all ${answers.length} answered 200`);
  t.same([...new Set(answers.map((a) => a.body))], [first.body], 'every body the same set, byte for byte');
  t.same([...new Set(answers.map((a) => a.headers))], [first.headers], 'every answer with the same headers');
  const early = answers.filter((a) => a.ms < 700).length;
  t.ok(early <= allowance, `${early} answered within 0.7 s (allowance ${processes} × 20 a second)`);
  t.ok(answers.some((a) => a.ms >= 750), 'the rest held about a second');
});
