import t from 'tap';
import { expectLicenseView } from '../helpers/admin.js';
import { startHarness } from '../helpers/harness.js';
import { claimsOf } from '../helpers/jwt.js';
import { MSG } from '../helpers/shapes.js';

// PATCH /admin/v1/licenses/{licenseKey}: each field changes, and the change is
// in force for the very next public request.

t.test('each field, in force for the next public request', async (t) => {
  const h = await startHarness(t, 'adminpatch', { RATE_GET_TOKEN_PER_MIN: '0', RATE_CHECK_QUOTA_PER_MIN: '0' });
  const lic = await h.createLicense({ totalQuota: 5 });
  const path = `/admin/v1/licenses/${lic.licenseKey}`;
  const first = await h.checkQuota(lic.licenseKey); // warms the check-quota cache
  t.equal(first.status, 200);

  const named = await h.admin('PATCH', path, { organizationName: 'Yeni Ad A.Ş.' });
  expectLicenseView(t, named, 200, lic.password);
  t.equal(named.body.data.organizationName, 'Yeni Ad A.Ş.');
  t.equal((await h.checkQuota(lic.licenseKey)).body.data.organizationName, 'Yeni Ad A.Ş.', 'check-quota shows it at once');
  const got = await h.getToken(lic.licenseKey, lic.password);
  t.equal(got.status, 200);
  t.equal(claimsOf(got.body.signToken).firma_adi, 'Yeni Ad A.Ş.', 'new tokens carry the new name');

  const newPassword = 'a brand new password';
  const pw = await h.admin('PATCH', path, { password: newPassword });
  expectLicenseView(t, pw, 200, newPassword);
  t.equal((await h.getToken(lic.licenseKey, lic.password)).body?.error?.code, 'INVALID_CREDENTIALS', 'old password refused');
  t.equal((await h.getToken(lic.licenseKey, newPassword)).status, 200, 'new password accepted');

  const past = new Date(Date.now() - 3 * 86400_000).toISOString();
  const expired = await h.admin('PATCH', path, { expiryDate: past });
  t.equal(expired.status, 200);
  t.equal(expired.body.data.expiryDate, past);
  const refused = await h.getToken(lic.licenseKey, newPassword);
  t.equal(refused.status, 401);
  t.equal(refused.body?.error?.code, 'LICENSE_EXPIRED');
  t.equal((await h.checkQuota(lic.licenseKey)).status, 410, 'check-quota 410 at once');
  const future = new Date(Date.now() + 30 * 86400_000).toISOString();
  t.equal((await h.admin('PATCH', path, { expiryDate: future })).body.data.expiryDate, future);
  t.equal((await h.getToken(lic.licenseKey, newPassword)).status, 200, 'renewed license issues again');

  const held = await h.getToken(lic.licenseKey, newPassword);
  const off = await h.admin('PATCH', path, { isActive: false });
  t.equal(off.status, 200);
  t.equal(off.body.data.isActive, false);
  const inactive = await h.getToken(lic.licenseKey, newPassword);
  t.equal(inactive.status, 401);
  t.equal(inactive.body?.error?.code, 'LICENSE_INACTIVE');
  t.equal((await h.checkQuota(lic.licenseKey)).status, 403, 'check-quota 403 at once');
  const v = await h.validate(held.body.signToken);
  t.same(v.body, { success: false, message: MSG.INVALID }, 'a token held before deactivation is refused');
  t.equal(v.status, 401);
  const on = await h.admin('PATCH', path, { isActive: true });
  t.equal(on.body.data.isActive, true);
  const redeemed = await h.validate(held.body.signToken);
  t.equal(redeemed.status, 200, 'the refused token was not burned and redeems after reactivation');

  const scoped = await h.admin('PATCH', path, { domains: ['hastane.gov.tr'] });
  t.same(scoped.body.data.domains, ['hastane.gov.tr']);
  const tok = await h.getToken(lic.licenseKey, newPassword);
  const denied = await h.validate(tok.body.signToken, 'https://evil.example');
  t.equal(denied.status, 401);
  t.same(denied.body, { success: false, message: MSG.ORIGIN });
  t.equal((await h.validate(tok.body.signToken, 'https://hastane.gov.tr')).status, 200);
  t.same((await h.admin('PATCH', path, { domains: [] })).body.data.domains, []);
  const anyOrigin = await h.getToken(lic.licenseKey, newPassword);
  t.equal((await h.validate(anyOrigin.body.signToken, 'https://evil.example')).status, 200, 'no domains: any origin');

  const both = await h.admin('PATCH', path, { organizationName: 'İki Alan', isActive: false });
  t.equal(both.body.data.organizationName, 'İki Alan');
  t.equal(both.body.data.isActive, false);
  t.equal(both.body.data.totalQuota, 5, 'quota untouched by PATCH');
  t.equal(both.body.data.usedQuota, 3, 'three redemptions so far');
});
