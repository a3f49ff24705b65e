import { randomUUID } from 'node:crypto';
import t from 'tap';
import { adminOk, adminView } from '../helpers/admin.js';
import { NO_RATE_LIMITS, startHarness, type TestLicense } from '../helpers/harness.js';
import type { Answer } from '../helpers/http.js';
import { claimsOf, craftJwt, decodeJwt, HS256_HEADER } from '../helpers/jwt.js';
import { scrape, type Scrape } from '../helpers/metrics.js';
import { documentNamed, sign, SIGN } from '../helpers/receipts.js';
import { MSG, NOT_AN_OBJECT, RATE_MESSAGE, type Asserts } from '../helpers/shapes.js';
import { TokenSource } from '../helpers/tokens.js';

// POST /api/Signature/sign refusals, every row of its error table, answered exactly as
// validate answers them ({success:false, message}, the same statuses and messages): the
// token's, the license's, the origin's and the quota's; documents missing or malformed of
// every kind; a malformed Idempotency-Key; a key reused by another token, by the other
// endpoint, or with other documents; the rate limit validate counts, shared with it. A
// refusal spends nothing and burns no token.

const LIMIT = 20;
const h = await startHarness(t, 'sign-error', { ...NO_RATE_LIMITS, RATE_VALIDATE_PER_MIN: String(LIMIT) });
const secret = Buffer.from(h.config.jwtKeys[0]!.secret);
const DOCS = [documentNamed('belge.pdf')];
const KEY_REUSED = 'Bu işlem anahtarı başka bir token için kullanıldı.';

/** A refusal: the status, exactly {success:false, message}, as JSON. */
function refused(t: Asserts, res: Answer, status: number, message: string, what: string): void {
  t.equal(res.status, status, `${what}: status ${status} (${res.text.slice(0, 200)})`);
  t.strictSame(res.body, { success: false, message }, `${what}: body`);
  t.match(res.headers.get('content-type') ?? '', /^application\/json/, `${what}: JSON`);
}

const usedOf = async (lic: TestLicense): Promise<number> => (await adminView(h, lic.licenseKey)).usedQuota as number;

t.test('400 Token boş olamaz: token missing, empty, null or blank', async (t) => {
  for (const [what, token] of [['no token field', undefined], ['empty', ''], ['null', null], ['blank', ' \t\n ']] as const) {
    refused(t, await sign(h, token === undefined ? { documents: DOCS } : { token, documents: DOCS }), 400, MSG.EMPTY, what);
  }
});

t.test('400 Geçersiz istek: documents, for every kind of bad list; nothing spent, the token still good', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5 });
  const token = await new TokenSource(h, lic).next();
  const hex = 'a'.repeat(64);
  const cases: [string, unknown][] = [
    ['missing', undefined], ['null', null], ['an object', { name: 'a', sha256: hex }], ['a string', 'a.pdf'], ['empty', []],
    ['101 documents', Array.from({ length: 101 }, (_, i) => documentNamed(`d${i}`))],
    ['a document null', [null]], ['a document a string', ['a.pdf']],
    ['name missing', [{ sha256: hex }]], ['name empty', [{ name: '', sha256: hex }]], ['name 256 characters', [{ name: 'n'.repeat(256), sha256: hex }]],
    ['name a number', [{ name: 42, sha256: hex }]], ['name with NUL', [{ name: 'a\u0000b', sha256: hex }]],
    ['name with a line break', [{ name: 'a\nb', sha256: hex }]], ['name with a lone surrogate', [{ name: 'a\ud800', sha256: hex }]],
    ['sha256 missing', [{ name: 'a' }]], ['sha256 63 digits', [{ name: 'a', sha256: hex.slice(1) }]],
    ['sha256 65 digits', [{ name: 'a', sha256: `${hex}0` }]], ['sha256 not hex', [{ name: 'a', sha256: 'g'.repeat(64) }]],
    ['sha256 base64', [{ name: 'a', sha256: Buffer.alloc(32).toString('base64') }]],
    ['a member more', [{ name: 'a', sha256: hex, size: 10 }]],
    ['one good, one bad', [documentNamed('ok.pdf'), { name: 'b', sha256: 'x' }]],
  ];
  for (const [what, documents] of cases) {
    refused(t, await sign(h, documents === undefined ? { token } : { token, documents }), 400, 'Geçersiz istek: documents', what);
  }
  t.equal(await usedOf(lic), 0, 'none of them spent anything');
  t.same((await sign(h, { token, documents: DOCS })).body.usedQuota, 1, 'the token redeems');
});

