import t from 'tap';
import postgres from 'postgres';
import { createBody, expectAdminAuthRefused } from '../helpers/admin.js';
import { adminFrom, auditCount, auditRows, BOB_TOKEN, TWO_ADMINS } from '../helpers/audit.js';
import { ADMIN_TOKEN, startHarness } from '../helpers/harness.js';

// The admin audit log is for the admins only, records every admin by its own name, records
// nothing of a request no admin token authorised, and is append-only in Postgres itself:
// UPDATE, DELETE and TRUNCATE of a record are refused, whoever connects.

const h = await startHarness(t, 'adminauditsec', TWO_ADMINS);

t.test('401 UNAUTHORIZED without an admin token, and nothing recorded', async (t) => {
  const lic = await h.createLicense();
  const before = await auditCount(h);
  await expectAdminAuthRefused(t, h, 'GET', '/admin/v1/audit');
  await expectAdminAuthRefused(t, h, 'POST', '/admin/v1/licenses', createBody());
  await expectAdminAuthRefused(t, h, 'PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { isActive: false });
  await expectAdminAuthRefused(t, h, 'POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 1 });
  for (const token of [`${BOB_TOKEN}x`, BOB_TOKEN.slice(0, -1), `${ADMIN_TOKEN},${BOB_TOKEN}`, `admin:${ADMIN_TOKEN}`, `bob:${BOB_TOKEN}`]) {
    const res = await adminFrom(h, '192.0.2.5', 'PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { isActive: false }, {}, token);
    t.equal(res.status, 401, `not an admin token: ${token.slice(0, 8)}…`);
  }
  t.equal(await auditCount(h), before, 'not one record more');
  t.equal((await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}`)).body.data.isActive, true, 'and nothing changed');
});

t.test('each named token acts under its own name; reading the log records nothing', async (t) => {
  const lic = await h.createLicense();
  for (const [token, name] of [[ADMIN_TOKEN, 'admin'], [BOB_TOKEN, 'bob'], [ADMIN_TOKEN, 'admin']] as const) {
    t.equal((await adminFrom(h, '192.0.2.6', 'POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 1 }, {}, token)).status, 200, name);
  }
  t.same((await auditRows(h, lic.licenseKey)).map((r) => r.admin), ['admin', 'admin', 'bob', 'admin']);
  const count = await auditCount(h);
  t.equal((await adminFrom(h, '192.0.2.6', 'GET', '/admin/v1/audit', undefined, {}, BOB_TOKEN)).status, 200, 'bob reads the log');
  t.equal(await auditCount(h), count, 'a read is no change');
});

t.test('the address is the one TRUST_PROXY reads, never a claim beyond the trusted hop', async (t) => {
  const lic = await h.createLicense();
  await adminFrom(h, '10.9.8.7, 198.51.100.77', 'PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { isActive: false });
  t.equal((await auditRows(h, lic.licenseKey)).at(-1)?.address, '198.51.100.77', 'the last hop, which the trusted proxy wrote');
});

t.test('append-only: Postgres refuses UPDATE, DELETE and TRUNCATE of the log', async (t) => {
  const lic = await h.createLicense();
  const [row] = await auditRows(h, lic.licenseKey);
  const attempts: [string, () => Promise<unknown>][] = [
    ['update', () => h.sql`update admin_audit set admin = 'mallory' where id = ${row?.id ?? 0}`],
    ['update of every row', () => h.sql`update admin_audit set after = '{}'::jsonb`],
    ['delete', () => h.sql`delete from admin_audit where id = ${row?.id ?? 0}`],
    ['delete of every row', () => h.sql`delete from admin_audit`],
    ['truncate', () => h.sql`truncate admin_audit`],
  ];
  for (const [what, attempt] of attempts) {
    const err = await attempt().then(() => null, (e: unknown) => e);
    t.ok(err instanceof postgres.PostgresError && err.code === '42501' && /append-only/.test(err.message), `${what}: refused (${String(err)})`);
  }
  t.same((await auditRows(h, lic.licenseKey))[0], row, 'the record is as written');
  t.ok((await auditCount(h)) > 0, 'every record is still there');
});

t.test('a change whose record cannot be written is not made (one transaction)', async (t) => {
  const lic = await h.createLicense({ totalQuota: 5 });
  const path = `/admin/v1/licenses/${lic.licenseKey}`;
  const before = (await h.admin('GET', path)).body.data;
  const count = await auditCount(h);
  // the test's own fault: Postgres refuses every new record
  await h.sql.unsafe(`create function refuse_record() returns trigger language plpgsql as $$ begin raise exception 'no record'; end $$`);
  await h.sql.unsafe('create trigger refuse_record before insert on admin_audit for each row execute function refuse_record()');
  try {
    t.ok((await h.admin('PATCH', path, { isActive: false, domains: ['ornek.com.tr'] })).status >= 500, 'PATCH fails');
    t.ok((await h.admin('POST', `${path}/quota`, { add: 3 })).status >= 500, 'a purchase fails');
    t.ok((await h.admin('POST', '/admin/v1/licenses', createBody({ licenseKey: '7e57a0d1-0000-4000-8000-000000000001' }))).status >= 500, 'a create fails');
  } finally {
    await h.sql.unsafe('drop trigger refuse_record on admin_audit');
    await h.sql.unsafe('drop function refuse_record()');
  }
  t.equal(await auditCount(h), count, 'no record');
  const [row] = await h.sql`select is_active, domains, total_quota::int as q from licenses where license_key = ${lic.licenseKey}`;
  t.same(row, { is_active: true, domains: [], q: 5 }, 'and Postgres holds the license as it was');
  t.same((await h.sql`select 1 from licenses where license_key = '7e57a0d1-0000-4000-8000-000000000001'`).length, 0, 'no license created');
  // once the fence of the failed change has lapsed, the API serves it as it was too
  await new Promise((resolve) => setTimeout(resolve, 2100));
  t.same((await h.admin('GET', path)).body.data, before);
});
