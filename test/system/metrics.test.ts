import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { DATABASE_URL, NO_RATE_LIMITS, startHarness, testEnv, type TestLicense } from '../helpers/harness.js';
import { clientOf, type Answer } from '../helpers/http.js';
import { claimsOf, craftJwt, HS256_HEADER, nowSeconds } from '../helpers/jwt.js';
import { parseMetrics, scrape, type Scrape } from '../helpers/metrics.js';
import { spawnWorker } from '../helpers/processes.js';
import { getTokenPair, signOne } from '../helpers/tokens.js';
import { pollUntil } from '../helpers/wait.js';

// GET /metrics as Prometheus reads it: real requests, then exact deltas between two scrapes.
// Every validate answer a client saw is counted once, under the outcome its message names;
// every answer once under its route pattern and status, and once in the latency histogram;
// every issued token and every usage event the worker wrote. No license key, password or
// token ever appears in the text. The usage backlog is read from Redis at scrape time.
// The service runs as `npm start` runs it (WORKERS unset: one process per core), each
// request on a connection of its own, so the deltas are the whole instance's
// (test/system/metrics.workers.test.ts shows the requests reach every process).

const VALIDATE = '/api/license/validate';
const OUTCOMES = 'license_validate_outcomes_total';
const REQUESTS = 'license_http_requests_total';

/** The outcome label of a validate answer, from its published message alone. */
function outcomeOf(res: Answer): string {
  if (res.status === 200) return 'redeemed';
  if (res.status === 429) return 'rate_limited';
  const message = String(res.body?.message);
  const byMessage: Record<string, string> = {
    'Bu token zaten kullanılmış. Yeni token alınız.': 'already_used',
    'Token süresi dolmuş': 'token_expired',
    'Bu domain için yetki yok': 'origin_refused',
    'İmza kotası doldu': 'quota_exhausted',
    'Token boş olamaz': 'token_empty',
  };
  return byMessage[message] ?? (message.startsWith('Geçersiz istek') ? 'bad_request' : `unexpected ${res.status} ${message}`);
}

/** What the clients saw, tallied: outcomes (where the message names one) and statuses. */
class Tally {
  readonly outcomes = new Map<string, number>();
  readonly statuses = new Map<number, number>();
  requests = 0;

  add(res: Answer, outcome = outcomeOf(res)): Answer {
    this.requests++;
    this.outcomes.set(outcome, (this.outcomes.get(outcome) ?? 0) + 1);
    this.statuses.set(res.status, (this.statuses.get(res.status) ?? 0) + 1);
    return res;
  }
}

const delta = (before: Scrape, after: Scrape, name: string, labels: Record<string, string> = {}) =>
  after.value(name, labels) - before.value(name, labels);

