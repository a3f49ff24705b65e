import { randomUUID } from 'node:crypto';
import t from 'tap';
import { createBody, expectLicenseView, PASSWORD, UUID_RE } from '../helpers/admin.js';
import { startHarness } from '../helpers/harness.js';

// POST /admin/v1/licenses: 201 with the License view, a generated UUID key or
// the one given, the options honoured, the password stored hashed; an expiry already past
// is created with a warning (and PATCH setting one too).

t.test('admin create license', async (t) => {
  const h = await startHarness(t, 'admincreate');

  t.test('201 with the License view, generated UUID key', async (t) => {
    const expiryDate = '2031-03-04T05:06:07.000Z';
    const res = await h.admin('POST', '/admin/v1/licenses', createBody({ totalQuota: 7, expiryDate }));
    expectLicenseView(t, res, 201);
    t.same(Object.keys(res.body).sort(), ['data', 'success'], 'no warnings for a future expiry');
    const d = res.body.data;
    t.match(d.licenseKey, UUID_RE, 'a generated UUID key');
    t.type(d.firmaId, 'string');
    t.ok(d.firmaId.length > 0, 'a firmaId');
    t.same(d, {
      licenseKey: d.licenseKey, firmaId: d.firmaId, organizationName: 'Örnek Eczane Ltd.', totalQuota: 7,
      usedQuota: 0, remainingQuota: 7, quotaPercentage: 100, expiryDate, isActive: true, domains: [],
      webhookUrl: null, webhookSecretSet: false, releasesPerDay: 0,
      packages: [{ id: 1, amount: 7, used: 0, remaining: 7, forfeited: 0, expiresAt: expiryDate, createdAt: d.packages[0]?.createdAt, note: null }],
      rateLimits: { getToken: null, signToken: null, validate: null, checkQuota: null },
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
      licenseKey, isActive: false, domains: ['Example.COM', '*.eczane.com.tr'], totalQuota: 0, releasesPerDay: 1_000_000,
    }));
    expectLicenseView(t, res, 201);
    t.equal(res.body.data.licenseKey, licenseKey);
    t.equal(res.body.data.isActive, false);
    t.equal(res.body.data.totalQuota, 0);
    t.equal(res.body.data.remainingQuota, 0);
    t.same(res.body.data.domains, ['example.com', '*.eczane.com.tr'], 'domains as host names, lower case');
    t.equal(res.body.data.releasesPerDay, 1_000_000, 'releasesPerDay as given (its maximum)');
    const plain = await h.admin('POST', '/admin/v1/licenses', createBody());
    t.equal(plain.body.data.releasesPerDay, 0, 'releasesPerDay 0 when not given: releases off');
  });

  t.test('an expiry already past: created, with a warning naming expiryDate; PATCH warns likewise', async (t) => {
    const expiryDate = '2020-01-31T23:59:59.000Z';
    const res = await h.admin('POST', '/admin/v1/licenses', createBody({ expiryDate }));
    expectLicenseView(t, res, 201);
    t.equal(res.body.data.expiryDate, expiryDate, 'stored as given (an import of an old license)');
    t.same(res.body.warnings, [{
      code: 'EXPIRY_IN_PAST', field: 'expiryDate',
      message: `expiryDate: ${expiryDate} geçmişte; lisans kaydedildi ancak süresi dolmuş: get-token ve validate reddeder`,
    }]);
    const key = res.body.data.licenseKey as string;
    t.equal((await h.getToken(key, PASSWORD)).body?.error?.code, 'LICENSE_EXPIRED', 'and it serves nothing, as the warning says');

    const extended = await h.admin('PATCH', `/admin/v1/licenses/${key}`, { expiryDate: '2099-01-01T00:00:00.000Z' });
    t.equal(extended.status, 200);
    t.equal(extended.body.warnings, undefined, 'a future expiry: no warning');
    const other = await h.admin('PATCH', `/admin/v1/licenses/${key}`, { isActive: true });
    t.equal(other.body.warnings, undefined, 'a change without expiryDate: no warning');
    const back = await h.admin('PATCH', `/admin/v1/licenses/${key}`, { expiryDate: '2021-06-01T00:00:00Z' });
    t.equal(back.status, 200);
    t.equal(back.body.warnings?.[0]?.code, 'EXPIRY_IN_PAST', 'PATCH to a past expiry warns');
    t.match(back.body.warnings?.[0]?.message, /^expiryDate: 2021-06-01T00:00:00\.000Z geçmişte/);
  });
});
