import { randomUUID } from 'node:crypto';
import t from 'tap';
import { startHarness } from '../helpers/harness.js';
import { serverProcessesOf } from '../helpers/processes.js';

// Floods of cheap public requests slow themselves down: past an allowance per process and
// second, probes (/healthz, /readyz) and unknown keys at check-quota are answered about a second
// late (0.75 to 1.25 s), and a history refusal always is. Every request is still answered, in its published
// shape; what shows from outside is when: no held answer arrives before 0.75 s.

/** Sends every request at once; resolves with each answer's status and how long it took (ms). */
async function burst(url: string, paths: string[]): Promise<{ status: number; ms: number }[]> {
  const started = performance.now();
  return Promise.all(paths.map(async (p) => {
    const res = await fetch(`${url}${p}`, { headers: { connection: 'close' } });
    await res.arrayBuffer();
    return { status: res.status, ms: performance.now() - started };
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
