import t from 'tap';
import { startStack } from '../helpers/faults/stack.js';
import { call } from '../helpers/http.js';
import { bearer } from '../helpers/jwt.js';
import { parseMetrics, scrape, type Scrape } from '../helpers/metrics.js';
import { getTokenPair, mintTokens } from '../helpers/tokens.js';
import { pollUntil } from '../helpers/wait.js';

// /metrics while Redis and Postgres fail, against a server process of the test's own: a hung
// Redis cannot hang the scrape (the backlog read gives up after a second and reads NaN), and
// every request that failed on Redis or Postgres is counted once, as is every reconnection
// attempt to a Redis that is gone and every failed write of the usage worker.

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
  const stack = await startStack(t, { label: 'fault-metrics-redis' });
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
  const stack = await startStack(t, { label: 'fault-metrics-pg', proxyPostgres: true });
  const proxy = stack.proxy;
  if (!proxy) throw new Error('no proxy');
  const client = stack.client();
  const [lic] = await stack.createLicenses(1);
  const { accessToken, signToken } = await getTokenPair(client, lic!);
  const before = await scrape(client);

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
  const drained = await pollUntil(() => scrape(client), (s) => s.value('license_usage_backlog_events') === 0, { timeoutMs: 30_000 });
  t.equal(drained.value('license_usage_backlog_events'), 0, 'drained once Postgres is back');
  t.ok(delta(before, drained, 'license_usage_events_written_total') >= 2, 'the issued and the redeemed event written');
});
