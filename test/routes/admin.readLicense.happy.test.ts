import t from 'tap';
import { expectLicenseView } from '../helpers/admin.js';
import { startHarness } from '../helpers/harness.js';

// GET /admin/v1/licenses/{licenseKey}: the License view, with the live quota.

t.test('admin read license', async (t) => {
  const h = await startHarness(t, 'adminread', { RATE_GET_TOKEN_PER_MIN: '0' });

  t.test('200 with the License view; keys compare case-insensitively', async (t) => {
    const lic = await h.createLicense({ totalQuota: 4, domains: ['a.example'] });
    const res = await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}`);
    expectLicenseView(t, res, 200, lic.password);
    t.equal(res.body.data.licenseKey, lic.licenseKey);
    t.equal(res.body.data.firmaId, lic.firmaId);
    t.equal(res.body.data.totalQuota, 4);
    t.equal(res.body.data.usedQuota, 0);
    t.same(res.body.data.domains, ['a.example']);
    const upper = await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey.toUpperCase()}`);
    t.equal(upper.status, 200, 'license keys compare case-insensitively');
    t.equal(upper.body?.data?.licenseKey, lic.licenseKey);
  });

  t.test('usedQuota in the admin view follows redemptions immediately', async (t) => {
    const lic = await h.createLicense({ totalQuota: 8 });
    const path = `/admin/v1/licenses/${lic.licenseKey}`;
    for (let i = 1; i <= 3; i++) {
      const got = await h.getToken(lic.licenseKey, lic.password);
      t.equal((await h.validate(got.body.signToken)).status, 200);
      const view = await h.admin('GET', path);
      t.equal(view.body.data.usedQuota, i, `after ${i} redemption(s)`);
      t.equal(view.body.data.remainingQuota, 8 - i);
      t.equal(view.body.data.quotaPercentage, Math.round(((8 - i) / 8) * 10000) / 100);
    }
    // issuing alone uses nothing
    await h.getToken(lic.licenseKey, lic.password);
    t.equal((await h.admin('GET', path)).body.data.usedQuota, 3, 'an unredeemed token uses no quota');
    await h.drainWorker();
    const view = await h.admin('GET', path);
    t.equal(view.body.data.usedQuota, 3, 'same after the worker persisted');
    const [row] = await h.sql`select used_quota::int as u from licenses where license_key = ${lic.licenseKey}`;
    t.equal(row?.u, 3, 'Postgres used_quota after the worker drained');
  });
});
