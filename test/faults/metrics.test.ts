import t from 'tap';
import { startStack } from '../helpers/faults/stack.js';
import { call } from '../helpers/http.js';
import { bearer } from '../helpers/jwt.js';
import { parseMetrics, scrape, wentBack, type Scrape } from '../helpers/metrics.js';
import { DEFAULT_WORKERS, SEVERAL_WORKERS } from '../helpers/processes.js';
import { oneRequestPerConnection, requestVia } from '../helpers/sockets.js';
import { getTokenPair, mintTokens } from '../helpers/tokens.js';
import { pollUntil } from '../helpers/wait.js';

// /metrics while Redis, Postgres or a server process fail, against the server as `npm start`
// runs it (WORKERS unset: one process per core), on a private Redis: a hung Redis cannot hang
// the scrape (the backlog read gives up after a second and reads NaN), and every request that
// failed on Redis or Postgres is counted once, whichever process met it, as is every
// reconnection attempt to a Redis that is gone and every failed write of the usage worker. A
// hung process cannot hang the scrape either: the others answer it, its counters as it last
// reported them.

/** The server as npm start runs it: WORKERS left to its default. */
const AS_DEPLOYED = { WORKERS: DEFAULT_WORKERS };

const delta = (before: Scrape, after: Scrape, name: string, labels: Record<string, string> = {}) =>
  after.value(name, labels) - before.value(name, labels);
const VALIDATE = '/api/license/validate';

/** The errors counted between two scrapes, by dependency and source: what a failed assertion shows. */
function errorDeltas(before: Scrape, after: Scrape): string {
  return ['license_redis_errors_total', 'license_postgres_errors_total'].flatMap((name) =>
    after.find(name).map((s) => `${name.split('_')[1]} ${s.labels.source}: +${s.value - before.value(name, { source: s.labels.source as string })}`))
    .join(', ');
}

t.test('Redis paused, then killed: 503s counted as Redis errors, the scrape still answers', { timeout: 60_000 }, async (t) => {
  const stack = await startStack(t, { label: 'fault-metrics-redis', env: AS_DEPLOYED });
  const client = stack.client();
  const [lic] = await stack.createLicenses(1);
  const { tokens } = await mintTokens(client, lic!, 5);
  const before = await scrape(client);
  t.notOk(Number.isNaN(before.value('license_usage_backlog_events')), 'the backlog is read while Redis answers');

  await stack.redis.signal('SIGSTOP');
  const answers = await Promise.all(tokens.map((token) => call(stack.url(), 'POST', VALIDATE, { token }, {}, 10_000)));
  const unavailable = answers.filter((a) => a.kind === 'answer' && a.status === 503).length;
  t.equal(unavailable, tokens.length, 'every validate answered 503 while Redis hung');
  // the scrape answers within its Redis timeout (1 s) plus the call's, not when Redis wakes up
  const hung = await call(stack.url(), 'GET', '/metrics', undefined, {}, 5_000);
  t.equal(hung.kind === 'answer' ? hung.status : hung.kind, 200, '/metrics answers while Redis hangs');
  const during = parseMetrics(hung.kind === 'answer' ? hung.text : '');
  t.ok(Number.isNaN(during.value('license_usage_backlog_events')), 'the backlog reads NaN: unknown');
  await stack.redis.signal('SIGCONT');

  const after = await pollUntil(() => scrape(client), (s) => !Number.isNaN(s.value('license_usage_backlog_events')));
  t.equal(delta(before, after, 'license_redis_errors_total', { source: 'request' }), unavailable, `one Redis error per 503 (${unavailable}; ${errorDeltas(before, after)})`);
  t.equal(delta(before, after, 'license_http_requests_total', { route: VALIDATE, status: '503' }), unavailable, 'the 503s by route');
  // at least the scrape that gave up; one right after SIGCONT may give up too, while Redis works through what waited
  t.ok(delta(before, after, 'license_redis_errors_total', { source: 'scrape' }) >= 1, `the scrape that gave up on Redis (${errorDeltas(before, after)})`);
  t.equal(delta(before, after, 'license_postgres_errors_total'), 0, 'no Postgres error');

  await stack.redis.signal('SIGKILL');
  const reconnecting = await pollUntil(() => scrape(client), (s) => delta(after, s, 'license_redis_errors_total', { source: 'connection' }) >= 2);
  t.ok(delta(after, reconnecting, 'license_redis_errors_total', { source: 'connection' }) >= 2, 'failed reconnections counted');
  const gone = await call(stack.url(), 'POST', VALIDATE, { token: tokens[0] }, {}, 5_000);
  t.equal(gone.kind === 'answer' ? gone.status : gone.kind, 503);
  const last = await scrape(client);
  t.equal(delta(reconnecting, last, 'license_redis_errors_total', { source: 'request' }), 1, 'a request while Redis is gone: one more');
});

