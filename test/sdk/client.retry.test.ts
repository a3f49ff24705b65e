import { LicenseApiError, LicenseClient, LicenseNetworkError, type RetryInfo } from '@license-service/client';
import t from 'tap';
import { adminView } from '../helpers/admin.js';
import { startHarness, type TestLicense } from '../helpers/harness.js';
import { claimsOf } from '../helpers/jwt.js';
import { documentNamed, receiptParts, SIGN } from '../helpers/receipts.js';
import { rejection } from '../helpers/sdk.js';
import { RATE_MESSAGE } from '../helpers/shapes.js';
import { getTokenPair, TokenSource } from '../helpers/tokens.js';

// The SDK's retries against a real server with low rate limits: a 429 is sent again after its
// Retry-After, only as often as maxAttempts allows and never when Retry-After is longer than
// maxDelayMs; a lost answer is sent again only when that is safe (validate, sign and release
// with an Idempotency-Key, reads, logins). No clock is read: a retry that succeeds where the window
// had not yet ended shows that the SDK waited for it. A rate-limit window is 60 s; to keep the
// waits short, a test shortens the window's counter in Redis (PEXPIRE) once it is full.

const h = await startHarness(t, 'sdk-retry', {
  RATE_GET_TOKEN_PER_MIN: '2',
  RATE_SIGN_TOKEN_PER_MIN: '2',
  RATE_VALIDATE_PER_MIN: '2',
  RATE_CHECK_QUOTA_PER_MIN: '2',
  RATE_HISTORY_PER_MIN: '2',
});

/** A client that counts what it sends and records each retry it makes. */
function retrying(maxAttempts: number, maxDelayMs = 5000, send: typeof fetch = fetch) {
  const sent: string[] = [];
  const retries: RetryInfo[] = [];
  const client = new LicenseClient({
    baseUrl: h.url,
    fetch: (input, init) => { sent.push(String(input)); return send(input, init); },
    retry: { maxAttempts, maxDelayMs, onRetry: (info) => retries.push(info) },
  });
  return { client, sent, retries };
}

/** Ends the current window of a rate-limit counter in `ms` (the server answers Retry-After: ceil(ms / 1000)). */
async function shortenWindow(key: string, ms = 1500): Promise<void> {
  t.equal(await h.redis.pexpire(key, ms), 1, `counter ${key} exists`);
}

function rateKeys(lic: TestLicense) {
  const firma = h.keys.forLicense(lic.firmaId);
  // check-quota counts per key and client address: this test's, 127.0.0.1
  return {
    getToken: h.keys.rateGetToken(lic.licenseKey), checkQuota: h.keys.rateCheckQuota(lic.licenseKey, '127.0.0.1'), validate: firma.rateValidate,
    sign: firma.rateSign, history: firma.rateHistory,
  };
}

t.test('without retries a 429 surfaces as RATE_LIMITED with retryAfter, on every limited endpoint', async (t) => {
  const lic = await h.createLicense();
  const once = new LicenseClient({ baseUrl: h.url, retry: { maxAttempts: 1 } });
  const { accessToken, signToken } = await getTokenPair(h, lic);
  await once.getToken({ ...lic, imzaTipi: 0 });
  const calls: [string, () => Promise<unknown>][] = [
    ['get-token', () => once.getToken({ ...lic, imzaTipi: 0 })],
    ['sign-token', async () => { await once.signToken(accessToken, { imzaTipi: 0 }); await once.signToken(accessToken, { imzaTipi: 0 }); return once.signToken(accessToken, { imzaTipi: 0 }); }],
    ['validate', async () => { await once.validate({ token: signToken }); await once.validate({ token: signToken }).catch(() => {}); return once.validate({ token: signToken }); }],
    ['check-quota', async () => { await once.checkQuota(lic.licenseKey); await once.checkQuota(lic.licenseKey); return once.checkQuota(lic.licenseKey); }],
    ['history', async () => {
      await once.historyPage(lic.licenseKey, accessToken); await once.historyPage(lic.licenseKey, accessToken);
      return once.historyPage(lic.licenseKey, accessToken);
    }],
  ];
  for (const [what, call] of calls) {
    const err = await rejection(call());
    t.ok(err instanceof LicenseApiError, `${what}: a LicenseApiError`);
    const e = err as LicenseApiError;
    t.equal(e.status, 429, `${what}: 429`);
    t.equal(e.code, 'RATE_LIMITED', `${what}: RATE_LIMITED`);
    t.equal(e.message, RATE_MESSAGE, `${what}: the published message`);
    t.ok(Number.isInteger(e.retryAfter) && e.retryAfter! >= 1 && e.retryAfter! <= 60, `${what}: retryAfter in seconds (${e.retryAfter})`);
    t.equal((e.body as { retryAfter: number }).retryAfter, e.retryAfter, `${what}: header and body agree`);
  }
});