// The exact deltas fail while /metrics answers for the one server process a scrape reaches
// (the service runs a process per core): its aggregation over the processes is being fixed.
t.test('validate outcomes, answers by route and status, latency, issued tokens and written events: exact deltas', async (t) => {
  // 4 validations per license and minute: the fifth answers 429
  const h = await startHarness(t, 'metrics', { ...NO_RATE_LIMITS, RATE_VALIDATE_PER_MIN: '4' });
  const secret = h.config.jwtKeys[0]?.secret as string;
  const [a, b, c, d, r] = [
    await h.createLicense(), await h.createLicense({ domains: ['imza.ornek.com.tr'] }), await h.createLicense({ totalQuota: 1 }),
    await h.createLicense(), await h.createLicense(),
  ];
  const secrets: string[] = [];
  const keep = (lic: TestLicense) => secrets.push(lic.licenseKey, lic.firmaId, lic.password);
  [a, b, c, d, r].forEach(keep);
  const before = await scrape(h);

  // issuance: get-token once per license (imzaTipi 1 for two of them), then sign-tokens
  const issued = { 'get-token': [0, 0], 'sign-token': [0, 0] };
  const pair = async (lic: TestLicense, imzaTipi = 0) => {
    const p = await getTokenPair(h, lic, imzaTipi);
    (issued['get-token'][imzaTipi] as number)++;
    secrets.push(p.accessToken, p.signToken, claimsOf(p.signToken).token_id);
    return p;
  };
  const more = async (access: string, imzaTipi = 0) => {
    const token = await signOne(h, access, imzaTipi);
    (issued['sign-token'][imzaTipi] as number)++;
    secrets.push(token, claimsOf(token).token_id);
    return token;
  };
  const pa = await pair(a, 1);
  const aTokens = [pa.signToken, await more(pa.accessToken), await more(pa.accessToken, 1)];
  const bToken = (await pair(b)).signToken;
  const pc = await pair(c);
  const cTokens = [pc.signToken, await more(pc.accessToken)]; // quota 1: the second finds it spent
  const pd = await pair(d, 1);
  const pr = await pair(r);

  const seen = new Tally();
  const validate = async (token: unknown, origin?: string) => seen.add(await h.validate(token, origin));
  for (const token of aTokens) t.equal((await validate(token)).status, 200, 'redeemed');
  t.equal(outcomeOf(await validate(aTokens[0])), 'already_used', 'a reused token');
  const claims = claimsOf(aTokens[0] as string);
  const expired = craftJwt(HS256_HEADER, { ...claims, iat: nowSeconds() - 400, exp: nowSeconds() - 100 }, secret);
  t.equal(outcomeOf(await validate(expired)), 'token_expired', 'an expired token');
  t.equal(outcomeOf(await validate(bToken, 'https://kotu.example.com')), 'origin_refused', 'an origin the license does not allow');
  t.equal((await validate(cTokens[0])).status, 200);
  t.equal(outcomeOf(await validate(cTokens[1])), 'quota_exhausted', 'quota exhausted');
  t.equal(seen.add(await h.validate('not-a-jwt'), 'token_invalid').status, 401, 'a malformed token');
  t.equal(outcomeOf(await validate('')), 'token_empty');
  t.equal(outcomeOf(seen.add(await h.request('POST', VALIDATE, '[1]'))), 'bad_request', 'a body that is not an object');
  await h.admin('PATCH', `/admin/v1/licenses/${d.licenseKey}`, { isActive: false });
  t.equal(seen.add(await h.validate(pd.signToken), 'license_inactive').status, 401, 'a deactivated license');
  // license r: fresh tokens until the limit refuses one (4 a minute: within 9, even across a window's edge)
  let limited = false;
  for (let i = 0; i < 9 && !limited; i++) limited = (await validate(i === 0 ? pr.signToken : await more(pr.accessToken))).status === 429;
  t.ok(limited, 'the validate rate limit refused one');

  const after = await scrape(h);
  for (const [outcome, n] of seen.outcomes) t.equal(delta(before, after, OUTCOMES, { outcome }), n, `${outcome}: +${n}`);
  t.equal(delta(before, after, OUTCOMES), seen.requests, 'every validate answer counted once, under one outcome');
  for (const [status, n] of seen.statuses) {
    t.equal(delta(before, after, REQUESTS, { method: 'POST', route: VALIDATE, status: String(status) }), n, `validate ${status}: +${n}`);
  }
  const timed = { method: 'POST', route: VALIDATE };
  t.equal(delta(before, after, 'license_http_request_duration_seconds_count', timed), seen.requests, 'one latency observation per answer');
  t.equal(delta(before, after, 'license_http_request_duration_seconds_bucket', { ...timed, le: '+Inf' }), seen.requests);
  const sum = delta(before, after, 'license_http_request_duration_seconds_sum', timed);
  t.ok(sum > 0 && sum < seen.requests, `latencies add up to ${sum.toFixed(4)} s`);
  const buckets = after.find('license_http_request_duration_seconds_bucket', timed).map((s) => s.value);
  t.same(buckets, [...buckets].sort((x, y) => x - y), 'buckets are cumulative');

  for (const route of ['get-token', 'sign-token'] as const) {
    for (const imzaTipi of [0, 1]) {
      const n = issued[route][imzaTipi] as number;
      t.equal(delta(before, after, 'license_sign_tokens_issued_total', { route, imza_tipi: String(imzaTipi) }), n, `${route} imzaTipi ${imzaTipi}: +${n}`);
    }
  }
  const issuedTotal = delta(before, after, 'license_sign_tokens_issued_total');
  t.equal(delta(before, after, REQUESTS, { route: '/api/v1/auth/sign-token', status: '200' }), issued['sign-token'].reduce((x, y) => x + y));

  // the usage worker (in child 0) writes one event per issued token and per redemption
  const redeemed = seen.outcomes.get('redeemed') ?? 0;
  const written = await pollUntil(async () => delta(before, await scrape(h), 'license_usage_events_written_total'),
    (n) => n >= issuedTotal + redeemed);
  t.equal(written, issuedTotal + redeemed, `events written: ${issuedTotal} issued + ${redeemed} redeemed`);
  const drained = await pollUntil(() => scrape(h), (s) => s.value('license_usage_backlog_events') === 0);
  t.equal(drained.value('license_usage_backlog_events'), 0, 'backlog drained');
  t.ok(delta(before, drained, 'license_usage_batch_duration_seconds_count') >= 1, 'batch durations observed');
  t.equal(drained.value('license_usage_dead_letters'), 0);

  // the HTTP layer's own answers, under route patterns; never the path a client sent
  t.equal((await h.request('GET', `/api/License/nope/${a.licenseKey}`)).status, 404);
  t.equal((await h.request('DELETE', '/healthz')).status, 405);
  t.equal((await h.checkQuota(a.licenseKey)).status, 200);
  t.equal((await h.request('POST', VALIDATE, 'x'.repeat(h.config.bodyLimitBytes + 1))).status, 413);
  const last = await scrape(h);
  t.equal(delta(drained, last, REQUESTS, { route: 'unmatched', status: '404' }), 1, '404 of an unknown path: route "unmatched"');
  t.equal(delta(drained, last, REQUESTS, { method: 'OTHER', route: '/healthz', status: '405' }), 1, '405');
  t.equal(delta(drained, last, REQUESTS, { method: 'GET', route: '/api/license/check-quota/:licenseKey', status: '200' }), 1, 'check-quota by its pattern');
  t.equal(delta(drained, last, REQUESTS, { route: VALIDATE, status: '413' }), 1, '413');
  t.equal(delta(drained, last, REQUESTS, { route: '/metrics', status: '200' }), 1, 'the scrape before this one');

  // nothing secret, nothing of a client's making
  const leaked = secrets.filter((s) => last.text.includes(s));
  t.same(leaked, [], 'no license key, firma id, password, token or token id in the metrics text');
  t.notOk(last.text.includes(secret), 'nor the JWT secret');
  t.equal(last.find('nodejs_heap_size_used_bytes').length, h.config.workers, "Node's process metrics too, one series per process");
});

