import { randomUUID } from 'node:crypto';
import http from 'node:http';
import t from 'tap';
import { createLicense, NO_RATE_LIMITS, startHarness } from '../helpers/harness.js';
import { RATE_MESSAGE, retryAfterSeconds } from '../helpers/shapes.js';
import { keysOf, startDefaultServer } from '../helpers/servers.js';
import { oneRequestPerConnection, type OneShotAnswer } from '../helpers/sockets.js';
import { createRedis } from '../../src/redis/client.js';
import { Outcome } from '../../src/redis/outcomes.js';
import { runScript } from '../../src/redis/scriptCall.js';
import { scripts } from '../../src/redis/scriptBuilders.js';

// GET /api/License/check-quota/{licenseKey} against abuse: its rate limit, counted per
// license key and client address (RATE_CHECK_QUOTA_PER_MIN; the 429 must not read as the
// published quota-exhausted one), so a stranger who knows a key cannot keep its holder out;
// and unknown keys remembered in Redis so a spray of them stays off Postgres.

const path = (licenseKey: string) => `/api/License/check-quota/${licenseKey}`;
const rateLimit = (a: OneShotAnswer) => /^"check-quota";r=(\d+);t=(\d+)$/.exec(a.headers.ratelimit ?? '');

t.test('as npm start runs it (default limit 10, every process): a stranger\'s 20 calls do not stop the holder\'s 10', async (t) => {
  const s = await startDefaultServer(t, 'cq-stranger');
  const lic = await createLicense(s.client, { totalQuota: 5 });

  // the stranger, on 127.0.0.2, knows the key; X-Forwarded-For is not trusted (TRUST_PROXY=0):
  // the addresses it claims there change nothing
  const stranger = await oneRequestPerConnection(s.port, s.pids, Array.from({ length: 20 }, (_, i) => ({
    method: 'GET', path: path(lic.licenseKey), localAddress: '127.0.0.2', headers: { 'X-Forwarded-For': `198.51.100.${i + 1}` },
  })));
  t.equal(new Set(stranger.map((a) => a.pid)).size, s.pids.length, 'the stranger\'s calls reached every process');
  t.same(stranger.map((a) => a.status).sort(), [...Array(10).fill(200), ...Array(10).fill(429)], 'the stranger: 10 answered, then his own limit');

  // the holder, on 127.0.0.1: the published 10 a minute, all its own
  const holder = await oneRequestPerConnection(s.port, s.pids, Array.from({ length: 10 }, () => ({ method: 'GET', path: path(lic.licenseKey) })));
  t.equal(new Set(holder.map((a) => a.pid)).size, s.pids.length, 'the holder\'s calls reached every process');
  t.same(holder.map((a) => a.status), Array(10).fill(200), 'the holder: all 10 answered 200');
  t.ok(holder.every((a) => a.headers['ratelimit-policy'] === '"check-quota";q=10;w=60'), 'RateLimit-Policy "check-quota";q=10;w=60 on each');
  t.same(holder.map((a) => Number(rateLimit(a)?.[1])).sort((x, y) => x - y), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 'RateLimit r counts the holder\'s own 10 down');

  const [over] = await oneRequestPerConnection(s.port, s.pids, [{ method: 'GET', path: path(lic.licenseKey) }]);
  const eleventh = over as OneShotAnswer;
  t.equal(eleventh.status, 429, 'the holder\'s 11th: 429');
  const retryAfter = eleventh.headers['retry-after'] ?? '';
  t.match(retryAfter, /^\d+$/, `Retry-After in whole seconds (${retryAfter})`);
  t.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= 60, 'within the minute');
  const body = JSON.parse(eleventh.body) as Record<string, unknown>;
  t.match(body, { success: false, error: { code: 'RATE_LIMITED', message: RATE_MESSAGE }, retryAfter: Number(retryAfter) }, 'the error object, retryAfter as Retry-After');
  t.match(body.timestamp, /^\d{4}-\d{2}-\d{2}T[\d:.]+Z$/, 'and a timestamp');
  t.equal(eleventh.headers['ratelimit-policy'], '"check-quota";q=10;w=60', 'RateLimit-Policy on the 429');
  t.equal(eleventh.headers.ratelimit, `"check-quota";r=0;t=${retryAfter}`, 'RateLimit r=0, t = Retry-After');

  // memory: one counter per client and key, expiring with the window, and the one answer
  const counters = [s.keys.rateCheckQuota(lic.licenseKey, '127.0.0.1'), s.keys.rateCheckQuota(lic.licenseKey, '127.0.0.2')];
  t.same(await keysOf(s, lic.licenseKey), [s.keys.credentials(lic.licenseKey), s.keys.quotaAnswer(lic.licenseKey), ...counters].sort(),
    'the key\'s slot: credentials, the answer, one counter per client (none for the addresses the stranger claimed)');
  t.same(await Promise.all(counters.map((key) => s.redis.get(key))), ['11', '20'], 'each counter holds its own client\'s calls');
  for (const key of counters) {
    const ttl = await s.redis.pttl(key);
    t.ok(ttl > 0 && ttl <= 60_000, `${key.slice(key.indexOf('}') + 1)} expires with the window (${ttl} ms left)`);
  }
});