t.test('check-quota: a 429 is retried after Retry-After and then answered', async (t) => {
  const lic = await h.createLicense();
  const { client, sent, retries } = retrying(2);
  await client.checkQuota(lic.licenseKey);
  await client.checkQuota(lic.licenseKey);
  await shortenWindow(rateKeys(lic).checkQuota);
  const answer = await client.checkQuota(lic.licenseKey);
  t.equal(answer.data.licenseKey, lic.licenseKey, 'answered');
  t.equal(sent.length, 4, 'two, then the refused one and its retry');
  t.equal(retries.length, 1, 'one retry');
  const [retry] = retries;
  t.equal(retry?.attempt, 1);
  t.equal((retry?.error as LicenseApiError).code, 'RATE_LIMITED');
  t.equal(retry?.delayMs, (retry?.error as LicenseApiError).retryAfter! * 1000, 'waited Retry-After');
  t.ok(retry!.delayMs <= 2000, 'Retry-After of the shortened window');
  t.equal(await h.redis.get(rateKeys(lic).checkQuota), '1', 'the retry is the first request of a new window: the SDK waited for it');
});

t.test('history: a 429 is retried after Retry-After and then answered', async (t) => {
  const lic = await h.createLicense();
  const { accessToken } = await getTokenPair(h, lic);
  const { client, sent, retries } = retrying(2);
  await client.historyPage(lic.licenseKey, accessToken);
  await client.historyPage(lic.licenseKey, accessToken);
  await shortenWindow(rateKeys(lic).history);
  t.same(await client.historyPage(lic.licenseKey, accessToken), { items: [], nextCursor: null }, 'answered');
  t.equal(sent.length, 4, 'two, then the refused one and its retry');
  t.same(retries.map((r) => [r.attempt, (r.error as LicenseApiError).code]), [[1, 'RATE_LIMITED']], 'one retry, of the 429');
  t.equal(retries[0]?.delayMs, (retries[0]?.error as LicenseApiError).retryAfter! * 1000, 'waited Retry-After');
  t.equal(await h.redis.get(rateKeys(lic).history), '1', 'the retry is the first request of a new window: the SDK waited for it');
});

t.test('a Retry-After longer than maxDelayMs is not waited for: one request, the 429 thrown', async (t) => {
  const lic = await h.createLicense();
  const { client, sent, retries } = retrying(5, 5000);
  await client.checkQuota(lic.licenseKey);
  await client.checkQuota(lic.licenseKey);
  const err = await rejection(client.checkQuota(lic.licenseKey)) as LicenseApiError;
  t.equal(err.code, 'RATE_LIMITED');
  t.ok(err.retryAfter! > 5, `Retry-After ${err.retryAfter} s is over the 5 s bound`);
  t.equal(sent.length, 3, 'the refused request was not sent again');
  t.equal(retries.length, 0);
});

t.test('retries stop at maxAttempts when every answer is a 429', async (t) => {
  const lic = await h.createLicense();
  const key = rateKeys(lic).checkQuota;
  // before each request: the window full, ending within a second (Retry-After: 1)
  const full: typeof fetch = async (input, init) => { await h.redis.set(key, '99', 'PX', 900); return fetch(input, init); };
  const { client, sent, retries } = retrying(3, 5000, full);
  const err = await rejection(client.checkQuota(lic.licenseKey)) as LicenseApiError;
  t.equal(err.code, 'RATE_LIMITED', 'the last 429 thrown');
  t.equal(sent.length, 3, 'maxAttempts requests in all');
  t.same(retries.map((r) => [r.attempt, r.delayMs]), [[1, 1000], [2, 1000]], 'two retries, each after Retry-After');
});

t.test('get-token and sign-token: a 429 is retried, the tokens issued', async (t) => {
  const lic = await h.createLicense();
  const { client, sent, retries } = retrying(2);
  await client.getToken({ ...lic, imzaTipi: 0 });
  const pair = await client.getToken({ ...lic, imzaTipi: 1 });
  await shortenWindow(rateKeys(lic).getToken);
  t.equal((await client.getToken({ ...lic, imzaTipi: 0 })).success, true, 'get-token answered after the wait');
  await client.signToken(pair.accessToken, { imzaTipi: 0 });
  await client.signToken(pair.accessToken, { imzaTipi: 0 });
  await shortenWindow(rateKeys(lic).sign);
  t.equal((await client.signToken(pair.accessToken, { imzaTipi: 1 })).success, true, 'sign-token answered after the wait');
  t.equal(sent.length, 8);
  t.same(retries.map((r) => (r.error as LicenseApiError).code), ['RATE_LIMITED', 'RATE_LIMITED']);
});

