import t from 'tap';
import { startHarness } from '../helpers/harness.js';
import { decodeJwt, HS256_HEADER, ISSUER, nowSeconds, signatureValid } from '../helpers/jwt.js';
import { expectSignToken } from '../helpers/shapes.js';

// POST /api/v1/auth/get-token, the success path: the published token pair, the claims of both
// tokens, and what an issue does (and does not do) to quota and the audit trail.

t.test('get-token success', async (t) => {
  const h = await startHarness(t, 'gettokenhappy', { RATE_GET_TOKEN_PER_MIN: '0' });
  const org = 'Örnek Eczanesi Ltd. Şti.';
  const lic = await h.createLicense({ organizationName: org, totalQuota: 5, password: 'pa55-Şifre!' });

  t.test('body holds exactly the published fields', async (t) => {
    const res = await h.getToken(lic.licenseKey, lic.password, 1);
    t.equal(res.status, 200);
    t.match(res.headers.get('content-type') ?? '', /^application\/json/);
    t.same(Object.keys(res.body).sort(),
      ['accessExpiresIn', 'accessToken', 'remainingQuota', 'signExpiresIn', 'signToken', 'success']);
    t.equal(res.body.success, true);
    t.type(res.body.accessToken, 'string');
    t.type(res.body.signToken, 'string');
    t.not(res.body.accessToken, res.body.signToken);
    t.equal(res.body.accessExpiresIn, 900);
    t.equal(res.body.signExpiresIn, 300);
    t.equal(res.body.remainingQuota, 5);
  });

  t.test('sign token: HS256 header, the published claims, exp = iat + 300', async (t) => {
    const before = nowSeconds();
    const res = await h.getToken(lic.licenseKey, lic.password, 1);
    const after = nowSeconds();
    t.equal(res.status, 200);
    expectSignToken(t, res.body.signToken, h.config.jwtKeys[0]!.secret, { firmaId: lic.firmaId, firmaAdi: org, imzaTipi: 1, issuedFrom: before, issuedTo: after });
  });

  t.test('access token: HS256, firma_id of the license, exp = iat + 900', async (t) => {
    const res = await h.getToken(lic.licenseKey, lic.password, 0);
    t.equal(res.status, 200);
    const jwt = decodeJwt(res.body.accessToken);
    t.same(jwt.header, HS256_HEADER, 'HS256, with the kid of the signing key');
    t.ok(signatureValid(res.body.accessToken, h.config.jwtKeys[0]!.secret));
    t.equal(jwt.payload.firma_id, lic.firmaId);
    t.equal(jwt.payload.iss, ISSUER, 'iss: JWT_ISSUER');
    t.equal(jwt.payload.gen, 0, 'the token generation of a license never revoked');
    t.ok(Number.isInteger(jwt.payload.iat));
    t.equal(jwt.payload.exp, (jwt.payload.iat as number) + 900);
    t.not(jwt.payload.typ, decodeJwt(res.body.signToken).payload.typ, 'the two kinds are told apart');
  });

  t.test('imza_tipi is the one requested, 0 and 1', async (t) => {
    for (const imzaTipi of [0, 1, 0]) {
      const res = await h.getToken(lic.licenseKey, lic.password, imzaTipi);
      t.equal(res.status, 200);
      t.equal(decodeJwt(res.body.signToken).payload.imza_tipi, imzaTipi);
    }
  });

  t.test('every call issues a new sign token with its own token_id', async (t) => {
    const ids = new Set<string>();
    const tokens = new Set<string>();
    for (let i = 0; i < 6; i++) {
      const res = await h.getToken(lic.licenseKey, lic.password, i % 2);
      t.equal(res.status, 200);
      ids.add(decodeJwt(res.body.signToken).payload.token_id as string);
      tokens.add(res.body.signToken);
    }
    t.equal(ids.size, 6);
    t.equal(tokens.size, 6);
  });
});

t.test('issuing spends no quota; redeeming does, and remainingQuota shows it', async (t) => {
  const h = await startHarness(t, 'gettokenquota', { RATE_GET_TOKEN_PER_MIN: '0' });
  const lic = await h.createLicense({ totalQuota: 3 });
  const first = await h.getToken(lic.licenseKey, lic.password, 0);
  const second = await h.getToken(lic.licenseKey, lic.password, 0);
  t.equal(first.body.remainingQuota, 3);
  t.equal(second.body.remainingQuota, 3, 'an issued, unredeemed token takes nothing');

  const ok = await h.validate(second.body.signToken);
  t.equal(ok.status, 200);
  t.equal(ok.body.usedQuota, 1);
  t.equal(ok.body.remainingQuota, 2);

  const third = await h.getToken(lic.licenseKey, lic.password, 1);
  t.equal(third.status, 200);
  t.equal(third.body.remainingQuota, 2);

  // the first token, issued before the redemption, still redeems
  const ok2 = await h.validate(first.body.signToken);
  t.equal(ok2.status, 200);
  t.equal(ok2.body.remainingQuota, 1);
  const quota = await h.checkQuota(lic.licenseKey);
  t.equal(quota.body.data.remainingQuota, 1);
  t.equal(quota.body.data.usedQuota, 2);
});

t.test('each issued sign token is recorded in the audit trail', async (t) => {
  const h = await startHarness(t, 'gettokenaudit', { RATE_GET_TOKEN_PER_MIN: '0' });
  const lic = await h.createLicense({ totalQuota: 5 });
  const a = await h.getToken(lic.licenseKey, lic.password, 0);
  const b = await h.getToken(lic.licenseKey, lic.password, 1);
  t.equal(a.status, 200);
  t.equal(b.status, 200);
  const ca = decodeJwt(a.body.signToken).payload;
  const cb = decodeJwt(b.body.signToken).payload;
  t.equal((await h.validate(b.body.signToken)).status, 200);
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
