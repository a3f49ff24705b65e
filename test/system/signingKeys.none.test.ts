import { randomUUID } from 'node:crypto';
import t from 'tap';
import { adminView } from '../helpers/admin.js';
import { startHarness, type Harness, type TestLicense } from '../helpers/harness.js';
import { SEVERAL_WORKERS } from '../helpers/processes.js';
import { documentNamed, sign } from '../helpers/receipts.js';
import { apiError, sdkOf } from '../helpers/sdk.js';
import { getTokenPair } from '../helpers/tokens.js';

// A deployment upgraded without signing keys (SIGNING_KEYS_FILE and SIGNING_KEYS unset, or
// empty): the service starts, as deployed with several processes, and serves everything but
// the two endpoints that sign. License validation answers 503 in get-token's coded shape and
// sign in validate's, both naming the setting, before anything is read or counted: a sign
// token refused there still redeems at validate, the quota and the rate-limit counts
// untouched. The JWKS is empty, /readyz and /healthz stay 200 and say what is missing, and
// the start logs one warning, not one per process. (A key given wrong still refuses the
// start: test/system/signingKeys.test.ts, config.test.ts.)

const MESSAGE = 'İmzalama anahtarı yapılandırılmamış (SIGNING_KEYS_FILE veya SIGNING_KEYS)';
const CODED = { success: false, error: { code: 'SERVICE_UNAVAILABLE', message: MESSAGE } };
const PLAIN = { success: false, message: MESSAGE };
/** The logins a key may make a minute (RATE_GET_TOKEN_PER_MIN's default), and its failures (RATE_GET_TOKEN_KEY_FAILURES_PER_MIN's). */
const LOGINS_PER_MIN = 10;

const h = await startHarness(t, 'nokeys', { SIGNING_KEYS: '', QUOTA_CACHE_SECONDS: '0', WORKERS: SEVERAL_WORKERS }, { logLevel: 'warn' });

/** What the RateLimit field says is left of a policy: its r. */
function left(res: { headers: Headers }, policy: string): number | null {
  const m = new RegExp(`"${policy}";r=(\\d+)`).exec(res.headers.get('ratelimit') ?? '');
  return m ? Number(m[1]) : null;
}

async function usedQuota(lic: TestLicense): Promise<[unknown, unknown]> {
  return [(await h.checkQuota(lic.licenseKey)).body.data.usedQuota, (await adminView(h, lic.licenseKey)).usedQuota];
}

function licenseValidation(client: Harness, licenseKey: string, password: string) {
  return client.request('POST', '/api/License/validate', { licenseKey, password });
}

t.test('it starts, and get-token, sign-token, validate and check-quota serve as ever', async (t) => {
  const lic = await h.createLicense({ totalQuota: 3 });
  const got = await h.getToken(lic.licenseKey, lic.password);
  t.equal(got.status, 200, got.text);
  const more = await h.signToken(got.body.accessToken as string);
  t.equal(more.status, 200, more.text);
  for (const token of [got.body.signToken, more.body.signToken]) t.equal((await h.validate(token)).status, 200, 'redeemed');
  const quota = await h.checkQuota(lic.licenseKey);
  t.equal(quota.status, 200);
  t.match(quota.body.data, { usedQuota: 2, remainingQuota: 1 });
});

t.test('license validation: 503 in its coded shape naming the setting, before the login, counting nothing', async (t) => {
  const lic = await h.createLicense();
  for (const password of [lic.password, 'wrong password']) {
    for (let i = 0; i <= LOGINS_PER_MIN; i++) {
      const res = await licenseValidation(h, lic.licenseKey, password);
      t.equal(res.status, 503, res.text);
      t.strictSame(res.body, CODED);
      t.equal(res.headers.get('retry-after'), null, 'no Retry-After: no retry helps');
    }
  }
  t.strictSame((await licenseValidation(h, randomUUID(), 'x')).body, CODED, 'an unknown key alike: nothing is looked up');
  t.strictSame((await h.request('POST', '/api/License/validate', { licenseKey: 'k' })).body, CODED, 'a body missing its password alike');
  // neither the key's logins nor its failures were counted: get-token still logs in, its count whole
  const got = await h.getToken(lic.licenseKey, lic.password);
  t.equal(got.status, 200, got.text);
  t.equal(left(got, 'get-token'), LOGINS_PER_MIN - 1, 'the key\'s logins: only this one counted');
  await apiError(t, sdkOf(h).validateLicense({ licenseKey: lic.licenseKey, password: lic.password }), 503, 'SERVICE_UNAVAILABLE', MESSAGE);
});