t.test('worker apart: the backlog read from Redis at scrape time, the standalone worker\'s /metrics, METRICS_TOKEN, the hasher queue', async (t) => {
  const token = 'metrics-token-0123456789';
  const h = await startHarness(t, 'metrics-apart', { ...NO_RATE_LIMITS, RUN_WORKER: '0', METRICS_TOKEN: token });
  const lic = await h.createLicense({ totalQuota: 100 });

  t.equal((await h.request('GET', '/metrics')).status, 401, 'no token: 401');
  const wrong = await h.request('GET', '/metrics', undefined, { authorization: 'Bearer wrong-token-0123456789' });
  t.equal(wrong.status, 401, 'another token: 401');
  t.equal(wrong.body?.error?.code, 'UNAUTHORIZED');
  const before = await scrape(h, token);
  t.equal(before.find('license_usage_events_written_total').length, 0, 'no worker here: no written-events series');

  const pair = await getTokenPair(h, lic);
  for (let i = 0; i < 4; i++) await signOne(h, pair.accessToken);
  t.equal((await h.validate(pair.signToken)).status, 200);
  const waiting = await scrape(h, token);
  t.equal(waiting.value('license_usage_backlog_events'), 6, 'backlog: 5 issued + 1 redeemed, nothing written');
  const aged = await pollUntil(() => scrape(h, token), (s) => s.value('license_usage_lag_seconds') > 0);
  t.ok(aged.value('license_usage_lag_seconds') > 0, 'the oldest event has waited');

  // the standalone worker (npm run worker) drains the streams: the server's gauges follow,
  // and the worker's own /metrics (METRICS_PORT) counts what it wrote
  const worker = await spawnWorker(t, {
    REDIS_URL: h.config.redisUrl, REDIS_PREFIX: h.prefix, DATABASE_URL, PG_SCHEMA: h.config.pgSchema,
    METRICS_PORT: '0', METRICS_TOKEN: token,
  });
  const metricsPort = worker.records().find((r) => r.msg === 'usage worker running')?.metricsPort;
  t.type(metricsPort, 'number', `the worker serves /metrics on port ${String(metricsPort)}`);
  const workerClient = clientOf(`http://127.0.0.1:${String(metricsPort)}`);
  const drained = await pollUntil(() => scrape(h, token), (s) => s.value('license_usage_backlog_events') === 0);
  t.equal(drained.value('license_usage_backlog_events'), 0, 'backlog back to 0 once written');
  t.equal(drained.value('license_usage_lag_seconds'), 0);
  const written = await pollUntil(() => scrape(workerClient, token), (s) => s.value('license_usage_events_written_total') >= 6);
  t.equal(written.value('license_usage_events_written_total'), 6, 'the worker wrote the 6 events');
  t.equal(written.value('license_usage_backlog_events'), 0, 'and reads the backlog as the server does');
  t.equal((await workerClient.request('GET', '/metrics')).status, 401, 'its /metrics asks for METRICS_TOKEN too');
  t.equal((await workerClient.request('GET', '/other', undefined, { authorization: `Bearer ${token}` })).status, 404, 'and serves nothing else');

  await h.redis.xadd(h.keys.deadLetters, '*', 'stream', h.keys.streams[0] as string, 'id', '1-1', 'error', 'test', 'code', '22P05', 'event', '[]');
  t.equal((await scrape(h, token)).value('license_usage_dead_letters'), 1, 'a dead letter in Redis: counted');

  // the hasher: get-tokens in flight show as queued or hashing, and none once answered
  const inFlight = Promise.all(Array.from({ length: 12 }, () => h.getToken(lic.licenseKey, lic.password)));
  const busy = await pollUntil(() => scrape(h, token), (s) => s.value('license_hasher_jobs') > 0, { intervalMs: 5, timeoutMs: 10_000 });
  t.ok(busy.value('license_hasher_jobs') > 0, `hasher jobs seen: ${busy.value('license_hasher_jobs', { state: 'queued' })} queued, ` +
    `${busy.value('license_hasher_jobs', { state: 'hashing' })} hashing`);
  t.ok((await inFlight).every((r) => r.status === 200));
  const idle = await scrape(h, token);
  t.same([idle.value('license_hasher_jobs', { state: 'queued' }), idle.value('license_hasher_jobs', { state: 'hashing' })], [0, 0]);
});

