import t from 'tap';
import { expectAdminAuthRefused } from '../helpers/admin.js';
import { startHarness } from '../helpers/harness.js';

// POST /admin/v1/licenses/{licenseKey}/quota is for the admin bearer only.

t.test('401 UNAUTHORIZED without or with a wrong bearer; nothing added', async (t) => {
  const h = await startHarness(t, 'adminquotasec');
  const lic = await h.createLicense();
  await expectAdminAuthRefused(t, h, 'POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 5 });
  const after = await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}`);
  t.equal(after.body.data.totalQuota, 10, 'unauthorised quota added nothing');
});
