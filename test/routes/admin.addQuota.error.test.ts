import { randomUUID } from 'node:crypto';
import t from 'tap';
import { expectInvalid } from '../helpers/admin.js';
import { startHarness } from '../helpers/harness.js';

// POST /admin/v1/licenses/{licenseKey}/quota refusals: 400 naming the field for anything but
// a positive integer `add` (nothing added), 404 for an unknown key. (The Idempotency-Key
// header: test/faults/admin.redisRefuses.test.ts.)

t.test('400 for anything but a positive integer, 404 for an unknown key', async (t) => {
  const h = await startHarness(t, 'adminquotaerr');
  const lic = await h.createLicense({ totalQuota: 15 });
  const path = `/admin/v1/licenses/${lic.licenseKey}/quota`;
  for (const add of [0, -1, 1.5, '3', null]) {
    expectInvalid(t, await h.admin('POST', path, { add }), 'add');
  }
  expectInvalid(t, await h.admin('POST', path, {}), 'add');
  expectInvalid(t, await h.admin('POST', path, { add: 1, extra: true }), 'extra');
  t.equal((await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}`)).body.data.totalQuota, 15, 'refused adds added nothing');
  const [row] = await h.sql`select total_quota::int as q from licenses where license_key = ${lic.licenseKey}`;
  t.equal(row?.q, 15, 'Postgres holds the old total');

  const missing = await h.admin('POST', `/admin/v1/licenses/${randomUUID()}/quota`, { add: 1 });
  t.equal(missing.status, 404);
  t.equal(missing.body?.error?.code, 'LICENSE_NOT_FOUND');
});
