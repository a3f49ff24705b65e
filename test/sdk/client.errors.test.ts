import { randomUUID } from 'node:crypto';
import { createServer, type Socket } from 'node:net';
import {
  LicenseApiError, LicenseClient, LicenseNetworkError, LicenseSdkError, LicenseTimeoutError, type ImzaTipi,
} from '@license-service/client';
import t from 'tap';
import { adminOk, adminView } from '../helpers/admin.js';
import { NO_RATE_LIMITS, startHarness } from '../helpers/harness.js';
import { craftJwt, decodeJwt, HS256_HEADER } from '../helpers/jwt.js';
import { apiError, countingFetch, rejection, sdkOf } from '../helpers/sdk.js';
import { getTokenPair, TokenSource } from '../helpers/tokens.js';

// Every published error of the public API, through the client SDK: the right error class,
// the status, the code (validate's: the SDK's, errors.ts VALIDATE_MESSAGES), the message
// exactly as published, and the extras the body carries. No answer at all is a
// LicenseNetworkError or LicenseTimeoutError, never a LicenseApiError. (Rate limits and
// retries: client.retry.test.ts.)

const h = await startHarness(t, 'sdk-errors', NO_RATE_LIMITS);
const sdk = sdkOf(h);
const secret = Buffer.from(h.config.jwtKeys[0]!.secret);
const past = (): string => new Date(Date.now() - 3 * 86400_000 - 3600_000).toISOString();

t.test('get-token: INVALID_CREDENTIALS, INVALID_REQUEST, INSUFFICIENT_QUOTA, LICENSE_EXPIRED, LICENSE_INACTIVE', async (t) => {
  const lic = await h.createLicense();
  await apiError(t, sdk.getToken({ ...lic, password: 'wrong', imzaTipi: 0 }), 401, 'INVALID_CREDENTIALS', 'Lisans anahtarı veya şifre hatalı');
  await apiError(t, sdk.getToken({ ...lic, licenseKey: randomUUID(), imzaTipi: 0 }), 401, 'INVALID_CREDENTIALS', 'Lisans anahtarı veya şifre hatalı');
  const bad = await apiError(t, sdk.getToken({ ...lic, imzaTipi: 2 as ImzaTipi }), 400, 'INVALID_REQUEST', 'Geçersiz istek parametresi: imzaTipi');
  t.strictSame(bad.body, { success: false, error: { code: 'INVALID_REQUEST', message: 'Geçersiz istek parametresi: imzaTipi' } }, 'the body as sent');
  const empty = await h.createLicense({ totalQuota: 0 });
  await apiError(t, sdk.getToken({ ...empty, imzaTipi: 0 }), 400, 'INSUFFICIENT_QUOTA', 'Yetersiz imza kotası');
  const expired = await h.createLicense({ expiryDate: past() });
  await apiError(t, sdk.getToken({ ...expired, imzaTipi: 1 }), 401, 'LICENSE_EXPIRED', 'Lisans süresi dolmuş');
  const inactive = await h.createLicense({ isActive: false });
  await apiError(t, sdk.getToken({ ...inactive, imzaTipi: 0 }), 401, 'LICENSE_INACTIVE', 'Lisans aktif değil');
});

t.test('sign-token: INVALID_TOKEN, INVALID_REQUEST, INSUFFICIENT_QUOTA, LICENSE_EXPIRED', async (t) => {
  const invalid = 'Geçersiz veya süresi dolmuş erişim tokenı';
  await apiError(t, sdk.signToken('not-a-jwt', { imzaTipi: 0 }), 401, 'INVALID_TOKEN', invalid);
  const lic = await h.createLicense({ totalQuota: 1 });
  const { accessToken, signToken } = await getTokenPair(h, lic);
  await apiError(t, sdk.signToken(signToken, { imzaTipi: 0 }), 401, 'INVALID_TOKEN', invalid); // a sign token as Bearer
  await apiError(t, sdk.signToken(accessToken, { imzaTipi: -1 as ImzaTipi }), 400, 'INVALID_REQUEST', 'Geçersiz istek parametresi: imzaTipi');
  await sdk.validate({ token: signToken });
  await apiError(t, sdk.signToken(accessToken, { imzaTipi: 0 }), 400, 'INSUFFICIENT_QUOTA', 'Yetersiz imza kotası');
  const later = await h.createLicense();
  const access = (await getTokenPair(h, later)).accessToken;
  await adminOk(h, 'PATCH', `/admin/v1/licenses/${later.licenseKey}`, { expiryDate: past() });
  await apiError(t, sdk.signToken(access, { imzaTipi: 1 }), 401, 'LICENSE_EXPIRED', 'Lisans süresi dolmuş');
});

