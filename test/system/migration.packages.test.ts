import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import postgres from 'postgres';
import t from 'tap';
import { connectPostgres } from '../../src/db/pg.js';
import { LicenseStore } from '../../src/licenses/store.js';
import { sqlDir } from '../../src/paths.js';
import { DATABASE_URL, uniqueName } from '../helpers/harness.js';

// sql/010_packages_ledger.sql on a database that already holds licenses and redemptions:
// what each license holds becomes one package expiring with it, opened by a ledger
// 'correction' by 'migration', and its redemptions become daily totals (what used_quota
// counts beyond the redemption rows on the day of the migration); a license of no quota
// gets no package.

const BEFORE = ['001_init.sql', '002_quota_purchases.sql', '003_append_only_redemptions.sql', '004_token_generation.sql',
  '005_webhooks.sql', '006_admin_lists.sql', '007_receipts.sql', '008_admin_audit.sql', '009_partitioned_usage.sql'];

t.test('every license with quota becomes one package, opened in the ledger; redemptions become daily totals', async (t) => {
  const schema = uniqueName('migration-pkg');
  const admin = postgres(DATABASE_URL, { max: 1, onnotice: () => {} });
  t.teardown(async () => {
    await admin.unsafe(`drop schema if exists "${schema}" cascade`);
    await admin.end();
  });
  // the schema as the version before it left it: migrations 001 to 009
  await admin.begin(async (tx) => {
    await tx.unsafe(`create schema "${schema}"`);
    await tx.unsafe(`set local search_path to "${schema}"`);
    await tx.unsafe('create table schema_migrations (name text primary key, applied_at timestamptz not null default now())');
    for (const file of BEFORE) {
      await tx.unsafe(await readFile(path.join(sqlDir, file), 'utf8'));
      await tx.unsafe('insert into schema_migrations (name) values ($1)', [file]);
    }
    await tx.unsafe(`insert into licenses (firma_id, license_key, organization_name, password_hash, total_quota, used_quota, expiry_date) values
      ('firma-a', 'key-a', 'Paketli A.Ş.', 'x', 100, 30, '2099-01-01T00:00:00Z'),
      ('firma-c', 'key-c', 'Tükenmiş A.Ş.', 'x', 7, 7, '2098-06-30T12:00:00Z'),
      ('firma-z', 'key-z', 'Kotasız A.Ş.', 'x', 0, 0, '2099-01-01T00:00:00Z')`);
    // firma-a: 20 of its 30 redemptions have rows (12 on Nov 1st UTC, the last a minute before
    // midnight UTC, 8 on Nov 2nd); firma-c: all 7, on Nov 3rd
    const rows: [string, string][] = [
      ...Array.from({ length: 11 }, (): [string, string] => ['firma-a', '2026-11-01T10:00:00Z']),
      ['firma-a', '2026-11-01T23:59:00Z'],
      ...Array.from({ length: 8 }, (): [string, string] => ['firma-a', '2026-11-02T00:00:30Z']),
      ...Array.from({ length: 7 }, (): [string, string] => ['firma-c', '2026-11-03T08:00:00Z']),
    ];
    for (const [firmaId, usedAt] of rows) {
      await tx.unsafe('insert into token_redemptions (token_id, firma_id, imza_tipi, used_at) values ($1, $2, 0, $3)', [randomUUID(), firmaId, usedAt]);
    }
  });

  const sql = await connectPostgres(DATABASE_URL, schema, 1); // applies 010
  t.teardown(() => sql.end());
  const [applied] = await sql`select count(*)::int as n from schema_migrations where name = '010_packages_ledger.sql'`;
  t.equal(applied?.n, 1, 'migration 010 applied');

  const packages = await sql`
    select firma_id, package_no, amount::int as amount, used::int as used, forfeited::int as forfeited, expires_at, note
    from license_packages order by firma_id, package_no`;
  t.same(packages.map((p) => [p.firma_id, p.package_no, p.amount, p.used, p.forfeited, (p.expires_at as Date).toISOString()]), [
    ['firma-a', 1, 100, 30, 0, '2099-01-01T00:00:00.000Z'],
    ['firma-c', 1, 7, 7, 0, '2098-06-30T12:00:00.000Z'],
  ], 'one package per license with quota: its total, its used, expiring with the license; none for the license of no quota');

  const licenses = await sql`
    select firma_id, total_quota::int as total, used_quota::int as used, forfeited_quota::int as forfeited, packages_made
    from licenses order by firma_id`;
  t.same(licenses.map((l) => [l.firma_id, l.total, l.used, l.forfeited, l.packages_made]), [
    ['firma-a', 100, 30, 0, 1],
    ['firma-c', 7, 7, 0, 1],
    ['firma-z', 0, 0, 0, 0],
  ], 'the figures kept; packages_made 1 where a package was made');

  const ledger = await sql`select firma_id, kind, amount::int as amount, balance_after::int as balance, package_no, actor from license_ledger order by firma_id`;
  t.same(ledger.map((e) => [e.firma_id, e.kind, e.amount, e.balance, e.package_no, e.actor]), [
    ['firma-a', 'correction', 100, 70, 1, 'migration'],
    ['firma-c', 'correction', 7, 0, 1, 'migration'],
  ], 'a correction entry of the total by "migration" opens each package\'s ledger');

  const daily = await sql`
    select firma_id, day::text as day, redeemed::int as redeemed, day = (now() at time zone 'UTC')::date as today
    from license_daily_usage order by firma_id, day`;
  const ofA = daily.filter((d) => d.firma_id === 'firma-a');
  t.same(ofA.filter((d) => !d.today).map((d) => [d.day, d.redeemed]), [['2026-11-01', 12], ['2026-11-02', 8]],
    'firma-a: its rows by UTC day');
  t.same(ofA.filter((d) => d.today).map((d) => d.redeemed), [10], 'firma-a: the 10 it counted without rows, on the day of the migration');
  t.equal(ofA.reduce((n, d) => n + (d.redeemed as number), 0), 30, 'firma-a: daily totals sum to its used quota');
  t.same(daily.filter((d) => d.firma_id === 'firma-c').map((d) => [d.day, d.redeemed]), [['2026-11-03', 7]], 'firma-c: 7 on its day, nothing more');
  t.equal(daily.filter((d) => d.firma_id === 'firma-z').length, 0, 'firma-z: no daily totals');

  // the service reads the migrated license as one package
  const row = await new LicenseStore(sql).byFirmaId('firma-a');
  t.same(row?.packages.map((p) => [p.no, p.amount, p.used, p.forfeited, p.note]), [[1, 100, 30, 0, 'opening balance']]);
  t.same([row?.packagesMade, row?.forfeitedQuota], [1, 0]);
});
