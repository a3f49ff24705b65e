import postgres from 'postgres';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { sqlDir } from '../paths.js';

export type Sql = postgres.Sql;

const quiet = { onnotice: () => {} };

/** Creates the database named in the URL when it is missing and the server allows it. */
async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  if (!name || name === 'postgres') return;
  const maintenance = new URL(url);
  maintenance.pathname = '/postgres';
  const admin = postgres(maintenance.toString(), { ...quiet, max: 1 });
  try {
    const found = await admin`select 1 from pg_database where datname = ${name}`;
    if (found.length === 0) {
      await admin.unsafe(`create database "${name.replace(/"/g, '""')}"`).catch((err: { code?: string }) => {
        if (err.code !== '42P04') throw err; // created meanwhile by another starter
      });
    }
  } catch (err) {
    // No right to look or create: the connection below reports the real problem.
    if ((err as { code?: string }).code === '42P04') return;
  } finally {
    await admin.end({ timeout: 1 });
  }
}

/** Applies sql/NNN_*.sql in order, once each, under an advisory lock so starters can race. */
async function migrate(sql: Sql, schema: string): Promise<void> {
  const files = (await readdir(sqlDir)).filter((f) => /^\d+_.*\.sql$/.test(f)).sort();
  await sql.begin(async (tx) => {
    // a starter waits for another's migrations however long they take: a lock_timeout set for
    // the service's sessions (whose requests must not wait on a lock) does not apply here
    await tx`set local lock_timeout = 0`;
    await tx`select pg_advisory_xact_lock(hashtext(${'license-migrations:' + schema}))`;
    // created only when missing: CREATE SCHEMA IF NOT EXISTS asks for CREATE on the database
    // even when the schema exists, a right that a role owning just its schema (PG_SCHEMA) in a
    // database shared with others lacks, and needs no more
    const [found] = await tx`select 1 from pg_namespace where nspname = ${schema}`;
    if (!found) await tx.unsafe(`create schema if not exists "${schema}"`);
    await tx.unsafe(
      `create table if not exists "${schema}".schema_migrations (name text primary key, applied_at timestamptz not null default now())`,
    );
    const done = new Set(
      (await tx.unsafe(`select name from "${schema}".schema_migrations`)).map((r) => r.name as string),
    );
    for (const file of files) {
      if (done.has(file)) continue;
      await tx.unsafe(`set local search_path to "${schema}"`);
      await tx.unsafe(await readFile(path.join(sqlDir, file), 'utf8'));
      await tx.unsafe(`insert into "${schema}".schema_migrations (name) values ($1)`, [file]);
    }
  });
}

export async function connectPostgres(url: string, schema: string, max = 10): Promise<Sql> {
  await ensureDatabase(url);
  const sql = openPostgres(url, schema, max);
  await migrate(sql, schema);
  return sql;
}

/**
 * A pool on a database connectPostgres has already prepared (a part's own connections).
 * JIT off: a statement's first executions are planned with its values, and a batch of the
 * usage worker's then looks costly enough for Postgres to compile it, about a second each
 * time, for a statement that runs in 140 ms (10,000 redemptions; bench/README.md). None of
 * our statements runs long enough to gain from it.
 */
export function openPostgres(url: string, schema: string, max: number, name = 'license-service', settings: Record<string, string> = {}): Sql {
  return postgres(url, { ...quiet, max, connection: { search_path: schema, application_name: name, jit: 'off', ...settings }, connect_timeout: 5 });
}

/**
 * The usage worker's settings (its pool of its own): its batch statement planned once.
 * Postgres plans a prepared statement with each call's values until its generic plan looks
 * no costlier than those; a worker that starts idle, on batches of one redemption, never
 * gets there, and then spent 1.0–1.4 ms of Postgres CPU planning every batch: more than the
 * writes of 100 redemptions. The generic plan runs as fast at every batch size measured, 1 to
 * 10,000 (bench/README.md).
 */
export const WORKER_SETTINGS = { plan_cache_mode: 'force_generic_plan' };
