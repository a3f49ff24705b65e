import { createPublicKey, verify } from 'node:crypto';
import t, { type Test } from 'tap';
import { loadConfig } from '../../src/config.js';
import { LIVE_COUNTS, startHarness, testEnv, type Harness } from '../helpers/harness.js';
import { parseMetrics } from '../helpers/metrics.js';

// License validation: POST /api/License/validate with {licenseKey, password} (no token)
// answers a license token, an EdDSA JWS of the license's state verified offline with
// /.well-known/jwks.json. The login is get-token's (coded errors, budgets, the key's
// tokens-issued count); no quota is spent. A body with a token is validate, as published.

const PATH = '/api/License/validate';
const TOKEN_LIMIT = 3;

interface Jwk { kid: string; x: string }

/** The claims of a license token once its signature verified with the service's published key (else a failure). */
async function verifiedClaims(t: Test, h: Harness, token: string): Promise<Record<string, unknown>> {
  const [header, payload, signature] = token.split('.') as [string, string, string];
  const head = JSON.parse(Buffer.from(header, 'base64url').toString()) as { alg: string; kid: string; typ: string };
  t.same(head, { alg: 'EdDSA', typ: 'JWT', kid: head.kid }, 'header: EdDSA and a kid');
  const jwks = (await h.request('GET', '/.well-known/jwks.json')).body as { keys: Jwk[] };
  const jwk = jwks.keys.find((k) => k.kid === head.kid);
  t.ok(jwk, 'its kid is published');
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk?.x ?? '' }, format: 'jwk' });
  t.ok(verify(null, Buffer.from(`${header}.${payload}`), key, Buffer.from(signature, 'base64url')), 'the signature verifies');
  return JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
}

function licenseValidation(h: Harness, body: unknown): ReturnType<Harness['request']> {
  return h.request('POST', PATH, body);
}