t.test('validate without a key: a 429 is retried (a refusal spends nothing), the token redeemed once', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5 });
  const tokens = await new TokenSource(h, lic).many(3);
  const { client, sent, retries } = retrying(2);
  await client.validate({ token: tokens[0]! });
  await client.validate({ token: tokens[1]! });
  await shortenWindow(rateKeys(lic).validate);
  const third = await client.validate({ token: tokens[2]! });
  t.equal(third.usedQuota, 3, 'redeemed after the wait');
  t.equal(sent.length, 4);
  t.equal(retries.length, 1);
  t.equal((await adminView(h, lic.licenseKey)).usedQuota, 3, 'three units spent, not more');
});

/** A fetch whose first answer to a POST of `path` is lost after the server handled the request. */
function losingFirst(path = '/api/license/validate'): typeof fetch {
  let lost = false;
  return async (input, init) => {
    const res = await fetch(input, init);
    if (!lost && String(input).endsWith(path)) {
      lost = true;
      await res.text();
      throw new TypeError('fetch failed (the answer was lost)');
    }
    return res;
  };
}

t.test('a lost answer: validate without a key is not sent again; with a key it is, and the first redemption answers', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5 });
  const [a, b] = await new TokenSource(h, lic).many(2);

  const bare = retrying(3, 5000, losingFirst());
  const lost = await rejection(bare.client.validate({ token: a! }));
  t.ok(lost instanceof LicenseNetworkError, 'no answer: LicenseNetworkError');
  t.equal(bare.sent.length, 1, 'not sent again: it may have been redeemed');
  t.equal((await adminView(h, lic.licenseKey)).usedQuota, 1, 'and it was: a retry would have answered "already used"');

  await h.redis.del(rateKeys(lic).validate);
  const keyed = retrying(3, 5000, losingFirst());
  const answer = await keyed.client.validate({ token: b! }, { idempotencyKey: 'handoff-42' });
  t.equal(keyed.sent.length, 2, 'sent again after the lost answer');
  t.ok(keyed.retries[0]?.error instanceof LicenseNetworkError, 'the retry followed a network error');
  t.strictSame(answer, { success: true, message: 'Token doğrulandı, imza kotası düşüldü', usedQuota: 2, remainingQuota: 3 }, 'the first redemption\'s answer');
  t.equal((await adminView(h, lic.licenseKey)).usedQuota, 2, 'one unit for the token, not two');
});

t.test('a lost answer: sign without a key is not sent again; with a key it is, and answers the receipt of the first redemption', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5 });
  const [a, b] = await new TokenSource(h, lic).many(2);
  const documents = [documentNamed('recete.xml')];

  const bare = retrying(3, 5000, losingFirst(SIGN));
  t.ok(await rejection(bare.client.sign({ token: a!, documents })) instanceof LicenseNetworkError, 'no answer: LicenseNetworkError');
  t.equal(bare.sent.length, 1, 'not sent again: it may have been redeemed');
  t.equal((await adminView(h, lic.licenseKey)).usedQuota, 1, 'and it was');

  await h.redis.del(rateKeys(lic).validate); // sign counts toward validate's limit
  const keyed = retrying(3, 5000, losingFirst(SIGN));
  const answer = await keyed.client.sign({ token: b!, documents }, { idempotencyKey: 'imza-42' });
  t.equal(keyed.sent.length, 2, 'sent again after the lost answer');
  t.ok(keyed.retries[0]?.error instanceof LicenseNetworkError, 'the retry followed a network error');
  t.match(answer, { usedQuota: 2, remainingQuota: 3 }, 'the first redemption\'s figures');
  t.match(receiptParts(answer.receipt).payload, { jti: claimsOf(b!).token_id, used_quota: 2 }, 'and its receipt');
  t.equal((await adminView(h, lic.licenseKey)).usedQuota, 2, 'one unit for the token, not two');
});

