import { randomUUID } from 'node:crypto';
import t from 'tap';
import { startContract } from '../helpers/contract.js';
import type { Client } from '../helpers/http.js';
import { bearer, claimsOf, craftJwt, HS256_HEADER, ISSUER, nowSeconds } from '../helpers/jwt.js';
import { getTokenPair, signOne } from '../helpers/tokens.js';
import { pollUntil } from '../helpers/wait.js';

// The public API against its document, on the service as `npm start` runs it with default
// settings (every limit at its default: get-token 10 tokens a minute per key, 10 failed attempts a
// minute per key and 30 per address, sign-token and validate 100, check-quota 10, history and the ledger 60): every row of each
// endpoint's error table, each answer's status, body and headers checked against
// /openapi.json, and for each answer whose RateLimit fields (or Retry-After) only some
// answers of its status carry, whether this one does. 405, 413, 503 and the preflights:
// openapi.contract.http and openapi.contract.unavailable.

const k = await startContract(t, 'oa-public');
const secret = k.env.JWT_SECRET as string;
const DAY_MS = 86_400_000;
const past = () => new Date(Date.now() - 2 * DAY_MS).toISOString();

const GET_TOKEN = '/api/v1/auth/get-token';
const SIGN_TOKEN = '/api/v1/auth/sign-token';
const VALIDATE = '/api/license/validate';
const getToken = (key: string, password: string, imzaTipi: unknown = 0) => (c: Client) => c.request('POST', GET_TOKEN, { licenseKey: key, password, imzaTipi });
const signToken = (accessToken: string | null, body: unknown = { imzaTipi: 0 }) => (c: Client) =>
  c.request('POST', SIGN_TOKEN, body, accessToken === null ? {} : bearer(accessToken));
const validate = (token: unknown, origin?: string, headers: Record<string, string> = {}) => (c: Client) =>
  c.request('POST', VALIDATE, origin === undefined ? { token } : { token, origin }, headers);
const licenseValidation = (key: string, password: string) => (c: Client) => c.request('POST', VALIDATE, { licenseKey: key, password });
const SIGN = '/api/Signature/sign';
const DOCUMENTS = [{ name: 'reçete.pdf', sha256: 'A'.repeat(64) }];
const sign = (token: unknown, origin?: string, headers: Record<string, string> = {}, documents: unknown = DOCUMENTS) => (c: Client) =>
  c.request('POST', SIGN, origin === undefined ? { token, documents } : { token, origin, documents }, headers);
const checkQuota = (key: string) => (c: Client) => c.request('GET', `/api/License/check-quota/${key}`);
const history = (key: string, accessToken: string | null, query = '') => (c: Client) =>
  c.request('GET', `/api/License/history/${key}${query}`, undefined, accessToken === null ? {} : bearer(accessToken));
const ledger = (key: string, accessToken: string | null, query = '') => (c: Client) =>
  c.request('GET', `/api/License/ledger/${key}${query}`, undefined, accessToken === null ? {} : bearer(accessToken));

const COUNTED = { rateLimit: true };
const UNCOUNTED = { rateLimit: false };

t.test('get-token', async (t) => {
  const lic = await k.license({ totalQuota: 5 });
  const ok = await k.expect(t, 200, 'issued', getToken(lic.licenseKey, lic.password), COUNTED);
  t.equal(ok.headers.get('ratelimit-policy'), '"get-token";q=10;w=60', 'the policy as configured by default');
  await k.expect(t, 400, 'imzaTipi 2: INVALID_REQUEST', getToken(lic.licenseKey, lic.password, 2), UNCOUNTED);
  await k.expect(t, 400, 'no quota: INSUFFICIENT_QUOTA', getToken((await k.license({ totalQuota: 0 })).licenseKey, 'correct horse battery staple'), COUNTED);
  await k.expect(t, 401, 'wrong password', getToken(lic.licenseKey, 'wrong'), COUNTED);
  await k.expect(t, 401, 'an unknown key of UUID form', getToken(randomUUID(), 'wrong'), COUNTED);
  await k.expect(t, 401, 'a key that is no UUID (looked up nowhere, a failure of the address all the same)', getToken('not-a-uuid', 'wrong'), COUNTED);
  await k.expect(t, 401, 'expired', getToken((await k.license({ expiryDate: past() })).licenseKey, 'correct horse battery staple'), COUNTED);
  await k.expect(t, 401, 'inactive', getToken((await k.license({ isActive: false })).licenseKey, 'correct horse battery staple'), COUNTED);
  const limited = await k.license();
  const over = await k.untilLimited(t, 'get-token', getToken(limited.licenseKey, limited.password), 200, 10);
  t.match(over.headers.get('ratelimit'), /^"get-token";r=0;t=\d+$/, 'r=0');
  t.equal(over.headers.get('ratelimit')?.split('t=')[1], over.headers.get('retry-after'), 't is Retry-After');
});

