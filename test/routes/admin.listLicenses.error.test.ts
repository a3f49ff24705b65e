import t from 'tap';
import { expectInvalid } from '../helpers/admin.js';
import { startHarness } from '../helpers/harness.js';

// GET /admin/v1/licenses: a bad ?limit= or ?cursor= is 400 INVALID_REQUEST naming it.

const b64 = (text: string): string => Buffer.from(text).toString('base64url');

// one service for the file
const h = await startHarness(t, 'adminlisterr');

t.test('400 INVALID_REQUEST naming limit or cursor', async (t) => {
  await h.createLicense();
  for (const limit of ['0', '501', '999', '1000', '-1', '1.5', 'abc', '', ' 5', '5%00', '1e2', '0x10']) {
    expectInvalid(t, await h.admin('GET', `/admin/v1/licenses?limit=${limit}`), 'limit');
  }
  const cursors = [
    '!!!', '', 'a'.repeat(257), b64('x|y'), b64('123'), b64('12|'), b64('|abc'), b64('1'.repeat(18) + '|abc'),
    b64('12|ab\u0000c'), b64('12|ab\nc'), encodeURIComponent('abc=='), b64(`12|${'x'.repeat(201)}`),
  ];
  for (const cursor of cursors) expectInvalid(t, await h.admin('GET', `/admin/v1/licenses?cursor=${cursor}`), 'cursor');
  // the limit is checked whatever the cursor
  expectInvalid(t, await h.admin('GET', `/admin/v1/licenses?limit=501&cursor=${b64('12|abc')}`), 'limit');
});

t.test('a cursor past every license: an empty last page', async (t) => {
  await h.createLicense();
  const res = await h.admin('GET', `/admin/v1/licenses?cursor=${b64('99999999999999999|zzz')}`);
  t.equal(res.status, 200, res.text);
  t.same(res.body, { success: true, data: { items: [], nextCursor: null } });
});