t.test('license validation, as deployed', async (t) => {
  const h = await startHarness(t, 'licval', { ...LIVE_COUNTS, RATE_GET_TOKEN_PER_MIN: String(TOKEN_LIMIT) });
  const expiry = new Date(Date.now() + 200 * 86_400_000);
  const lic = await h.createLicense({ organizationName: 'Örnek Eczane Ltd.', totalQuota: 5, expiryDate: expiry.toISOString(), domains: ['eczane.ornek.com.tr', '*.ornek.com.tr'] });

  t.test('200: a license token of the license as it is now; no quota spent', async (t) => {
    // one redemption first, so the token's figures are the live ones
    const pair = await h.getToken(lic.licenseKey, lic.password);
    t.equal((await h.validate(pair.body.signToken, 'https://eczane.ornek.com.tr')).status, 200);
    const before = Math.floor(Date.now() / 1000);
    const res = await licenseValidation(h, { licenseKey: lic.licenseKey.toUpperCase(), password: lic.password });
    t.equal(res.status, 200, res.text);
    t.same(Object.keys(res.body), ['success', 'licenseToken', 'expiresIn']);
    t.equal(res.body.success, true);
    t.equal(res.body.expiresIn, 86_400, 'LICENSE_TOKEN_SECONDS: a day by default');
    t.equal(res.headers.get('cache-control'), null, 'validate\'s headers');
    const claims = await verifiedClaims(t, h, res.body.licenseToken as string);
    const iat = claims.iat as number;
    t.ok(iat >= before && iat <= Math.ceil(Date.now() / 1000), 'iat: now');
    t.strictSame(claims, {
      typ: 'license', iss: 'license-service', firma_id: lic.firmaId, firma_adi: 'Örnek Eczane Ltd.', active: true,
      license_exp: Math.floor(expiry.getTime() / 1000), total_quota: 5, used_quota: 1, remaining_quota: 4,
      domains: ['eczane.ornek.com.tr', '*.ornek.com.tr'], iat, exp: iat + 86_400,
    }, 'the claims, in the published order');
    t.same(Object.keys(claims), ['typ', 'iss', 'firma_id', 'firma_adi', 'active', 'license_exp', 'total_quota', 'used_quota', 'remaining_quota', 'domains', 'iat', 'exp']);
    const quota = await h.checkQuota(lic.licenseKey);
    t.equal(quota.body.data.usedQuota, 1, 'license validation spent nothing');
  });

  t.test('a body with a token is validate, exactly as published', async (t) => {
    const both = await licenseValidation(h, { token: 'not.a.token', licenseKey: lic.licenseKey, password: lic.password });
    t.equal(both.status, 401);
    t.same(both.body, { success: false, message: 'Geçersiz token' });
    t.same((await licenseValidation(h, {})).body, { success: false, message: 'Token boş olamaz' }, 'neither: token empty');
    t.same((await licenseValidation(h, { token: null, licenseKey: lic.licenseKey })).body, { success: false, message: 'Token boş olamaz' });
    const keyed = await h.request('POST', PATH, { licenseKey: lic.licenseKey, password: 'wrong password!' }, { 'idempotency-key': '\tnot a key\t' });
    t.same([keyed.status, keyed.body.error?.code], [401, 'INVALID_CREDENTIALS'], 'license validation reads no Idempotency-Key (not even a malformed one)');
    const array = await licenseValidation(h, [{ licenseKey: lic.licenseKey, password: lic.password }]);
    t.same([array.status, array.body.message], [400, 'Geçersiz istek: gövde bir JSON nesnesi olmalı']);
  });

  t.test('get-token\'s errors, coded', async (t) => {
    const coded = (code: string, message: string) => ({ success: false, error: { code, message } });
    const cases: [string, unknown, number, unknown][] = [
      ['wrong password', { licenseKey: lic.licenseKey, password: 'wrong password!' }, 401, coded('INVALID_CREDENTIALS', 'Lisans anahtarı veya şifre hatalı')],
      ['unknown key', { licenseKey: '00000000-0000-4000-8000-000000000000', password: 'whatever1' }, 401, coded('INVALID_CREDENTIALS', 'Lisans anahtarı veya şifre hatalı')],
      ['a key that is no UUID', { licenseKey: 'abc', password: 'whatever1' }, 401, coded('INVALID_CREDENTIALS', 'Lisans anahtarı veya şifre hatalı')],
      ['no password', { licenseKey: lic.licenseKey }, 400, coded('INVALID_REQUEST', 'Geçersiz istek parametresi: password')],
      ['a password of the wrong type', { licenseKey: lic.licenseKey, password: 12345678 }, 400, coded('INVALID_REQUEST', 'Geçersiz istek parametresi: password')],
      ['a key of the wrong type', { licenseKey: 7, password: lic.password }, 400, coded('INVALID_REQUEST', 'Geçersiz istek parametresi: licenseKey')],
      ['an empty key', { licenseKey: '', password: lic.password }, 400, coded('INVALID_REQUEST', 'Geçersiz istek parametresi: licenseKey')],
      ['a NUL in the password', { licenseKey: lic.licenseKey, password: 'abc\u0000defgh' }, 400, coded('INVALID_REQUEST', 'Geçersiz istek parametresi: password')],
    ];
    for (const [name, body, status, expected] of cases) {
      const res = await licenseValidation(h, body);
      t.equal(res.status, status, name);
      t.same(res.body, expected, name);
    }
  });

  t.test('expired, inactive, and a license expiring before the token would', async (t) => {
    const expired = await h.createLicense({ expiryDate: new Date(Date.now() - 86_400_000).toISOString() });
    const res = await licenseValidation(h, { licenseKey: expired.licenseKey, password: expired.password });
    t.same([res.status, res.body.error?.code], [401, 'LICENSE_EXPIRED']);
    const inactive = await h.createLicense({ isActive: false });
    const off = await licenseValidation(h, { licenseKey: inactive.licenseKey, password: inactive.password });
    t.same([off.status, off.body.error?.code], [401, 'LICENSE_INACTIVE']);
    const soon = new Date(Date.now() + 3_600_000);
    const ending = await h.createLicense({ expiryDate: soon.toISOString() });
    const short = await licenseValidation(h, { licenseKey: ending.licenseKey, password: ending.password });
    t.equal(short.status, 200);
    const claims = await verifiedClaims(t, h, short.body.licenseToken as string);
    t.equal(claims.exp, Math.floor(soon.getTime() / 1000), 'the token ends with the license');
    t.equal(short.body.expiresIn, (claims.exp as number) - (claims.iat as number));
    t.ok(short.body.expiresIn <= 3600);
    // deactivated after a token was issued: the next validation says so
    t.equal((await h.admin('PATCH', `/admin/v1/licenses/${ending.licenseKey}`, { isActive: false })).status, 200);
    const later = await licenseValidation(h, { licenseKey: ending.licenseKey, password: ending.password });
    t.same([later.status, later.body.error?.code], [401, 'LICENSE_INACTIVE']);
  });

  t.test('the key\'s tokens-issued limit is get-token\'s: both count toward it', async (t) => {
    const other = await h.createLicense();
    const statuses: number[] = [];
    statuses.push((await licenseValidation(h, { licenseKey: other.licenseKey, password: other.password })).status);
    statuses.push((await h.getToken(other.licenseKey, other.password)).status);
    statuses.push((await licenseValidation(h, { licenseKey: other.licenseKey, password: other.password })).status);
    const over = await licenseValidation(h, { licenseKey: other.licenseKey, password: other.password });
    const overToken = await h.getToken(other.licenseKey, other.password);
    t.same(statuses, [200, 200, 200], `${TOKEN_LIMIT} logins a minute`);
    t.equal(over.status, 429);
    t.same(Object.keys(over.body), ['success', 'message', 'retryAfter']);
    t.equal(over.body.message, 'Çok fazla istek. Lütfen bekleyiniz.');
    t.ok(Number(over.headers.get('retry-after')) >= 1);
    t.match(over.headers.get('ratelimit-policy'), /get-token/, 'the get-token policy\'s fields');
    t.equal(overToken.status, 429, 'and get-token is refused too');
  });

  t.test('counted in /metrics', async (t) => {
    const scrape = parseMetrics((await h.request('GET', '/metrics')).text);
    t.ok(scrape.value('license_license_tokens_issued_total', {}) >= 3, 'license tokens issued, summed over the processes');
  });
});