t.test('license validation (validate with a key and password)', async (t) => {
  const lic = await k.license();
  const ok = await k.expect(t, 200, 'a license token', licenseValidation(lic.licenseKey, lic.password), COUNTED);
  t.equal(ok.headers.get('ratelimit-policy'), '"get-token";q=10;w=60', 'get-token\'s policy');
  await k.expect(t, 400, 'no password: INVALID_REQUEST', (c) => c.request('POST', VALIDATE, { licenseKey: lic.licenseKey }), UNCOUNTED);
  await k.expect(t, 401, 'wrong password', licenseValidation(lic.licenseKey, 'wrong'), COUNTED);
  await k.expect(t, 401, 'expired', licenseValidation((await k.license({ expiryDate: past() })).licenseKey, 'correct horse battery staple'), COUNTED);
  await k.expect(t, 401, 'inactive', licenseValidation((await k.license({ isActive: false })).licenseKey, 'correct horse battery staple'), COUNTED);
  const limited = await k.license();
  const over = await k.untilLimited(t, 'license validation', licenseValidation(limited.licenseKey, limited.password), 200, 10);
  t.match(over.headers.get('ratelimit'), /^"get-token";r=0;t=\d+$/, 'get-token\'s count');
});

t.test('sign-token', async (t) => {
  const lic = await k.license({ totalQuota: 200 });
  const { accessToken } = await getTokenPair(k.c, lic);
  await k.expect(t, 200, 'issued', signToken(accessToken), COUNTED);
  await k.expect(t, 400, 'imzaTipi "0": INVALID_REQUEST', signToken(accessToken, { imzaTipi: '0' }), UNCOUNTED);
  await k.expect(t, 401, 'no access token', signToken(null), UNCOUNTED);
  await k.expect(t, 401, 'a malformed access token', signToken('not.a.jwt'), UNCOUNTED);
  const empty = await k.license({ totalQuota: 1 });
  const emptyPair = await getTokenPair(k.c, empty);
  await k.expect(t, 200, 'the last unit redeemed', validate(emptyPair.signToken), COUNTED);
  await k.expect(t, 400, 'no quota: INSUFFICIENT_QUOTA', signToken(emptyPair.accessToken), COUNTED);
  const expiring = await k.license();
  const expiringToken = (await getTokenPair(k.c, expiring)).accessToken;
  await k.expect(t, 200, 'expiry moved to the past', k.admin('PATCH', `/admin/v1/licenses/${expiring.licenseKey}`, { expiryDate: past() }));
  await k.expect(t, 401, 'LICENSE_EXPIRED', signToken(expiringToken), COUNTED);
  const revoked = await k.license();
  const revokedToken = (await getTokenPair(k.c, revoked)).accessToken;
  await k.admin('PATCH', `/admin/v1/licenses/${revoked.licenseKey}`, { password: 'a new password' });
  await k.expect(t, 401, 'revoked by a password change: INVALID_TOKEN', signToken(revokedToken), COUNTED);
  const over = await k.untilLimited(t, 'sign-token', signToken(accessToken), 200, 100);
  t.match(over.headers.get('ratelimit'), /^"sign-token";r=0;t=\d+$/, 'over the limit');
});

