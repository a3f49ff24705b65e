import t from 'tap';
import { adminView } from '../helpers/admin.js';
import { NO_RATE_LIMITS, startHarness } from '../helpers/harness.js';
import { decodeJwt } from '../helpers/jwt.js';
import { sdkOf } from '../helpers/sdk.js';
import { TokenSource } from '../helpers/tokens.js';

// POST /api/license/validate, redemptions that succeed: the published body with
// running arithmetic, the last unit, both spellings of the path, and the audit row each
// redemption becomes in Postgres. Through the client SDK, but where the wire itself is
// checked (content type, the path's spellings).

const h = await startHarness(t, 'validate-happy', NO_RATE_LIMITS);
const sdk = sdkOf(h);

t.test('success body is exactly {success, message, usedQuota, remainingQuota} with running arithmetic', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5 });
  const tokens = await new TokenSource(h, lic).many(5);
  for (let i = 0; i < 4; i++) {
    const res = await sdk.validate({ token: tokens[i]! });
    t.type(res.message, 'string', 'message is a string');
    t.ok(res.message.length > 0, 'message is not empty');
    t.strictSame(
      res,
      { success: true, message: res.message, usedQuota: i + 1, remainingQuota: 5 - (i + 1) },
      `redemption ${i + 1}: body`,
    );
  }
  const raw = await h.validate(tokens[4]);
  t.equal(raw.status, 200);
  t.match(raw.headers.get('content-type') ?? '', /^application\/json/, 'the wire: JSON');
  const live = await adminView(h, lic.licenseKey);
  t.equal(live.usedQuota, 5, 'admin view: used 5');
  t.equal(live.remainingQuota, 0, 'admin view: remaining 0');
  t.equal(live.totalQuota, 5, 'total unchanged');
});

t.test('the last unit of quota can be redeemed, leaving remainingQuota 0', async (t) => {
  const lic = await h.createLicense({ totalQuota: 2 });
  const [a, b] = await new TokenSource(h, lic).many(2);
  const first = await sdk.validate({ token: a! });
  t.strictSame(first, { success: true, message: first.message, usedQuota: 1, remainingQuota: 1 });
  const last = await sdk.validate({ token: b! });
  t.strictSame(last, { success: true, message: last.message, usedQuota: 2, remainingQuota: 0 });
});

t.test('both published spellings of the path, and other casings, redeem', async (t) => {
  const paths = ['/api/license/validate', '/api/License/validate', '/API/LICENSE/VALIDATE', '/Api/LiCeNsE/Validate'];
  const lic = await h.createLicense({ totalQuota: 10 });
  const tokens = await new TokenSource(h, lic).many(paths.length);
  for (let i = 0; i < paths.length; i++) {
    const path = paths[i] as string;
    const res = await h.request('POST', path, { token: tokens[i] });
    t.equal(res.status, 200, `${path}: status`);
    t.strictSame(
      res.body,
      { success: true, message: res.body?.message, usedQuota: i + 1, remainingQuota: 10 - (i + 1) },
      `${path}: body`,
    );
  }
  // every spelling is the same resource: a token redeemed on one is used on another
  const again = await h.request('POST', '/API/License/VALIDATE', { token: tokens[0] });
  t.equal(again.status, 400, 'a token redeemed through one spelling is used through another');
});

t.test('each redemption reaches Postgres as status used with used_at, and used_quota matches', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10 });
  const source = new TokenSource(h, lic);
  const redeemed = [await source.next(0), await source.next(1), await source.next(0)];
  const unredeemed = await source.next(1);
  const before = new Date(Date.now() - 1000);
  const origins = [undefined, 'https://app.example.com', 'example.org'];
  for (let i = 0; i < redeemed.length; i++) {
    const res = await sdk.validate({ token: redeemed[i]!, origin: origins[i] });
    t.equal(res.usedQuota, i + 1, `redemption ${i + 1}`);
  }
  const after = new Date(Date.now() + 1000);
  await h.drainWorker();

  for (let i = 0; i < redeemed.length; i++) {
    const claims = decodeJwt(redeemed[i] as string).payload;
    const rows = await h.sql`select firma_id, imza_tipi, status, used_at, origin from sign_tokens where token_id = ${claims.token_id as string}`;
    t.equal(rows.length, 1, `token ${i + 1}: one audit row`);
    const row = rows[0];
    t.equal(row?.status, 'used', `token ${i + 1}: status used`);
    t.equal(row?.firma_id, lic.firmaId, `token ${i + 1}: firma_id`);
    t.equal(Number(row?.imza_tipi), claims.imza_tipi, `token ${i + 1}: imza_tipi`);
    t.ok(row?.used_at instanceof Date, `token ${i + 1}: used_at set`);
    const usedAt = (row?.used_at as Date).getTime();
    t.ok(usedAt >= before.getTime() && usedAt <= after.getTime(), `token ${i + 1}: used_at is the redemption time`);
    t.equal(row?.origin ?? null, origins[i] ?? null, `token ${i + 1}: origin as sent`);
  }

  const open = await h.sql`select status, used_at from sign_tokens where token_id = ${decodeJwt(unredeemed).payload.token_id as string}`;
  t.equal(open[0]?.status, 'issued', 'an unredeemed token stays issued');
  t.equal(open[0]?.used_at ?? null, null, 'and has no used_at');

  const used = await h.sql`select used_quota::int as used_quota, total_quota::int as total_quota from licenses where firma_id = ${lic.firmaId}`;
  t.strictSame(used[0], { used_quota: 3, total_quota: 10 }, 'licenses.used_quota counts the redemptions');
  const count = await h.sql`select count(*)::int as n from sign_tokens where firma_id = ${lic.firmaId} and status = 'used'`;
  t.equal(count[0]?.n, 3, 'three used rows for the company');
});
