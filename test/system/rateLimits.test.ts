import t from 'tap';
import { randomUUID } from 'node:crypto';
import { KeySpace } from '../../src/redis/keys.js';
import { startHarness, type Answer } from '../helpers/harness.js';
import { type Asserts, decodeJwt } from '../helpers/auth.js';

// Rate limits (spec Limits, CONTRACT env and decisions): the request after the limit gets 429
// with Retry-After and {success:false, message, retryAfter}; limits are per license key /
// company; every request counts; a refused validate spends nothing; '0' switches a limit off.

const RATE_MESSAGE = 'Çok fazla istek. Lütfen bekleyiniz.';
const SMALL = {
  RATE_GET_TOKEN_PER_MIN: '3',
  RATE_VALIDATE_PER_MIN: '3',
  RATE_CHECK_QUOTA_PER_MIN: '3',
  RATE_SIGN_TOKEN_PER_MIN: '3',
};

/** The Retry-After header: whole seconds within the one-minute window. */
function retryAfterHeader(t: Asserts, res: Answer): number {
  const header = res.headers.get('retry-after');
  t.ok(header !== null && /^\d+$/.test(header), `Retry-After is whole seconds (${header})`);
  const seconds = Number(header);
  t.ok(seconds >= 1 && seconds <= 60, `Retry-After within 1..60 (${seconds})`);
  return seconds;
}

/** The 429 of get-token, sign-token and validate. */
function expectRateLimited(t: Asserts, res: Answer): void {
  t.equal(res.status, 429, `429 (${res.text})`);
  const seconds = retryAfterHeader(t, res);
  t.same(res.body, { success: false, message: RATE_MESSAGE, retryAfter: seconds });
}