t.test('validate', async (t) => {
  await k.expect(t, 400, 'no token', validate(''), UNCOUNTED);
  await k.expect(t, 400, 'not an object', (c) => c.request('POST', VALIDATE, '[1]'), UNCOUNTED);
  await k.expect(t, 400, 'a malformed Idempotency-Key', validate('x', undefined, { 'idempotency-key': 'k'.repeat(256) }), UNCOUNTED);
  await k.expect(t, 401, 'malformed', validate('not.a.jwt'), UNCOUNTED);
  const lic = await k.license({ domains: ['ornek.com.tr'], totalQuota: 2 });
  const { accessToken, signToken: first } = await getTokenPair(k.c, lic);
  const claims = claimsOf(first);
  const stale = craftJwt(HS256_HEADER, { ...claims, iat: nowSeconds() - 600, exp: nowSeconds() - 300, iss: ISSUER }, secret);
  await k.expect(t, 401, 'expired, refused by its verification', validate(stale, 'https://ornek.com.tr'), UNCOUNTED);
  await k.expect(t, 401, 'origin refused', validate(first, 'https://baska.example'), COUNTED);
  await k.expect(t, 200, 'redeemed with a key', validate(first, 'https://ornek.com.tr', { 'idempotency-key': 'contract-1' }), COUNTED);
  await k.expect(t, 200, 'the same key again: the first answer', validate(first, 'https://ornek.com.tr', { 'idempotency-key': 'contract-1' }), COUNTED);
  await k.expect(t, 400, 'already used', validate(first, 'https://ornek.com.tr'), COUNTED);
  const second = await signOne(k.c, accessToken);
  await k.expect(t, 422, 'the key of another token', validate(second, 'https://ornek.com.tr', { 'idempotency-key': 'contract-1' }), COUNTED);
  const third = await signOne(k.c, accessToken);
  await k.expect(t, 200, 'the second unit', validate(second, 'https://ornek.com.tr'), COUNTED);
  await k.expect(t, 400, 'quota exhausted', validate(third, 'https://ornek.com.tr'), COUNTED);
  const inactive = await k.license();
  const inactiveToken = (await getTokenPair(k.c, inactive)).signToken;
  await k.admin('PATCH', `/admin/v1/licenses/${inactive.licenseKey}`, { isActive: false });
  await k.expect(t, 401, 'the license deactivated since', validate(inactiveToken), COUNTED);
  const limited = await k.license({ domains: ['ornek.com.tr'] });
  const token = (await getTokenPair(k.c, limited)).signToken;
  const over = await k.untilLimited(t, 'validate, refused origin', validate(token, 'https://baska.example'), 401, 100);
  t.match(over.headers.get('ratelimit'), /^"validate";r=0;t=\d+$/, 'over the limit');
});

t.test('sign', async (t) => {
  await k.expect(t, 400, 'no token', sign(''), UNCOUNTED);
  await k.expect(t, 400, 'not an object', (c) => c.request('POST', SIGN, '[1]'), UNCOUNTED);
  await k.expect(t, 400, 'no documents', sign('x', undefined, {}, []), UNCOUNTED);
  await k.expect(t, 400, 'a malformed Idempotency-Key', sign('x', undefined, { 'idempotency-key': 'k'.repeat(256) }), UNCOUNTED);
  await k.expect(t, 401, 'malformed', sign('not.a.jwt'), UNCOUNTED);
  const lic = await k.license({ domains: ['ornek.com.tr'], totalQuota: 2 });
  const { accessToken, signToken: first } = await getTokenPair(k.c, lic);
  const claims = claimsOf(first);
  const stale = craftJwt(HS256_HEADER, { ...claims, iat: nowSeconds() - 600, exp: nowSeconds() - 300, iss: ISSUER }, secret);
  await k.expect(t, 401, 'expired, refused by its verification', sign(stale, 'https://ornek.com.tr'), UNCOUNTED);
  await k.expect(t, 401, 'origin refused', sign(first, 'https://baska.example'), COUNTED);
  await k.expect(t, 200, 'redeemed with a key', sign(first, 'https://ornek.com.tr', { 'idempotency-key': 'contract-s1' }), COUNTED);
  await k.expect(t, 200, 'the same key again: the first answer', sign(first, 'https://ornek.com.tr', { 'idempotency-key': 'contract-s1' }), COUNTED);
  await k.expect(t, 422, 'the same key with other documents', sign(first, 'https://ornek.com.tr', { 'idempotency-key': 'contract-s1' }, [...DOCUMENTS, ...DOCUMENTS]), COUNTED);
  await k.expect(t, 400, 'already used', sign(first, 'https://ornek.com.tr'), COUNTED);
  const second = await signOne(k.c, accessToken);
  await k.expect(t, 422, 'the key of another token', sign(second, 'https://ornek.com.tr', { 'idempotency-key': 'contract-s1' }), COUNTED);
  const third = await signOne(k.c, accessToken);
  await k.expect(t, 200, 'the second unit', sign(second, 'https://ornek.com.tr'), COUNTED);
  await k.expect(t, 400, 'quota exhausted', sign(third, 'https://ornek.com.tr'), COUNTED);
  const inactive = await k.license();
  const inactiveToken = (await getTokenPair(k.c, inactive)).signToken;
  await k.admin('PATCH', `/admin/v1/licenses/${inactive.licenseKey}`, { isActive: false });
  await k.expect(t, 401, 'the license deactivated since', sign(inactiveToken), COUNTED);
  const limited = await k.license({ domains: ['ornek.com.tr'] });
  const token = (await getTokenPair(k.c, limited)).signToken;
  const over = await k.untilLimited(t, 'sign, refused origin', sign(token, 'https://baska.example'), 401, 100);
  t.match(over.headers.get('ratelimit'), /^"validate";r=0;t=\d+$/, 'over validate\'s limit, which sign shares');
});