t.test('Postgres cut: a request that needed it and the worker\'s writes are counted as Postgres errors', { timeout: 60_000 }, async (t) => {
  const stack = await startStack(t, { label: 'fault-metrics-pg', proxyPostgres: true, env: AS_DEPLOYED });
  const proxy = stack.proxy;
  if (!proxy) throw new Error('no proxy');
  const client = stack.client();
  const [lic] = await stack.createLicenses(1);
  const { accessToken, signToken } = await getTokenPair(client, lic!);
  // the issued event written first: from here on the only event is the redemption's
  const before = await pollUntil(() => scrape(client), (s) => s.value('license_usage_backlog_events') === 0);

  proxy.cut();
  // redemptions go on from Redis; their events wait, and the worker's writes fail
  const validated = await client.request('POST', VALIDATE, { token: signToken });
  t.equal(validated.status, 200, 'validate needs no Postgres');
  const history = await client.request('GET', `/api/License/history/${lic!.licenseKey}`, undefined, bearer(accessToken));
  t.equal(history.status, 503, 'history needs Postgres: 503');
  const failing = await pollUntil(() => scrape(client), (s) => delta(before, s, 'license_postgres_errors_total', { source: 'worker' }) >= 1);
  t.ok(delta(before, failing, 'license_postgres_errors_total', { source: 'worker' }) >= 1, 'the worker\'s failed writes');
  t.equal(delta(before, failing, 'license_postgres_errors_total', { source: 'request' }), 1, `the history request (${errorDeltas(before, failing)})`);
  t.ok(failing.value('license_usage_backlog_events') >= 1, 'events wait in Redis');
  t.equal(delta(before, failing, 'license_redis_errors_total'), 0, `no Redis error (${errorDeltas(before, failing)})`);

  proxy.restore();
  // the backlog (read from Redis) and the worker's counter (reported by its process) are read at nearly the same
  // instant, not at one: the worker counts a batch once Redis has acknowledged it, so wait for both
  const drained = await pollUntil(() => scrape(client),
    (s) => s.value('license_usage_backlog_events') === 0 && delta(before, s, 'license_usage_events_written_total') >= 1, { timeoutMs: 30_000 });
  t.equal(drained.value('license_usage_backlog_events'), 0, 'drained once Postgres is back');
  t.ok(delta(before, drained, 'license_usage_events_written_total') >= 1, 'the redemption\'s event written');
});

t.test('a child hung (SIGSTOP): a scrape through another answers, the hung child counted as it last reported', { timeout: 60_000 }, async (t) => {
  const stack = await startStack(t, { label: 'fault-metrics-hung', env: { WORKERS: SEVERAL_WORKERS } });
  const server = stack.servers[0];
  if (!server) throw new Error('no server');
  const allUp = server.records().find((r) => r.msg === 'listening: all children');
  const pids = allUp?.pids as number[];
  t.ok(pids.length >= 2, `${pids.length} children`);
  const [serving, hung] = pids as [number, number];
  const HEALTHZ = { route: '/healthz', status: '200' };
  const scrapeVia = async (pid: number): Promise<Scrape> => {
    const answer = await requestVia(server.port, pid, { method: 'GET', path: '/metrics' });
    if (answer.status !== 200) throw new Error(`/metrics through ${pid}: ${answer.status} ${answer.body}`);
    return parseMetrics(answer.body);
  };

  const answers = await oneRequestPerConnection(server.port, pids, Array(30).fill({ method: 'GET', path: '/healthz' }));
  t.equal(new Set(answers.map((a) => a.pid)).size, pids.length, 'the 30 answers came from every child');
  const before = await scrapeVia(serving);
  t.equal(before.value('license_http_requests_total', HEALTHZ), 30, 'one scrape counts all 30');

  process.kill(hung, 'SIGSTOP');
  t.teardown(() => { try { process.kill(hung, 'SIGCONT'); } catch { /* gone */ } }); // never leave a stopped process behind
  const during = await scrapeVia(serving);
  t.same(wentBack(before, during), [], 'no counter went back');
  t.equal(during.value('license_http_requests_total', HEALTHZ), 30, 'the hung child\'s answers counted as it last reported them');
  t.same([during.value('license_child_up', { child: '0' }), during.value('license_child_up', { child: '1' })], [1, 0],
    'license_child_up: 1 for the child that answered, 0 for the hung one');
  t.same(during.find('nodejs_heap_size_used_bytes').map((s) => s.labels.child).filter((c) => c === '1'), [],
    'none of its gauges (they would be stale)');
  t.ok(during.find('process_cpu_user_seconds_total', { child: '1' }).length === 1, 'its counters still there');

  process.kill(hung, 'SIGCONT');
  const after = await pollUntil(() => scrape(stack.client()), (s) => s.find('license_child_up').every((c) => c.value === 1));
  t.ok(after.find('license_child_up').every((c) => c.value === 1), 'every child answers again');
  t.same(wentBack(during, after), [], 'and nothing went back');
});
