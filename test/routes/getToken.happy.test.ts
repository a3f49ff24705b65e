import t from 'tap';
import { startHarness } from '../helpers/harness.js';
import { decodeJwt, HS256_HEADER, ISSUER, nowSeconds, signatureValid } from '../helpers/jwt.js';
import { sdkOf } from '../helpers/sdk.js';
import { expectSignToken } from '../helpers/shapes.js';

// POST /api/v1/auth/get-token, the success path: the published token pair, the claims of both
// tokens, and what an issue does (and does not do) to quota and the audit trail. Through the
// client SDK (a refusal throws), but for the check of the wire's content type.

// one service for the file: each test on licenses of its own
const h = await startHarness(t, 'gettokenhappy', { RATE_GET_TOKEN_PER_MIN: '0' });

t.test('get-token success', async (t) => {
  const org = 'Örnek Eczanesi Ltd. Şti.';
  const lic = await h.createLicense({ organizationName: org, totalQuota: 5, password: 'pa55-Şifre!' });
  const sdk = sdkOf(h);
  const getToken = (imzaTipi: 0 | 1) => sdk.getToken({ licenseKey: lic.licenseKey, password: lic.password, imzaTipi });

  t.test('body holds exactly the published fields', async (t) => {
    const raw = await h.getToken(lic.licenseKey, lic.password, 1);
    t.equal(raw.status, 200);
    t.match(raw.headers.get('content-type') ?? '', /^application\/json/, 'the wire: JSON');
    const res = await getToken(1);
    t.same(Object.keys(res).sort(),
      ['accessExpiresIn', 'accessToken', 'remainingQuota', 'signExpiresIn', 'signToken', 'success']);
    t.equal(res.success, true);
    t.type(res.accessToken, 'string');
    t.type(res.signToken, 'string');
    t.not(res.accessToken, res.signToken);
    t.equal(res.accessExpiresIn, 900);
    t.equal(res.signExpiresIn, 300);
    t.equal(res.remainingQuota, 5);
  });

  t.test('sign token: HS256 header, the published claims, exp = iat + 300', async (t) => {
    const before = nowSeconds();
    const res = await getToken(1);
    const after = nowSeconds();
    expectSignToken(t, res.signToken, h.config.jwtKeys[0]!.secret, { firmaId: lic.firmaId, firmaAdi: org, imzaTipi: 1, issuedFrom: before, issuedTo: after });
  });

  t.test('access token: HS256, firma_id of the license, exp = iat + 900', async (t) => {
    const res = await getToken(0);
    const jwt = decodeJwt(res.accessToken);
    t.same(jwt.header, HS256_HEADER, 'HS256, with the kid of the signing key');
    t.ok(signatureValid(res.accessToken, h.config.jwtKeys[0]!.secret));
    t.equal(jwt.payload.firma_id, lic.firmaId);
    t.equal(jwt.payload.iss, ISSUER, 'iss: JWT_ISSUER');
    t.equal(jwt.payload.gen, 0, 'the token generation of a license never revoked');
    t.ok(Number.isInteger(jwt.payload.iat));
    t.equal(jwt.payload.exp, (jwt.payload.iat as number) + 900);
    t.not(jwt.payload.typ, decodeJwt(res.signToken).payload.typ, 'the two kinds are told apart');
  });

  t.test('imza_tipi is the one requested, 0 and 1', async (t) => {
    for (const imzaTipi of [0, 1, 0] as const) {
      const res = await getToken(imzaTipi);
      t.equal(decodeJwt(res.signToken).payload.imza_tipi, imzaTipi);
    }
  });

  t.test('every call issues a new sign token with its own token_id', async (t) => {
    const ids = new Set<string>();
    const tokens = new Set<string>();
    for (let i = 0; i < 6; i++) {
      const res = await getToken(i % 2 === 0 ? 0 : 1);
      ids.add(decodeJwt(res.signToken).payload.token_id as string);
      tokens.add(res.signToken);
    }
    t.equal(ids.size, 6);
    t.equal(tokens.size, 6);
  });
});

t.test('issuing spends no quota; redeeming does, and remainingQuota shows it', async (t) => {
  const lic = await h.createLicense({ totalQuota: 3 });
  const sdk = sdkOf(h);
  const first = await sdk.getToken({ ...lic, imzaTipi: 0 });
  const second = await sdk.getToken({ ...lic, imzaTipi: 0 });
  t.equal(first.remainingQuota, 3);
  t.equal(second.remainingQuota, 3, 'an issued, unredeemed token takes nothing');

  const ok = await sdk.validate({ token: second.signToken });
  t.equal(ok.usedQuota, 1);
  t.equal(ok.remainingQuota, 2);

  const third = await sdk.getToken({ ...lic, imzaTipi: 1 });
  t.equal(third.remainingQuota, 2);

  // the first token, issued before the redemption, still redeems
  const ok2 = await sdk.validate({ token: first.signToken });
  t.equal(ok2.remainingQuota, 1);
  const quota = await sdk.checkQuota(lic.licenseKey);
  t.equal(quota.data.remainingQuota, 1);
  t.equal(quota.data.usedQuota, 2);
});

t.test('each issued sign token is recorded in the audit trail', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5 });
  const sdk = sdkOf(h);
  const a = await sdk.getToken({ ...lic, imzaTipi: 0 });
  const b = await sdk.getToken({ ...lic, imzaTipi: 1 });
  const ca = decodeJwt(a.signToken).payload;
  const cb = decodeJwt(b.signToken).payload;
  t.equal((await sdk.validate({ token: b.signToken })).usedQuota, 1);
  await h.drainWorker();

  const rows = await h.sql`select token_id, firma_id, imza_tipi, status, issued_at, expires_at, used_at
    from sign_tokens where firma_id = ${lic.firmaId} order by token_id`;
  t.equal(rows.length, 2);
  const byId = new Map(rows.map((r) => [r.token_id as string, r]));
  const ra = byId.get(ca.token_id as string);
  const rb = byId.get(cb.token_id as string);
  t.ok(ra, 'the unredeemed token is recorded');
  t.ok(rb, 'the redeemed token is recorded');
  if (!ra || !rb) return;
  t.equal(ra.status, 'issued');
  t.equal(ra.imza_tipi, 0);
  t.equal(ra.used_at, null);
  t.equal(Math.floor((ra.expires_at as Date).getTime() / 1000), ca.exp, 'expires_at is the token exp');
  t.equal(rb.status, 'used');
  t.equal(rb.imza_tipi, 1);
  t.ok(rb.used_at instanceof Date);
});