t.test('check-quota', async (t) => {
  const lic = await k.license();
  await k.expect(t, 200, 'found', checkQuota(lic.licenseKey), COUNTED);
  await k.expect(t, 400, 'no UUID', checkQuota('not-a-uuid'), UNCOUNTED);
  await k.expect(t, 404, 'unknown', checkQuota(randomUUID()), UNCOUNTED); // a key no license has: never counted
  await k.expect(t, 410, 'expired', checkQuota((await k.license({ expiryDate: past() })).licenseKey), COUNTED);
  await k.expect(t, 403, 'inactive', checkQuota((await k.license({ isActive: false })).licenseKey), COUNTED);
  // QUOTA_EXCEEDED was counted (RateLimit fields) and is no rate limit (no Retry-After)
  const used = await k.expect(t, 429, 'QUOTA_EXCEEDED', checkQuota((await k.license({ totalQuota: 0 })).licenseKey), { rateLimit: true, retryAfter: false });
  t.equal(used.body.error.code, 'QUOTA_EXCEEDED');
  const limited = await k.untilLimited(t, 'check-quota', checkQuota(lic.licenseKey), 200, 10);
  t.equal(limited.body.error.code, 'RATE_LIMITED');
  t.equal(String(limited.body.retryAfter), limited.headers.get('retry-after'), 'retryAfter is Retry-After');
});

t.test('history', async (t) => {
  const lic = await k.license({ totalQuota: 5 });
  const { accessToken, signToken: first } = await getTokenPair(k.c, lic);
  await k.expect(t, 200, 'redeemed', validate(first));
  await k.expect(t, 200, 'redeemed', validate(await signOne(k.c, accessToken), 'https://eczane.example'));
  // the usage worker writes the redemptions to Postgres
  const page = await pollUntil(() => history(lic.licenseKey, accessToken, '?limit=1')(k.c), (r) => r.body?.data?.nextCursor !== null);
  t.equal(page.status, 200);
  t.type(page.body.data.nextCursor, 'string', 'a page with a cursor');
  await k.expect(t, 200, 'the next page', history(lic.licenseKey, accessToken, `?limit=1&cursor=${page.body.data.nextCursor}`), COUNTED);
  t.equal(page.headers.get('ratelimit-policy'), '"history";q=60;w=60', 'the policy as configured by default');
  await k.expect(t, 400, 'key not a UUID', history('nope', accessToken), UNCOUNTED);
  await k.expect(t, 400, 'limit 501', history(lic.licenseKey, accessToken, '?limit=501'), UNCOUNTED);
  await k.expect(t, 400, 'a cursor not handed out', history(lic.licenseKey, accessToken, `?cursor=${'A'.repeat(82)}`), UNCOUNTED);
  await k.expect(t, 401, 'no token', history(lic.licenseKey, null), UNCOUNTED);
  await k.expect(t, 401, 'a malformed access token', history(lic.licenseKey, 'not.a.jwt'), UNCOUNTED);
  await k.expect(t, 403, 'another license\'s token', history((await k.license()).licenseKey, accessToken), UNCOUNTED);
  const revoked = await k.license();
  const revokedToken = (await getTokenPair(k.c, revoked)).accessToken;
  await k.admin('PATCH', `/admin/v1/licenses/${revoked.licenseKey}`, { password: 'a new password' });
  await k.expect(t, 401, 'revoked by a password change: INVALID_TOKEN', history(revoked.licenseKey, revokedToken), COUNTED);
  const over = await k.untilLimited(t, 'history', history(lic.licenseKey, accessToken, '?limit=1'), 200, 60);
  t.match(over.headers.get('ratelimit'), /^"history";r=0;t=\d+$/, 'over the limit');
  t.equal(over.headers.get('ratelimit')?.split('t=')[1], over.headers.get('retry-after'), 't is Retry-After');
  t.same(over.body, { success: false, message: 'Çok fazla istek. Lütfen bekleyiniz.', retryAfter: Number(over.headers.get('retry-after')) },
    'the published 429 body');
});

