import { randomUUID } from 'node:crypto';
import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { ADMIN_TOKEN, startHarness, testEnv, type Answer, type Harness } from '../helpers/harness.js';

// The admin API of CONTRACT.md: bearer auth, create / read / patch / add quota, the License
// view it answers with, its 400/404/409 answers, and that every change is in force for the
// very next public request.

type TestT = Parameters<Parameters<typeof t.test>[0]>[0];

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const LICENSE_FIELDS = [
  'licenseKey', 'firmaId', 'organizationName', 'totalQuota', 'usedQuota', 'remainingQuota',
  'quotaPercentage', 'expiryDate', 'isActive', 'domains',
].sort();
const PASSWORD = 'admin-test-password-42';
const inAYear = (): string => new Date(Date.now() + 365 * 86400_000).toISOString();

function createBody(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { organizationName: 'Örnek Eczane Ltd.', password: PASSWORD, totalQuota: 5, expiryDate: inAYear(), ...extra };
}

/** Asserts a 400 INVALID_REQUEST whose message names the field. */
function assertInvalid(t: TestT, res: Answer, field: string): void {
  t.equal(res.status, 400, `400 for ${field}`);
  t.equal(res.body?.success, false);
  t.equal(res.body?.error?.code, 'INVALID_REQUEST', `INVALID_REQUEST for ${field}`);
  t.type(res.body?.error?.message, 'string');
  t.match(String(res.body?.error?.message), field, `message names ${field}: ${res.text}`);
}

/** Asserts a License view: exactly the published fields, nothing secret. */
function assertLicenseView(t: TestT, res: Answer, status: number, password = PASSWORD): void {
  t.equal(res.status, status, `status ${status}: ${res.text}`);
  t.equal(res.body?.success, true);
  t.same(Object.keys(res.body?.data ?? {}).sort(), LICENSE_FIELDS, 'exactly the License fields');
  t.notMatch(res.text, password, 'never the password');
  t.notMatch(res.text, /argon2|password|hash/i, 'never a hash or a password field');
}