t.test('behind a proxy (TRUST_PROXY=1): counted per forwarded address, an IPv6 /64 as one client', async (t) => {
  const h = await startHarness(t, 'cq-proxy', { ...NO_RATE_LIMITS, RATE_CHECK_QUOTA_PER_MIN: '10', TRUST_PROXY: '1' });
  const lic = await h.createLicense();
  const from = async (address: string) => (await h.request('GET', path(lic.licenseKey), undefined, { 'X-Forwarded-For': address })).status;

  const stranger: number[] = [];
  for (let i = 0; i < 20; i++) stranger.push(await from('203.0.113.7'));
  t.same(stranger, [...Array(10).fill(200), ...Array(10).fill(429)], 'a stranger at 203.0.113.7: 10, then 429');
  const holder: number[] = [];
  for (let i = 0; i < 11; i++) holder.push(await from('192.0.2.44'));
  t.same(holder, [...Array(10).fill(200), 429], 'the holder at 192.0.2.44: its own 10, then 429');

  // one host is usually given a whole /64: rotating addresses inside it buys nothing
  const rotating: number[] = [];
  for (let i = 0; i < 12; i++) rotating.push(await from(`2001:db8:7:9::${(i + 1).toString(16)}`));
  t.same(rotating, [...Array(10).fill(200), 429, 429], 'addresses of one IPv6 /64 share one count');
  t.equal(await from('2001:db8:7:a::1'), 200, 'the next /64 has its own');

  // behind HAProxy (option forwardfor) the client's own line comes first and the proxy's
  // after it: every line counts, read from the right, so the client's claim changes nothing
  const lines = (...values: string[]) => new Promise<number>((resolve, reject) => {
    const req = http.request(`${h.url}${path(lic.licenseKey)}`, { agent: false, headers: { 'x-forwarded-for': values } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
  const spoofing: number[] = [];
  for (let i = 0; i < 12; i++) spoofing.push(await lines(`198.51.100.${i + 1}`, '192.0.2.200'));
  t.same(spoofing, [...Array(10).fill(200), 429, 429], 'two lines, a new claim in the first each time: counted for the proxy\'s 192.0.2.200');
  t.equal(await lines('192.0.2.200', '192.0.2.201'), 200, 'the rightmost line decides: 192.0.2.201 has its own count');
  t.equal(await lines('192.0.2.201, 192.0.2.200', ''), 200, 'an empty last line is no address: the peer\'s count (127.0.0.1), not 192.0.2.200\'s');
});

t.test('a client whose address is unknown is counted on the key\'s own counter', async (t) => {
  const h = await startHarness(t, 'cq-noaddress', NO_RATE_LIMITS);
  const lic = await h.createLicense();
  // no HTTP request comes without a peer address: the script is called as the route calls it
  const client = createRedis(h.config, 'test');
  t.teardown(() => client.quit());
  const outcomes: Outcome[] = [];
  for (let i = 0; i < 3; i++) outcomes.push((await runScript(client, scripts.checkQuota(h.keys, lic.licenseKey, '', 2, 60_000, true))).outcome);
  t.same(outcomes, [Outcome.DONE, Outcome.DONE, Outcome.OVER_RATE_LIMIT], 'limit 2: the third is over');
  t.equal(h.keys.rateCheckQuota(lic.licenseKey, ''), `${h.prefix}:{k:${lic.licenseKey}}:rq`, 'the key\'s own counter');
  t.equal(await h.redis.get(h.keys.rateCheckQuota(lic.licenseKey, '')), '3', 'holds every call without an address');
});

t.test('on a dual-stack listener (HOST=::) each IPv4 client has its own count, as an IPv6 one has', async (t) => {
  const h = await startHarness(t, 'cq-dualstack', { RATE_CHECK_QUOTA_PER_MIN: '2', HOST: '::' });
  const lic = await h.createLicense();
  const port = Number(new URL(h.url).port);
  const look = (host: string, localAddress: string) => new Promise<number>((resolve, reject) => {
    http.get({ host, port, localAddress, path: path(lic.licenseKey) }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode as number));
    }).on('error', reject);
  });
  const statuses = async (host: string, localAddress: string, n: number) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push(await look(host, localAddress));
    return out;
  };
  // IPv4 clients reach an IPv6 socket as ::ffff:a.b.c.d: counted as a.b.c.d, not as one IPv6 /64 for all
  t.same(await statuses('127.0.0.1', '127.0.0.2', 3), [200, 200, 429], '127.0.0.2: its limit of 2');
  t.same(await statuses('127.0.0.1', '127.0.0.1', 2), [200, 200], '127.0.0.1: a count of its own');
  t.same(await statuses('::1', '::1', 3), [200, 200, 429], '::1: its own, and its limit');
  t.equal(await h.redis.get(h.keys.rateCheckQuota(lic.licenseKey, '127.0.0.2')), '3', 'the counter of 127.0.0.2 by its dotted address');
});