t.test('ledger', async (t) => {
  const lic = await k.license({ totalQuota: 5 });
  const { accessToken } = await getTokenPair(k.c, lic);
  t.equal((await k.admin('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 3, note: 'ikinci paket' })).status, 200, 'a second package');
  const page = await k.expect(t, 200, 'the first page', ledger(lic.licenseKey, accessToken, '?limit=1'), COUNTED);
  t.type(page.body.data.nextCursor, 'string', 'a page with a cursor');
  t.equal(page.headers.get('ratelimit-policy'), '"history";q=60;w=60', 'history\'s policy: one count for both');
  await k.expect(t, 200, 'the next page', ledger(lic.licenseKey, accessToken, `?limit=1&cursor=${page.body.data.nextCursor}`), COUNTED);
  await k.expect(t, 400, 'key not a UUID', ledger('nope', accessToken), UNCOUNTED);
  await k.expect(t, 400, 'limit 501', ledger(lic.licenseKey, accessToken, '?limit=501'), UNCOUNTED);
  await k.expect(t, 400, 'a cursor not handed out', ledger(lic.licenseKey, accessToken, `?cursor=${'A'.repeat(82)}`), UNCOUNTED);
  await k.expect(t, 401, 'no token', ledger(lic.licenseKey, null), UNCOUNTED);
  await k.expect(t, 401, 'a malformed access token', ledger(lic.licenseKey, 'not.a.jwt'), UNCOUNTED);
  await k.expect(t, 403, 'another license\'s token', ledger((await k.license()).licenseKey, accessToken), UNCOUNTED);
  await k.expect(t, 403, 'a key no license has', ledger(randomUUID(), accessToken), UNCOUNTED);
  const revoked = await k.license();
  const revokedToken = (await getTokenPair(k.c, revoked)).accessToken;
  await k.admin('PATCH', `/admin/v1/licenses/${revoked.licenseKey}`, { password: 'a new password' });
  await k.expect(t, 401, 'revoked by a password change: INVALID_TOKEN', ledger(revoked.licenseKey, revokedToken), COUNTED);
  const over = await k.untilLimited(t, 'ledger', ledger(lic.licenseKey, accessToken, '?limit=1'), 200, 60);
  t.match(over.headers.get('ratelimit'), /^"history";r=0;t=\d+$/, 'over the limit');
  t.same(over.body, { success: false, message: 'Çok fazla istek. Lütfen bekleyiniz.', retryAfter: Number(over.headers.get('retry-after')) },
    'the published 429 body');
});

// last: it spends this address's budget of failed get-tokens. Past the budget (30) an attempt
// is held for its turn (one every 2 s, up to 10 s), so one at a time never meets a 429: a
// burst at once does
t.test('get-token: an address past its budget of failed attempts', async (t) => {
  const answers = await Promise.all(Array.from({ length: 50 }, () => getToken(randomUUID(), 'wrong')(k.c.expecting(COUNTED))));
  const statuses = answers.map((a) => a.status);
  t.ok(statuses.every((s) => s === 401 || s === 429), `only 401 and 429 (${statuses.join(',')})`);
  const blocked = answers.find((a) => a.status === 429);
  t.ok(blocked, 'a 429 for the attempts more than 10 s from their turn');
  t.equal(blocked?.headers.get('ratelimit-policy'), '"failed-logins";q=30;w=60', 'the failed-logins policy');
});

t.test('every answer matched the document, and every documented status was seen', async (t) => {
  const PUBLIC = ['/api/v1/auth/get-token', '/api/v1/auth/sign-token', '/api/license/validate', '/api/signature/sign', '/api/license/check-quota/{licenseKey}',
    '/api/license/history/{licenseKey}', '/api/license/ledger/{licenseKey}'];
  k.finish(t, (op) => {
    const [method, path, status] = op.split(' ') as [string, string, string?];
    return method !== 'options' && PUBLIC.includes(path) && !['405', '413', '503'].includes(status ?? '');
  });
});
