import { createHash } from 'node:crypto';
import { KeySet, receiptDigest, verifyLicenseToken, verifyReceipt } from '@license-service/client';
import t from 'tap';
import { NO_RATE_LIMITS, startHarness } from '../helpers/harness.js';

// The desktop side against the service itself, as docs/sdk.md shows it: a license token from
// license validation and a receipt from sign, verified offline by the SDK with the keys the
// service publishes; the receipt's digest is the one Postgres keeps.

const h = await startHarness(t, 'sdk-e2e', NO_RATE_LIMITS);

t.test('a license token from license validation verifies, with the license as the service holds it', async (t) => {
  const expiry = new Date(Date.now() + 30 * 86_400_000);
  const lic = await h.createLicense({ organizationName: 'Uçtan Uca A.Ş.', totalQuota: 7, expiryDate: expiry.toISOString(), domains: ['*.ornek.com.tr'] });
  const res = await h.request('POST', '/api/License/validate', { licenseKey: lic.licenseKey, password: lic.password });
  t.equal(res.status, 200);
  const keySet = new KeySet({ baseUrl: h.url });
  const claims = await verifyLicenseToken(res.body.licenseToken as string, { keySet });
  t.match(claims, {
    typ: 'license', iss: 'license-service', firma_id: lic.firmaId, firma_adi: 'Uçtan Uca A.Ş.', active: true,
    license_exp: Math.floor(expiry.getTime() / 1000), total_quota: 7, used_quota: 0, remaining_quota: 7, domains: ['*.ornek.com.tr'],
  });
  t.equal(claims.exp - claims.iat, 86_400);
  await t.rejects(verifyLicenseToken(`${res.body.licenseToken as string}x`, { keySet }), { name: 'ArtefactVerificationError' }, 'a changed token does not');
});

t.test('a receipt from sign verifies, and its digest is the one Postgres keeps', async (t) => {
  const lic = await h.createLicense({ totalQuota: 3 });
  const pair = await h.getToken(lic.licenseKey, lic.password);
  const sha256 = createHash('sha256').update('reçete').digest('hex');
  const res = await h.request('POST', '/api/Signature/sign', { token: pair.body.signToken, documents: [{ name: 'recete.xml', sha256 }] });
  t.equal(res.status, 200, res.text);
  const keySet = new KeySet({ baseUrl: h.url });
  const claims = await verifyReceipt(res.body.receipt as string, { keySet });
  t.match(claims, { typ: 'receipt', firma_id: lic.firmaId, imza_tipi: 0, documents: [{ name: 'recete.xml', sha256 }], used_quota: 1, remaining_quota: 2 });
  await t.rejects(verifyLicenseToken(res.body.receipt as string, { keySet }), { name: 'ArtefactVerificationError' }, 'a receipt is no license token');
  await h.drainWorker();
  const rows = await h.sql`select receipt_sha256, documents from token_redemptions where firma_id = ${lic.firmaId}`;
  t.same(rows.map((r) => ({ ...r })), [{ receipt_sha256: await receiptDigest(res.body.receipt as string), documents: 1 }]);
});
