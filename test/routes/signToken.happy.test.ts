import t from 'tap';
import { startHarness } from '../helpers/harness.js';
import { decodeJwt, nowSeconds } from '../helpers/jwt.js';
import { rejection, sdkOf } from '../helpers/sdk.js';
import { expectSignToken, MSG } from '../helpers/shapes.js';

// POST /api/v1/auth/sign-token: one more sign token for the license of the
// Bearer access token, without the password. Through the client SDK (a refusal throws), but
// where the wire itself is checked (content type, the Bearer scheme's spelling).

// one service for the file: each test on a license of its own
const h = await startHarness(t, 'signtokenhappy', { RATE_GET_TOKEN_PER_MIN: '0', RATE_SIGN_TOKEN_PER_MIN: '0' });

t.test('sign-token success', async (t) => {
  const org = 'İmza Sağlık Hizmetleri';
  const lic = await h.createLicense({ organizationName: org, totalQuota: 4 });
  const sdk = sdkOf(h);
  const got = await sdk.getToken({ ...lic, imzaTipi: 0 });
  const access = got.accessToken;

  t.test('body holds exactly {success, signToken, signExpiresIn, remainingQuota}', async (t) => {
    const raw = await h.signToken(access, 1);
    t.equal(raw.status, 200);
    t.match(raw.headers.get('content-type') ?? '', /^application\/json/, 'the wire: JSON');
    const res = await sdk.signToken(access, { imzaTipi: 1 });
    t.same(Object.keys(res).sort(), ['remainingQuota', 'signExpiresIn', 'signToken', 'success']);
    t.equal(res.success, true);
    t.type(res.signToken, 'string');
    t.equal(res.signExpiresIn, 300);
    t.equal(res.remainingQuota, 4);
  });

  t.test('the sign token carries the license and the requested imza_tipi', async (t) => {
    for (const imzaTipi of [0, 1] as const) {
      const before = nowSeconds();
      const res = await sdk.signToken(access, { imzaTipi });
      const after = nowSeconds();
      expectSignToken(t, res.signToken, h.config.jwtKeys[0]!.secret, { firmaId: lic.firmaId, firmaAdi: org, imzaTipi, issuedFrom: before, issuedTo: after });
    }
  });

  t.test('the Bearer scheme name is case-insensitive', async (t) => {
    const res = await h.request('POST', '/api/v1/auth/sign-token', { imzaTipi: 0 }, { authorization: `bearer ${access}` });
    t.equal(res.status, 200, res.text);
    t.equal(res.body.success, true);
  });

  t.test('every call gives a new token_id, different from get-token\'s', async (t) => {
    const ids = new Set<string>([decodeJwt(got.signToken).payload.token_id as string]);
    for (let i = 0; i < 5; i++) {
      const res = await sdk.signToken(access, { imzaTipi: 0 });
      ids.add(decodeJwt(res.signToken).payload.token_id as string);
    }
    t.equal(ids.size, 6);
  });

  t.test('token ids are UUIDs of version 7, their first 48 bits the time of issue (in order, for Postgres\'s indexes)', async (t) => {
    const before = Date.now();
    const res = await sdk.signToken(access, { imzaTipi: 0 });
    const after = Date.now();
    const id = decodeJwt(res.signToken).payload.token_id as string;
    t.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, id);
    const ms = parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
    t.ok(ms >= before && ms <= after, `the time in the id (${ms}) is when it was issued (${before}..${after})`);
  });
});

t.test('sign tokens from sign-token redeem through validate, once each', async (t) => {
  const lic = await h.createLicense({ totalQuota: 3 });
  const sdk = sdkOf(h);
  const got = await sdk.getToken({ ...lic, imzaTipi: 0 });
  const access = got.accessToken;

  const a = await sdk.signToken(access, { imzaTipi: 1 });
  const b = await sdk.signToken(access, { imzaTipi: 0 });
  t.equal(a.remainingQuota, 3, 'issuing spends nothing');

  const ra = await sdk.validate({ token: a.signToken });
  t.equal(ra.success, true);
  t.equal(ra.usedQuota, 1);
  t.equal(ra.remainingQuota, 2);
  const again = await rejection(sdk.validate({ token: a.signToken }));
  t.match(again, { status: 400, code: 'TOKEN_ALREADY_USED', message: MSG.USED, body: { success: false, message: MSG.USED } });

  const c = await sdk.signToken(access, { imzaTipi: 0 });
  t.equal(c.remainingQuota, 2, 'remainingQuota at issue time');

  t.equal((await sdk.validate({ token: b.signToken })).remainingQuota, 1);
  t.equal((await sdk.validate({ token: got.signToken })).remainingQuota, 0, 'the get-token sign token still redeems');

  await h.drainWorker();
  const rows = await h.sql`select token_id, status, imza_tipi from sign_tokens where firma_id = ${lic.firmaId}`;
  const byId = new Map(rows.map((r) => [r.token_id as string, r]));
  t.equal(rows.length, 4, 'all four issued tokens are in the audit trail');
  const idOf = (token: string) => decodeJwt(token).payload.token_id as string;
  t.equal(byId.get(idOf(a.signToken))?.status, 'used');
  t.equal(byId.get(idOf(a.signToken))?.imza_tipi, 1);
  t.equal(byId.get(idOf(b.signToken))?.status, 'used');
  t.equal(byId.get(idOf(c.signToken))?.status, 'issued');
  t.equal(byId.get(idOf(got.signToken))?.status, 'used');
});

t.test('a renamed organization shows in the next sign token', async (t) => {
  // docs/api.md#admin-api: every admin change is in force for the very next public request
  const lic = await h.createLicense({ totalQuota: 2 });
  const sdk = sdkOf(h);
  const got = await sdk.getToken({ ...lic, imzaTipi: 0 });
  t.equal((await h.admin('PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { organizationName: 'Yeni Unvan' })).status, 200);
  const res = await sdk.signToken(got.accessToken, { imzaTipi: 0 });
  t.equal(decodeJwt(res.signToken).payload.firma_adi, 'Yeni Unvan', 'the new name is in the next token');
});

t.test('a marker hash expires after its minute, the slack and the release window; its tokens move that only later', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5 });
  const sdk = sdkOf(h);
  const access = (await sdk.getToken({ ...lic, imzaTipi: 0 })).accessToken;
  const k = h.keys.forLicense(lic.firmaId);
  const hashOf = async () => {
    const exp = decodeJwt((await sdk.signToken(access, { imzaTipi: 0 })).signToken).payload.exp as number;
    const { key, expiresAt } = k.markers(exp * 1000);
    return { key, due: expiresAt + h.config.releaseWindowMs };
  };
  // a token's hash set to expire `shift` ms from where the token asked, as a process keeping
  // markers longer or shorter would have it, then another token of that minute (a minute's
  // turn between the two: again)
  const afterShift = async (shift: number) => {
    for (;;) {
      const first = await hashOf();
      await h.redis.pexpireat(first.key, first.due + shift);
      if ((await hashOf()).key === first.key) return { due: first.due, expiry: await h.redis.pexpiretime(first.key) };
    }
  };
  const one = await hashOf();
  t.equal(await h.redis.pexpiretime(one.key), one.due, 'a token sets its hash to expire where it asks');
  const later = await afterShift(3_600_000);
  t.equal(later.expiry, later.due + 3_600_000, 'a token asking for an earlier expiry leaves the later one');
  const earlier = await afterShift(-60_000);
  t.equal(earlier.expiry, earlier.due, 'one asking for a later expiry moves it');
});
