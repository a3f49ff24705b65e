import t from 'tap';
import { expectAdminAuthRefused } from '../helpers/admin.js';
import { startHarness } from '../helpers/harness.js';

// GET /admin/v1/licenses/{licenseKey} is for the admin bearer only.

t.test('401 UNAUTHORIZED without or with a wrong bearer', async (t) => {
  const h = await startHarness(t, 'adminreadsec');
  const lic = await h.createLicense();
  await expectAdminAuthRefused(t, h, 'GET', `/admin/v1/licenses/${lic.licenseKey}`);
});
