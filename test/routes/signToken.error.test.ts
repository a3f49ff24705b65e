import t from 'tap';
import { randomBytes } from 'node:crypto';
import { startHarness } from '../helpers/harness.js';
import { bearer, craftAccessToken, craftJwt, decodeJwt, HS256_HEADER, nowSeconds, withPayload } from '../helpers/jwt.js';
import { expectCodedError, NOT_AN_OBJECT } from '../helpers/shapes.js';

// POST /api/v1/auth/sign-token refusals: 401 INVALID_TOKEN for anything but a valid access
// token, 400 INVALID_REQUEST for a bad body (not a JSON object, wrong types, missing
// fields), and the license-state errors of get-token.

const PATH = '/api/v1/auth/sign-token';
const DAY = 86_400_000;

// one service for the file: each test on licenses of its own
const h = await startHarness(t, 'signtokenerr', { RATE_GET_TOKEN_PER_MIN: '0', RATE_SIGN_TOKEN_PER_MIN: '0' });

t.test('sign-token errors', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5 });
  const got = await h.getToken(lic.licenseKey, lic.password, 0);
  t.equal(got.status, 200);
  const access = got.body.accessToken as string;
  const secret = h.config.jwtKeys[0]!.secret;

  t.test('401 INVALID_TOKEN for a missing or malformed Authorization header', async (t) => {
    const cases: [string, Record<string, string>][] = [
      ['no header', {}],
      ['empty header', { authorization: '' }],
      ['Bearer and nothing', { authorization: 'Bearer ' }],
      ['garbage', bearer('garbage')],
      ['three garbage parts', bearer('aaa.bbb.ccc')],
      ['another scheme', { authorization: `Basic ${access}` }],
      ['the token without a scheme', { authorization: access }],
    ];
    for (const [name, headers] of cases) {
      t.test(name, async (t) => expectCodedError(t, await h.request('POST', PATH, { imzaTipi: 0 }, headers), 401, 'INVALID_TOKEN'));
    }
  });

  t.test('401 INVALID_TOKEN for an expired access token', async (t) => {
    const now = nowSeconds();
    const expired = craftAccessToken(lic.firmaId, secret, { iat: now - 1000, exp: now - 100 });
    expectCodedError(t, await h.signToken(expired, 0), 401, 'INVALID_TOKEN');
    const justExpired = craftAccessToken(lic.firmaId, secret, { iat: now - 901, exp: now - 1 });
    expectCodedError(t, await h.signToken(justExpired, 0), 401, 'INVALID_TOKEN');
    // the same claims, unexpired, are accepted: the refusal is the expiry
    const fresh = craftAccessToken(lic.firmaId, secret);
    t.equal((await h.signToken(fresh, 0)).status, 200, 'a hand-made valid access token works');
  });

  t.test('401 INVALID_TOKEN for an access token signed with another secret', async (t) => {
    const other = craftAccessToken(lic.firmaId, randomBytes(32).toString('hex'));
    expectCodedError(t, await h.signToken(other, 0), 401, 'INVALID_TOKEN');
  });

  t.test('401 INVALID_TOKEN for a tampered access token', async (t) => {
    const other = await h.createLicense();
    const parts = access.split('.');
    const tampered = withPayload(access, { ...decodeJwt(access).payload, firma_id: other.firmaId });
    expectCodedError(t, await h.signToken(tampered, 0), 401, 'INVALID_TOKEN');
    const sig = parts[2] as string;
    const badSig = `${parts[0]}.${parts[1]}.${sig[0] === 'A' ? 'B' : 'A'}${sig.slice(1)}`;
    expectCodedError(t, await h.signToken(badSig, 0), 401, 'INVALID_TOKEN');
  });

  t.test('401 INVALID_TOKEN for a SIGN token used as Bearer', async (t) => {
    const sign = await h.getToken(lic.licenseKey, lic.password, 0);
    expectCodedError(t, await h.signToken(sign.body.signToken, 0), 401, 'INVALID_TOKEN');
    // and the sign token stays redeemable
    t.equal((await h.validate(sign.body.signToken)).status, 200);
  });

  t.test('401 INVALID_TOKEN for tokens that are not access tokens of HS256', async (t) => {
    const now = nowSeconds();
    const claims = { firma_id: lic.firmaId, iat: now, exp: now + 900, typ: 'access' };
    const cases: [string, string][] = [
      ['alg none', craftJwt({ alg: 'none', typ: 'JWT' }, claims, secret, null)],
      ['typ sign', craftJwt(HS256_HEADER, { ...claims, typ: 'sign' }, secret)],
      ['no typ claim', craftJwt(HS256_HEADER, { firma_id: lic.firmaId, iat: now, exp: now + 900 }, secret)],
      ['no exp claim', craftJwt(HS256_HEADER, { firma_id: lic.firmaId, iat: now, typ: 'access' }, secret)],
      ['firma_id a number', craftJwt(HS256_HEADER, { ...claims, firma_id: 42 }, secret)],
      ['firma_id of no company', craftJwt(HS256_HEADER, { ...claims, firma_id: 'no-such-company' }, secret)],
    ];
    for (const [name, token] of cases) {
      t.test(name, async (t) => expectCodedError(t, await h.signToken(token, 0), 401, 'INVALID_TOKEN'));
    }
  });

  t.test('400 INVALID_REQUEST for a bad body with a good token', async (t) => {
    const cases: [string, unknown][] = [
      ['imzaTipi 2', { imzaTipi: 2 }],
      ['imzaTipi "1"', { imzaTipi: '1' }],
      ['imzaTipi 0.5', { imzaTipi: 0.5 }],
      ['imzaTipi null', { imzaTipi: null }],
      ['imzaTipi missing', {}],
      ['imzaTipi 1.0000001', { imzaTipi: 1.0000001 }],
      ['imzaTipi an array', { imzaTipi: [0] }],
      ['body not JSON', '{imzaTipi: 0'],
      ['body an array', [{ imzaTipi: 0 }]],
      ...NOT_AN_OBJECT.map(([what, raw]): [string, unknown] => [`body: ${what}`, raw]),
    ];
    for (const [name, body] of cases) {
      t.test(name, async (t) => expectCodedError(t, await h.request('POST', PATH, body, bearer(access)), 400, 'INVALID_REQUEST'));
    }
  });
});