t.test('small limits', async (t) => {
  const h = await startHarness(t, 'ratelimit', SMALL);

  t.test('get-token: the 4th request in a minute is refused, per license key', async (t) => {
    const lic = await h.createLicense();
    const other = await h.createLicense();
    t.equal((await h.getToken(lic.licenseKey, 'wrong password', 0)).status, 401, 'a refused attempt counts too');
    t.equal((await h.getToken(lic.licenseKey, lic.password, 0)).status, 200);
    t.equal((await h.getToken(lic.licenseKey, lic.password, 1)).status, 200);
    expectRateLimited(t, await h.getToken(lic.licenseKey, lic.password, 0));
    expectRateLimited(t, await h.getToken(lic.licenseKey, 'wrong password', 0));
    t.equal((await h.getToken(other.licenseKey, other.password, 0)).status, 200, 'another license is not limited');
    await h.drainWorker();
    const rows = await h.sql`select count(*)::int as n from sign_tokens where firma_id = ${lic.firmaId}`;
    t.equal(rows[0]?.n, 2, 'a refused get-token issues no sign token');
  });

  t.test('get-token: guessing at an unknown key is limited as well', async (t) => {
    const key = randomUUID();
    for (let i = 0; i < 3; i++) t.equal((await h.getToken(key, `guess-${i}`, 0)).status, 401);
    expectRateLimited(t, await h.getToken(key, 'guess-3', 0));
  });

  t.test('sign-token: the 4th request in a minute is refused, per license', async (t) => {
    const lic = await h.createLicense();
    const other = await h.createLicense();
    const access = (await h.getToken(lic.licenseKey, lic.password, 0)).body.accessToken as string;
    const otherAccess = (await h.getToken(other.licenseKey, other.password, 0)).body.accessToken as string;
    for (let i = 0; i < 3; i++) t.equal((await h.signToken(access, 0)).status, 200);
    expectRateLimited(t, await h.signToken(access, 1));
    t.equal((await h.signToken(otherAccess, 0)).status, 200, 'another license is not limited');
  });

  t.test('validate: the 4th request is refused per company, and the refusal spends nothing', async (t) => {
    const lic = await h.createLicense({ totalQuota: 10 });
    const other = await h.createLicense({ totalQuota: 10 });
    const got = await h.getToken(lic.licenseKey, lic.password, 0);
    const tokens = [got.body.signToken as string];
    for (let i = 0; i < 3; i++) tokens.push((await h.signToken(got.body.accessToken, 1)).body.signToken as string);
    t.equal(new Set(tokens).size, 4);
    const [t1, t2, t3, t4] = tokens as [string, string, string, string];

    t.equal((await h.validate(t1)).status, 200);
    t.equal((await h.validate(t1)).status, 400, 'a refused validate (already used) counts too');
    t.equal((await h.validate(t2)).status, 200);
    expectRateLimited(t, await h.validate(t3));
    expectRateLimited(t, await h.validate(t4, 'https://eczane.example'));

    const otherToken = (await h.getToken(other.licenseKey, other.password, 0)).body.signToken as string;
    t.equal((await h.validate(otherToken)).status, 200, 'another company is not limited');

    const view = await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}`);
    t.equal(view.body.data.usedQuota, 2, 'no quota taken by the refused requests');

    // open the window again: the refused tokens were not burned
    const keys = new KeySpace(h.prefix).forLicense(lic.firmaId);
    t.equal(await h.redis.del(keys.rateValidate), 1, 'the validate counter of the company exists');
    const r3 = await h.validate(t3);
    t.equal(r3.status, 200, `token refused by the rate limit still redeems (${r3.text})`);
    t.equal(r3.body.usedQuota, 3);
    t.equal(r3.body.remainingQuota, 7);
    const r4 = await h.validate(t4, 'https://eczane.example');
    t.equal(r4.status, 200);
    t.equal(r4.body.remainingQuota, 6);

    await h.drainWorker();
    const rows = await h.sql`select token_id, status from sign_tokens where firma_id = ${lic.firmaId} order by token_id`;
    t.equal(rows.length, 4);
    t.ok(rows.every((r) => r.status === 'used'));
    const ids = tokens.map((tok) => decodeJwt(tok).payload.token_id as string).sort();
    t.same(rows.map((r) => r.token_id), ids);
  });

  t.test('check-quota: the 4th request is refused with Retry-After and an error object, per key', async (t) => {
    const lic = await h.createLicense();
    const other = await h.createLicense();
    for (let i = 0; i < 3; i++) t.equal((await h.checkQuota(lic.licenseKey)).status, 200);
    const res = await h.checkQuota(lic.licenseKey);
    t.equal(res.status, 429);
    const seconds = retryAfterHeader(t, res);
    t.equal(res.body?.success, false);
    t.type(res.body?.error?.code, 'string');
    t.type(res.body?.error?.message, 'string');
    // the license has quota: the refusal must not read as the published quota-exhausted 429
    t.not(res.body?.error?.code, 'QUOTA_EXCEEDED');
    if (res.body && 'retryAfter' in res.body) t.equal(res.body.retryAfter, seconds, 'retryAfter agrees with Retry-After');
    t.equal((await h.checkQuota(other.licenseKey)).status, 200, 'another key is not limited');
  });

  t.test('concurrent requests: exactly the limit gets through', async (t) => {
    const lic = await h.createLicense();
    const answers = await Promise.all(Array.from({ length: 9 }, () => h.getToken(lic.licenseKey, lic.password, 0)));
    const statuses = answers.map((a) => a.status).sort();
    t.same(statuses, [200, 200, 200, 429, 429, 429, 429, 429, 429]);
    for (const a of answers.filter((x) => x.status === 429)) expectRateLimited(t, a);
  });
});

t.test('a limit of 0 switches the limit off', async (t) => {
  const h = await startHarness(t, 'ratelimitoff', {
    RATE_GET_TOKEN_PER_MIN: '0',
    RATE_VALIDATE_PER_MIN: '0',
    RATE_CHECK_QUOTA_PER_MIN: '0',
    RATE_SIGN_TOKEN_PER_MIN: '0',
  });
  const lic = await h.createLicense({ totalQuota: 200 });

  const quotaStatuses = [];
  for (let i = 0; i < 20; i++) quotaStatuses.push((await h.checkQuota(lic.licenseKey)).status);
  t.same(quotaStatuses, Array(20).fill(200), '20 check-quota calls (default limit 10)');

  const getStatuses = [];
  let access = '';
  for (let i = 0; i < 12; i++) {
    const res = await h.getToken(lic.licenseKey, lic.password, 0);
    getStatuses.push(res.status);
    access = res.body?.accessToken ?? access;
  }
  t.same(getStatuses, Array(12).fill(200), '12 get-token calls (default limit 10)');

  const signTokens: string[] = [];
  const signStatuses = [];
  for (let i = 0; i < 105; i++) {
    const res = await h.signToken(access, i % 2);
    signStatuses.push(res.status);
    if (res.status === 200) signTokens.push(res.body.signToken);
  }
  t.same(signStatuses, Array(105).fill(200), '105 sign-token calls (default limit 100)');

  const validateStatuses = [];
  for (const token of signTokens) validateStatuses.push((await h.validate(token)).status);
  t.same(validateStatuses, Array(105).fill(200), '105 validate calls (default limit 100)');
  t.equal((await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}`)).body.data.usedQuota, 105);
});

t.test('limits come from the environment: RATE_CHECK_QUOTA_PER_MIN=5 allows exactly 5', async (t) => {
  const h = await startHarness(t, 'ratelimitfive', { RATE_CHECK_QUOTA_PER_MIN: '5' });
  const lic = await h.createLicense();
  const statuses = [];
  for (let i = 0; i < 7; i++) statuses.push((await h.checkQuota(lic.licenseKey)).status);
  t.same(statuses, [200, 200, 200, 200, 200, 429, 429]);
});
