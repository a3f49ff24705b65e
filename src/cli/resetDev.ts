import { existsSync, readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { loadConfig, type Config } from '../config.js';
import { ConfigError } from '../config/vars.js';
import { shownUrl } from '../db/existing.js';
import { openPostgres } from '../db/pg.js';
import { sqlDir } from '../paths.js';
import { createRedis } from '../redis/client.js';
import { DevEnvError, devEnvFile, loadDevEnv } from './devEnv.js';
import { reachable } from './licensectl/connection.js';

// make reset-dev: the development data of `make run` back to nothing, so the README's
// walk-through and docs/cli.md's examples run again from the start. Only a checkout's own
// development setup: it needs the .env.dev that `make run` wrote, and touches only what
// that names: the Redis keys under its REDIS_PREFIX and the service's schema in its
// database, which the next start creates and migrates again. The secrets of .env.dev stay,
// so an exported ADMIN_TOKEN still works (delete the file to have new ones). It refuses
// while a service answers on .env.dev's port (it would keep what it holds in memory) and
// when the schema holds tables that are not the service's.

const SCAN_COUNT = 1000;

function fail(message: string): never {
  process.stderr.write(`reset-dev: ${message}\n`);
  process.exit(1);
}

/** Whether something accepts connections at host:port (the development server still running). */
function answering(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    // as licensectl reaches the server: a wildcard address on loopback (an IPv6 one unbracketed for net)
    const socket = net.connect({ host: reachable(host).replace(/^\[|\]$/g, ''), port });
    const done = (up: boolean) => { socket.destroy(); resolve(up); };
    socket.setTimeout(1000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Unlinks every key of the prefix (`<prefix>:*`), in batches; returns how many. */
async function resetRedis(config: Config): Promise<number> {
  const redis = createRedis(config, 'license-reset-dev');
  let removed = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${config.redisPrefix}:*`, 'COUNT', SCAN_COUNT);
      cursor = next;
      if (keys.length > 0) removed += await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    await redis.quit().catch(() => {});
  }
  return removed;
}

/** Drops the service's schema (every table of it is the service's: checked first); returns how many tables went. */
async function resetPostgres(config: Config): Promise<number> {
  const sql = openPostgres(config.databaseUrl, 'public', 1, 'license-reset-dev');
  try {
    const [db] = await sql`select current_database() as name, to_regclass(${`"${config.pgSchema}".schema_migrations`}) is not null as ours`;
    if (db === undefined || db.ours !== true) return 0; // nothing of the service's here: nothing to reset
    const tables = await sql`select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = ${config.pgSchema} and c.relkind in ('r', 'p') and not c.relispartition`;
    const known = new Set(['schema_migrations', ...serviceTables()]);
    const foreign = tables.map((t) => t.name as string).filter((name) => !known.has(name));
    if (foreign.length > 0) {
      fail(`schema "${config.pgSchema}" of database "${db.name as string}" also holds tables that are not the service's (${foreign.join(', ')}): `
        + 'nothing was dropped; reset it by hand, or point DATABASE_URL / PG_SCHEMA at the service\'s own');
    }
    await sql.begin(async (tx) => {
      await tx.unsafe(`drop schema "${config.pgSchema}" cascade`);
      // public is the database's own schema, present in a new database: made again, empty
      if (config.pgSchema === 'public') await tx.unsafe('create schema public');
    });
    return tables.length;
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

/** The tables the service's migrations make (sql/*.sql: created, or renamed to); the partitions made at run time are partitions of these. */
function serviceTables(): string[] {
  const names = new Set<string>();
  for (const file of readdirSync(sqlDir).filter((f) => f.endsWith('.sql'))) {
    const text = readFileSync(path.join(sqlDir, file), 'utf8');
    for (const m of text.matchAll(/\b(?:create table|alter table\s+\S+\s+rename to)\s+"?([a-z_][a-z0-9_]*)"?/gi)) names.add((m[1] as string).toLowerCase());
  }
  return [...names];
}

async function main(): Promise<void> {
  const file = devEnvFile();
  if (file === null || !existsSync(file)) {
    fail(`no ${file ?? '.env.dev'}: this resets the development data of \`make run\` alone, and there is none here (in production, nothing is reset)`);
  }
  let config: Config;
  try {
    config = loadConfig(loadDevEnv(process.env), 'worker');
  } catch (err) {
    if (err instanceof ConfigError || err instanceof DevEnvError) fail(err.message);
    throw err;
  }
  // where `make run` listens, read as the server reads it (PORT= is 8080, not 0)
  const { host, port } = config;
  if (port === 0) fail('PORT is 0 (a port chosen at each start): whether `make run` still runs cannot be seen; stop it, then run this with PORT set to a port');
  if (await answering(host, port)) fail(`a service answers on ${host}:${port}: stop \`make run\` first (Ctrl-C), then run this again`);
  // refused before anything is dropped
  if (config.redisClusterNodes.length > 0 || config.redisSentinel !== null) {
    fail('the development setup uses one Redis (REDIS_URL); a cluster or sentinels are not reset from here');
  }
  const tables = await resetPostgres(config);
  const keys = await resetRedis(config);
  process.stdout.write(`reset-dev: dropped schema "${config.pgSchema}" of ${shownUrl(config.databaseUrl)} (${tables} tables) and `
    + `${keys} Redis keys under "${config.redisPrefix}:" at ${shownUrl(config.redisUrl)}; \`make run\` starts empty, with the same .env.dev secrets\n`);
}

main().then(() => process.exit(0), (err: Error) => fail(err.message));
