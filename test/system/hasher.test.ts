import { readdirSync, readFileSync } from 'node:fs';
import t from 'tap';
import { NO_RATE_LIMITS, startHarness, type Harness } from '../helpers/harness.js';
import type { Answer } from '../helpers/http.js';
import { expectUnavailable } from '../helpers/shapes.js';
import { sleep, until, waitFor } from '../helpers/wait.js';

// The password hasher is a child process of each server process (src/cli/hasher.ts). Killed
// under load, it is replaced: the get-tokens it was hashing answer 503 with Retry-After (never
// a hang, never a crash of the server), and the next get-tokens succeed with a new child. The
// service runs as deployed: every server process has its hasher, and every one is killed.

function readOr(path: string, fallback: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return fallback;
  }
}

/** The server processes of the harness, whose children the hashers are. */
let servers: number[] = [];

/** Live children of the server processes whose command line names hasher.js. */
function hasherPids(): number[] {
  const children = new Set<number>();
  for (const server of servers) {
    for (const tid of readdirSync(`/proc/${server}/task`)) {
      for (const pid of readOr(`/proc/${server}/task/${tid}/children`, '').trim().split(/\s+/)) {
        if (pid !== '') children.add(Number(pid));
      }
    }
  }
  // a zombie (killed, not yet reaped) has an empty command line, so it is not counted
  return [...children].filter((pid) => readOr(`/proc/${pid}/cmdline`, '').includes('hasher.js')).sort((a, b) => a - b);
}

/**
 * Sends get-tokens, each on a connection of its own, until every server process has a hasher
 * that `accept`s (a server process starts its hasher on first use); their pids.
 */
async function hasherInEvery(h: Harness, lic: { licenseKey: string; password: string }, label: string, accept: (pid: number) => boolean): Promise<number[]> {
  let found: number[] = [];
  await waitFor(() => `${label} (hashers now: ${hasherPids().join(',') || 'none'})`, async () => {
    if ((found = hasherPids().filter(accept)).length === servers.length) return true;
    await h.getToken(lic.licenseKey, lic.password);
    return false;
  }, 10_000, 10);
  return found;
}

type TestT = Parameters<Parameters<typeof t.test>[0]>[0];

/** 30 concurrent get-tokens with the right password; every hasher is SIGKILLed while they run. */
async function killUnderLoad(t: TestT, h: Harness, lic: { licenseKey: string; password: string }, round: number): Promise<void> {
  const before = hasherPids();
  t.equal(before.length, servers.length, `round ${round}: one hasher child per server process before (${before.join(',')})`);

  const load = Promise.all(Array.from({ length: 30 }, (_, i) => h.getToken(lic.licenseKey, lic.password, i % 2)));
  await sleep(40); // requests are in, the hashers are working through them
  for (const victim of before) process.kill(victim, 'SIGKILL');
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
  const replacements = await hasherInEvery(h, lic, 'a new hasher child in every server process', (pid) => !before.includes(pid));
  t.equal(replacements.length, servers.length, `round ${round}: new hasher children (${before.join(',')} -> ${replacements.join(',')})`);
  t.same(hasherPids(), replacements, `round ${round}: exactly one hasher child per server process now`);
  const burst = await Promise.all(Array.from({ length: 5 }, () => h.getToken(lic.licenseKey, lic.password)));
  t.same(burst.map((a) => a.status), [200, 200, 200, 200, 200], `round ${round}: a concurrent burst afterwards: all 200`);
}

t.test('the hasher child killed under load', async (t) => {
  const h = await startHarness(t, 'hasher', { ...NO_RATE_LIMITS, RATE_GET_TOKEN_FAILURES_PER_MIN: '0' });
  servers = h.deployment?.children() ?? [];
  t.ok(servers.length >= 2, `several server processes (${servers.join(',')})`);
  const lic = await h.createLicense({ totalQuota: 1000 });
  t.equal((await h.getToken(lic.licenseKey, lic.password)).status, 200, 'a working license');
  await hasherInEvery(h, lic, 'a hasher child in every server process', () => true);

  t.test('first kill', (t) => killUnderLoad(t, h, lic, 1));
  t.test('second kill, right after: it never sticks at 503', (t) => killUnderLoad(t, h, lic, 2));

  t.test('killed while idle: the next get-tokens are served', async (t) => {
    const victims = hasherPids();
    t.equal(victims.length, servers.length, 'a hasher child per server process');
    for (const victim of victims) process.kill(victim, 'SIGKILL');
    // wait until they have been reaped: the services have seen them exit
    const gone = () => victims.every((victim) => readOr(`/proc/${victim}/stat`, '') === '');
    await until(gone, { timeoutMs: 5000, intervalMs: 10 });
    t.ok(gone(), 'the killed children are gone');
    const answers = await Promise.all(Array.from({ length: 6 }, () => h.getToken(lic.licenseKey, lic.password)));
    t.same(answers.map((a) => a.status), [200, 200, 200, 200, 200, 200], 'every get-token: 200');
    const next = await hasherInEvery(h, lic, 'a new hasher child in every server process', (pid) => !victims.includes(pid));
    t.equal(next.length, servers.length, 'new children');
  });
});
