import { randomBytes, randomUUID } from 'node:crypto';
import t from 'tap';
import { adminOk, adminView } from '../helpers/admin.js';
import { NO_RATE_LIMITS, startHarness } from '../helpers/harness.js';
import type { Answer } from '../helpers/http.js';
import { craftJwt, decodeJwt, HS256_HEADER, withPayload } from '../helpers/jwt.js';
import { expectMessageError, MSG, NOT_AN_OBJECT, type Asserts } from '../helpers/shapes.js';
import { TokenSource } from '../helpers/tokens.js';

// POST /api/license/validate refusals, every row of its error table: status and exactly
// {success:false, message}; bad input of every kind (not a JSON object, a token of the wrong
// type); a refusal spends nothing and burns no token: the same token redeems once the cause
// is gone.

const h = await startHarness(t, 'validate-error', NO_RATE_LIMITS);
const secret = Buffer.from(h.config.jwtKeys[0]!.secret);

/** A refusal: the status, exactly {success:false, message}, as JSON. */
function refused(t: Asserts, res: Answer, status: number, message: string, what: string): void {
  t.equal(res.status, status, `${what}: status ${status}`);
  t.strictSame(res.body, { success: false, message }, `${what}: body`);
  t.match(res.headers.get('content-type') ?? '', /^application\/json/, `${what}: JSON`);
}

t.test('400 Token boş olamaz: token missing, empty, null or blank', async (t) => {
  refused(t, await h.request('POST', '/api/license/validate', {}), 400, MSG.EMPTY, 'no token field');
  refused(t, await h.request('POST', '/api/license/validate', { origin: 'example.com' }), 400, MSG.EMPTY, 'only origin');
  refused(t, await h.validate(''), 400, MSG.EMPTY, 'empty string');
  refused(t, await h.validate(null), 400, MSG.EMPTY, 'null');
  refused(t, await h.validate('   '), 400, MSG.EMPTY, 'blank');
  refused(t, await h.validate(' \t\n '), 400, MSG.EMPTY, 'whitespace');
});

t.test('body that is not a JSON object: 400 {success:false, message}', async (t) => {
  const raws: [string, string][] = [
    ...NOT_AN_OBJECT,
    ...['[1,2]', '"eyJhbGciOiJIUzI1NiJ9.e30.x"', '{not json'].map((raw): [string, string] => [JSON.stringify(raw), raw]),
  ];
  for (const [what, raw] of raws) {
    expectMessageError(t, await h.request('POST', '/api/license/validate', raw), [400], what);
  }
});

t.test('a token or origin of the wrong type: 400 or 401 {success:false, message}', async (t) => {
  for (const [what, body] of [
    ['token a number', { token: 42 }],
    ['token an object', { token: { jwt: 'x' } }],
    ['token an array', { token: ['a.b.c'] }],
    ['token true', { token: true }],
    ['origin a number', { token: 'a.b.c', origin: 7 }],
  ] as [string, Record<string, unknown>][]) {
    expectMessageError(t, await h.request('POST', '/api/license/validate', body), [400, 401], what);
  }
});

