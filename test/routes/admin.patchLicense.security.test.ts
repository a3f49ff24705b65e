import t from 'tap';
import { expectAdminAuthRefused } from '../helpers/admin.js';
import { startHarness } from '../helpers/harness.js';

// PATCH /admin/v1/licenses/{licenseKey} is for the admin bearer only.

t.test('401 UNAUTHORIZED without or with a wrong bearer; nothing changed', async (t) => {
  const h = await startHarness(t, 'adminpatchsec');
  const lic = await h.createLicense();
  await expectAdminAuthRefused(t, h, 'PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { isActive: false });
  const after = await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}`);
  t.equal(after.body.data.isActive, true, 'unauthorised patch changed nothing');
});
