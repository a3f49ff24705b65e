import { randomUUID } from 'node:crypto';
import t from 'tap';
import { expectInvalid } from '../helpers/admin.js';
import { ADMIN_TOKEN, startHarness } from '../helpers/harness.js';

// PATCH /admin/v1/licenses/{licenseKey} refusals: 400 for an empty or bad body (nothing
// changed), 404 for an unknown key.

t.test('400 for an empty or bad body, 404 for an unknown key', async (t) => {
  const h = await startHarness(t, 'adminpatcherr');
  const lic = await h.createLicense();
  const path = `/admin/v1/licenses/${lic.licenseKey}`;
  const empty = await h.admin('PATCH', path, {});
  t.equal(empty.status, 400, 'empty body');
  t.equal(empty.body?.error?.code, 'INVALID_REQUEST');
  expectInvalid(t, await h.admin('PATCH', path, { totalQuota: 100 }), 'totalQuota');
  expectInvalid(t, await h.admin('PATCH', path, { licenseKey: randomUUID() }), 'licenseKey');
  expectInvalid(t, await h.admin('PATCH', path, { isActive: 'false' }), 'isActive');
  expectInvalid(t, await h.admin('PATCH', path, { expiryDate: 'tomorrow' }), 'expiryDate');
  expectInvalid(t, await h.admin('PATCH', path, { expiryDate: '9999-12-31T23:30:00-05:00' }), 'expiryDate'); // the year 10000 at UTC
  // nested deeper than JSON.stringify can write back: the message says what it is instead
  const deep = `{"organizationName":${'['.repeat(5000)}${']'.repeat(5000)}}`;
  expectInvalid(t, await h.request('PATCH', path, deep, { authorization: `Bearer ${ADMIN_TOKEN}` }), 'organizationName');
  expectInvalid(t, await h.admin('PATCH', path, { organizationName: '' }), 'organizationName');
  expectInvalid(t, await h.admin('PATCH', path, { domains: ['not a domain'] }), 'domains');
  expectInvalid(t, await h.admin('PATCH', path, { releasesPerDay: -1 }), 'releasesPerDay');
  expectInvalid(t, await h.admin('PATCH', path, { releasesPerDay: 2.5 }), 'releasesPerDay');
  expectInvalid(t, await h.admin('PATCH', path, { releasesPerDay: '1' }), 'releasesPerDay');
  expectInvalid(t, await h.admin('PATCH', path, { releasesPerDay: 1_000_001 }), 'releasesPerDay');
  const unchanged = await h.admin('GET', path);
  t.equal(unchanged.body.data.totalQuota, 10, 'nothing changed');
  t.equal(unchanged.body.data.isActive, true);
  t.same(unchanged.body.data.domains, []);
  t.equal(unchanged.body.data.releasesPerDay, 0);

  const missing = await h.admin('PATCH', `/admin/v1/licenses/${randomUUID()}`, { isActive: false });
  t.equal(missing.status, 404);
  t.equal(missing.body?.error?.code, 'LICENSE_NOT_FOUND');
});