t.test('METRICS=0: nothing recorded, /metrics is 404; the switch and the token are validated at start', async (t) => {
  const h = await startHarness(t, 'metrics-off', { ...NO_RATE_LIMITS, METRICS: '0' });
  const lic = await h.createLicense();
  t.equal((await h.validate((await getTokenPair(h, lic)).signToken)).status, 200, 'the service serves as usual');
  t.equal((await h.request('GET', '/metrics')).status, 404);

  for (const [env, pattern] of [
    [{ METRICS: 'yes' }, /METRICS must be 1/],
    [{ METRICS_TOKEN: 'short' }, /METRICS_TOKEN must be 16/],
    [{ METRICS_TOKEN: 'sixteen chars with spaces' }, /METRICS_TOKEN/],
  ] as const) {
    t.throws(() => loadConfig(testEnv('cfg', env)), pattern, JSON.stringify(env));
  }
  t.equal(loadConfig(testEnv('cfg', { METRICS: '' })).metrics, true, 'on by default');
});

t.test('the text parses as Prometheus text', async (t) => {
  const parsed = parseMetrics('# HELP x y\n# TYPE x counter\nx{a="b",le="+Inf"} 3\ny NaN\n');
  t.same(parsed.find('x'), [{ name: 'x', labels: { a: 'b', le: '+Inf' }, value: 3 }]);
  t.ok(Number.isNaN(parsed.value('y')));
});