t.test('validate: each published message under its SDK code', async (t) => {
  await apiError(t, sdk.validate({ token: '' }), 400, 'TOKEN_EMPTY', 'Token boş olamaz');
  await apiError(t, sdk.validate({ token: 'a.b.c' }), 401, 'TOKEN_INVALID', 'Geçersiz token');

  const lic = await h.createLicense({ totalQuota: 1, domains: ['eczane.example.com'] });
  const [first, second] = await new TokenSource(h, lic).many(2);
  const claims = decodeJwt(first!).payload;
  const now = Math.floor(Date.now() / 1000);
  const expired = craftJwt(HS256_HEADER, { ...claims, iat: now - 400, exp: now - 100 }, secret);
  await apiError(t, sdk.validate({ token: expired, origin: 'eczane.example.com' }), 401, 'TOKEN_EXPIRED', 'Token süresi dolmuş');
  await apiError(t, sdk.validate({ token: first!, origin: 'https://evil.example.org' }), 401, 'ORIGIN_NOT_AUTHORIZED', 'Bu domain için yetki yok');
  t.strictSame(await sdk.validate({ token: first!, origin: 'https://eczane.example.com' }),
    { success: true, message: 'Token doğrulandı, imza kotası düşüldü', usedQuota: 1, remainingQuota: 0 }, 'redeemed once allowed');
  await apiError(t, sdk.validate({ token: first!, origin: 'eczane.example.com' }), 400, 'TOKEN_ALREADY_USED', 'Bu token zaten kullanılmış. Yeni token alınız.');
  const exhausted = await apiError(t, sdk.validate({ token: second!, origin: 'eczane.example.com' }), 400, 'QUOTA_EXHAUSTED', 'İmza kotası doldu');
  t.strictSame(exhausted.body, { success: false, message: 'İmza kotası doldu', remainingQuota: 0 }, 'remainingQuota 0 in the body');
});

t.test('validate with an Idempotency-Key: another token under the key, a malformed key', async (t) => {
  const lic = await h.createLicense();
  const [a, b] = await new TokenSource(h, lic).many(2);
  const key = `order-${randomUUID()}`;
  await sdk.validate({ token: a! }, { idempotencyKey: key });
  await apiError(t, sdk.validate({ token: b! }, { idempotencyKey: key }), 422, 'IDEMPOTENCY_KEY_REUSED', 'Bu işlem anahtarı başka bir token için kullanıldı.');
  await apiError(t, sdk.validate({ token: b! }, { idempotencyKey: 'x'.repeat(256) }), 400, 'INVALID_REQUEST', 'Geçersiz istek: Idempotency-Key');
  // a key no header can carry is refused before anything is sent: the caller's error, neither the service's nor the network's
  const counter = countingFetch();
  const unsendable = await rejection(new LicenseClient({ baseUrl: h.url, fetch: counter.fetch }).validate({ token: b! }, { idempotencyKey: 'fiş-€-1' }));
  t.ok(unsendable instanceof LicenseSdkError && !(unsendable instanceof LicenseApiError) && !(unsendable instanceof LicenseNetworkError),
    `a LicenseSdkError of its own (${String(unsendable)})`);
  t.equal(counter.sent.length, 0, 'nothing sent');
  t.equal((await sdk.validate({ token: b! })).usedQuota, 2, 'the refused token still redeems');
});

