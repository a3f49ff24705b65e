import { readdir } from 'node:fs/promises';
import { sqlDir } from '../paths.js';
import { openPostgres, type Sql } from './pg.js';

// The operator commands' Postgres (npm run webhook-events): the database and schema the
// service made, as they are. Only the service and the usage worker create the database,
// the schema and the tables (connectPostgres); a command run with a wrong DATABASE_URL or
// PG_SCHEMA must say so, not make an empty database and answer from it that nothing is
// there. Nor does it run on a schema older than its code, which would misread it.

/** Postgres is not what the command can read: one line naming what and what to check. */
export class NotPrepared extends Error {}

/** The URL as it may be shown: without its password. */
export function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    return u.toString();
  } catch {
    return '(not a valid URL)';
  }
}

const START_ONCE = 'start the service once (it creates and migrates them)';

/** The migrations of this code (sql/NNN_*.sql) that the schema lacks. */
async function missingMigrations(sql: Sql, schema: string): Promise<string[]> {
  const files = (await readdir(sqlDir)).filter((f) => /^\d+_.*\.sql$/.test(f)).sort();
  const applied = new Set((await sql.unsafe(`select name from "${schema.replace(/"/g, '""')}".schema_migrations`)).map((r) => r.name as string));
  return files.filter((f) => !applied.has(f));
}

/**
 * A pool on the service's database and schema, checked to exist and to be migrated to this
 * code's version; NotPrepared (creating and changing nothing) otherwise.
 */
export async function connectExisting(url: string, schema: string, max = 1, name = 'license-operator'): Promise<Sql> {
  const sql = openPostgres(url, schema, max, name);
  try {
    const [row] = await sql`select current_database() as db,
      exists(select 1 from pg_namespace where nspname = ${schema}) as has_schema,
      to_regclass(${`"${schema.replace(/"/g, '""')}".schema_migrations`}) is not null as has_migrations`;
    const db = row?.db as string;
    if (row?.has_schema !== true) {
      throw new NotPrepared(`schema "${schema}" does not exist in database "${db}": check PG_SCHEMA (and DATABASE_URL), or ${START_ONCE}`);
    }
    if (row.has_migrations !== true) {
      throw new NotPrepared(`schema "${schema}" in database "${db}" holds no tables of this service: check PG_SCHEMA (and DATABASE_URL), or ${START_ONCE}`);
    }
    const missing = await missingMigrations(sql, schema);
    if (missing.length > 0) {
      throw new NotPrepared(`schema "${schema}" in database "${db}" is older than this code (not applied: ${missing.join(', ')}): `
        + 'start the service of this version once to migrate it, then run the command again');
    }
    return sql;
  } catch (err) {
    await sql.end({ timeout: 1 }).catch(() => {});
    throw notPrepared(err, url);
  }
}

/** Postgres's refusal as one line saying what to check. */
function notPrepared(err: unknown, url: string): Error {
  if (err instanceof NotPrepared) return err;
  const e = err as { code?: string; message?: string };
  if (e.code === '3D000') {
    const db = decodeURIComponent(new URL(url).pathname.slice(1));
    return new NotPrepared(`database "${db}" does not exist (DATABASE_URL ${shownUrl(url)}): check DATABASE_URL, or ${START_ONCE}`);
  }
  return new NotPrepared(`cannot read Postgres at ${shownUrl(url)} (${e.code ?? ''}${e.code ? ': ' : ''}${e.message ?? String(err)}): check DATABASE_URL`);
}
