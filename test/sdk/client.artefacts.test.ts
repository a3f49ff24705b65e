import { createHash, randomUUID } from 'node:crypto';
import {
  KeySet, LicenseClient, verifyLicenseToken, verifyReceipt, type JsonWebKeySet,
} from '@license-service/client';
import t from 'tap';
import { adminView } from '../helpers/admin.js';
import { LIVE_COUNTS, startHarness } from '../helpers/harness.js';
import { claimsOf } from '../helpers/jwt.js';
import { documentNamed } from '../helpers/receipts.js';
import { apiError, sdkOf } from '../helpers/sdk.js';
import { TokenSource } from '../helpers/tokens.js';

// The two methods that answer a signed artefact, against a real server: validateLicense (a
// license token, verified offline with the service's JWKS, which jwks() reads) and sign (a
// redemption with a receipt, verified with a KeySet), their answers exactly as the service sent them, what
// each spends as check-quota sees it (no cache: LIVE_COUNTS), an Idempotency-Key retry of
// sign, and their refusals as the SDK exposes them: license validation's coded errors,
// sign's Turkish messages under validate's codes.

const h = await startHarness(t, 'sdk-artefacts', LIVE_COUNTS);
const sdk = sdkOf(h);
const REDEEMED = 'Token doğrulandı, imza kotası düşüldü';
const past = (): string => new Date(Date.now() - 3 * 86400_000 - 3600_000).toISOString();

async function jwks(): Promise<JsonWebKeySet> {
  const res = await fetch(`${h.url}/.well-known/jwks.json`);
  return (await res.json()) as JsonWebKeySet;
}

const sha256Of = (text: string): string => createHash('sha256').update(text).digest('hex');

t.test('validateLicense: the license token as sent, verified offline with the JWKS; no quota spent', async (t) => {
  const expiry = new Date(Date.now() + 30 * 86_400_000);
  const lic = await h.createLicense({ organizationName: 'Şifa Eczanesi', totalQuota: 6, expiryDate: expiry.toISOString(), domains: ['eczane.example.com'] });
  const client = new LicenseClient({ baseUrl: h.url });
  const answer = await client.validateLicense({ licenseKey: lic.licenseKey, password: lic.password });
  t.strictSame(answer, { success: true, licenseToken: answer.licenseToken, expiresIn: 86_400 }, 'the published body');

  const claims = await verifyLicenseToken(answer.licenseToken, { jwks: await jwks() });
  t.strictSame(claims, {
    typ: 'license', iss: 'license-service', firma_id: lic.firmaId, firma_adi: 'Şifa Eczanesi', active: true,
    license_exp: Math.floor(expiry.getTime() / 1000), total_quota: 6, used_quota: 0, remaining_quota: 6, domains: ['eczane.example.com'],
    iat: claims.iat, exp: claims.iat + answer.expiresIn,
  }, 'the license as the service holds it; exp is iat + expiresIn');
  t.ok(Math.abs(claims.iat - Date.now() / 1000) < 60, 'issued now');

  await client.validate({ token: (await client.getToken({ ...lic, imzaTipi: 0 })).signToken, origin: 'eczane.example.com' });
  const later = await verifyLicenseToken((await client.validateLicense(lic)).licenseToken, { jwks: await jwks() });
  t.match(later, { used_quota: 1, remaining_quota: 5 }, 'a later token says what was spent since');
  t.match((await client.checkQuota(lic.licenseKey)).data, { usedQuota: 1, remainingQuota: 5 }, 'license validation spent nothing');
});

t.test('jwks: the key set as the service publishes it; a license token verifies against it shipped with an application', async (t) => {
  const set = await new LicenseClient({ baseUrl: h.url }).jwks();
  t.strictSame(set, await jwks(), 'the body of /.well-known/jwks.json');
  t.ok(set.keys.length > 0 && set.keys.every((k) => k.kty === 'OKP' && k.crv === 'Ed25519'), 'Ed25519 keys');
  const lic = await h.createLicense({ organizationName: 'Şifa Eczanesi' });
  const shipped = JSON.parse(JSON.stringify(set)) as JsonWebKeySet; // as an application would store it
  t.match(await verifyLicenseToken((await sdk.validateLicense(lic)).licenseToken, { jwks: shipped }), { firma_adi: 'Şifa Eczanesi' });
});