t.test('release: each refusal it publishes under its SDK code; the day\'s allowance used is a 429 until the next UTC day', async (t) => {
  await apiError(t, sdk.release({ token: '' }), 400, 'TOKEN_EMPTY', 'Token boş olamaz');
  await apiError(t, sdk.release({ token: 'a.b.c' }), 401, 'TOKEN_INVALID', 'Geçersiz token');
  const closed = await h.createLicense(); // releasesPerDay 0, the default
  const [spent] = await new TokenSource(h, closed).many(1);
  await sdk.validate({ token: spent! });
  await apiError(t, sdk.release({ token: spent! }), 403, 'RELEASES_OFF', 'Bu lisans için iade kapalı');

  const lic = await h.createLicense({ totalQuota: 5, releasesPerDay: 2 });
  const [a, b, c] = await new TokenSource(h, lic).many(3);
  await apiError(t, sdk.release({ token: a! }), 400, 'TOKEN_NOT_REDEEMED', 'Bu token kullanılmamış; iade edilecek imza yok');
  for (const token of [a!, b!, c!]) await sdk.validate({ token });
  await sdk.release({ token: a! }, { idempotencyKey: 'iade-a' });
  await apiError(t, sdk.release({ token: a! }), 400, 'TOKEN_ALREADY_RELEASED', 'Bu token zaten iade edilmiş');
  await apiError(t, sdk.validate({ token: a! }), 400, 'TOKEN_ALREADY_USED', 'Bu token zaten kullanılmış. Yeni token alınız.');
  await apiError(t, sdk.release({ token: b! }, { idempotencyKey: 'iade-a' }), 422, 'IDEMPOTENCY_KEY_REUSED', 'Bu işlem anahtarı başka bir token için kullanıldı.');
  await apiError(t, sdk.release({ token: b! }, { idempotencyKey: 'x'.repeat(256) }), 400, 'INVALID_REQUEST', 'Geçersiz istek: Idempotency-Key');
  await sdk.release({ token: b! });

  const full = await rejection(sdk.release({ token: c! }));
  t.ok(full instanceof LicenseApiError, `a LicenseApiError (${String(full)})`);
  const e = full as LicenseApiError;
  t.match({ status: e.status, code: e.code, message: e.message }, { status: 429, code: 'RELEASE_ALLOWANCE_USED', message: 'Bu lisansın bugünkü iade hakkı doldu' });
  const secondsToMidnight = Math.ceil((86_400_000 - (Date.now() % 86_400_000)) / 1000);
  t.ok(e.retryAfter !== undefined && e.retryAfter > 0 && e.retryAfter <= secondsToMidnight + 1, `retryAfter: the seconds to the next UTC day (${e.retryAfter})`);
  t.equal((await adminView(h, lic.licenseKey)).usedQuota, 1, 'two units back, the third token\'s still spent');
});

t.test('check-quota: LICENSE_NOT_FOUND, LICENSE_EXPIRED with data, LICENSE_INACTIVE, QUOTA_EXCEEDED with data (not retried), INVALID_LICENSE_KEY', async (t) => {
  await apiError(t, sdk.checkQuota(randomUUID()), 404, 'LICENSE_NOT_FOUND', 'Lisans bulunamadı');
  await apiError(t, sdk.checkQuota('not-a-uuid'), 400, 'INVALID_LICENSE_KEY', 'Geçersiz lisans anahtarı formatı (UUID bekleniyor)');
  const expired = await h.createLicense({ expiryDate: past() });
  const gone = await apiError(t, sdk.checkQuota(expired.licenseKey), 410, 'LICENSE_EXPIRED', 'Lisans süresi dolmuş');
  t.match(gone.body, { success: false, data: { daysExpired: 3 }, timestamp: String }, 'data {expiryDate, daysExpired}, timestamp');
  t.type((gone.body as { data: { expiryDate: unknown } }).data.expiryDate, 'string');
  const inactive = await h.createLicense({ isActive: false });
  await apiError(t, sdk.checkQuota(inactive.licenseKey), 403, 'LICENSE_INACTIVE', 'Lisans aktif değil');

  // 429 without Retry-After: quota used up is no rate limit, and the SDK does not retry it
  const lic = await h.createLicense({ totalQuota: 1 });
  await sdk.validate({ token: (await getTokenPair(h, lic)).signToken });
  const counter = countingFetch();
  const retrying = new LicenseClient({ baseUrl: h.url, fetch: counter.fetch, retry: { maxAttempts: 3, maxDelayMs: 60_000 } });
  const full = await apiError(t, retrying.checkQuota(lic.licenseKey), 429, 'QUOTA_EXCEEDED', 'İmza kotası doldu');
  t.match(full.body, { data: { remainingQuota: 0, totalQuota: 1, usedQuota: 1 } }, 'data {remainingQuota 0, totalQuota, usedQuota}');
  t.equal(counter.sent.length, 1, 'sent once: no Retry-After, no retry');
});

