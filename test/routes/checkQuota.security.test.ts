import { randomUUID } from 'node:crypto';
import t from 'tap';
import { NO_RATE_LIMITS, startHarness } from '../helpers/harness.js';
import { retryAfterSeconds } from '../helpers/shapes.js';

// GET /api/License/check-quota/{licenseKey} against abuse: its rate limit per license key
// (RATE_CHECK_QUOTA_PER_MIN; the 429 must not read as the published quota-exhausted one),
// and unknown keys remembered in Redis so a spray of them stays off Postgres.

t.test('rate limit: the 4th request is refused with Retry-After and an error object, per key', async (t) => {
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