t.test('sign: one unit spent, the receipt verifies with a KeySet; an Idempotency-Key retry answers the identical receipt', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5, domains: ['eczane.example.com'] });
  const client = new LicenseClient({ baseUrl: h.url });
  const keySet = new KeySet({ baseUrl: h.url });
  const [first, second] = await new TokenSource(h, lic).many(2, (i) => i);
  t.equal((await client.checkQuota(lic.licenseKey)).data.remainingQuota, 5, 'nothing spent yet');

  const documents = [
    { name: 'reçete-2026-0311.xml', sha256: sha256Of('<recete/>').toUpperCase() }, // any case is accepted; the receipt has lower case
    { name: 'hasta-onam-formu.pdf', sha256: sha256Of('onam') },
  ];
  const signed = await client.sign({ token: first!, origin: 'https://eczane.example.com', documents });
  t.strictSame(signed, { success: true, message: REDEEMED, usedQuota: 1, remainingQuota: 4, receipt: signed.receipt }, 'the published body');
  t.match((await client.checkQuota(lic.licenseKey)).data, { usedQuota: 1, remainingQuota: 4 }, 'check-quota: one unit spent');

  const receipt = await verifyReceipt(signed.receipt, { keySet });
  t.strictSame(receipt, {
    typ: 'receipt', iss: 'license-service', jti: claimsOf(first!).token_id, firma_id: lic.firmaId, imza_tipi: 0,
    documents: documents.map((d) => ({ name: d.name, sha256: d.sha256.toLowerCase() })),
    iat: receipt.iat, used_quota: 1, remaining_quota: 4,
  }, 'the receipt names the token, the documents and the figures of the answer');

  // a caller's own records: only name and sha256 are sent (the service refuses any other member)
  const files = [{ ...documentNamed('ek-1.pdf'), path: '/tmp/ek-1.pdf', size: 1234 }];
  const key = `imza-${randomUUID()}`;
  const keyed = await client.sign({ token: second!, origin: 'eczane.example.com', documents: files }, { idempotencyKey: key });
  t.match(keyed, { usedQuota: 2, remainingQuota: 3 }, 'a second token, a second unit');
  const again = await client.sign({ token: second!, origin: 'eczane.example.com', documents: files }, { idempotencyKey: key });
  t.strictSame(again, keyed, 'the retry answers the first redemption: the identical receipt');
  t.match(await verifyReceipt(again.receipt, { keySet }), { imza_tipi: 1, documents: [{ name: 'ek-1.pdf', sha256: files[0]!.sha256 }], used_quota: 2 });
  t.match((await client.checkQuota(lic.licenseKey)).data, { usedQuota: 2, remainingQuota: 3 }, 'check-quota: the retry spent nothing');
  t.equal((await adminView(h, lic.licenseKey)).usedQuota, 2, 'what the admin API sees');
});

t.test('validateLicense: the coded errors of get-token\'s login', async (t) => {
  const lic = await h.createLicense();
  const wrong = await apiError(t, sdk.validateLicense({ licenseKey: lic.licenseKey, password: 'wrong' }), 401, 'INVALID_CREDENTIALS', 'Lisans anahtarı veya şifre hatalı');
  t.strictSame(wrong.body, { success: false, error: { code: 'INVALID_CREDENTIALS', message: 'Lisans anahtarı veya şifre hatalı' } }, 'the body as sent');
  await apiError(t, sdk.validateLicense({ licenseKey: randomUUID(), password: lic.password }), 401, 'INVALID_CREDENTIALS', 'Lisans anahtarı veya şifre hatalı');
  await apiError(t, sdk.validateLicense({ licenseKey: '', password: lic.password }), 400, 'INVALID_REQUEST', 'Geçersiz istek parametresi: licenseKey');
  const expired = await h.createLicense({ expiryDate: past() });
  await apiError(t, sdk.validateLicense(expired), 401, 'LICENSE_EXPIRED', 'Lisans süresi dolmuş');
  const inactive = await h.createLicense({ isActive: false });
  await apiError(t, sdk.validateLicense(inactive), 401, 'LICENSE_INACTIVE', 'Lisans aktif değil');
});

t.test('sign: a used token, the documents, the origin and the Idempotency-Key refused in validate\'s messages and codes', async (t) => {
  const lic = await h.createLicense({ totalQuota: 3, domains: ['eczane.example.com'] });
  // minted while there is quota: get-token and sign-token refuse a license without any
  const [a, b, c, d] = await new TokenSource(h, lic).many(4);
  const documents = [documentNamed('recete.xml')];
  const key = `imza-${randomUUID()}`;
  await sdk.sign({ token: a!, origin: 'eczane.example.com', documents }, { idempotencyKey: key });

  const used = await apiError(t, sdk.sign({ token: a!, origin: 'eczane.example.com', documents }), 400, 'TOKEN_ALREADY_USED',
    'Bu token zaten kullanılmış. Yeni token alınız.');
  t.strictSame(used.body, { success: false, message: 'Bu token zaten kullanılmış. Yeni token alınız.' }, 'the body as sent');
  await apiError(t, sdk.validate({ token: a!, origin: 'eczane.example.com' }), 400, 'TOKEN_ALREADY_USED', used.message);

  await apiError(t, sdk.sign({ token: a!, origin: 'eczane.example.com', documents: [documentNamed('başka.xml')] }, { idempotencyKey: key }), 422,
    'IDEMPOTENCY_KEY_REUSED', 'Bu işlem anahtarı başka bir token için kullanıldı.');
  await apiError(t, sdk.sign({ token: b!, origin: 'eczane.example.com', documents: [] }), 400, 'INVALID_REQUEST', 'Geçersiz istek: documents');
  await apiError(t, sdk.sign({ token: b!, origin: 'eczane.example.com', documents: [{ name: 'x.xml', sha256: 'abc' }] }), 400, 'INVALID_REQUEST',
    'Geçersiz istek: documents');
  await apiError(t, sdk.sign({ token: '', documents }), 400, 'TOKEN_EMPTY', 'Token boş olamaz');
  await apiError(t, sdk.sign({ token: b!, origin: 'https://evil.example.org', documents }), 401, 'ORIGIN_NOT_AUTHORIZED', 'Bu domain için yetki yok');
  t.equal((await adminView(h, lic.licenseKey)).usedQuota, 1, 'the refusals spent nothing');

  await sdk.validate({ token: b!, origin: 'eczane.example.com' });
  await sdk.sign({ token: c!, origin: 'eczane.example.com', documents });
  const exhausted = await apiError(t, sdk.sign({ token: d!, origin: 'eczane.example.com', documents }), 400, 'QUOTA_EXHAUSTED', 'İmza kotası doldu');
  t.strictSame(exhausted.body, { success: false, message: 'İmza kotası doldu', remainingQuota: 0 }, 'remainingQuota 0 in the body');
});