t.test('sign-token answers the license state as get-token does', async (t) => {
  t.test('deactivation: 401 INVALID_TOKEN (the access token is revoked); reactivated, a new get-token works', async (t) => {
    const lic = await h.createLicense();
    const access = (await h.getToken(lic.licenseKey, lic.password, 0)).body.accessToken as string;
    t.equal((await h.admin('PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { isActive: false })).status, 200);
    expectCodedError(t, await h.signToken(access, 0), 401, 'INVALID_TOKEN');
    expectCodedError(t, await h.getToken(lic.licenseKey, lic.password, 0), 401, 'LICENSE_INACTIVE');
    t.equal((await h.admin('PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { isActive: true })).status, 200);
    expectCodedError(t, await h.signToken(access, 0), 401, 'INVALID_TOKEN', 'reactivation does not bring the revoked token back');
    const fresh = (await h.getToken(lic.licenseKey, lic.password, 0)).body.accessToken as string;
    t.equal((await h.signToken(fresh, 0)).status, 200, 'a new access token works');
  });

  t.test('401 LICENSE_EXPIRED after the expiry date passes', async (t) => {
    const lic = await h.createLicense();
    const access = (await h.getToken(lic.licenseKey, lic.password, 0)).body.accessToken as string;
    const patched = await h.admin('PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { expiryDate: new Date(Date.now() - DAY).toISOString() });
    t.equal(patched.status, 200);
    expectCodedError(t, await h.signToken(access, 1), 401, 'LICENSE_EXPIRED');
  });

  t.test('400 INSUFFICIENT_QUOTA once quota is used up, 200 after a purchase', async (t) => {
    const lic = await h.createLicense({ totalQuota: 1 });
    const got = await h.getToken(lic.licenseKey, lic.password, 0);
    t.equal((await h.validate(got.body.signToken)).status, 200);
    expectCodedError(t, await h.signToken(got.body.accessToken, 0), 400, 'INSUFFICIENT_QUOTA');
    t.equal((await h.admin('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 3 })).status, 200);
    const res = await h.signToken(got.body.accessToken, 0);
    t.equal(res.status, 200);
    t.equal(res.body.remainingQuota, 3);
  });

  t.test('a refused sign-token issues nothing', async (t) => {
    const lic = await h.createLicense({ totalQuota: 2 });
    const got = await h.getToken(lic.licenseKey, lic.password, 0);
    t.equal((await h.admin('PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { isActive: false })).status, 200);
    for (let i = 0; i < 3; i++) expectCodedError(t, await h.signToken(got.body.accessToken, 0), 401, 'INVALID_TOKEN');
    await h.drainWorker();
    const rows = await h.sql`select count(*)::int as n from sign_tokens where firma_id = ${lic.firmaId}`;
    t.equal(rows[0]?.n, 1, 'only the get-token sign token');
  });
});
