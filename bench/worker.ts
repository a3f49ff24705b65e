import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { connectPostgres } from '../src/db/pg.js';
import { KeySpace } from '../src/redis/keys.js';
import { usageLag } from '../src/usage/lag.js';
import type { RedisClient } from '../src/redis/client.js';
import { EVENT_PACKAGE, EVENT_SEPARATOR as TAB, EventKind, LegacyEventField as L } from '../src/redis/fields.js';
import { LicenseStore } from '../src/licenses/store.js';
import { newTokenId } from '../src/tokens/tokenId.js';
import { cpuMicros, postgresCpu } from './load/proc.js';
import { startPinned, startRedis, stopAll, stopGracefully } from './load/services.js';

// The usage worker alone (make bench-worker): CPU per usage event of the worker process, of
// Postgres (every postgres process of the machine) and of Redis, for redemptions the worker
// moves from the streams to Postgres, with no HTTP server around it. Two ways events arrive:
//   backlog  N redemptions queued before the worker starts (full batches: the floor)
//   paced    redemptions added at R a second while the worker runs (the batches a deployed
//            worker sees), then drained
// Every token is issued first (its "issued" row in Postgres, as in production), then redeemed.
// WORKER_BENCH_BASELINE=<another build's dist>: that build's worker is measured in the same
// rounds (its own Postgres schema), for a before and after in one run.
const buildRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const WORKER_CPU = process.env.BENCH_SERVER_CPU ?? '0';
const LOAD_CPU = process.env.BENCH_LOAD_CPU ?? '1';
const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const EVENTS = Number(process.env.WORKER_BENCH_EVENTS ?? 100_000);
const RATES = (process.env.WORKER_BENCH_RATES ?? '10000,20000').split(',').map(Number);
const SECONDS = Number(process.env.WORKER_BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.WORKER_BENCH_ROUNDS ?? 3);
const BASELINE = process.env.WORKER_BENCH_BASELINE;
// WORKER_BENCH_PROFILE=<dir>: every worker started writes a V8 CPU profile there
const PROFILE = process.env.WORKER_BENCH_PROFILE;
const REDIS_PORT = 6394;
// WORKER_BENCH_LICENSES: the events spread over this many licenses (4,000: nearly every event of a batch its own license row, package and day)
const LICENSES = Number(process.env.WORKER_BENCH_LICENSES ?? 32);

/** legacy: the build's scripts write a field per value (before the one-field form), so its events are queued that way */
interface Build { name: string; root: string; schema: string; prefix: string; legacy: boolean }
const builds: Build[] = [{ name: 'worker', root: buildRoot, schema: 'benchworker', prefix: 'bw', legacy: false }];
if (BASELINE) {
  builds.push({ name: 'before', root: path.resolve(BASELINE), schema: 'benchworker_before', prefix: 'bwb', legacy: process.env.WORKER_BENCH_BASELINE_LEGACY !== '0' });
}

interface Result { build: string; mode: string; events: number; workerUs: number; postgresUs: number; redisUs: number; commits: number; walBytes: number; ms: number }
const results: Result[] = [];

const redisProc = await startRedis(LOAD_CPU, REDIS_PORT);
const redis = new Redis(REDIS_PORT);
process.on('exit', () => stopAll([redisProc]));

/** packages: the build's redemptions name a package; spentEvents: as the package first of an event "s" (else as a field "p" after a "u") */
interface Setup { build: Build; keys: KeySpace; firmaIds: string[]; sql: Awaited<ReturnType<typeof connectPostgres>>; packages: boolean; spentEvents: boolean }

