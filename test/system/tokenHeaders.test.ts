import { randomBytes } from 'node:crypto';
import t from 'tap';
import { adminView } from '../helpers/admin.js';
import { NO_RATE_LIMITS, startHarness } from '../helpers/harness.js';
import type { Answer } from '../helpers/http.js';
import {
  claimsOf, craftAccessToken, craftJwt, decodeJwt, HS256_HEADER, jwtOfTexts, nowSeconds, PUBLISHED_HEADER, withMembersFirst,
} from '../helpers/jwt.js';
import { expectCodedError, expectMessageError, MSG, type Asserts } from '../helpers/shapes.js';
import { TokenSource } from '../helpers/tokens.js';

// Tokens with the published header, through HTTP: a token whose header is
// {"alg":"HS256","typ":"JWT"} (no kid, as any JWT library writes it) is verified with the
// signing key, at validate and as the Bearer of sign-token and history; anything else in a
// kid-less header is refused; a header or payload that repeats a member name, at any depth,
// however spelled, is 401 Geçersiz token (INVALID_TOKEN as Bearer) and spends nothing.
// The verifier's properties on their own: test/system/tokenVerifier.test.ts.

const h = await startHarness(t, 'token-headers', NO_RATE_LIMITS);
const secret = h.config.jwtKeys[0]!.secret;
const PUBLISHED = JSON.stringify(PUBLISHED_HEADER);

/** The sign token's claims signed again under a header text (any spelling); the payload text may be given. */
function resigned(token: string, header: string, payload = JSON.stringify(decodeJwt(token).payload), key: string = secret): string {
  return jwtOfTexts(header, payload, key);
}

async function usedQuota(licenseKey: string): Promise<number> {
  return (await adminView(h, licenseKey)).usedQuota as number;
}

function expectInvalid(t: Asserts, res: Answer, what: string): void {
  expectMessageError(t, res, [401], what, MSG.INVALID);
}

t.test('a kid-less sign token with the published header redeems once', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10 });
  const source = new TokenSource(h, lic);
  const issued = await source.next();
  const kidless = resigned(issued, PUBLISHED);
  t.strictSame(decodeJwt(kidless).header, { alg: 'HS256', typ: 'JWT' }, 'the header is exactly the published one');
  const first = await h.validate(kidless);
  t.equal(first.status, 200, `redeemed (${first.text})`);
  t.equal(first.body?.usedQuota, 1, 'one unit spent');
  expectMessageError(t, await h.validate(kidless), [400], 'again', MSG.USED);
  expectMessageError(t, await h.validate(issued), [400], 'the same token id under the service\'s own header', MSG.USED);
  t.equal(await usedQuota(lic.licenseKey), 1, 'spent once');

  // the other spellings JWT libraries write for it
  for (const header of ['{"typ":"JWT","alg":"HS256"}', '{"alg":"HS256"}', '{"alg": "HS256", "typ": "JWT"}']) {
    const res = await h.validate(resigned(await source.next(), header));
    t.equal(res.status, 200, `${header}: redeemed (${res.text})`);
  }
  t.equal(await usedQuota(lic.licenseKey), 4, 'one unit each');
});

t.test('a kid-less sign token past its exp: 401 Token süresi dolmuş, nothing spent', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10 });
  const issued = await new TokenSource(h, lic).next();
  const now = nowSeconds();
  const expired = craftJwt(PUBLISHED_HEADER, { ...claimsOf(issued), iat: now - 400, exp: now - 100 }, secret);
  expectMessageError(t, await h.validate(expired), [401], 'expired 100 s ago', MSG.EXPIRED);
  t.equal(await usedQuota(lic.licenseKey), 0, 'nothing spent');
  t.equal((await h.validate(resigned(issued, PUBLISHED))).status, 200, 'the unexpired one redeems');
});