t.test('a lost answer: release without a key is not sent again; with a key it is, and answers the first release', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5, releasesPerDay: 5 });
  const [a, b] = await new TokenSource(h, lic).many(2);
  const once = new LicenseClient({ baseUrl: h.url, retry: { maxAttempts: 1 } });
  await once.validate({ token: a! });
  await once.validate({ token: b! });
  await h.redis.del(rateKeys(lic).validate);

  const bare = retrying(3, 5000, losingFirst('/api/license/release'));
  t.ok(await rejection(bare.client.release({ token: a! })) instanceof LicenseNetworkError, 'no answer: LicenseNetworkError');
  t.equal(bare.sent.length, 1, 'not sent again: the unit may have come back');
  t.equal((await adminView(h, lic.licenseKey)).usedQuota, 1, 'and it did: a retry would have answered "already released"');

  const keyed = retrying(3, 5000, losingFirst('/api/license/release'));
  const answer = await keyed.client.release({ token: b!, reason: 'kart çıkarıldı' }, { idempotencyKey: 'iade-42' });
  t.equal(keyed.sent.length, 2, 'sent again after the lost answer');
  t.ok(keyed.retries[0]?.error instanceof LicenseNetworkError, 'the retry followed a network error');
  t.strictSame(answer, { success: true, message: 'Token iade edildi, imza kotası geri verildi', usedQuota: 0, remainingQuota: 5 }, 'the first release\'s answer');
  t.equal((await adminView(h, lic.licenseKey)).usedQuota, 0, 'one unit back for the token, not two');
});

t.test('validateLicense: a lost answer is sent again (it spends nothing), a 429 after Retry-After', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5 });
  const lost = retrying(3, 5000, losingFirst('/api/License/validate'));
  const answer = await lost.client.validateLicense(lic);
  t.equal(answer.success, true, 'answered');
  t.equal(lost.sent.length, 2, 'sent again after the lost answer');
  t.ok(lost.retries[0]?.error instanceof LicenseNetworkError);

  // both logins counted toward the key's RATE_GET_TOKEN_PER_MIN (2): the next one waits for the window
  const { client, sent, retries } = retrying(2);
  await shortenWindow(rateKeys(lic).getToken);
  t.equal((await client.validateLicense(lic)).success, true, 'answered after the wait');
  t.equal(sent.length, 2, 'the refused one and its retry');
  t.same(retries.map((r) => (r.error as LicenseApiError).code), ['RATE_LIMITED']);
  t.equal((await adminView(h, lic.licenseKey)).usedQuota, 0, 'no quota spent');
});

/** A fetch that answers the first request itself with `first` (a proxy's answer), then sends the rest to the server. */
function answeringFirst(first: () => Response): typeof fetch {
  let answered = false;
  return async (input, init) => {
    if (answered) return fetch(input, init);
    answered = true;
    return first();
  };
}

const unavailable = () => new Response(JSON.stringify({ success: false, message: 'Hizmet geçici olarak kullanılamıyor' }), {
  status: 503, headers: { 'content-type': 'application/json', 'retry-after': '1' },
});

t.test('a 503 with Retry-After: retried, but for validate without a key (the token may have been redeemed)', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5 });
  const [a, b] = await new TokenSource(h, lic).many(2);
  const read = retrying(3, 5000, answeringFirst(unavailable));
  t.equal((await read.client.checkQuota(lic.licenseKey)).success, true, 'check-quota answered after the wait');
  t.same(read.retries.map((r) => [(r.error as LicenseApiError).code, r.delayMs]), [['SERVICE_UNAVAILABLE', 1000]]);

  const bare = retrying(3, 5000, answeringFirst(unavailable));
  const err = await rejection(bare.client.validate({ token: a! })) as LicenseApiError;
  t.match(err, { status: 503, code: 'SERVICE_UNAVAILABLE', message: 'Hizmet geçici olarak kullanılamıyor', retryAfter: 1 }, 'validate without a key: thrown');
  t.equal(bare.sent.length, 1, 'not sent again');

  const keyed = retrying(3, 5000, answeringFirst(unavailable));
  t.equal((await keyed.client.validate({ token: b! }, { idempotencyKey: 'k-503' })).usedQuota, 1, 'with a key: retried and redeemed');
  t.equal(keyed.sent.length, 2);
});

t.test('an answer in no published shape: UNEXPECTED_RESPONSE with the text kept, not retried', async (t) => {
  const html = retrying(3, 5000, answeringFirst(() => new Response('<html>502 Bad Gateway</html>', { status: 502 })));
  const err = await rejection(html.client.checkQuota((await h.createLicense()).licenseKey)) as LicenseApiError;
  t.match(err, { status: 502, code: 'UNEXPECTED_RESPONSE', body: '<html>502 Bad Gateway</html>' });
  t.equal(html.sent.length, 1);
  const odd = retrying(1, 5000, answeringFirst(() => Response.json({ success: false, message: 'constructor' }, { status: 400 })));
  t.match(await rejection(odd.client.validate({ token: 'a.b.c' })), { status: 400, code: 'UNEXPECTED_RESPONSE', message: 'constructor' },
    'a message the SDK does not know');
});