t.test('the bounds of token and origin hold however a body spells its strings', async (t) => {
  const lic = await h.createLicense({ totalQuota: 1 });
  const real = await new TokenSource(h, lic).next();
  const raw = (fields: string) => h.request('POST', '/api/license/validate', `{${fields}}`);
  const tokenField = (token: string) => `"token":"${token}"`;
  // 4,096 characters at most: counted in characters, an emoji one whether written raw or escaped
  const cases: [string, string, number, string][] = [
    ['4,096 ASCII characters', tokenField('a'.repeat(4096)), 401, MSG.INVALID],
    ['4,097 ASCII characters', tokenField('a'.repeat(4097)), 400, 'Geçersiz istek: token'],
    ['4,096 characters, the last an emoji written raw', tokenField(`${'a'.repeat(4095)}😀`), 401, MSG.INVALID],
    ['4,096 characters, the last an emoji escaped', tokenField(`${'a'.repeat(4095)}\\ud83d\\ude00`), 401, MSG.INVALID],
    ['4,097 characters, the last an emoji written raw', tokenField(`${'a'.repeat(4096)}😀`), 400, 'Geçersiz istek: token'],
    ['4,097 characters, the last an emoji escaped', tokenField(`${'a'.repeat(4096)}\\ud83d\\ude00`), 400, 'Geçersiz istek: token'],
  ];
  // no control character, DEL or lone surrogate in a string: escaped, or the DEL JSON lets through raw
  for (const [what, inside] of [['NUL escaped', '\\u0000'], ['a tab escaped', '\\t'], ['DEL raw', '\x7f'], ['DEL escaped', '\\u007f'],
    ['a lone surrogate escaped', '\\ud800']]) {
    cases.push([`origin with ${what}`, `${tokenField(real)},"origin":"example.com${inside}"`, 400, 'Geçersiz istek: origin']);
    cases.push([`token with ${what}`, tokenField(`${real}${inside}`), 400, 'Geçersiz istek: token']);
  }
  for (const [what, fields, status, message] of cases) refused(t, await raw(fields), status, message, what);
  t.equal((await adminView(h, lic.licenseKey)).usedQuota, 0, 'none of them took quota');
  t.equal((await h.validate(real)).status, 200, 'none of them burned the real token');
});

t.test('401 Token süresi dolmuş: a correctly signed sign token past its exp', async (t) => {
  const lic = await h.createLicense({ totalQuota: 3 });
  const real = await new TokenSource(h, lic).next();
  const claims = decodeJwt(real).payload;
  const now = Math.floor(Date.now() / 1000);
  const expired = craftJwt(HS256_HEADER, { ...claims, iat: now - 400, exp: now - 100 }, secret);
  refused(t, await h.validate(expired), 401, MSG.EXPIRED, 'expired 100 s ago');
  const justExpired = craftJwt(HS256_HEADER, { ...claims, iat: now - 302, exp: now - 2 }, secret);
  refused(t, await h.validate(justExpired), 401, MSG.EXPIRED, 'expired 2 s ago');
  const other = craftJwt(HS256_HEADER, { ...claims, token_id: randomUUID(), iat: now - 400, exp: now - 100 }, secret);
  refused(t, await h.validate(other), 401, MSG.EXPIRED, 'expired, unknown token id');
  t.equal((await adminView(h, lic.licenseKey)).usedQuota, 0, 'no quota taken');
  // the unexpired original is still good
  t.equal((await h.validate(real)).status, 200, 'the real token still redeems');
});