t.test('kid-less headers that are not the published one, or the wrong key: 401 Geçersiz token, nothing spent', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10 });
  const issued = await new TokenSource(h, lic).next();
  const claims = claimsOf(issued) as unknown as Record<string, unknown>;
  const cases: [string, string][] = [
    ['signed with another key', craftJwt(PUBLISHED_HEADER, claims, randomBytes(32).toString('hex'))],
    ['alg none, no signature', craftJwt({ alg: 'none', typ: 'JWT' }, claims, secret, null)],
    ['alg none, an HS256 signature', craftJwt({ alg: 'none', typ: 'JWT' }, claims, secret)],
    ['alg HS512, signed so', craftJwt({ alg: 'HS512', typ: 'JWT' }, claims, secret, 'sha512')],
    ['alg HS512, an HS256 signature', craftJwt({ alg: 'HS512', typ: 'JWT' }, claims, secret)],
    ['alg hs256', craftJwt({ alg: 'hs256', typ: 'JWT' }, claims, secret)],
    ['no alg', craftJwt({ typ: 'JWT' }, claims, secret)],
    ['crit', craftJwt({ ...PUBLISHED_HEADER, crit: ['exp'] }, claims, secret)],
    ['crit naming a member it has', craftJwt({ ...PUBLISHED_HEADER, crit: ['x'], x: 1 }, claims, secret)],
    ['b64 false', craftJwt({ ...PUBLISHED_HEADER, b64: false, crit: ['b64'] }, claims, secret)],
    ['jku', craftJwt({ ...PUBLISHED_HEADER, jku: 'https://evil.example/jwks.json' }, claims, secret)],
    ['jwk', craftJwt({ ...PUBLISHED_HEADER, jwk: { kty: 'oct', k: 'AAAA' } }, claims, secret)],
    ['x5u', craftJwt({ ...PUBLISHED_HEADER, x5u: 'https://evil.example/cert.pem' }, claims, secret)],
    ['cty JWT', craftJwt({ ...PUBLISHED_HEADER, cty: 'JWT' }, claims, secret)],
    ['typ jwt (lower case)', craftJwt({ alg: 'HS256', typ: 'jwt' }, claims, secret)],
    ['typ at+jwt', craftJwt({ alg: 'HS256', typ: 'at+jwt' }, claims, secret)],
    ['the service\'s kid, members in another order', craftJwt({ kid: 'default', alg: 'HS256', typ: 'JWT' }, claims, secret)],
    ['a kid that is not listed', craftJwt({ ...PUBLISHED_HEADER, kid: 'other' }, claims, secret)],
    ['a header that is an array', resigned(issued, '["HS256"]')],
    ['a header that is not JSON', resigned(issued, '{"alg":"HS256",')],
  ];
  for (const [what, token] of cases) expectInvalid(t, await h.validate(token), what);
  t.equal(await usedQuota(lic.licenseKey), 0, 'none of them spent anything');
  t.equal((await h.validate(issued)).status, 200, 'none of them burned the token');
});

t.test('a header or payload that repeats a member: 401 Geçersiz token, nothing spent, the token unburned', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10 });
  const issued = await new TokenSource(h, lic).next();
  const payload = JSON.stringify(decodeJwt(issued).payload);
  const own = JSON.stringify(HS256_HEADER);
  const cases: [string, string][] = [
    ['header: alg twice', resigned(issued, '{"alg":"HS256","alg":"HS256","typ":"JWT"}')],
    ['header: alg none, then HS256', resigned(issued, '{"alg":"none","typ":"JWT","alg":"HS256"}')],
    ['header: typ twice', resigned(issued, '{"alg":"HS256","typ":"JWT","typ":"JWT"}')],
    ['header: alg repeated as \\u0061lg', resigned(issued, '{"alg":"HS256","typ":"JWT","\\u0061lg":"HS256"}')],
    ['header: the service\'s own, kid twice', resigned(issued, '{"alg":"HS256","typ":"JWT","kid":"default","kid":"default"}')],
  ];
  // payload repeats, put before the token's own members: [what, the members]
  const repeats: [string, string][] = [
    ['the same member twice, same value', `"firma_id":${JSON.stringify(claimsOf(issued).firma_id)}`],
    ['imza_tipi 1, then 0', '"imza_tipi":1'],
    ['typ access, then sign', '"typ":"access"'],
    ['token_id repeated as \\u0074oken_id', '"\\u0074oken_id":"other-token"'],
    ['exp repeated as "\\u0065\\u0078\\u0070"', `"\\u0065\\u0078\\u0070":${nowSeconds() + 86_400}`],
    ['a nested object repeating a member', '"extra":{"a":1,"b":{"c":true,"c":false}}'],
    ['an object in an array repeating a member', '"list":[{"x":1},{"x":1,"y":[],"x":2}]'],
    ['a repeated object dropping its members', '"o":{"p":1,"q":2},"o":{"p":1}'],
    ['__proto__ twice', '"__proto__":{},"__proto__":{}'],
    ['with whitespace, a repeat', ' "typ" : "sign" ,\n "iss" :"x"'],
  ];
  for (const [under, header] of [['the service\'s header', own], ['the published header', PUBLISHED]] as const) {
    for (const [what, members] of repeats) cases.push([`${under}, payload: ${what}`, resigned(issued, header, withMembersFirst(payload, members))]);
  }
  for (const [what, token] of cases) expectInvalid(t, await h.validate(token), what);
  t.equal(await usedQuota(lic.licenseKey), 0, 'none of them spent anything');
  const members = withMembersFirst(payload, '"extra":{"a":1,"b":{"c":true}},"list":[{"x":1},{"x":2}]');
  const ok = await h.validate(resigned(issued, PUBLISHED, members));
  t.equal(ok.status, 200, `the same claims with nested objects that repeat nothing redeem (${ok.text})`);
  t.equal(await usedQuota(lic.licenseKey), 1, 'once');
});

