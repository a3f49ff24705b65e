import { randomUUID } from 'node:crypto';
import t from 'tap';
import { startHarness } from '../helpers/harness.js';

// GET /api/License/history/{licenseKey} refusals of a bad request: a license key that is not
// a UUID, a ?limit= that is not 1..500.

t.test('history errors', async (t) => {
  const h = await startHarness(t, 'historyerr', { RATE_GET_TOKEN_PER_MIN: '0' });

  t.test('400 for a license key that is not a UUID', async (t) => {
    const lic = await h.createLicense();
    const access = (await h.getToken(lic.licenseKey, lic.password, 0)).body.accessToken as string;
    for (const key of ['not-a-uuid', '12345', `${lic.licenseKey}x`]) {
      const res = await h.history(key, access);
      t.equal(res.status, 400, `${key}: 400`);
      t.equal(res.body?.success, false);
      t.type(res.body?.error?.code, 'string');
    }
    t.not((await h.history(randomUUID(), access)).status, 200, 'an unknown UUID gives no history');
  });

  t.test('?limit= other than 1..500: 400', async (t) => {
    const lic = await h.createLicense();
    const access = (await h.getToken(lic.licenseKey, lic.password, 0)).body.accessToken as string;
    for (const bad of ['0', '501', 'abc', '-1', '2.5']) {
      const res = await h.history(lic.licenseKey, access, `?limit=${bad}`);
      t.equal(res.status, 400, `limit=${bad}: 400`);
      t.equal(res.body?.success, false);
      t.type(res.body?.error?.code, 'string');
      t.type(res.body?.error?.message, 'string');
    }
  });
});