t.test('401 Geçersiz token: malformed, tampered, wrongly signed or wrongly shaped tokens', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5 });
  const source = new TokenSource(h, lic);
  const real = await source.next(0);
  const { header, payload: claims } = decodeJwt(real);
  t.equal(craftJwt(header, claims, secret), real, 'the hand-made JWT of the real claims is the real token (crafting is sound)');
  const [h64, p64, s64] = real.split('.') as [string, string, string];

  const cases: [string, string][] = [
    ['garbage', 'not-a-token'],
    ['three garbage parts', 'abc.def.ghi'],
    ['random base64', randomBytes(48).toString('base64url')],
    ['header and payload only', `${h64}.${p64}`],
    ['empty signature', `${h64}.${p64}.`],
    ['four parts', `${real}.x`],
    ['signature changed', `${h64}.${p64}.${s64.slice(0, -2)}${s64.endsWith('AA') ? 'BB' : 'AA'}`],
    ['tampered payload (imza_tipi) with the old signature',
      withPayload(real, { ...claims, imza_tipi: 1 })],
    ['tampered payload (firma_adi) with the old signature',
      withPayload(real, { ...claims, firma_adi: 'Başka A.Ş.' })],
    ['tampered payload (exp extended) with the old signature',
      withPayload(real, { ...claims, exp: (claims.exp as number) + 3600 })],
    ['signed with another secret', craftJwt(HS256_HEADER, claims, randomBytes(32).toString('hex'))],
    ['alg none, no signature', craftJwt({ alg: 'none', typ: 'JWT' }, claims, secret, null)],
    ['alg none with an HS256 signature', craftJwt({ alg: 'none', typ: 'JWT' }, claims, secret, 'sha256')],
    ['HS512 header signed with the secret', craftJwt({ alg: 'HS512', typ: 'JWT' }, claims, secret, 'sha512')],
    ['HS384-named header, HS256 signature', craftJwt({ alg: 'HS384', typ: 'JWT' }, claims, secret, 'sha256')],
    ['imza_tipi 2', craftJwt(HS256_HEADER, { ...claims, imza_tipi: 2 }, secret)],
    ['imza_tipi -1', craftJwt(HS256_HEADER, { ...claims, imza_tipi: -1 }, secret)],
    ['imza_tipi "0" (string)', craftJwt(HS256_HEADER, { ...claims, imza_tipi: '0' }, secret)],
    ['firma_id a number', craftJwt(HS256_HEADER, { ...claims, firma_id: 12345 }, secret)],
    ['token_id a number', craftJwt(HS256_HEADER, { ...claims, token_id: 7 }, secret)],
    ['firma_id names no company', craftJwt(HS256_HEADER, { ...claims, firma_id: 'nosuchcompany000' }, secret)],
    ['firma_id names no company, fresh token id',
      craftJwt(HS256_HEADER, { ...claims, firma_id: 'nosuchcompany001', token_id: randomUUID() }, secret)],
    ['typ access on sign claims', craftJwt(HS256_HEADER, { ...claims, typ: 'access' }, secret)],
  ];
  for (const claim of ['firma_id', 'firma_adi', 'token_id', 'imza_tipi', 'iat', 'exp', 'typ']) {
    const rest = { ...claims };
    delete rest[claim];
    cases.push([`claim ${claim} missing`, craftJwt(HS256_HEADER, rest, secret)]);
  }
  cases.push(['an access token given as token', await source.accessTokenOf()]);

  for (const [what, token] of cases) {
    refused(t, await h.validate(token), 401, MSG.INVALID, what);
  }
  t.equal((await adminView(h, lic.licenseKey)).usedQuota, 0, 'none of them took quota');
  const ok = await h.validate(real);
  t.equal(ok.status, 200, 'none of them burned the real token');
  t.equal(ok.body?.usedQuota, 1, 'the real token takes one unit');
});

t.test('400 token already used: second redemption refused, quota deducted once', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5 });
  const token = await new TokenSource(h, lic).next();
  const first = await h.validate(token);
  t.equal(first.status, 200, 'first redemption');
  t.equal(first.body?.usedQuota, 1);
  refused(t, await h.validate(token), 400, MSG.USED, 'second redemption');
  refused(t, await h.validate(token, 'example.com'), 400, MSG.USED, 'third redemption, with an origin');
  refused(t, await h.request('POST', '/api/License/validate', { token }), 400, MSG.USED, 'through the other spelling');
  const live = await adminView(h, lic.licenseKey);
  t.equal(live.usedQuota, 1, 'used once');
  t.equal(live.remainingQuota, 4, 'remaining 4');
  await h.drainWorker();
  const rows = await h.sql`select used_quota::int as used from licenses where firma_id = ${lic.firmaId}`;
  t.equal(rows[0]?.used, 1, 'Postgres used_quota 1');
});