t.test('history: INVALID_TOKEN, FORBIDDEN, INVALID_LICENSE_KEY, INVALID_REQUEST', async (t) => {
  const mine = await h.createLicense();
  const theirs = await h.createLicense();
  const access = (await getTokenPair(h, mine)).accessToken;
  const walk = (key: string, token: string, options = {}) => sdk.historyPage(key, token, options);
  await apiError(t, walk(mine.licenseKey, 'x.y.z'), 401, 'INVALID_TOKEN', 'Geçersiz veya süresi dolmuş erişim tokenı');
  await apiError(t, walk(theirs.licenseKey, access), 403, 'FORBIDDEN', 'Bu lisansın geçmişine erişim yetkiniz yok');
  await apiError(t, walk('nope', access), 400, 'INVALID_LICENSE_KEY', 'Geçersiz lisans anahtarı formatı (UUID bekleniyor)');
  await apiError(t, walk(mine.licenseKey, access, { limit: 501 }), 400, 'INVALID_REQUEST', 'Geçersiz istek parametresi: limit');
  await apiError(t, walk(mine.licenseKey, access, { cursor: 'bm90LWEtY3Vyc29y' }), 400, 'INVALID_REQUEST', 'Geçersiz istek parametresi: cursor');
  // the iterator throws the same error at its first step
  await apiError(t, sdk.history(theirs.licenseKey, access).next(), 403, 'FORBIDDEN', 'Bu lisansın geçmişine erişim yetkiniz yok');
});

t.test('ledger: INVALID_TOKEN, FORBIDDEN, INVALID_LICENSE_KEY, INVALID_REQUEST, as history', async (t) => {
  const mine = await h.createLicense();
  const theirs = await h.createLicense();
  const access = (await getTokenPair(h, mine)).accessToken;
  await apiError(t, sdk.ledger(mine.licenseKey, 'x.y.z'), 401, 'INVALID_TOKEN', 'Geçersiz veya süresi dolmuş erişim tokenı');
  await apiError(t, sdk.ledger(theirs.licenseKey, access), 403, 'FORBIDDEN', 'Bu lisansın geçmişine erişim yetkiniz yok');
  await apiError(t, sdk.ledger('nope', access), 400, 'INVALID_LICENSE_KEY', 'Geçersiz lisans anahtarı formatı (UUID bekleniyor)');
  await apiError(t, sdk.ledger(mine.licenseKey, access, { limit: 0 }), 400, 'INVALID_REQUEST', 'Geçersiz istek parametresi: limit');
  await apiError(t, sdk.ledger(mine.licenseKey, access, { cursor: 'bm90LWEtY3Vyc29y' }), 400, 'INVALID_REQUEST', 'Geçersiz istek parametresi: cursor');
});

t.test('the HTTP layer\'s own answers (unknown path) in each shape', async (t) => {
  const elsewhere = new LicenseClient({ baseUrl: `${h.url}/elsewhere/` });
  await apiError(t, elsewhere.checkQuota(randomUUID()), 404, 'NOT_FOUND', 'Kaynak bulunamadı');
  await apiError(t, elsewhere.validate({ token: 'a.b.c' }), 404, 'NOT_FOUND', 'Kaynak bulunamadı');
});

t.test('no answer: LicenseNetworkError; no answer in time: LicenseTimeoutError; neither an API error', async (t) => {
  // a port that was just free: the connection is refused
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as { port: number }).port;
  await new Promise((resolve) => closed.close(resolve));
  const refused = await rejection(new LicenseClient({ baseUrl: `http://127.0.0.1:${port}`, retry: { maxAttempts: 1 } }).checkQuota(randomUUID()));
  t.ok(refused instanceof LicenseNetworkError, `refused: LicenseNetworkError (${String(refused)})`);
  t.notOk(refused instanceof LicenseTimeoutError, 'refused: not a timeout');
  t.notOk(refused instanceof LicenseApiError, 'refused: not an API error');

  // a server that accepts and never answers
  const sockets: Socket[] = [];
  const silent = createServer((socket) => sockets.push(socket));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    silent.close();
  });
  const url = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
  const timedOut = await rejection(new LicenseClient({ baseUrl: url, timeoutMs: 300, retry: { maxAttempts: 1 } }).validate({ token: 'a.b.c' }));
  t.ok(timedOut instanceof LicenseTimeoutError, `silent: LicenseTimeoutError (${String(timedOut)})`);
  t.equal((timedOut as LicenseTimeoutError).timeoutMs, 300);
  t.ok(timedOut instanceof LicenseNetworkError, 'a timeout is a kind of network error');
});