async function setUp(build: Build): Promise<Setup> {
  const admin = await connectPostgres(DATABASE_URL, 'public', 1);
  await admin.unsafe(`drop schema if exists "${build.schema}" cascade`);
  await admin.end();
  // the build's own migrations: a build before a schema change writes the tables it knows
  const ownPg = (await import(path.join(build.root, 'src/db/pg.js'))) as { connectPostgres: typeof connectPostgres };
  const sql = await ownPg.connectPostgres(DATABASE_URL, build.schema, 2);
  // straight into the table, not through LicenseStore.create: a build before the audit log
  // (sql/008_admin_audit.sql) has no table for the record a create writes
  const firmaIds: string[] = [];
  for (let i = 0; i < LICENSES; i++) {
    const firmaId = LicenseStore.newFirmaId();
    await sql.unsafe(
      `insert into licenses (firma_id, license_key, organization_name, password_hash, total_quota, expiry_date, is_active, domains)
       values ($1, $2, $3, 'x', 1e12, '2099-01-01T00:00:00Z', true, '{}')`,
      [firmaId, randomUUID(), `Bench ${i}`],
    );
    firmaIds.push(firmaId);
  }
  // a build with packages (sql/010_packages_ledger.sql): each license holds one, which its
  // redemptions name and spend, as redeem.lua's events do
  const [kontor] = await sql.unsafe(`select to_regclass('license_packages') is not null as packages`);
  const packages = kontor?.packages === true;
  if (packages) {
    await sql.unsafe(`update licenses set packages_made = 1`);
    await sql.unsafe(`insert into license_packages (firma_id, package_no, amount, expires_at) select firma_id, 1, total_quota, expiry_date from licenses`);
  }
  const { EventKind: kinds } = (await import(path.join(build.root, 'src/redis/fields.js'))) as { EventKind: Record<string, string> };
  return { build, keys: new KeySpace(build.prefix), firmaIds, sql, packages, spentEvents: packages && kinds.spent !== undefined };
}

/** Tokens issued and redeemed: the events issue.lua and redeem.lua add (src/redis/fields.ts EventValues), queued through a pipeline. */
class Events {
  private next = 0;
  constructor(private readonly s: Setup) {}

  /** an event's fields as the build's scripts write them */
  private fields(kind: string, values: (string | number)[]): (string | number)[] {
    if (!this.s.build.legacy) return [kind, values.join(TAB)];
    const [t, f, i, s, last, o] = values;
    const out = [L.kind, kind, L.tokenId, t, L.firmaId, f, L.imzaTipi, i, L.atMs, s, kind === EventKind.issued ? L.expiresMs : L.issuedMs, last] as (string | number)[];
    if (o !== undefined) out.push(L.origin, o);
    return out;
  }

  /** n fresh token ids, their "issued" events queued */
  async issue(n: number): Promise<string[]> {
    const ids: string[] = [];
    const p = redis.pipeline();
    const now = Date.now();
    for (let i = 0; i < n; i++) {
      const tokenId = newTokenId();
      const firmaId = this.s.firmaIds[this.next++ % LICENSES] as string;
      ids.push(`${firmaId} ${tokenId}`);
      p.xadd(this.s.keys.forLicense(firmaId).stream, '*', ...this.fields(EventKind.issued, [tokenId, firmaId, 0, now, now + 600_000]));
    }
    await p.exec();
    return ids;
  }

  /** the "used" events of tokens issue() gave out */
  async redeem(tokens: string[]): Promise<void> {
    const p = redis.pipeline();
    const now = Date.now();
    for (const t of tokens) {
      const [firmaId, tokenId] = t.split(' ') as [string, string];
      const values = [tokenId, firmaId, 0, now, now - 1000, 'https://imza.ornek.com.tr'];
      const fields = this.s.spentEvents ? this.fields(EventKind.spent, [1, ...values]) : this.fields(EventKind.used, values);
      if (this.s.packages && !this.s.spentEvents) fields.push(EVENT_PACKAGE, 1);
      p.xadd(this.s.keys.forLicense(firmaId).stream, '*', ...fields);
    }
    await p.exec();
  }
}

function env(s: Setup): Record<string, string> {
  return {
    REDIS_URL: `redis://127.0.0.1:${REDIS_PORT}`, REDIS_PREFIX: s.build.prefix, DATABASE_URL, PG_SCHEMA: s.build.schema,
    LOG_LEVEL: 'info', ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('WORKER_') && !k.startsWith('WORKER_BENCH'))),
  };
}

const lagOf = (s: Setup) => usageLag(redis as unknown as RedisClient, s.keys);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function drained(s: Setup): Promise<void> {
  while ((await lagOf(s)) > 0) await sleep(10);
}

/** Transaction ids handed out so far (each batch written takes one; so does this question). */
async function commits(s: Setup): Promise<number> {
  const [row] = await s.sql`select txid_current()::float8 as n`;
  return Number(row?.n);
}

/** Bytes of WAL written so far. */
async function walBytes(s: Setup): Promise<number> {
  const [row] = await s.sql`select pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 as n`;
  return Number(row?.n);
}

async function redisCpu(): Promise<number> {
  return cpuMicros(redisProc.pid);
}