t.test('admin API', async (t) => {
  const h = await startHarness(t, 'admin', { RATE_GET_TOKEN_PER_MIN: '0', RATE_CHECK_QUOTA_PER_MIN: '0' });
  const other = randomUUID();

  t.test('401 UNAUTHORIZED on all four routes without or with a wrong bearer', async (t) => {
    const lic = await h.createLicense();
    const routes: [string, string, unknown][] = [
      ['POST', '/admin/v1/licenses', createBody({ licenseKey: other })],
      ['GET', `/admin/v1/licenses/${lic.licenseKey}`, undefined],
      ['PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { isActive: false }],
      ['POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 5 }],
    ];
    const headerSets: [string, Record<string, string>][] = [
      ['no header', {}],
      ['wrong token', { authorization: 'Bearer wrong-admin-token-0123456789' }],
      ['token with a suffix', { authorization: `Bearer ${ADMIN_TOKEN}x` }],
      ['token prefix', { authorization: `Bearer ${ADMIN_TOKEN.slice(0, -1)}` }],
      ['basic scheme', { authorization: `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}` }],
      ['empty bearer', { authorization: 'Bearer ' }],
    ];
    for (const [method, path, body] of routes) {
      for (const [what, headers] of headerSets) {
        const res = await h.request(method, path, body, headers);
        t.equal(res.status, 401, `${method} ${path} ${what}`);
        t.equal(res.body?.success, false);
        t.equal(res.body?.error?.code, 'UNAUTHORIZED');
        t.type(res.body?.error?.message, 'string');
      }
    }
    // nothing of that took effect
    t.equal((await h.admin('GET', `/admin/v1/licenses/${other}`)).status, 404, 'unauthorised create created nothing');
    const after = await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}`);
    t.equal(after.body.data.isActive, true, 'unauthorised patch changed nothing');
    t.equal(after.body.data.totalQuota, 10, 'unauthorised quota added nothing');
  });

  t.test('POST /admin/v1/licenses: 201 with the License view, generated UUID key', async (t) => {
    const expiryDate = '2031-03-04T05:06:07.000Z';
    const res = await h.admin('POST', '/admin/v1/licenses', createBody({ totalQuota: 7, expiryDate }));
    assertLicenseView(t, res, 201);
    const d = res.body.data;
    t.match(d.licenseKey, UUID_RE, 'a generated UUID key');
    t.type(d.firmaId, 'string');
    t.ok(d.firmaId.length > 0, 'a firmaId');
    t.same(d, {
      licenseKey: d.licenseKey, firmaId: d.firmaId, organizationName: 'Örnek Eczane Ltd.', totalQuota: 7,
      usedQuota: 0, remainingQuota: 7, quotaPercentage: 100, expiryDate, isActive: true, domains: [],
    });
    const again = await h.admin('POST', '/admin/v1/licenses', createBody());
    t.equal(again.status, 201);
    t.not(again.body.data.licenseKey, d.licenseKey, 'each generated key is new');
    t.not(again.body.data.firmaId, d.firmaId, 'each license its own firmaId');
    // the row reached Postgres, password hashed
    const [row] = await h.sql`select license_key, password_hash, total_quota::int as q from licenses where firma_id = ${d.firmaId}`;
    t.equal(row?.license_key, d.licenseKey);
    t.equal(row?.q, 7);
    t.not(row?.password_hash, PASSWORD, 'password stored hashed');
    t.notMatch(String(row?.password_hash), PASSWORD);
  });

  t.test('POST: a given licenseKey is kept, options honoured, 409 when taken', async (t) => {
    const licenseKey = randomUUID();
    const res = await h.admin('POST', '/admin/v1/licenses', createBody({
      licenseKey, isActive: false, domains: ['Example.COM', '*.eczane.com.tr'], totalQuota: 0,
    }));
    assertLicenseView(t, res, 201);
    t.equal(res.body.data.licenseKey, licenseKey);
    t.equal(res.body.data.isActive, false);
    t.equal(res.body.data.totalQuota, 0);
    t.equal(res.body.data.remainingQuota, 0);
    t.same(res.body.data.domains, ['example.com', '*.eczane.com.tr'], 'domains as host names, lower case');

    const taken = await h.admin('POST', '/admin/v1/licenses', createBody({ licenseKey, organizationName: 'Başka' }));
    t.equal(taken.status, 409);
    t.equal(taken.body?.success, false);
    t.equal(taken.body?.error?.code, 'LICENSE_EXISTS');
    t.type(taken.body?.error?.message, 'string');
    const still = await h.admin('GET', `/admin/v1/licenses/${licenseKey}`);
    t.equal(still.body.data.organizationName, 'Örnek Eczane Ltd.', 'the existing license is untouched');
  });

  t.test('POST: 400 INVALID_REQUEST naming the field, nothing created', async (t) => {
    const cases: [string, Record<string, unknown>][] = [
      ['organizationName', (({ organizationName: _o, ...rest }) => rest)(createBody())],
      ['organizationName', createBody({ organizationName: '' })],
      ['organizationName', createBody({ organizationName: 42 })],
      ['password', (({ password: _p, ...rest }) => rest)(createBody())],
      ['password', createBody({ password: '' })],
      ['totalQuota', (({ totalQuota: _q, ...rest }) => rest)(createBody())],
      ['totalQuota', createBody({ totalQuota: -1 })],
      ['totalQuota', createBody({ totalQuota: 1.5 })],
      ['totalQuota', createBody({ totalQuota: '10' })],
      ['expiryDate', (({ expiryDate: _e, ...rest }) => rest)(createBody())],
      ['expiryDate', createBody({ expiryDate: 'next year' })],
      ['expiryDate', createBody({ expiryDate: '2030-13-45T00:00:00Z' })],
      ['expiryDate', createBody({ expiryDate: 1893456000000 })],
      ['licenseKey', createBody({ licenseKey: 'not-a-uuid' })],
      ['licenseKey', createBody({ licenseKey: 'ABC-LICENSE-2024-001' })],
      ['isActive', createBody({ isActive: 'yes' })],
      ['unexpectedField', createBody({ unexpectedField: 1 })],
      ['domains', createBody({ domains: ['bad domain with spaces'] })],
      ['domains', createBody({ domains: ['ok.com', ''] })],
      ['domains', createBody({ domains: 'example.com' })],
      ['domains', createBody({ domains: [42] })],
    ];
    for (const [field, body] of cases) {
      const licenseKey = randomUUID();
      const withKey = field === 'licenseKey' ? body : { ...body, licenseKey };
      const res = await h.admin('POST', '/admin/v1/licenses', withKey);
      assertInvalid(t, res, field);
      if (field !== 'licenseKey') {
        t.equal((await h.admin('GET', `/admin/v1/licenses/${licenseKey}`)).status, 404, `nothing created (${field})`);
      }
    }
  });

  t.test('GET: 200 with the License view, 404 LICENSE_NOT_FOUND', async (t) => {
    const lic = await h.createLicense({ totalQuota: 4, domains: ['a.example'] });
    const res = await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}`);
    assertLicenseView(t, res, 200, lic.password);
    t.equal(res.body.data.licenseKey, lic.licenseKey);
    t.equal(res.body.data.firmaId, lic.firmaId);
    t.equal(res.body.data.totalQuota, 4);
    t.equal(res.body.data.usedQuota, 0);
    t.same(res.body.data.domains, ['a.example']);
    const upper = await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey.toUpperCase()}`);
    t.equal(upper.status, 200, 'license keys compare case-insensitively');
    t.equal(upper.body?.data?.licenseKey, lic.licenseKey);

    for (const key of [randomUUID(), 'not-a-uuid']) {
      const missing = await h.admin('GET', `/admin/v1/licenses/${key}`);
      t.equal(missing.status, 404, key);
      t.same(missing.body, { success: false, error: { code: 'LICENSE_NOT_FOUND', message: missing.body?.error?.message } });
      t.type(missing.body?.error?.message, 'string');
    }
  });

  t.test('PATCH: each field, in force for the next public request', async (t) => {
    const lic = await h.createLicense({ totalQuota: 5 });
    const path = `/admin/v1/licenses/${lic.licenseKey}`;
    const first = await h.checkQuota(lic.licenseKey); // warms the check-quota cache
    t.equal(first.status, 200);

    const named = await h.admin('PATCH', path, { organizationName: 'Yeni Ad A.Ş.' });
    assertLicenseView(t, named, 200, lic.password);
    t.equal(named.body.data.organizationName, 'Yeni Ad A.Ş.');
    t.equal((await h.checkQuota(lic.licenseKey)).body.data.organizationName, 'Yeni Ad A.Ş.', 'check-quota shows it at once');
    const got = await h.getToken(lic.licenseKey, lic.password);
    t.equal(got.status, 200);
    const claims = JSON.parse(Buffer.from(got.body.signToken.split('.')[1], 'base64url').toString());
    t.equal(claims.firma_adi, 'Yeni Ad A.Ş.', 'new tokens carry the new name');

    const newPassword = 'a brand new password';
    const pw = await h.admin('PATCH', path, { password: newPassword });
    assertLicenseView(t, pw, 200, newPassword);
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
    t.same(v.body, { success: false, message: 'Geçersiz token' }, 'a token held before deactivation is refused');
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
    t.same(denied.body, { success: false, message: 'Bu domain için yetki yok' });
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

  t.test('PATCH: 400 for an empty or bad body, 404 for an unknown key', async (t) => {
    const lic = await h.createLicense();
    const path = `/admin/v1/licenses/${lic.licenseKey}`;
    const empty = await h.admin('PATCH', path, {});
    t.equal(empty.status, 400, 'empty body');
    t.equal(empty.body?.error?.code, 'INVALID_REQUEST');
    assertInvalid(t, await h.admin('PATCH', path, { totalQuota: 100 }), 'totalQuota');
    assertInvalid(t, await h.admin('PATCH', path, { licenseKey: randomUUID() }), 'licenseKey');
    assertInvalid(t, await h.admin('PATCH', path, { isActive: 'false' }), 'isActive');
    assertInvalid(t, await h.admin('PATCH', path, { expiryDate: 'tomorrow' }), 'expiryDate');
    assertInvalid(t, await h.admin('PATCH', path, { organizationName: '' }), 'organizationName');
    assertInvalid(t, await h.admin('PATCH', path, { domains: ['not a domain'] }), 'domains');
    const unchanged = await h.admin('GET', path);
    t.equal(unchanged.body.data.totalQuota, 10, 'nothing changed');
    t.equal(unchanged.body.data.isActive, true);
    t.same(unchanged.body.data.domains, []);

    const missing = await h.admin('PATCH', `/admin/v1/licenses/${randomUUID()}`, { isActive: false });
    t.equal(missing.status, 404);
    t.equal(missing.body?.error?.code, 'LICENSE_NOT_FOUND');
  });

  t.test('POST .../quota: adds a positive integer package', async (t) => {
    const lic = await h.createLicense({ totalQuota: 1 });
    const path = `/admin/v1/licenses/${lic.licenseKey}/quota`;
    const got = await h.getToken(lic.licenseKey, lic.password);
    t.equal((await h.validate(got.body.signToken)).status, 200);
    const held = await h.getToken(lic.licenseKey, lic.password);
    t.equal(held.status, 400, 'quota used up: get-token refuses');
    t.equal(held.body?.error?.code, 'INSUFFICIENT_QUOTA');

    const added = await h.admin('POST', path, { add: 4 });
    assertLicenseView(t, added, 200, lic.password);
    t.equal(added.body.data.totalQuota, 5);
    t.equal(added.body.data.usedQuota, 1);
    t.equal(added.body.data.remainingQuota, 4);
    t.equal(added.body.data.quotaPercentage, 80);
    const again = await h.admin('POST', path, { add: 10 });
    t.equal(again.body.data.totalQuota, 15, 'packages add up');
    t.equal(again.body.data.remainingQuota, 14);
    const next = await h.getToken(lic.licenseKey, lic.password);
    t.equal(next.status, 200, 'get-token issues again at once');
    t.equal(next.body.remainingQuota, 14);
    const quota = await h.checkQuota(lic.licenseKey);
    t.equal(quota.body?.data?.totalQuota, 15, 'check-quota shows it at once');

    for (const add of [0, -1, 1.5, '3', null]) {
      assertInvalid(t, await h.admin('POST', path, { add }), 'add');
    }
    assertInvalid(t, await h.admin('POST', path, {}), 'add');
    assertInvalid(t, await h.admin('POST', path, { add: 1, extra: true }), 'extra');
    t.equal((await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}`)).body.data.totalQuota, 15, 'refused adds added nothing');
    const [row] = await h.sql`select total_quota::int as q from licenses where license_key = ${lic.licenseKey}`;
    t.equal(row?.q, 15, 'Postgres holds the new total');

    const missing = await h.admin('POST', `/admin/v1/licenses/${randomUUID()}/quota`, { add: 1 });
    t.equal(missing.status, 404);
    t.equal(missing.body?.error?.code, 'LICENSE_NOT_FOUND');
  });

  t.test('a token refused for exhausted quota redeems once quota is added', async (t) => {
    const lic = await h.createLicense({ totalQuota: 1 });
    const a = await h.getToken(lic.licenseKey, lic.password);
    const b = await h.getToken(lic.licenseKey, lic.password);
    t.equal(b.status, 200, 'issued while one unit remains');
    t.equal((await h.validate(a.body.signToken)).status, 200);
    const refused = await h.validate(b.body.signToken);
    t.equal(refused.status, 400);
    t.same(refused.body, { success: false, message: 'İmza kotası doldu', remainingQuota: 0 });
    await h.admin('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 1 });
    const ok = await h.validate(b.body.signToken);
    t.equal(ok.status, 200);
    t.equal(ok.body?.usedQuota, 2);
    t.equal(ok.body?.remainingQuota, 0);
  });

  t.test('usedQuota in the admin view follows redemptions immediately', async (t) => {
    const lic = await h.createLicense({ totalQuota: 8 });
    const path = `/admin/v1/licenses/${lic.licenseKey}`;
    for (let i = 1; i <= 3; i++) {
      const got = await h.getToken(lic.licenseKey, lic.password);
      t.equal((await h.validate(got.body.signToken)).status, 200);
      const view = await h.admin('GET', path);
      t.equal(view.body.data.usedQuota, i, `after ${i} redemption(s)`);
      t.equal(view.body.data.remainingQuota, 8 - i);
      t.equal(view.body.data.quotaPercentage, Math.round(((8 - i) / 8) * 10000) / 100);
    }
    // issuing alone uses nothing
    await h.getToken(lic.licenseKey, lic.password);
    t.equal((await h.admin('GET', path)).body.data.usedQuota, 3, 'an unredeemed token uses no quota');
    await h.drainWorker();
    const view = await h.admin('GET', path);
    t.equal(view.body.data.usedQuota, 3, 'same after the worker persisted');
    const [row] = await h.sql`select used_quota::int as u from licenses where license_key = ${lic.licenseKey}`;
    t.equal(row?.u, 3, 'Postgres used_quota after the worker drained');
  });
});

