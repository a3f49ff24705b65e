import { randomUUID } from 'node:crypto';
import t from 'tap';
import { expectInvalid } from '../helpers/admin.js';
import { ADMIN_TOKEN, startHarness } from '../helpers/harness.js';

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
  expectInvalid(t, await h.admin('POST', path, { add: 1, expiresAt: '9999-12-31T23:59:59-00:01' }), 'expiresAt'); // the year 10000 at UTC
  // nested deeper than JSON.stringify can write back (about 4,200 levels): still a 400 naming the field
  for (const deep of [`${'['.repeat(5000)}${']'.repeat(5000)}`, `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`]) {
    expectInvalid(t, await h.request('POST', path, `{"add":${deep}}`, { authorization: `Bearer ${ADMIN_TOKEN}` }), 'add');
  }
  t.equal((await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}`)).body.data.totalQuota, 15, 'refused adds added nothing');
  const [row] = await h.sql`select total_quota::int as q from licenses where license_key = ${lic.licenseKey}`;
  t.equal(row?.q, 15, 'Postgres holds the old total');

  const missing = await h.admin('POST', `/admin/v1/licenses/${randomUUID()}/quota`, { add: 1 });
  t.equal(missing.status, 404);
  t.equal(missing.body?.error?.code, 'LICENSE_NOT_FOUND');
});