t.test('rate limit: the 4th request of one client is refused with Retry-After and an error object, per key', async (t) => {
  const h = await startHarness(t, 'cq-ratelimit', { RATE_CHECK_QUOTA_PER_MIN: '3' });
  const lic = await h.createLicense();
  const other = await h.createLicense();
  for (let i = 0; i < 3; i++) t.equal((await h.checkQuota(lic.licenseKey)).status, 200);
  const res = await h.checkQuota(lic.licenseKey);
  t.equal(res.status, 429);
  const seconds = retryAfterSeconds(t, res);
  t.equal(res.body?.success, false);
  t.type(res.body?.error?.code, 'string');
  t.type(res.body?.error?.message, 'string');
  // the license has quota: the refusal must not read as the published quota-exhausted 429
  t.not(res.body?.error?.code, 'QUOTA_EXCEEDED');
  if (res.body && 'retryAfter' in res.body) t.equal(res.body.retryAfter, seconds, 'retryAfter agrees with Retry-After');
  t.equal((await h.checkQuota(other.licenseKey)).status, 200, 'another key is not limited');
});

t.test('the limit comes from the environment: RATE_CHECK_QUOTA_PER_MIN=5 allows exactly 5', async (t) => {
  const h = await startHarness(t, 'cq-ratelimitfive', { RATE_CHECK_QUOTA_PER_MIN: '5' });
  const lic = await h.createLicense();
  const statuses = [];
  for (let i = 0; i < 7; i++) statuses.push((await h.checkQuota(lic.licenseKey)).status);
  t.same(statuses, [200, 200, 200, 200, 200, 429, 429]);
});

t.test('a spray of keys no license has writes nothing to Redis, and a key created a moment ago is found', async (t) => {
  const h = await startHarness(t, 'cq-spray', { TRUST_PROXY: '1' }); // the default limits
  const sprayed = Array.from({ length: 200 }, () => randomUUID());
  const from = (key: string, i: number) => h.request('GET', path(key), undefined, { 'X-Forwarded-For': `198.51.100.${i % 4}` });
  const answers = await Promise.all(sprayed.map(from));
  t.same([...new Set(answers.map((a) => `${a.status} ${a.body?.error?.code}`))], ['404 LICENSE_NOT_FOUND'], 'every one: 404 LICENSE_NOT_FOUND');
  t.notOk(answers.some((a) => a.headers.get('ratelimit') !== null), 'none counted: no RateLimit fields');
  const written: string[] = [];
  for await (const keys of h.redis.scanStream({ match: `${h.prefix}:*`, count: 1000 })) {
    for (const key of keys as string[]) if (sprayed.some((k) => key.includes(k))) written.push(key);
  }
  t.same(written, [], 'no Redis key names any sprayed key');
  const again: number[] = [];
  for (let i = 0; i < 12; i++) again.push((await from(sprayed[0] as string, 0)).status);
  t.same(again, Array(12).fill(404), 'one unknown key 12 times from one address (the limit is 10): 404 each time, nothing counted');

  // created through one process, asked at once through every process: a key not yet announced
  // to a process is looked for in Redis (read only) before it is called unknown
  for (let i = 0; i < 5; i++) {
    const lic = await h.createLicense({ totalQuota: 7 });
    const seen = await Promise.all([0, 1, 2, 3].map(() => h.checkQuota(lic.licenseKey)));
    t.same(seen.map((a) => a.status), [200, 200, 200, 200], `license ${i + 1}: found at once by every process`);
  }
});

t.test('an unknown key is 404 and stays so while remembered', async (t) => {
  const h = await startHarness(t, 'cq-unknown', {
    ...NO_RATE_LIMITS, QUOTA_CACHE_SECONDS: '0', RATE_GET_TOKEN_FAILURES_PER_MIN: '0',
  });
  const lic = await h.createLicense({ totalQuota: 100 });
  const key = randomUUID();
  const marker = h.keys.unknownKey(key);
  await h.announceKey(key); // known, yet not in Postgres: the look-up finds nothing
  const first = await h.checkQuota(key);
  t.equal(first.status, 404, `404 (${first.text})`);
  t.equal(first.body?.error?.code, 'LICENSE_NOT_FOUND');
  t.equal(await h.redis.exists(marker), 1, 'marker set by check-quota too');
  await h.insertLicenseDirectly(key, lic.licenseKey);
  const second = await h.checkQuota(key);
  t.equal(second.status, 404, `row present in Postgres, still 404 while marked (${second.text})`);
  t.equal(second.body?.error?.code, 'LICENSE_NOT_FOUND');
  await h.redis.del(marker);
  const third = await h.checkQuota(key);
  t.equal(third.status, 200, `marker gone: 200 (${third.text})`);
});