t.test('LICENSE_TOKEN_SECONDS sets the lifetime; refused out of range', async (t) => {
  const h = await startHarness(t, 'licvalsec', { ...LIVE_COUNTS, LICENSE_TOKEN_SECONDS: '120' });
  const lic = await h.createLicense();
  const res = await licenseValidation(h, { licenseKey: lic.licenseKey, password: lic.password });
  t.equal(res.body.expiresIn, 120);
  const claims = await verifiedClaims(t, h, res.body.licenseToken as string);
  t.equal((claims.exp as number) - (claims.iat as number), 120);
  for (const bad of ['30', '31622401', 'a day', '1.5']) {
    t.throws(() => loadConfig(testEnv('licvalcfg', { LICENSE_TOKEN_SECONDS: bad })), /LICENSE_TOKEN_SECONDS/, `LICENSE_TOKEN_SECONDS=${bad} refused`);
  }
});

t.test('failed attempts count toward the client address\'s budget, the address read through TRUST_PROXY', async (t) => {
  const h = await startHarness(t, 'licvaladdr', { ...LIVE_COUNTS, TRUST_PROXY: '1', RATE_GET_TOKEN_FAILURES_PER_MIN: '2', GET_TOKEN_MAX_DELAY_MS: '0' });
  const lic = await h.createLicense();
  const wrong = (address: string) => h.request('POST', PATH, { licenseKey: lic.licenseKey, password: 'not the password' }, { 'x-forwarded-for': address });
  const statuses = [];
  for (let i = 0; i < 3; i++) statuses.push((await wrong('203.0.113.5')).status);
  t.same(statuses, [401, 401, 429], 'the third failure from one address is refused');
  const refused = await wrong('203.0.113.5');
  t.match(refused.headers.get('ratelimit-policy'), /failed-logins/, 'by the address\'s budget');
  t.equal((await wrong('198.51.100.7')).status, 401, 'another address has its own budget');
  const right = await h.request('POST', PATH, { licenseKey: lic.licenseKey, password: lic.password }, { 'x-forwarded-for': '198.51.100.7' });
  t.equal(right.status, 200, 'and the holder gets a license token');
});
