import { randomUUID } from 'node:crypto';
import t from 'tap';
import { startHarness } from '../helpers/harness.js';

// GET /admin/v1/licenses/{licenseKey}: 404 LICENSE_NOT_FOUND for a key no license has, or
// one that is not a UUID.

t.test('404 LICENSE_NOT_FOUND', async (t) => {
  const h = await startHarness(t, 'adminreaderr');
  for (const key of [randomUUID(), 'not-a-uuid']) {
    const missing = await h.admin('GET', `/admin/v1/licenses/${key}`);
    t.equal(missing.status, 404, key);
    t.same(missing.body, { success: false, error: { code: 'LICENSE_NOT_FOUND', message: missing.body?.error?.message } });
    t.type(missing.body?.error?.message, 'string');
  }
});