t.test('400 for a body that is not a JSON object or a field of the wrong type', async (t) => {
  for (const [what, raw] of NOT_AN_OBJECT) refused(t, await h.request('POST', SIGN, raw), 400, 'Geçersiz istek: gövde bir JSON nesnesi olmalı', what);
  refused(t, await sign(h, { token: 'a.b.c', origin: 7, documents: DOCS }), 400, 'Geçersiz istek: origin', 'origin a number');
  refused(t, await sign(h, { token: 42, documents: DOCS }), 400, 'Geçersiz istek: token', 'token a number');
});

t.test('401 for tokens that do not verify: malformed, forged, expired', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5 });
  const real = await new TokenSource(h, lic).next();
  const claims = decodeJwt(real).payload;
  const now = Math.floor(Date.now() / 1000);
  refused(t, await sign(h, { token: 'not-a-token', documents: DOCS }), 401, MSG.INVALID, 'malformed');
  refused(t, await sign(h, { token: craftJwt(HS256_HEADER, claims, 'another secret'), documents: DOCS }), 401, MSG.INVALID, 'another key');
  refused(t, await sign(h, { token: craftJwt(HS256_HEADER, { ...claims, firma_id: 'nosuchcompany000', token_id: randomUUID() }, secret), documents: DOCS }),
    401, MSG.INVALID, 'a company that does not exist');
  refused(t, await sign(h, { token: craftJwt(HS256_HEADER, { ...claims, iat: now - 400, exp: now - 100 }, secret), documents: DOCS }), 401, MSG.EXPIRED, 'expired');
  t.equal(await usedOf(lic), 0, 'no quota taken');
  t.equal((await sign(h, { token: real, documents: DOCS })).status, 200, 'the real token redeems');
});

t.test('400 used, 401 origin, 400 quota, 401 inactive or expired license: as validate answers them', async (t) => {
  const lic = await h.createLicense({ totalQuota: 1, domains: ['imza.ornek.com.tr'] });
  const [a, b] = await new TokenSource(h, lic).many(2) as [string, string];
  refused(t, await sign(h, { token: a, origin: 'https://evil.example', documents: DOCS }), 401, MSG.ORIGIN, 'origin not allowed');
  refused(t, await sign(h, { token: a, documents: DOCS }), 401, MSG.ORIGIN, 'no origin');
  t.equal((await sign(h, { token: a, origin: 'https://imza.ornek.com.tr', documents: DOCS })).status, 200, 'redeemed from the allowed origin');
  refused(t, await sign(h, { token: a, origin: 'https://imza.ornek.com.tr', documents: DOCS }), 400, MSG.USED, 'again: used');
  refused(t, await h.validate(a, 'https://imza.ornek.com.tr'), 400, MSG.USED, 'and at validate');
  const exhausted = await sign(h, { token: b, origin: 'https://imza.ornek.com.tr', documents: DOCS });
  t.same([exhausted.status, exhausted.body], [400, { success: false, message: MSG.QUOTA, remainingQuota: 0 }], 'quota exhausted');
  t.equal(await usedOf(lic), 1, 'one unit');

  const other = await h.createLicense({ totalQuota: 5 });
  const [c, d] = await new TokenSource(h, other).many(2) as [string, string];
  await adminOk(h, 'PATCH', `/admin/v1/licenses/${other.licenseKey}`, { isActive: false });
  refused(t, await sign(h, { token: c, documents: DOCS }), 401, MSG.INVALID, 'license inactive');
  await adminOk(h, 'PATCH', `/admin/v1/licenses/${other.licenseKey}`, { isActive: true, expiryDate: new Date(Date.now() - 86_400_000).toISOString() });
  refused(t, await sign(h, { token: d, documents: DOCS }), 401, MSG.INVALID, 'license expired');
  t.equal(await usedOf(other), 0, 'nothing spent');
});