t.test('as Bearer: kid-less access tokens work where the claims say so; repeats and foreign headers are 401 INVALID_TOKEN', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10 });
  const claims = decodeJwt(craftAccessToken(lic.firmaId, secret)).payload;
  const kidless = craftJwt(PUBLISHED_HEADER, claims, secret);
  const signed = await h.signToken(kidless);
  t.equal(signed.status, 200, `sign-token with a kid-less access token (${signed.text})`);
  t.equal((await h.history(lic.licenseKey, kidless)).status, 200, 'history with it');
  t.equal((await h.validate(signed.body.signToken)).status, 200, 'the sign token it got redeems');

  const text = JSON.stringify(claims);
  const now = nowSeconds();
  const refused: [string, string][] = [
    ['repeated gen', jwtOfTexts(PUBLISHED, withMembersFirst(text, '"gen":5'), secret)],
    ['repeated firma_id, escaped', jwtOfTexts(PUBLISHED, withMembersFirst(text, `"\\u0066irma_id":${JSON.stringify(lic.firmaId)}`), secret)],
    ['a nested repeat', jwtOfTexts(PUBLISHED, withMembersFirst(text, '"x":[{"k":1,"k":1}]'), secret)],
    ['the service\'s header, a repeated exp', jwtOfTexts(JSON.stringify(HS256_HEADER), withMembersFirst(text, `"exp":${now + 86_400}`), secret)],
    ['header with typ twice', jwtOfTexts('{"alg":"HS256","typ":"JWT","typ":"JWT"}', text, secret)],
    ['alg none', craftJwt({ alg: 'none', typ: 'JWT' }, claims, secret, null)],
    ['alg HS512', craftJwt({ alg: 'HS512', typ: 'JWT' }, claims, secret, 'sha512')],
    ['crit', craftJwt({ ...PUBLISHED_HEADER, crit: ['exp'] }, claims, secret)],
    ['signed with another key', craftJwt(PUBLISHED_HEADER, claims, randomBytes(32).toString('hex'))],
    ['expired', craftJwt(PUBLISHED_HEADER, { ...claims, iat: now - 1000, exp: now - 100 }, secret)],
    ['a kid-less sign token', craftJwt(PUBLISHED_HEADER, { ...claimsOf(signed.body.signToken) }, secret)],
  ];
  for (const [what, token] of refused) {
    expectCodedError(t, await h.signToken(token), 401, 'INVALID_TOKEN', `sign-token: ${what}`);
    expectCodedError(t, await h.history(lic.licenseKey, token), 401, 'INVALID_TOKEN', `history: ${what}`);
  }
  t.equal(await usedQuota(lic.licenseKey), 1, 'the refusals spent nothing');
});
