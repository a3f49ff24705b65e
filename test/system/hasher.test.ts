import { readdirSync, readFileSync } from 'node:fs';
import t from 'tap';
import { NO_RATE_LIMITS, startHarness, type Harness } from '../helpers/harness.js';
import type { Answer } from '../helpers/http.js';
import { expectUnavailable } from '../helpers/shapes.js';
import { sleep, until, waitFor } from '../helpers/wait.js';

// The password hasher is a child process (src/cli/hasher.ts). Killed under load, it is
// replaced: the get-tokens it was hashing answer 503 with Retry-After (never a hang, never a
// crash of the server), and the next get-tokens succeed with a new child. The harness runs
// the service in this process, so the hasher is a child of this process.

function readOr(path: string, fallback: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return fallback;
  }
}

/** Live children of this process whose command line names hasher.js. */
function hasherPids(): number[] {
  const children = new Set<number>();
  for (const tid of readdirSync(`/proc/${process.pid}/task`)) {
    for (const pid of readOr(`/proc/${process.pid}/task/${tid}/children`, '').trim().split(/\s+/)) {
      if (pid !== '') children.add(Number(pid));
    }
  }
  // a zombie (killed, not yet reaped) has an empty command line, so it is not counted
  return [...children].filter((pid) => readOr(`/proc/${pid}/cmdline`, '').includes('hasher.js'));
}

async function waitForHasher(label: string, accept: (pid: number) => boolean, timeoutMs = 5000): Promise<number> {
  let found: number | undefined;
  await waitFor(() => `${label} (hashers now: ${hasherPids().join(',') || 'none'})`,
    () => (found = hasherPids().find(accept)) !== undefined, timeoutMs, 10);
  return found as number;
}

type TestT = Parameters<Parameters<typeof t.test>[0]>[0];

/** 30 concurrent get-tokens with the right password; the hasher is SIGKILLed while they run. */
async function killUnderLoad(t: TestT, h: Harness, lic: { licenseKey: string; password: string }, round: number): Promise<void> {
  const before = hasherPids();
  t.equal(before.length, 1, `round ${round}: one hasher child before (${before.join(',')})`);
  const victim = before[0] as number;

  const load = Promise.all(Array.from({ length: 30 }, (_, i) => h.getToken(lic.licenseKey, lic.password, i % 2)));
  await sleep(40); // requests are in, the hasher is working through them
  process.kill(victim, 'SIGKILL');
  const answers: Answer[] = await load;

  const counts = new Map<number, number>();
  for (const a of answers) counts.set(a.status, (counts.get(a.status) ?? 0) + 1);
  const summary = JSON.stringify(Object.fromEntries(counts));
  t.equal(answers.filter((a) => a.status !== 200 && a.status !== 503).length, 0, `round ${round}: every answer 200 or 503 (${summary})`);
  for (const a of answers.filter((x) => x.status === 503)) expectUnavailable(t, a, `round ${round}: 503`);
  for (const a of answers.filter((x) => x.status === 200)) t.equal(a.body?.success, true);
  t.comment(`round ${round}: ${summary}`);

  // the server is alive and answers what needs no hashing
  const health = await h.request('GET', '/healthz');
  t.ok(health.status === 200 || health.status === 503, `round ${round}: /healthz answers (${health.status})`);
  t.equal(health.headers.get('content-type')?.startsWith('application/json'), true, `round ${round}: /healthz JSON`);

  // subsequent get-tokens succeed, served by a new child
  for (let i = 0; i < 3; i++) {
    const res = await h.getToken(lic.licenseKey, lic.password, i % 2);
    t.equal(res.status, 200, `round ${round}: get-token ${i + 1} after the kill: 200 (${res.text})`);
  }
  const replacement = await waitForHasher('a new hasher child', (pid) => pid !== victim);
  t.not(replacement, victim, `round ${round}: a new hasher child (${victim} -> ${replacement})`);
  t.same(hasherPids(), [replacement], `round ${round}: exactly one hasher child now`);
  const burst = await Promise.all(Array.from({ length: 5 }, () => h.getToken(lic.licenseKey, lic.password)));
  t.same(burst.map((a) => a.status), [200, 200, 200, 200, 200], `round ${round}: a concurrent burst afterwards: all 200`);
}

t.test('the hasher child killed under load', async (t) => {
  const h = await startHarness(t, 'hasher', { ...NO_RATE_LIMITS, RATE_GET_TOKEN_FAILURES_PER_MIN: '0' });
  const lic = await h.createLicense({ totalQuota: 1000 });
  t.equal((await h.getToken(lic.licenseKey, lic.password)).status, 200, 'a working license');
  await waitForHasher('the hasher child', () => true);

  t.test('first kill', (t) => killUnderLoad(t, h, lic, 1));
  t.test('second kill, right after: it never sticks at 503', (t) => killUnderLoad(t, h, lic, 2));

  t.test('killed while idle: the next get-token is served', async (t) => {
    const [victim] = hasherPids();
    t.type(victim, 'number', 'a hasher child');
    process.kill(victim as number, 'SIGKILL');
    // wait until it has been reaped: the service has seen it exit
    await until(() => readOr(`/proc/${victim}/stat`, '') === '', { timeoutMs: 5000, intervalMs: 10 });
    t.equal(readOr(`/proc/${victim}/stat`, ''), '', 'the killed child is gone');
    const res = await h.getToken(lic.licenseKey, lic.password);
    t.equal(res.status, 200, `200 (${res.text})`);
    const next = await waitForHasher('a new hasher child', (pid) => pid !== victim);
    t.not(next, victim, 'a new child');
  });
});