t.test('sign: 503 in validate\'s shape naming the setting, and nothing redeemed: the token then redeems at validate', async (t) => {
  // one redemption a minute for this license: a sign counted would leave validate none
  const lic = await h.createLicense({ totalQuota: 5, rateLimits: { validate: 1 } });
  const { signToken } = await getTokenPair(h, lic);
  t.same(await usedQuota(lic), [0, 0], 'nothing used yet');
  const key = `sign-job-${randomUUID()}`;
  for (let i = 0; i < 3; i++) {
    const res = await sign(h, { token: signToken, documents: [documentNamed('belge.pdf')] }, key);
    t.equal(res.status, 503, res.text);
    t.strictSame(res.body, PLAIN);
    t.equal(res.headers.get('retry-after'), null, 'no Retry-After');
    t.equal(res.headers.get('ratelimit'), null, 'not counted: no RateLimit fields');
  }
  t.strictSame((await sign(h, {})).body, PLAIN, 'any body: the token is never read');
  await apiError(t, sdkOf(h).sign({ token: signToken, documents: [documentNamed('belge.pdf')] }), 503, 'SERVICE_UNAVAILABLE', MESSAGE);
  t.same(await usedQuota(lic), [0, 0], 'check-quota and the admin API: no unit spent');

  // the same token and Idempotency-Key at validate: not burned, no key kept, no count taken
  const res = await h.request('POST', '/api/license/validate', { token: signToken }, { 'idempotency-key': key });
  t.equal(res.status, 200, res.text);
  t.match(res.body, { success: true, usedQuota: 1, remainingQuota: 4 });
  t.equal(left(res, 'validate'), 0, 'the license\'s one redemption of the minute was validate\'s');
  t.same(await usedQuota(lic), [1, 1], 'one unit, spent by validate');
});

t.test('the JWKS is empty, and asked again each time', async (t) => {
  const res = await h.request('GET', '/.well-known/jwks.json');
  t.equal(res.status, 200);
  t.equal(res.text, '{"keys":[]}');
  t.equal(res.headers.get('cache-control'), 'no-cache');
});

t.test('/readyz and /healthz: 200, naming the missing keys', async (t) => {
  const ready = await h.request('GET', '/readyz');
  t.equal(ready.status, 200, ready.text);
  t.strictSame(ready.body, { success: true, redis: 'ok', postgres: 'ok', scripts: 'ok', signingKeys: 'missing' });
  const health = await h.request('GET', '/healthz');
  t.equal(health.status, 200, health.text);
  t.match(health.body, { success: true, redis: 'ok', postgres: 'ok', signingKeys: 'missing' });
});

/** The warnings about the keys in a service's log. */
const keyWarnings = (service: Harness): unknown[] => service.logs.filter((r) => r.level === 40 && String(r.msg).startsWith('no signing keys'));

t.test('one warning at start, however many processes serve', async (t) => {
  t.ok(h.deployment !== null && h.deployment.children().length > 1, `several processes (${h.deployment?.children().length})`);
  const [warning, ...more] = keyWarnings(h);
  t.match(warning, { msg: /SIGNING_KEYS_FILE or SIGNING_KEYS unset.*license validation.*Signature\/sign.*503/ }, 'it says what is missing and what it costs');
  t.same(more, [], 'once, by the primary');

  const alone = await startHarness(t, 'nokeys-one', { SIGNING_KEYS_FILE: '', SIGNING_KEYS: '', WORKERS: '1' }, { logLevel: 'warn' });
  t.equal(keyWarnings(alone).length, 1, 'one process: its one warning (both variables empty: none)');
  t.equal((await alone.request('GET', '/.well-known/jwks.json')).text, '{"keys":[]}');
});
