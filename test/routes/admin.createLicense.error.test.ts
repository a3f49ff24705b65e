import { randomUUID } from 'node:crypto';
import t from 'tap';
import { createBody, expectInvalid, expectLicenseView } from '../helpers/admin.js';
import { ADMIN_TOKEN, startHarness } from '../helpers/harness.js';
import { expectCodedError, NOT_AN_OBJECT } from '../helpers/shapes.js';

// POST /admin/v1/licenses refusals: 400 INVALID_REQUEST naming the field (or in the coded
// shape for a body that is not a JSON object), 409 LICENSE_EXISTS; a refused create creates
// nothing.

t.test('admin create license errors', async (t) => {
  const h = await startHarness(t, 'admincreateerr');
  const adminAuth = { authorization: `Bearer ${ADMIN_TOKEN}` };

  t.test('409 LICENSE_EXISTS when the key is taken, the existing license untouched', async (t) => {
    const licenseKey = randomUUID();
    expectLicenseView(t, await h.admin('POST', '/admin/v1/licenses', createBody({ licenseKey })), 201);
    const taken = await h.admin('POST', '/admin/v1/licenses', createBody({ licenseKey, organizationName: 'Başka' }));
    t.equal(taken.status, 409);
    t.equal(taken.body?.success, false);
    t.equal(taken.body?.error?.code, 'LICENSE_EXISTS');
    t.type(taken.body?.error?.message, 'string');
    const still = await h.admin('GET', `/admin/v1/licenses/${licenseKey}`);
    t.equal(still.body.data.organizationName, 'Örnek Eczane Ltd.', 'the existing license is untouched');
  });

  t.test('400 INVALID_REQUEST naming the field, nothing created', async (t) => {
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
      // the year 10000 once its offset applies (Postgres refuses it), and 1969
      ['expiryDate', createBody({ expiryDate: '9999-12-31T23:59:59-01:00' })],
      ['expiryDate', createBody({ expiryDate: '1970-01-01T00:30:00+01:00' })],
      ['licenseKey', createBody({ licenseKey: 'not-a-uuid' })],
      ['licenseKey', createBody({ licenseKey: 'ABC-LICENSE-2024-001' })],
      ['isActive', createBody({ isActive: 'yes' })],
      ['unexpectedField', createBody({ unexpectedField: 1 })],
      ['domains', createBody({ domains: ['bad domain with spaces'] })],
      ['domains', createBody({ domains: ['ok.com', ''] })],
      ['domains', createBody({ domains: 'example.com' })],
      ['domains', createBody({ domains: [42] })],
      ['releasesPerDay', createBody({ releasesPerDay: -1 })],
      ['releasesPerDay', createBody({ releasesPerDay: 1.5 })],
      ['releasesPerDay', createBody({ releasesPerDay: '3' })],
      ['releasesPerDay', createBody({ releasesPerDay: 1_000_001 })],
      ['releasesPerDay', createBody({ releasesPerDay: null })],
    ];
    for (const [field, body] of cases) {
      const licenseKey = randomUUID();
      const withKey = field === 'licenseKey' ? body : { ...body, licenseKey };
      const res = await h.admin('POST', '/admin/v1/licenses', withKey);
      expectInvalid(t, res, field);
      if (field !== 'licenseKey') {
        t.equal((await h.admin('GET', `/admin/v1/licenses/${licenseKey}`)).status, 404, `nothing created (${field})`);
      }
    }
  });

  t.test('bodies that are not a JSON object, wrong types: 400 INVALID_REQUEST, nothing created', async (t) => {
    const [before] = await h.sql`select count(*)::int as n from licenses`;
    for (const [what, body] of NOT_AN_OBJECT) {
      expectCodedError(t, await h.request('POST', '/admin/v1/licenses', body, adminAuth), 400, 'INVALID_REQUEST', what);
    }
    const good = { organizationName: 'X', password: 'p', totalQuota: 1, expiryDate: new Date(Date.now() + 86400_000).toISOString() };
    for (const [what, body] of [
      ['totalQuota a string', { ...good, totalQuota: '1' }],
      ['organizationName an object', { ...good, organizationName: { tr: 'X' } }],
      ['isActive a number', { ...good, isActive: 1 }],
      ['domains a string', { ...good, domains: 'a.com' }],
      ['empty object', {}],
    ] as [string, Record<string, unknown>][]) {
      expectCodedError(t, await h.request('POST', '/admin/v1/licenses', body, adminAuth), 400, 'INVALID_REQUEST', what);
    }
    const [after] = await h.sql`select count(*)::int as n from licenses`;
    t.equal(after?.n, before?.n, 'no bad admin request created a license');
  });
});
