import { randomUUID } from 'node:crypto';
import t from 'tap';
import { createBody, expectAdminAuthRefused } from '../helpers/admin.js';
import { startHarness } from '../helpers/harness.js';

// POST /admin/v1/licenses is for the admin bearer only (without ADMIN_TOKEN it is not served
// at all: test/system/config.test.ts).

t.test('401 UNAUTHORIZED without or with a wrong bearer; nothing created', async (t) => {
  const h = await startHarness(t, 'admincreatesec');
  const other = randomUUID();
  await expectAdminAuthRefused(t, h, 'POST', '/admin/v1/licenses', createBody({ licenseKey: other }));
  t.equal((await h.admin('GET', `/admin/v1/licenses/${other}`)).status, 404, 'unauthorised create created nothing');
});
