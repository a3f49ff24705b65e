import { randomUUID } from 'node:crypto';
import t from 'tap';
import { expectInvalid } from '../helpers/admin.js';
import { startHarness } from '../helpers/harness.js';

// GET /admin/v1/licenses/{licenseKey}/tokens: 404 LICENSE_NOT_FOUND for a key no license
// has (or no UUID); a bad ?limit=, ?cursor= or ?status= is 400 INVALID_REQUEST naming it.

const b64 = (text: string): string => Buffer.from(text).toString('base64url');

// one service for the file
const h = await startHarness(t, 'admintokenserr');

t.test('404 LICENSE_NOT_FOUND', async (t) => {
  for (const key of [randomUUID(), 'not-a-uuid', `${randomUUID()}x`]) {
    const res = await h.admin('GET', `/admin/v1/licenses/${key}/tokens`);
    t.equal(res.status, 404, key);
    t.equal(res.body?.error?.code, 'LICENSE_NOT_FOUND');
    t.type(res.body?.error?.message, 'string');
  }
});

t.test('400 INVALID_REQUEST naming limit, cursor or status', async (t) => {
  const lic = await h.createLicense();
  const path = `/admin/v1/licenses/${lic.licenseKey}/tokens`;
  for (const limit of ['0', '501', 'x', '-3', '2.5', '']) expectInvalid(t, await h.admin('GET', `${path}?limit=${limit}`), 'limit');
  for (const cursor of ['***', b64('abc'), b64('1|'), b64('1|a\u0000'), 'A'.repeat(300)]) {
    expectInvalid(t, await h.admin('GET', `${path}?cursor=${cursor}`), 'cursor');
  }
  for (const status of ['USED', 'all', '', 'used%00', 'issued,used']) {
    expectInvalid(t, await h.admin('GET', `${path}?status=${status}`), 'status');
  }
});