t.test('loadConfig accepts an empty ADMIN_TOKEN as "no admin API"', async (t) => {
  const config = loadConfig(testEnv('noadmincfg', { ADMIN_TOKEN: '' }));
  t.equal(config.adminToken, null);
  const unset = testEnv('noadmincfg2');
  delete unset.ADMIN_TOKEN;
  t.equal(loadConfig(unset).adminToken, null);
});

t.test('without ADMIN_TOKEN the admin routes answer 404', async (t) => {
  const h: Harness = await startHarness(t, 'noadmin', { ADMIN_TOKEN: '' });
  const key = randomUUID();
  const routes: [string, string, unknown][] = [
    ['POST', '/admin/v1/licenses', createBody()],
    ['GET', `/admin/v1/licenses/${key}`, undefined],
    ['PATCH', `/admin/v1/licenses/${key}`, { isActive: false }],
    ['POST', `/admin/v1/licenses/${key}/quota`, { add: 5 }],
  ];
  for (const [method, path, body] of routes) {
    for (const headers of [{} as Record<string, string>, { authorization: `Bearer ${ADMIN_TOKEN}` }, { authorization: 'Bearer ' }]) {
      const res = await h.request(method, path, body, headers);
      t.equal(res.status, 404, `${method} ${path}`);
      t.equal(res.body?.success, false, 'a JSON 404');
    }
  }
  const [count] = await h.sql`select count(*)::int as n from licenses`;
  t.equal(count?.n, 0, 'nothing created');
  t.equal((await h.checkQuota(key)).status, 404, 'the public API still serves');
});
