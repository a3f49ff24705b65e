import http from 'node:http';
import { availableParallelism } from 'node:os';
import t from 'tap';
import { cpuTicksOf } from '../helpers/deployed.js';
import { NO_RATE_LIMITS, startHarness, type Harness } from '../helpers/harness.js';
import { sdkOf } from '../helpers/sdk.js';
import { parentOf } from '../helpers/sockets.js';

// The harness (test/helpers/harness.ts) runs the service as `npm start` does with its default
// settings, and its clients (Harness.request, the SDK client of sdkOf) put each request on a
// connection of its own, as many users do. This test shows both, so that a test passing on
// the harness has met every server process: a primary with one child per core, each of them
// serving a share of one test's consecutive requests (the CPU time each spent, from /proc;
// a process the requests do not reach only ticks for its timers: the same requests over one
// keep-alive connection, the control, show one process serving them all).

/** Enough requests that each process's share shows in its CPU time (a tick is 10 ms; an idle process ticks about once in 3 s). */
const REQUESTS = 400;
const SDK_CALLS = 600;

/** CPU ticks each child spent while `burst` ran. */
async function ticksDuring(pids: number[], burst: () => Promise<unknown>): Promise<number[]> {
  const before = await Promise.all(pids.map(cpuTicksOf));
  await burst();
  const after = await Promise.all(pids.map(cpuTicksOf));
  return pids.map((_, i) => (after[i] ?? 0) - (before[i] ?? 0));
}

t.test('startHarness: npm start with its defaults, every process reached by one test\'s requests', async (t) => {
  const h: Harness = await startHarness(t, 'deployed', NO_RATE_LIMITS);
  const deployment = h.deployment;
  if (!deployment) throw new Error('startHarness runs the service in its own processes');
  const children = deployment.children();

  t.test('a primary and one server process per core, on one port', async (t) => {
    t.ok(availableParallelism() >= 2, `this machine has ${availableParallelism()} cores: several processes`);
    t.equal(children.length, availableParallelism(), `one child per core (${children.join(', ')})`);
    t.equal(new Set(children).size, children.length, 'each its own process');
    t.same(await Promise.all(children.map(parentOf)), children.map(() => deployment.primary), 'each a child of the primary the test started');
    t.equal(deployment.port, h.service.port);
  });

  // The requests measured are check-quotas: each reads Redis, enough work to show in CPU time
  // (a /healthz is answered from memory within the second, too cheap to tell the processes apart).
  const probe = await h.createLicense();
  const checkQuotaPath = `/api/License/check-quota/${probe.licenseKey}`;

  // With keep-alive connections every request would reach the process that accepted the first.
  const share = (ticks: number[]) => {
    const total = ticks.reduce((a, b) => a + b, 0);
    return { total, least: Math.min(...ticks) / Math.max(total, 1) };
  };

  t.test(`${REQUESTS} consecutive requests of Harness.request reach every process`, async (t) => {
    const ticks = await ticksDuring(children, async () => {
      for (let i = 0; i < REQUESTS; i++) await h.request('GET', checkQuotaPath);
    });
    const { total, least } = share(ticks);
    t.ok(total >= 10, `the requests cost CPU time to measure (${total} ticks)`);
    t.ok(least >= 0.2, `each process served a share: ticks per process ${ticks.join(', ')}`);
  });

  t.test(`${SDK_CALLS} consecutive calls of the SDK client (sdkOf) reach every process`, async (t) => {
    const lic = await h.createLicense();
    const sdk = sdkOf(h);
    const ticks = await ticksDuring(children, async () => {
      for (let i = 0; i < SDK_CALLS; i++) await sdk.checkQuota(lic.licenseKey);
    });
    const { total, least } = share(ticks);
    t.ok(total >= 10, `the requests cost CPU time to measure (${total} ticks)`);
    t.ok(least >= 0.2, `each process served a share: ticks per process ${ticks.join(', ')}`);
  });

  t.test('the measure tells them apart: the same requests over one keep-alive connection stay in one process', async (t) => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    t.teardown(() => agent.destroy());
    const get = () => new Promise<void>((resolve, reject) => {
      http.get(`${h.url}${checkQuotaPath}`, { agent }, (res) => res.resume().once('end', resolve).once('error', reject)).once('error', reject);
    });
    const ticks = await ticksDuring(children, async () => {
      for (let i = 0; i < 2 * REQUESTS; i++) await get(); // cheaper than a new connection each: twice as many to measure
    });
    const { total, least } = share(ticks);
    t.ok(total >= 10, `the requests cost CPU time to measure (${total} ticks)`);
    t.ok(least < 0.2, `one process served them: ticks per process ${ticks.join(', ')}`);
  });

  t.test('stop(): SIGTERM to the primary, every process gone, exit 0', async (t) => {
    await h.service.stop();
    t.same(await Promise.all(children.map(parentOf)), children.map(() => null), 'no child left');
  });
});
