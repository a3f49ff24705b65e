import { readFile } from 'node:fs/promises';
import path from 'node:path';
import postgres from 'postgres';
import t from 'tap';
import { connectPostgres } from '../../src/db/pg.js';
import { LicenseStore } from '../../src/licenses/store.js';
import { sqlDir } from '../../src/paths.js';
import { DATABASE_URL, uniqueName } from '../helpers/harness.js';

// sql/003_append_only_redemptions.sql on a database that already holds tokens: the audit
// trail (the sign_tokens view) and the history read the same before and after, and a
// redemption written afterwards lands beside the old ones.

const IDS = {
  issued: '0192f4a0-0000-7000-8000-000000000001',
  usedWithOrigin: '0192f4a0-0000-7000-8000-000000000002',
  usedWithout: '0192f4a0-0000-7000-8000-000000000003',
};

t.test('the audit trail and the history read the same after the migration', async (t) => {
  const schema = uniqueName('migration');
  const admin = postgres(DATABASE_URL, { max: 1, onnotice: () => {} });
  t.teardown(async () => {
    await admin.unsafe(`drop schema if exists "${schema}" cascade`);
    await admin.end();
  });
  // the schema as the version before it left it: migrations 001 and 002
  await admin.begin(async (tx) => {
    await tx.unsafe(`create schema "${schema}"`);
    await tx.unsafe(`set local search_path to "${schema}"`);
    await tx.unsafe('create table schema_migrations (name text primary key, applied_at timestamptz not null default now())');
    for (const file of ['001_init.sql', '002_quota_purchases.sql']) {
      await tx.unsafe(await readFile(path.join(sqlDir, file), 'utf8'));
      await tx.unsafe('insert into schema_migrations (name) values ($1)', [file]);
    }
    await tx.unsafe(`insert into licenses (firma_id, license_key, organization_name, password_hash, total_quota, used_quota, expiry_date)
      values ('firma-m', 'key-m', 'Migrated A.Ş.', 'x', 10, 2, '2099-01-01')`);
    await tx.unsafe(`insert into sign_tokens (token_id, firma_id, imza_tipi, status, issued_at, expires_at, used_at, origin) values
      ($1, 'firma-m', 0, 'issued', '2026-11-01T10:00:00Z', '2026-11-01T10:05:00Z', null, null),
      ($2, 'firma-m', 1, 'used', '2026-11-01T10:00:01Z', '2026-11-01T10:05:01Z', '2026-11-01T10:01:00.123Z', 'https://imza.ornek.com.tr'),
      ($3, 'firma-m', 0, 'used', '2026-11-01T10:00:02Z', '2026-11-01T10:05:02Z', '2026-11-01T10:02:00Z', null)`,
    [IDS.issued, IDS.usedWithOrigin, IDS.usedWithout]);
  });
  const trail = `select token_id, firma_id, imza_tipi::int as imza_tipi, status, issued_at, expires_at, used_at, origin
    from "${schema}".sign_tokens order by token_id`;
  const before = await admin.unsafe(trail);

  const sql = await connectPostgres(DATABASE_URL, schema, 1); // applies 003
  t.teardown(() => sql.end());
  const [applied] = await sql`select count(*)::int as n from schema_migrations where name = '003_append_only_redemptions.sql'`;
  t.equal(applied?.n, 1, 'migration 003 applied');
  t.same([...await admin.unsafe(trail)], [...before], 'every token, its status and its times, as before');

  const store = new LicenseStore(sql);
  const history = await store.redemptions('firma-m', 10, null);
  t.same(history.map((r) => [r.tokenId, r.imzaTipi, r.usedAt.toISOString(), r.origin]), [
    [IDS.usedWithout, 0, '2026-11-01T10:02:00.000Z', null],
    [IDS.usedWithOrigin, 1, '2026-11-01T10:01:00.123Z', 'https://imza.ornek.com.tr'],
  ], 'the history: both redemptions, newest first');
  const page2 = await store.redemptions('firma-m', 10, { usedAt: '2026-11-01T10:02:00.000Z', tokenId: IDS.usedWithout });
  t.same(page2.map((r) => r.tokenId), [IDS.usedWithOrigin], 'and its cursor goes on from a redemption');

  const hydration = await store.forHydration('firma-m', [IDS.usedWithOrigin, IDS.issued, 'not-a-uuid']);
  t.same([...(hydration?.counted ?? [])], [IDS.usedWithOrigin], 'of the queued ids, Postgres counts the one it holds as used (a malformed id is not asked about)');
  t.equal(hydration?.row.usedQuota, 2);
});
