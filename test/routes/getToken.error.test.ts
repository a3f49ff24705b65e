import t from 'tap';
import { randomUUID } from 'node:crypto';
import { startHarness } from '../helpers/harness.js';
import { expectCodedError, NOT_AN_OBJECT } from '../helpers/shapes.js';

// POST /api/v1/auth/get-token, every row of its published error table (docs/api.md#errors): status, code and the
// body shape {success:false, error:{code, message}}, nothing else; bad input of every kind
// (bodies that are not a JSON object, wrong types, missing fields) is a 400.

const PATH = '/api/v1/auth/get-token';
const DAY = 86_400_000;

const isError = expectCodedError;

t.test('get-token errors', async (t) => {
  const h = await startHarness(t, 'gettokenerr', { RATE_GET_TOKEN_PER_MIN: '0' });
  const lic = await h.createLicense({ totalQuota: 5 });

  t.test('400 INVALID_REQUEST for bad parameters', async (t) => {
    const good = { licenseKey: lic.licenseKey, password: lic.password, imzaTipi: 0 };
    const cases: [string, unknown][] = [
      ['licenseKey missing', { password: lic.password, imzaTipi: 0 }],
      ['password missing', { licenseKey: lic.licenseKey, imzaTipi: 0 }],
      ['imzaTipi missing', { licenseKey: lic.licenseKey, password: lic.password }],
      ['empty object', {}],
      ['imzaTipi 2', { ...good, imzaTipi: 2 }],
      ['imzaTipi -1', { ...good, imzaTipi: -1 }],
      ['imzaTipi "0"', { ...good, imzaTipi: '0' }],
      ['imzaTipi "1"', { ...good, imzaTipi: '1' }],
      ['imzaTipi 0.5', { ...good, imzaTipi: 0.5 }],
      ['imzaTipi null', { ...good, imzaTipi: null }],
      ['imzaTipi true', { ...good, imzaTipi: true }],
      ['licenseKey a number', { ...good, licenseKey: 12345 }],
      ['licenseKey null', { ...good, licenseKey: null }],
      ['licenseKey an object', { ...good, licenseKey: { $ne: '' } }],
      ['password a number', { ...good, password: 12345 }],
      ['password null', { ...good, password: null }],
      ['password an array', { ...good, password: [good.password] }],
    ];
    for (const [name, body] of cases) {
      t.test(name, async (t) => isError(t, await h.request('POST', PATH, body), 400, 'INVALID_REQUEST'));
    }
    for (const [name, raw] of NOT_AN_OBJECT) {
      t.test(`body: ${name}`, async (t) => isError(t, await h.request('POST', PATH, raw), 400, 'INVALID_REQUEST'));
    }
    t.test('body a JSON array of the good body', async (t) => isError(t, await h.request('POST', PATH, [good]), 400, 'INVALID_REQUEST'));
    t.test('no body', async (t) => isError(t, await h.request('POST', PATH), 400, 'INVALID_REQUEST'));
    t.test('the good body itself works', async (t) => {
      t.equal((await h.request('POST', PATH, good)).status, 200);
    });
  });

  t.test('401 INVALID_CREDENTIALS: a wrong password and an unknown key answer alike', async (t) => {
    const wrong = await h.getToken(lic.licenseKey, lic.password + 'x', 0);
    isError(t, wrong, 401, 'INVALID_CREDENTIALS');
    const unknownUuid = await h.getToken(randomUUID(), lic.password, 0);
    isError(t, unknownUuid, 401, 'INVALID_CREDENTIALS');
    const unknownText = await h.getToken('ABC-123-XYZ', lic.password, 0);
    isError(t, unknownText, 401, 'INVALID_CREDENTIALS');
    t.same(unknownUuid.body, wrong.body, 'same body for an unknown key as for a wrong password');
    t.same(unknownText.body, wrong.body);
    t.equal(unknownUuid.text, wrong.text);
  });

  t.test('401 INVALID_CREDENTIALS: another license\'s password does not open this one', async (t) => {
    const other = await h.createLicense({ password: 'the other password' });
    isError(t, await h.getToken(lic.licenseKey, other.password, 0), 401, 'INVALID_CREDENTIALS');
    isError(t, await h.getToken(other.licenseKey, lic.password, 0), 401, 'INVALID_CREDENTIALS');
    t.equal((await h.getToken(other.licenseKey, other.password, 0)).status, 200);
  });

  t.test('401 INVALID_CREDENTIALS: password compared exactly', async (t) => {
    isError(t, await h.getToken(lic.licenseKey, lic.password.toUpperCase(), 0), 401, 'INVALID_CREDENTIALS');
    isError(t, await h.getToken(lic.licenseKey, ` ${lic.password}`, 0), 401, 'INVALID_CREDENTIALS');
    isError(t, await h.getToken(lic.licenseKey, lic.password.slice(0, -1), 0), 401, 'INVALID_CREDENTIALS');
  });

  t.test('400 INSUFFICIENT_QUOTA with a total quota of 0', async (t) => {
    const empty = await h.createLicense({ totalQuota: 0 });
    isError(t, await h.getToken(empty.licenseKey, empty.password, 0), 400, 'INSUFFICIENT_QUOTA');
    isError(t, await h.getToken(empty.licenseKey, empty.password, 1), 400, 'INSUFFICIENT_QUOTA');
  });

  t.test('400 INSUFFICIENT_QUOTA once quota is used up through validate, 200 after a purchase', async (t) => {
    const small = await h.createLicense({ totalQuota: 2 });
    for (let i = 0; i < 2; i++) {
      const got = await h.getToken(small.licenseKey, small.password, 0);
      t.equal(got.status, 200);
      t.equal(got.body.remainingQuota, 2 - i);
      t.equal((await h.validate(got.body.signToken)).status, 200);
    }
    isError(t, await h.getToken(small.licenseKey, small.password, 0), 400, 'INSUFFICIENT_QUOTA');
    const added = await h.admin('POST', `/admin/v1/licenses/${small.licenseKey}/quota`, { add: 1 });
    t.equal(added.status, 200);
    const again = await h.getToken(small.licenseKey, small.password, 0);
    t.equal(again.status, 200);
    t.equal(again.body.remainingQuota, 1);
  });

  t.test('401 LICENSE_EXPIRED for a license created with a past expiry date', async (t) => {
    const old = await h.createLicense({ expiryDate: new Date(Date.now() - DAY).toISOString() });
    isError(t, await h.getToken(old.licenseKey, old.password, 0), 401, 'LICENSE_EXPIRED');
  });

  t.test('401 LICENSE_EXPIRED once the expiry date is moved into the past, 200 when moved back', async (t) => {
    const l = await h.createLicense();
    t.equal((await h.getToken(l.licenseKey, l.password, 0)).status, 200);
    const past = await h.admin('PATCH', `/admin/v1/licenses/${l.licenseKey}`, { expiryDate: new Date(Date.now() - 60_000).toISOString() });
    t.equal(past.status, 200);
    isError(t, await h.getToken(l.licenseKey, l.password, 0), 401, 'LICENSE_EXPIRED');
    const future = await h.admin('PATCH', `/admin/v1/licenses/${l.licenseKey}`, { expiryDate: new Date(Date.now() + DAY).toISOString() });
    t.equal(future.status, 200);
    t.equal((await h.getToken(l.licenseKey, l.password, 0)).status, 200);
  });

  t.test('401 LICENSE_INACTIVE for a license created inactive', async (t) => {
    const off = await h.createLicense({ isActive: false });
    isError(t, await h.getToken(off.licenseKey, off.password, 1), 401, 'LICENSE_INACTIVE');
  });

  t.test('401 LICENSE_INACTIVE once deactivated, 200 once reactivated', async (t) => {
    const l = await h.createLicense();
    t.equal((await h.getToken(l.licenseKey, l.password, 0)).status, 200);
    t.equal((await h.admin('PATCH', `/admin/v1/licenses/${l.licenseKey}`, { isActive: false })).status, 200);
    isError(t, await h.getToken(l.licenseKey, l.password, 0), 401, 'LICENSE_INACTIVE');
    t.equal((await h.admin('PATCH', `/admin/v1/licenses/${l.licenseKey}`, { isActive: true })).status, 200);
    t.equal((await h.getToken(l.licenseKey, l.password, 0)).status, 200);
  });

  t.test('a refused get-token issues nothing', async (t) => {
    const off = await h.createLicense({ isActive: false, totalQuota: 3 });
    const empty = await h.createLicense({ totalQuota: 0 });
    isError(t, await h.getToken(off.licenseKey, off.password, 0), 401, 'LICENSE_INACTIVE');
    isError(t, await h.getToken(off.licenseKey, 'wrong', 0), 401, 'INVALID_CREDENTIALS');
    isError(t, await h.getToken(empty.licenseKey, empty.password, 0), 400, 'INSUFFICIENT_QUOTA');
    await h.drainWorker();
    const rows = await h.sql`select count(*)::int as n from sign_tokens where firma_id in (${off.firmaId}, ${empty.firmaId})`;
    t.equal(rows[0]?.n, 0);
    const view = await h.admin('GET', `/admin/v1/licenses/${off.licenseKey}`);
    t.equal(view.body.data.usedQuota, 0);
  });
});
