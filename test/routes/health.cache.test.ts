import t, { type Test } from 'tap';
import { startHarness, type Harness } from '../helpers/harness.js';
import { startPrivateRedis, type PrivateRedis } from '../helpers/processes.js';
import { startPostgresProxy, type CuttableProxy } from '../helpers/proxy.js';
import { oneRequestPerConnection, type OneShotAnswer } from '../helpers/sockets.js';
import { until } from '../helpers/wait.js';

// /healthz and /readyz as an operator sees them, on the service as `npm start` runs it (one
// process per core on one port, its default settings), every request on a connection of its
// own so they reach every process. A burst of probes costs Redis and Postgres at most one
// round of checks per second per process, counted where the checks arrive: the service's
// Redis is the test's own (its PING count is this service's alone) and its Postgres is
// reached through a proxy that counts the statements run, by their text. And a change (a
// dead letter, Postgres cut and back) shows on every process within about a second.

const BURST = 300;
/** The statement each round of checks runs against Postgres, as the proxy sees it go by. */
const PROBE_STATEMENT = 'select 1';

const HEALTHY = { success: true, redis: 'ok', postgres: 'ok', usageLag: 0, usageLagMs: 0, deadLetters: 0 };
const READY = { success: true, redis: 'ok', postgres: 'ok', scripts: 'ok' };

interface Deployed {
  h: Harness;
  redis: PrivateRedis;
  proxy: CuttableProxy;
  /** the server processes */
  pids: number[];
}

/** PING commands this Redis has run since it started (INFO commandstats). */
async function pings(redis: PrivateRedis): Promise<number> {
  const stats = await redis.cli('INFO', 'commandstats');
  return Number(/^cmdstat_ping:calls=(\d+)/m.exec(stats)?.[1] ?? 0);
}

/** `n` GETs of `path` at once, each on a connection of its own. */
function burst(d: Deployed, path: string, n: number): Promise<OneShotAnswer[]> {
  return oneRequestPerConnection(d.h.service.port, d.pids, Array.from({ length: n }, () => ({ method: 'GET', path })));
}

/** The distinct answers of a burst ("status body"). */
function distinct(answers: OneShotAnswer[]): string[] {
  return [...new Set(answers.map((a) => `${a.status} ${a.body}`))];
}

/**
 * A burst of BURST probes of `path`: every one answered `expected`, the burst reached every
 * process, and Redis and Postgres ran at most one round of checks per process for each second
 * the burst lasted, and one more (a round begun just before it). Were each request to run
 * its own checks, the burst would cost BURST rounds.
 */
async function probesCostRounds(t: Test, d: Deployed, path: string, expected: Record<string, unknown>): Promise<void> {
  const before = { pings: await pings(d.redis), statements: d.proxy.statementRuns(PROBE_STATEMENT) };
  const startedAt = Date.now();
  const answers = await burst(d, path, BURST);
  const seconds = Math.ceil((Date.now() - startedAt) / 1000);
  const spent = { pings: await pings(d.redis) - before.pings, statements: d.proxy.statementRuns(PROBE_STATEMENT) - before.statements };

  t.same(distinct(answers), [`200 ${JSON.stringify(expected)}`], `all ${BURST} answered 200 with the report`);
  t.equal(new Set(answers.map((a) => a.pid)).size, d.pids.length, `the burst reached every process (${d.pids.length})`);
  const rounds = d.pids.length * (seconds + 1);
  t.ok(spent.statements <= rounds,
    `Postgres ran "${PROBE_STATEMENT}" ${spent.statements} times for ${BURST} probes (at most ${rounds}: ${d.pids.length} processes, ${seconds} s)`);
  t.ok(spent.pings <= rounds, `Redis ran PING ${spent.pings} times for ${BURST} probes (at most ${rounds})`);
}

/** Whether every answer of a burst across the processes comes to be `status` with a body matching `body` (polled, 15 s at most). */
async function everyProcessShows(t: Test, d: Deployed, path: string, status: number, body: Record<string, unknown>): Promise<void> {
  let seen: string[] = [];
  const shown = await until(async () => {
    const answers = await burst(d, path, 4 * d.pids.length);
    seen = distinct(answers);
    return answers.every((a) => a.status === status && Object.entries(body).every(([k, v]) => (JSON.parse(a.body) as Record<string, unknown>)[k] === v));
  }, { timeoutMs: 15_000, intervalMs: 100 });
  t.ok(shown, `${path} on every process: ${status} ${JSON.stringify(body)} (last seen: ${seen.join(' | ')})`);
}

t.test('/healthz and /readyz on the deployed service', async (t) => {
  // registered before the service: tap runs teardowns last-in, first-out, so the service stops first
  const redis = await startPrivateRedis(t);
  const { proxy, url } = await startPostgresProxy(t);
  const ranBefore = proxy.statementRuns(PROBE_STATEMENT);
  const h = await startHarness(t, 'health-cache', { REDIS_URL: redis.url, DATABASE_URL: url });
  const pids = h.deployment?.children() ?? [];
  const d: Deployed = { h, redis, proxy, pids };

  const first = await h.request('GET', '/healthz');
  t.same([first.status, first.body], [200, HEALTHY], 'the first /healthz: both stores up, no lag, no dead letter');
  t.ok(proxy.statementRuns(PROBE_STATEMENT) > ranBefore, `its Postgres check ("${PROBE_STATEMENT}") went through the proxy, counted`);

  t.test(`${BURST} probes of /healthz at once`, (t) => probesCostRounds(t, d, '/healthz', HEALTHY));
  t.test(`${BURST} probes of /readyz at once`, (t) => probesCostRounds(t, d, '/readyz', READY));

  t.test('a dead letter shows on /healthz of every process within about a second', async (t) => {
    await h.redis.xadd(h.keys.deadLetters, '*', 'stream', 'test', 'error', 'refused for good');
    await everyProcessShows(t, d, '/healthz', 200, { success: true, deadLetters: 1 });
  });

  t.test('Postgres cut and back: /healthz and /readyz follow on every process within about a second', async (t) => {
    proxy.cut();
    await everyProcessShows(t, d, '/healthz', 503, { success: false, redis: 'ok', postgres: 'down' });
    await everyProcessShows(t, d, '/readyz', 503, { success: false, redis: 'ok', postgres: 'down', scripts: 'ok' });
    proxy.restore();
    await everyProcessShows(t, d, '/healthz', 200, { success: true, postgres: 'ok' });
    await everyProcessShows(t, d, '/readyz', 200, READY);
  });
});
