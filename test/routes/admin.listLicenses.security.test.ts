import t from 'tap';
import { expectAdminAuthRefused } from '../helpers/admin.js';
import { startHarness } from '../helpers/harness.js';

// GET /admin/v1/licenses is for the admin bearer only, and its cursor, whatever it decodes
// to, is a value bound to the query, never SQL.

const b64 = (text: string): string => Buffer.from(text).toString('base64url');

t.test('401 UNAUTHORIZED without or with a wrong bearer', async (t) => {
  const h = await startHarness(t, 'adminlistsec');
  await h.createLicense();
  await expectAdminAuthRefused(t, h, 'GET', '/admin/v1/licenses');
  await expectAdminAuthRefused(t, h, 'GET', '/admin/v1/licenses?limit=1');
});

t.test('hostile cursors are values, not SQL', async (t) => {
  const h = await startHarness(t, 'adminlistinj');
  const lic = await h.createLicense();
  for (const firma of ["x' or '1'='1", "'); drop table licenses; --", '\\', 'ü'.repeat(80)]) {
    const res = await h.admin('GET', `/admin/v1/licenses?cursor=${b64(`0|${firma}`)}`);
    t.equal(res.status, 200, res.text);
    t.same(res.body.data.items.map((l: { licenseKey: string }) => l.licenseKey), [lic.licenseKey], 'licenses after that key, nothing more');
  }
  const [count] = await h.sql`select count(*)::int as n from licenses`;
  t.equal(count?.n, 1, 'the table is intact');
});