/** Issues `n` tokens and lets a worker write their issued rows, then settles Postgres. */
async function issued(s: Setup, events: Events, n: number): Promise<string[]> {
  const tokens = await events.issue(n);
  const worker = await startWorker(s);
  await drained(s);
  await stopGracefully(worker);
  const tables = await s.sql`select tablename from pg_tables where schemaname = ${s.build.schema}`;
  await s.sql.unsafe(`vacuum (analyze) ${tables.map((r) => `"${s.build.schema}"."${r.tablename as string}"`).join(', ')}`);
  await s.sql.unsafe('checkpoint');
  return tokens;
}

function startWorker(s: Setup) {
  const flags = PROFILE === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${path.resolve(PROFILE)}`];
  return startPinned('worker', WORKER_CPU, ['node', ...flags, path.join(s.build.root, 'src/cli/worker.js')], env(s), /usage worker running/, 0);
}

/** Runs `load` against a worker started for it; CPU per redemption up to the end of the drain. */
async function measure(s: Setup, mode: string, redemptions: number, load: () => Promise<void>): Promise<void> {
  const worker = await startWorker(s);
    const before = { worker: cpuMicros(worker.pid), pg: postgresCpu(), redis: await redisCpu(), commits: await commits(s), wal: await walBytes(s), at: Date.now() };
  await load();
  await drained(s);
  const after = { worker: cpuMicros(worker.pid), pg: postgresCpu(), redis: await redisCpu(), commits: await commits(s), wal: await walBytes(s), at: Date.now() };
  await stopGracefully(worker);
  const r: Result = {
    build: s.build.name, mode, events: redemptions,
    workerUs: (after.worker - before.worker) / redemptions, postgresUs: (after.pg - before.pg) / redemptions,
    redisUs: (after.redis - before.redis) / redemptions, commits: after.commits - before.commits - 1, walBytes: (after.wal - before.wal) / redemptions, ms: after.at - before.at,
  };
  results.push(r);
  process.stderr.write(`  ${r.build} ${mode}: worker ${r.workerUs.toFixed(1)} µs, Postgres ${r.postgresUs.toFixed(1)} µs, ` +
    `Redis ${r.redisUs.toFixed(1)} µs, WAL ${r.walBytes.toFixed(0)} bytes per event, ${(redemptions / Math.max(1, r.commits)).toFixed(0)} events per commit\n`);
}

/** Queues `rate` redemptions a second, in 1 ms ticks, for SECONDS. */
async function paced(events: Events, tokens: string[], rate: number): Promise<void> {
  const start = Date.now();
  let sent = 0;
  while (sent < tokens.length) {
    const due = Math.min(tokens.length, Math.floor(((Date.now() - start) * rate) / 1000));
    if (due > sent) {
      await events.redeem(tokens.slice(sent, due));
      sent = due;
    }
    await sleep(1);
  }
}

const setups: Setup[] = [];
for (const build of builds) setups.push(await setUp(build));
process.stderr.write(`bench-worker: ${EVENTS} queued redemptions; paced ${RATES.join('/')} a second for ${SECONDS}s; ` +
  `${ROUNDS} rounds; worker on cpu ${WORKER_CPU}, Redis and the load on cpu ${LOAD_CPU}\n`);
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? setups : [...setups].reverse();
  for (const s of order) {
    const events = new Events(s);
    const backlog = await issued(s, events, EVENTS);
    await measure(s, 'backlog', EVENTS, async () => {
      await events.redeem(backlog);
    });
    for (const rate of RATES) {
      const tokens = await issued(s, events, rate * SECONDS);
      await measure(s, `paced ${rate}/s`, tokens.length, () => paced(events, tokens, rate));
    }
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
process.stdout.write(`\n| build | events arrive | runs | worker µs/event | Postgres µs/event | Redis µs/event | WAL bytes/event | events per commit |\n|---|---|---|---|---|---|---|---|\n`);
const keys = [...new Set(results.map((r) => `${r.build}|${r.mode}`))];
for (const key of keys) {
  const rs = results.filter((r) => `${r.build}|${r.mode}` === key);
  const [build, mode] = key.split('|');
  process.stdout.write(`| ${build} | ${mode} | ${rs.length} | ${median(rs.map((r) => r.workerUs)).toFixed(1)} | ` +
    `${median(rs.map((r) => r.postgresUs)).toFixed(1)} | ${median(rs.map((r) => r.redisUs)).toFixed(1)} | ${median(rs.map((r) => r.walBytes)).toFixed(0)} | ` +
    `${median(rs.map((r) => r.events / Math.max(1, r.commits))).toFixed(0)} |\n`);
}
await redis.quit();
for (const s of setups) await s.sql.end();
process.exit(0);
