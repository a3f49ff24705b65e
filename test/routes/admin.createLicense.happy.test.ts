import { randomUUID } from 'node:crypto';
import t from 'tap';
import { createBody, expectLicenseView, PASSWORD, UUID_RE } from '../helpers/admin.js';
import { startHarness } from '../helpers/harness.js';

// POST /admin/v1/licenses: 201 with the License view, a generated UUID key or
// the one given, the options honoured, the password stored hashed.

t.test('admin create license', async (t) => {
  const h = await startHarness(t, 'admincreate');

  t.test('201 with the License view, generated UUID key', async (t) => {
    const expiryDate = '2031-03-04T05:06:07.000Z';
    const res = await h.admin('POST', '/admin/v1/licenses', createBody({ totalQuota: 7, expiryDate }));
    expectLicenseView(t, res, 201);
    const d = res.body.data;
    t.match(d.licenseKey, UUID_RE, 'a generated UUID key');
    t.type(d.firmaId, 'string');
    t.ok(d.firmaId.length > 0, 'a firmaId');
    t.same(d, {
      licenseKey: d.licenseKey, firmaId: d.firmaId, organizationName: 'Örnek Eczane Ltd.', totalQuota: 7,
      usedQuota: 0, remainingQuota: 7, quotaPercentage: 100, expiryDate, isActive: true, domains: [],
      webhookUrl: null, webhookSecretSet: false,
    });
    const again = await h.admin('POST', '/admin/v1/licenses', createBody());
    t.equal(again.status, 201);
    t.not(again.body.data.licenseKey, d.licenseKey, 'each generated key is new');
    t.not(again.body.data.firmaId, d.firmaId, 'each license its own firmaId');
    // the row reached Postgres, password hashed
    const [row] = await h.sql`select license_key, password_hash, total_quota::int as q from licenses where firma_id = ${d.firmaId}`;
    t.equal(row?.license_key, d.licenseKey);
    t.equal(row?.q, 7);
    t.not(row?.password_hash, PASSWORD, 'password stored hashed');
    t.notMatch(String(row?.password_hash), PASSWORD);
  });

  t.test('a given licenseKey is kept, options honoured', async (t) => {
    const licenseKey = randomUUID();
    const res = await h.admin('POST', '/admin/v1/licenses', createBody({
      licenseKey, isActive: false, domains: ['Example.COM', '*.eczane.com.tr'], totalQuota: 0,
    }));
    expectLicenseView(t, res, 201);
    t.equal(res.body.data.licenseKey, licenseKey);
    t.equal(res.body.data.isActive, false);
    t.equal(res.body.data.totalQuota, 0);
    t.equal(res.body.data.remainingQuota, 0);
    t.same(res.body.data.domains, ['example.com', '*.eczane.com.tr'], 'domains as host names, lower case');
  });
});