t.test('Idempotency-Key: malformed 400; reused by another token, by validate, or with other documents 422', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10 });
  const source = new TokenSource(h, lic);
  const [a, b, c, d] = await source.many(4) as [string, string, string, string];
  refused(t, await sign(h, { token: a, documents: DOCS }, 'k'.repeat(256)), 400, 'Geçersiz istek: Idempotency-Key', '256 characters');
  refused(t, await sign(h, { token: a, documents: DOCS }, 'tab\there'), 400, 'Geçersiz istek: Idempotency-Key', 'a tab');

  const first = await sign(h, { token: a, documents: DOCS }, 'job-1');
  t.equal(first.status, 200, 'a redeemed with job-1');
  refused(t, await sign(h, { token: b, documents: DOCS }, 'job-1'), 422, KEY_REUSED, 'another token with job-1');
  refused(t, await sign(h, { token: a, documents: [documentNamed('other.pdf')] }, 'job-1'), 422, KEY_REUSED, 'the same token with other documents');
  refused(t, await sign(h, { token: a, documents: [...DOCS, ...DOCS] }, 'job-1'), 422, KEY_REUSED, 'the same token with a document more');
  const byValidate = await h.request('POST', '/api/license/validate', { token: a }, { 'idempotency-key': 'job-1' });
  refused(t, byValidate, 422, KEY_REUSED, 'the same token and key at validate');
  t.equal((await sign(h, { token: a, documents: DOCS }, 'job-1')).text, first.text, 'the sign itself still replays');

  t.equal((await h.request('POST', '/api/license/validate', { token: c }, { 'idempotency-key': 'job-2' })).status, 200, 'c validated with job-2');
  refused(t, await sign(h, { token: c, documents: DOCS }, 'job-2'), 422, KEY_REUSED, 'the same token and key at sign');
  refused(t, await sign(h, { token: d, documents: DOCS }, 'job-2'), 422, KEY_REUSED, 'another token with validate\'s key');
  t.equal(await usedOf(lic), 2, 'two units: a and c');
  t.same([(await sign(h, { token: b, documents: DOCS })).status, (await sign(h, { token: d, documents: DOCS }, 'job-3')).status], [200, 200],
    'the refused tokens redeem without the taken keys');
});

t.test('/metrics counts sign\'s answers by outcome, apart from validate\'s', async (t) => {
  const lic = await h.createLicense({ totalQuota: 1 });
  const [a, b] = await new TokenSource(h, lic).many(2) as [string, string];
  const before = await scrape(h);
  t.equal((await sign(h, { token: a, documents: DOCS })).status, 200);
  t.equal((await sign(h, { token: a, documents: DOCS })).status, 400);
  t.equal((await sign(h, { token: b, documents: DOCS })).status, 400);
  t.equal((await sign(h, { token: b, documents: [] })).status, 400);
  t.equal((await sign(h, { token: '', documents: DOCS })).status, 400);
  const after = await scrape(h);
  const delta = (s: Scrape, name: string, outcome: string) => s.value(name, { outcome });
  const signed = (outcome: string) => delta(after, 'license_signature_sign_outcomes_total', outcome) - delta(before, 'license_signature_sign_outcomes_total', outcome);
  t.same(['redeemed', 'already_used', 'quota_exhausted', 'bad_request', 'token_empty'].map(signed), [1, 1, 1, 1, 1], 'one of each');
  t.equal(after.value('license_validate_outcomes_total') - before.value('license_validate_outcomes_total'), 0, 'validate\'s count unchanged');
});

t.test('429: sign counts against validate\'s limit for the company, and answers as validate does', async (t) => {
  const lic = await h.createLicense({ totalQuota: 100, domains: ['imza.ornek.com.tr'] });
  const token = await new TokenSource(h, lic).next();
  // refusals that reach the script are counted: half at validate, half at sign
  for (let i = 0; i < LIMIT; i++) {
    const res = i % 2 === 0 ? await h.validate(token, 'https://evil.example') : await sign(h, { token, origin: 'https://evil.example', documents: DOCS });
    t.equal(res.status, 401, `request ${i + 1}: counted`);
    t.match(res.headers.get('ratelimit') ?? '', new RegExp(`^"validate";r=${LIMIT - i - 1};t=\\d+$`), `request ${i + 1}: RateLimit`);
  }
  const over = await sign(h, { token, origin: 'https://imza.ornek.com.tr', documents: DOCS });
  t.equal(over.status, 429, 'the next sign: 429');
  t.strictSame(over.body, { success: false, message: RATE_MESSAGE, retryAfter: Number(over.headers.get('retry-after')) }, 'validate\'s 429 body');
  t.equal(over.headers.get('ratelimit-policy'), `"validate";q=${LIMIT};w=60`, 'validate\'s policy');
  t.equal((await h.validate(token, 'https://imza.ornek.com.tr')).status, 429, 'and validate is refused as well');
  t.equal(await usedOf(lic), 0, 'nothing spent');
  t.equal(claimsOf(token).firma_id, lic.firmaId);
});