t.test('401 domain refusal does not burn the token; after the admin adds the domain it redeems once', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5, domains: ['example.com'] });
  const token = await new TokenSource(h, lic).next();
  refused(t, await h.validate(token, 'https://evil.com'), 401, MSG.ORIGIN, 'foreign origin');
  refused(t, await h.validate(token), 401, MSG.ORIGIN, 'no origin');
  t.equal((await adminView(h, lic.licenseKey)).usedQuota, 0, 'no quota taken');
  await adminOk(h, 'PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { domains: ['example.com', 'evil.com'] });
  const ok = await h.validate(token, 'https://evil.com');
  t.equal(ok.status, 200, 'the same token redeems');
  t.strictSame(ok.body, { success: true, message: ok.body?.message, usedQuota: 1, remainingQuota: 4 });
  refused(t, await h.validate(token, 'https://evil.com'), 400, MSG.USED, 'and only once');
});

t.test('400 İmza kotası doldu with remainingQuota 0; the same token redeems once quota is added', async (t) => {
  const lic = await h.createLicense({ totalQuota: 1 });
  const [a, b] = await new TokenSource(h, lic).many(2);
  t.equal((await h.validate(a)).status, 200, 'first token uses the only unit');
  for (let i = 0; i < 2; i++) {
    const res = await h.validate(b);
    t.equal(res.status, 400, `exhausted ${i + 1}: status`);
    t.strictSame(res.body, { success: false, message: MSG.QUOTA, remainingQuota: 0 }, `exhausted ${i + 1}: body`);
  }
  let live = await adminView(h, lic.licenseKey);
  t.equal(live.usedQuota, 1, 'refusals took nothing');
  t.equal(live.remainingQuota, 0);

  const added = await h.admin('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 2 });
  t.equal(added.status, 200, 'quota added');
  const ok = await h.validate(b);
  t.equal(ok.status, 200, 'the refused token redeems after the purchase');
  t.strictSame(ok.body, { success: true, message: ok.body?.message, usedQuota: 2, remainingQuota: 1 });
  refused(t, await h.validate(b), 400, MSG.USED, 'and only once');
  live = await adminView(h, lic.licenseKey);
  t.equal(live.usedQuota, 2);
  t.equal(live.totalQuota, 3);
});

t.test('inactive license: 401 Geçersiz token; the token survives and redeems once reactivated', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5 });
  const token = await new TokenSource(h, lic).next();
  await adminOk(h, 'PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { isActive: false });
  refused(t, await h.validate(token), 401, MSG.INVALID, 'inactive');
  refused(t, await h.validate(token), 401, MSG.INVALID, 'inactive, again');
  t.equal((await adminView(h, lic.licenseKey)).usedQuota, 0, 'no quota taken');
  await adminOk(h, 'PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { isActive: true });
  const ok = await h.validate(token);
  t.equal(ok.status, 200, 'redeems after reactivation');
  t.strictSame(ok.body, { success: true, message: ok.body?.message, usedQuota: 1, remainingQuota: 4 });
  refused(t, await h.validate(token), 400, MSG.USED, 'and only once');
});

t.test('license past its expiry date: 401 Geçersiz token; the token redeems once the expiry is extended', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5 });
  const token = await new TokenSource(h, lic).next();
  await adminOk(h, 'PATCH', `/admin/v1/licenses/${lic.licenseKey}`, {
    expiryDate: new Date(Date.now() - 86_400_000).toISOString(),
  });
  refused(t, await h.validate(token), 401, MSG.INVALID, 'license expired');
  t.equal((await adminView(h, lic.licenseKey)).usedQuota, 0, 'no quota taken');
  await adminOk(h, 'PATCH', `/admin/v1/licenses/${lic.licenseKey}`, {
    expiryDate: new Date(Date.now() + 30 * 86_400_000).toISOString(),
  });
  const ok = await h.validate(token);
  t.equal(ok.status, 200, 'redeems after the expiry is extended');
  t.strictSame(ok.body, { success: true, message: ok.body?.message, usedQuota: 1, remainingQuota: 4 });
  refused(t, await h.validate(token), 400, MSG.USED, 'and only once');
});
