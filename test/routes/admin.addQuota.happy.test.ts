import t from 'tap';
import { expectLicenseView } from '../helpers/admin.js';
import { ADMIN_TOKEN, startHarness, type Harness } from '../helpers/harness.js';
import type { Answer } from '../helpers/http.js';
import { MSG } from '../helpers/shapes.js';

// POST /admin/v1/licenses/{licenseKey}/quota: a package of quota is added,
// in force for the next get-token, check-quota and validate; a retry with the same
// Idempotency-Key credits nothing and says so (replayed: true).

/** A purchase of the license under one Idempotency-Key, its body as given. */
const purchaseOf = (h: Harness, licenseKey: string, key: string) => (body: Record<string, unknown>): Promise<Answer> =>
  h.request('POST', `/admin/v1/licenses/${licenseKey}/quota`, body, { authorization: `Bearer ${ADMIN_TOKEN}`, 'idempotency-key': key });

t.test('admin add quota', async (t) => {
  const h = await startHarness(t, 'adminquota', { RATE_GET_TOKEN_PER_MIN: '0', RATE_CHECK_QUOTA_PER_MIN: '0' });

  t.test('adds a positive integer package, in force at once', async (t) => {
    const lic = await h.createLicense({ totalQuota: 1 });
    const path = `/admin/v1/licenses/${lic.licenseKey}/quota`;
    const got = await h.getToken(lic.licenseKey, lic.password);
    t.equal((await h.validate(got.body.signToken)).status, 200);
    const held = await h.getToken(lic.licenseKey, lic.password);
    t.equal(held.status, 400, 'quota used up: get-token refuses');
    t.equal(held.body?.error?.code, 'INSUFFICIENT_QUOTA');

    const added = await h.admin('POST', path, { add: 4 });
    expectLicenseView(t, added, 200, lic.password);
    t.equal(added.body.data.totalQuota, 5);
    t.equal(added.body.data.usedQuota, 1);
    t.equal(added.body.data.remainingQuota, 4);
    t.equal(added.body.data.quotaPercentage, 80);
    t.equal(added.body.replayed, false, 'credited by this request');
    const again = await h.admin('POST', path, { add: 10 });
    t.equal(again.body.data.totalQuota, 15, 'packages add up');
    t.equal(again.body.data.remainingQuota, 14);
    const next = await h.getToken(lic.licenseKey, lic.password);
    t.equal(next.status, 200, 'get-token issues again at once');
    t.equal(next.body.remainingQuota, 14);
    const quota = await h.checkQuota(lic.licenseKey);
    t.equal(quota.body?.data?.totalQuota, 15, 'check-quota shows it at once');
    const [row] = await h.sql`select total_quota::int as q from licenses where license_key = ${lic.licenseKey}`;
    t.equal(row?.q, 15, 'Postgres holds the new total');
  });

  t.test('a token refused for exhausted quota redeems once quota is added', async (t) => {
    const lic = await h.createLicense({ totalQuota: 1 });
    const a = await h.getToken(lic.licenseKey, lic.password);
    const b = await h.getToken(lic.licenseKey, lic.password);
    t.equal(b.status, 200, 'issued while one unit remains');
    t.equal((await h.validate(a.body.signToken)).status, 200);
    const refused = await h.validate(b.body.signToken);
    t.equal(refused.status, 400);
    t.same(refused.body, { success: false, message: MSG.QUOTA, remainingQuota: 0 });
    await h.admin('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 1 });
    const ok = await h.validate(b.body.signToken);
    t.equal(ok.status, 200);
    t.equal(ok.body?.usedQuota, 2);
    t.equal(ok.body?.remainingQuota, 0);
  });

  t.test('a retried Idempotency-Key answers replayed: true and credits nothing', async (t) => {
    const lic = await h.createLicense({ totalQuota: 10 });
    const purchase = (add: number) => purchaseOf(h, lic.licenseKey, 'order-2026-0042')({ add });
    const first = await purchase(5);
    expectLicenseView(t, first, 200, lic.password);
    t.equal(first.body.replayed, false, 'the first request credits');
    t.equal(first.body.data.totalQuota, 15);
    const retry = await purchase(5);
    expectLicenseView(t, retry, 200, lic.password);
    t.equal(retry.body.replayed, true, 'the retry is a replay');
    t.equal(retry.body.data.totalQuota, 15, 'nothing credited again');
    t.same(Object.keys(retry.body).sort(), ['data', 'replayed', 'success']);
    const [row] = await h.sql`select total_quota::int as q from licenses where license_key = ${lic.licenseKey}`;
    t.equal(row?.q, 15, 'Postgres credited once');
  });

  t.test('every field identifies a purchase: another expiry or note under the key is 422, nothing credited', async (t) => {
    const lic = await h.createLicense({ totalQuota: 10 });
    const purchase = purchaseOf(h, lic.licenseKey, `order-fields-${lic.licenseKey}`);
    const sent = { add: 5, expiresAt: '2099-06-30T23:59:59.000Z', note: 'Fatura 2026/118' };
    t.equal((await purchase(sent)).body.replayed, false, 'the first request credits');
    const same = await purchase({ ...sent, expiresAt: '2099-06-30T23:59:59Z' });
    t.equal(same.status, 200, 'the same instant written otherwise is the same purchase');
    t.equal(same.body.replayed, true);
    for (const [what, body] of [
      ['another expiry', { ...sent, expiresAt: '2099-07-31T23:59:59.000Z' }],
      ['no expiry', { add: 5, note: sent.note }],
      ['another note', { ...sent, note: 'Fatura 2026/119' }],
      ['no note', { add: 5, expiresAt: sent.expiresAt }],
      ['another amount', { ...sent, add: 6 }],
    ] as const) {
      const other = await purchase(body);
      t.equal(other.status, 422, `${what}: refused`);
      t.equal(other.body?.error?.code, 'IDEMPOTENCY_KEY_REUSED', what);
    }
    const [row] = await h.sql`select total_quota::int as q from licenses where license_key = ${lic.licenseKey}`;
    t.equal(row?.q, 15, 'Postgres credited once');
  });

  t.test('a purchase recorded before its fields were kept is still identified by its amount', async (t) => {
    const lic = await h.createLicense({ totalQuota: 10 });
    const key = `order-old-${lic.licenseKey}`;
    const purchase = purchaseOf(h, lic.licenseKey, key);
    t.equal((await purchase({ add: 3, note: 'before the upgrade' })).status, 200);
    // as an earlier version recorded it: the amount alone
    await h.sql`update quota_purchases set expires_at = null, note = null, whole = false where idempotency_key = ${key}`;
    const retry = await purchase({ add: 3, note: 'before the upgrade' });
    t.equal(retry.status, 200);
    t.equal(retry.body.replayed, true, 'the retry of an older purchase is a replay');
    t.equal((await purchase({ add: 4 })).status, 422, 'another amount is still refused');
    const [row] = await h.sql`select total_quota::int as q from licenses where license_key = ${lic.licenseKey}`;
    t.equal(row?.q, 13, 'credited once');
  });
});
