import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { loadConfig } from '../../src/config.js';
import { connectPostgres } from '../../src/db/pg.js';
import type { RedisClient } from '../../src/redis/client.js';
import { KeySpace, MARKER_SLACK_MS, MARKER_WINDOW_MS } from '../../src/redis/keys.js';
import { ACCESS_TOKEN_SECONDS, SIGN_TOKEN_SECONDS } from '../../src/tokens/jwt.js';
import { usageLag } from '../../src/usage/lag.js';
import { createLicenses, api } from './licenses.js';
import { clusterPids, pssKiB, startPrivatePostgres } from './privatePostgres.js';
import { postgresCpu, treeMicros } from './proc.js';
import { ADMIN_TOKEN, requiredEnv, startPinned, startService, stopAll, stopGracefully, type Pinned } from './services.js';
import { soakSvg } from './soakChart.js';
import { luaDir, runWrk, type WrkResult } from './wrk.js';

// make bench-soak: the service as `npm start` runs it (every default: a process per core,
// the usage worker inside, every limit on) under a signing fleet's mix (soakmix.lua:
// sign-token and validate, check-quota and get-token mixed in), first as fast as it answers
// (the peak), then held at SOAK_PERCENT of that peak, open loop, for SOAK_MINUTES, each
// minute its own wrk run, after SOAK_SETTLE_MINUTES at that rate (Redis reaches the size it
// keeps: below). Redis runs the documented production redis.conf
// (deploy/redis/license-service.conf: AOF, appendfsync everysec); Postgres is a cluster of
// the soak's own at Postgres's defaults (autovacuum on), unless BENCH_DATABASE_URL names one.
// Each minute: throughput, p99, the worker's lag, Postgres and Redis memory, table and index
// size per million redemptions, autovacuum's runs. Sustained equals peak when the last
// minute answers what the first did, within 5 %, and the lag stays bounded.
const SERVER_CPUS = process.env.BENCH_SERVER_CPUS ?? '0,1';
const LOAD_CPU = process.env.BENCH_LOAD_CPU ?? '1';
const MINUTES = Number(process.env.SOAK_MINUTES ?? 10);
const PERCENT = Number(process.env.SOAK_PERCENT ?? 80);
// A deployment's Redis holds every token's marker until its token expired, its expiry minute
// ended (MARKER_WINDOW_MS, MARKER_SLACK_MS) and its release window passed (RELEASE_WINDOW_SECONDS
// of the service's configuration): 11 to 12 minutes at the defaults. A soak measured from an
// empty Redis measures a Redis that grows all along, each AOF rewrite longer than the one
// before, never the size it keeps. So the rate is held that long first, those minutes
// reported apart as settling (SOAK_SETTLE_MINUTES overrides it).
const markerLifeMs = (env: Record<string, string>) =>
  SIGN_TOKEN_SECONDS * 1000 + MARKER_WINDOW_MS + MARKER_SLACK_MS + loadConfig(env).releaseWindowMs;
// validate and sign-token are limited per company (100 a minute by default): the licenses take
// turns, and 6,000 of them carry up to 10,000 rounds a second (sign-token and validate each)
const LICENSES = Number(process.env.SOAK_LICENSES ?? 6000);
const CONNECTIONS = Number(process.env.SOAK_CONNECTIONS ?? 64);
const PEAK_SECONDS = Number(process.env.SOAK_PEAK_SECONDS ?? 30);
const CHART = process.env.SOAK_CHART ?? path.resolve(luaDir, '..', 'soak.svg');
const REDIS_PORT = 6396;
const PG_PORT = 5496;
const PORT = 9111;
const SCHEMA = 'bench';
// SOAK_PG_SETTINGS="max_wal_size=4GB checkpoint_timeout=15min": the soak's own cluster at these settings instead of its defaults
const PG_SETTINGS = (process.env.SOAK_PG_SETTINGS ?? '').split(/\s+/).filter((s) => s !== '');
// SOAK_HOLD_SNAPSHOT="3-5": a session holds one snapshot from measured minute 3 through 5, as a
// pg_dump or a long report would (REPEATABLE READ, read only): what that costs the worker
const HOLD = /^(\d+)-(\d+)$/.exec(process.env.SOAK_HOLD_SNAPSHOT ?? '');
const HOLD_FROM = HOLD ? Number(HOLD[1]) : Infinity;
const HOLD_TO = HOLD ? Number(HOLD[2]) : -Infinity;
if (process.env.SOAK_HOLD_SNAPSHOT !== undefined && !(HOLD_FROM >= 1 && HOLD_TO >= HOLD_FROM && HOLD_TO <= MINUTES)) {
  process.stderr.write(`bench-soak: SOAK_HOLD_SNAPSHOT "${process.env.SOAK_HOLD_SNAPSHOT}" is not two measured minutes "from-to" (1 to SOAK_MINUTES ${MINUTES}, from <= to)\n`);
  process.exit(2);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const mib = (bytes: number) => bytes / 1048576;

interface Minute {
  /** 1 to MINUTES; 0 and below while settling (SETTLE_MINUTES) */
  minute: number;
  rps: number;
  p99: number;
  non2xx: number;
  redemptions: number;
  lagMax: number;
  lagEnd: number;
  postgresMiB: number;
  redisMiB: number;
  redisKeys: number;
  redemptionsMiBPerM: number;
  issuesMiBPerM: number;
  licensesMiB: number;
  autovacuums: number;
  autoanalyzes: number;
  deadRows: number;
  /** checkpoints begun in the minute, on schedule and asked for (max_wal_size reached) */
  checkpoints: string;
  walBytes: number;
  /** full-page images in the WAL, per redemption: each page's first change after a checkpoint */
  fpi: number;
  serverUs: number;
  /** Redis's CPU per request, its forked children's (AOF rewrites) included */
  redisUs: number;
  /** forks in the minute: AOF rewrites */
  redisForks: number;
  /** the machine's CPU left idle in the minute, % (/proc/stat): a minute slower at equal idle was slower per cycle */
  idle: number;
  postgresUs: number;
}

/** The production redis.conf the deployment documents (docs/redis.md), on the soak's own port and folder. */
const REDIS_CONF = path.resolve(luaDir, '../../deploy/redis/license-service.conf');

/** The machine's CPU time so far, idle and all, in ticks (the first line of /proc/stat). */
function machineTicks(): { idle: number; all: number } {
  const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1, 9).map(Number);
  return { idle: (fields[3] ?? 0) + (fields[4] ?? 0), all: fields.reduce((a, b) => a + b, 0) };
}

async function startPersistentRedis(dir: string): Promise<Pinned> {
  return startPinned('redis', LOAD_CPU, ['redis-server', REDIS_CONF, '--port', String(REDIS_PORT), '--bind', '127.0.0.1', '--dir', dir],
    {}, /Ready to accept connections/, REDIS_PORT);
}

function non2xx(r: WrkResult): number {
  const bad = Object.entries(r.statuses ?? {}).filter(([s]) => !s.startsWith('2')).reduce((n, [, c]) => n + c, 0);
  return bad + r.socketErrors;
}

/** A session holding one snapshot (REPEATABLE READ, read only), until the function it resolves ends it. */
async function holdSnapshot(databaseUrl: string): Promise<() => Promise<void>> {
  const holder = await connectPostgres(databaseUrl, SCHEMA, 1);
  let taken = () => {};
  const snapshot = new Promise<void>((resolve) => { taken = resolve; });
  let release = () => {};
  const released = new Promise<void>((resolve) => { release = resolve; });
  const held = holder.begin('isolation level repeatable read read only', async (tx) => {
    await tx`select count(*) from licenses`;
    taken();
    await released;
  }).finally(() => holder.end());
  await Promise.race([snapshot, held]);
  return async () => {
    release();
    await held;
  };
}

async function main(): Promise<void> {
  const work = mkdtempSync(path.join(tmpdir(), 'bench-soak-'));
  const own = process.env.BENCH_DATABASE_URL === undefined ? await startPrivatePostgres(PG_PORT, PG_SETTINGS) : null;
  const databaseUrl = own?.url ?? (process.env.BENCH_DATABASE_URL as string);
  const redis = await startPersistentRedis(work);
  const setup = await connectPostgres(databaseUrl, 'public', 1);
  await setup.unsafe(`drop schema if exists ${SCHEMA} cascade`);
  await setup.end();
  const serviceEnv = { ...requiredEnv(REDIS_PORT, databaseUrl, PORT), ADMIN_TOKEN };
  const SETTLE_MINUTES = Number(process.env.SOAK_SETTLE_MINUTES ?? Math.ceil(markerLifeMs(serviceEnv) / 60_000));
  /** A minute's name in the rows: s1, s2 … while settling, then 1, 2 … */
  const label = (m: number) => (m > 0 ? `${m}${m >= HOLD_FROM && m <= HOLD_TO ? ' (snapshot held)' : ''}` : `s${m + SETTLE_MINUTES}`);
  const service = await startService(SERVER_CPUS, serviceEnv, PORT);
  process.on('exit', () => stopAll([redis, service]));
  const base = `http://127.0.0.1:${PORT}`;

  const made = Date.now();
  const licenses = await createLicenses(base, LICENSES, 8);
  process.stderr.write(`bench-soak: ${LICENSES} licenses made in ${Math.round((Date.now() - made) / 1000)} s\n`);
  const licenseFile = path.join(work, 'licenses.txt');
  const writeLicenses = () => writeFileSync(licenseFile, licenses.map((l) => `${l.key} ${l.password} ${l.access}`).join('\n') + '\n');
  writeLicenses();
  const mix = (seconds: number, rate: number) =>
    runWrk({ cpu: LOAD_CPU, url: base, script: 'soakmix.lua', connections: CONNECTIONS, seconds, args: [licenseFile, String(Math.round(rate))] });

  // warm-up, then the peak: as fast as it answers
  await mix(10, 0);
  const peak = await mix(PEAK_SECONDS, 0);
  const rate = (peak.rps * PERCENT) / 100;
  process.stderr.write(`bench-soak: peak ${Math.round(peak.rps)} req/s (p99 ${(peak.p99 / 1000).toFixed(2)} ms, non-2xx ${non2xx(peak)}); ` +
    `holding ${Math.round(rate)} req/s (${PERCENT} %) for ${SETTLE_MINUTES} min to settle, then ${MINUTES} min measured\n`);
  if (non2xx(peak) > peak.requests / 1000) {
    process.stderr.write(`bench-soak: the peak met its limits (${non2xx(peak)} non-2xx): more licenses (SOAK_LICENSES) give a true peak\n`);
  }
  // access tokens last 15 minutes: fresh ones for the whole soak (a login the mix's own
  // logins have used up waits for its window)
  const login = async (l: (typeof licenses)[0]) => {
    for (;;) {
      try {
        l.access = (await api('POST', `${base}/api/v1/auth/get-token`, { licenseKey: l.key, password: l.password, imzaTipi: 0 })).accessToken;
        return;
      } catch (err) {
        const retry = /"retryAfter":(\d+)/.exec((err as Error).message);
        if (!retry) throw err;
        await sleep(Number(retry[1]) * 1000);
      }
    }
  };
  const renew = async () => {
    let next = 0;
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < licenses.length) await login(licenses[next++] as (typeof licenses)[0]);
    }));
    writeLicenses();
  };
  await renew();
  // Settling and measuring take longer than an access token lives: they are renewed once
  // more while the rate settles, early enough to last to the end (with a minute to spare)
  // and late enough that the renewal ends before the first measured minute. Each minute's
  // wrk run reads the file anew.
  const accessMinutes = Math.floor(ACCESS_TOKEN_SECONDS / 60);
  const renewAt = SETTLE_MINUTES + MINUTES < accessMinutes - 1 ? null : MINUTES - accessMinutes + 2;
  if (renewAt !== null && (renewAt < 1 - SETTLE_MINUTES || renewAt > 0)) {
    throw new Error(`bench-soak: SOAK_MINUTES ${MINUTES} with SOAK_SETTLE_MINUTES ${SETTLE_MINUTES} outlasts an access token (${accessMinutes} min)`);
  }
  let renewing: Promise<void> | null = null;

  const client = new Redis(REDIS_PORT);
  const sql = await connectPostgres(databaseUrl, SCHEMA, 1);
  const keys = new KeySpace('bench');
  const lag = () => usageLag(client as unknown as RedisClient, keys);
  const redeemed = async () => Number((await sql`select coalesce(sum(used_quota), 0)::float8 as n from licenses`)[0]?.n);
  const sizes = async () => (await sql`select
      (select coalesce(sum(pg_total_relation_size(relid)), 0) from pg_partition_tree('token_redemptions'))::float8 as r,
      (select coalesce(sum(pg_total_relation_size(relid)), 0) from pg_partition_tree('token_issues'))::float8 as i,
      pg_total_relation_size('licenses')::float8 as l`)[0] as { r: number; i: number; l: number };
  const vacuums = async () => (await sql`select coalesce(sum(autovacuum_count), 0)::float8 as v, coalesce(sum(autoanalyze_count), 0)::float8 as a,
      coalesce(sum(n_dead_tup), 0)::float8 as d from pg_stat_user_tables where schemaname = ${SCHEMA}`)[0] as { v: number; a: number; d: number };
  // the cluster's WAL and checkpoints (every database's: the soak's cluster holds only this one)
  const wal = async () => (await sql`select pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 as b, w.wal_fpi::float8 as f,
      c.checkpoints_timed::float8 as t, c.checkpoints_req::float8 as r from pg_stat_wal w, pg_stat_bgwriter c`)[0] as { b: number; f: number; t: number; r: number };
  // one INFO a minute: Redis's CPU so far (its children's too: the AOF rewrites it forks), its forks and its memory
  const redisStats = async () => {
    const info = await client.info();
    const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
    return {
      us: (field('used_cpu_sys') + field('used_cpu_user') + field('used_cpu_sys_children') + field('used_cpu_user_children')) * 1e6,
      forks: field('total_forks'), memory: field('used_memory'),
    };
  };
  const postgresMemory = () => (own ? pssKiB(clusterPids(own.pid)) / 1024 : NaN);
  const autovacuum = (await sql`select setting from pg_settings where name = 'autovacuum'`)[0]?.setting as string;

  const minutes: Minute[] = [];
  const settling: Minute[] = [];
  let before = { redeemed: await redeemed(), vac: await vacuums(), wal: await wal(), redis: await redisStats(), cpu: machineTicks(), server: treeMicros(service.pid), pg: postgresCpu() };
  let endHold = async () => {};
  for (let m = 1 - SETTLE_MINUTES; m <= MINUTES; m++) {
    if (m === renewAt) renewing = renew();
    if (m === HOLD_FROM) endHold = await holdSnapshot(databaseUrl);
    if (m === 1 && renewing) await renewing;
    let lagMax = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        lagMax = Math.max(lagMax, await lag());
        await sleep(1000);
      }
    })();
    const r = await mix(60, rate);
    sampling = false;
    await sampler;
    const now = { redeemed: await redeemed(), vac: await vacuums(), wal: await wal(), redis: await redisStats(), cpu: machineTicks(), server: treeMicros(service.pid), pg: postgresCpu() };
    const size = await sizes();
    const perMillion = now.redeemed / 1e6;
    const spent = Math.max(1, now.redeemed - before.redeemed);
    const row: Minute = {
      minute: m, rps: r.rps, p99: r.p99 / 1000, non2xx: non2xx(r), redemptions: now.redeemed - before.redeemed,
      lagMax, lagEnd: await lag(), postgresMiB: postgresMemory(),
      redisMiB: mib(now.redis.memory), redisKeys: await client.dbsize(),
      redemptionsMiBPerM: mib(size.r) / perMillion, issuesMiBPerM: mib(size.i) / perMillion, licensesMiB: mib(size.l),
      autovacuums: now.vac.v - before.vac.v, autoanalyzes: now.vac.a - before.vac.a, deadRows: now.vac.d,
      checkpoints: `${now.wal.t - before.wal.t}/${now.wal.r - before.wal.r}`, walBytes: (now.wal.b - before.wal.b) / spent, fpi: (now.wal.f - before.wal.f) / spent,
      serverUs: (now.server - before.server) / r.requests, redisUs: (now.redis.us - before.redis.us) / r.requests,
      redisForks: now.redis.forks - before.redis.forks, idle: (100 * (now.cpu.idle - before.cpu.idle)) / Math.max(1, now.cpu.all - before.cpu.all), postgresUs: (now.pg - before.pg) / spent,
    };
    before = now;
    if (m === HOLD_TO) await endHold();
    (m > 0 ? minutes : settling).push(row);
    process.stderr.write(`  ${label(m)}: ${Math.round(row.rps)} req/s p99 ${row.p99.toFixed(2)} ms non-2xx ${row.non2xx} ` +
      `redemptions ${row.redemptions} lag max ${row.lagMax} Postgres ${row.postgresMiB.toFixed(0)} MiB Redis ${row.redisMiB.toFixed(1)} MiB ` +
      `autovacuum ${row.autovacuums}/${row.autoanalyzes} checkpoints ${row.checkpoints} WAL ${row.walBytes.toFixed(0)} B/redemption Redis ${row.redisUs.toFixed(1)} µs/req forks ${row.redisForks} idle ${row.idle.toFixed(0)} % Postgres ${row.postgresUs.toFixed(1)} µs/redemption statuses ${JSON.stringify(r.statuses)}\n`);
  }

  const first = minutes[0] as Minute;
  const last = minutes[minutes.length - 1] as Minute;
  const drift = (last.rps / first.rps - 1) * 100;
  const lowest = minutes.reduce((low, x) => (x.rps < low.rps ? x : low), first);
  const dip = (lowest.rps / first.rps - 1) * 100;
  const p99Drift = (last.p99 / first.p99 - 1) * 100;
  // bounded: no minute's largest lag above one second of the offered rate
  const lagBound = Math.round(rate);
  const worstLag = Math.max(...minutes.map((x) => x.lagMax));
  const f1 = (v: number) => v.toFixed(1);
  const table = [
    '| minute | req/s | p99 ms | non-2xx | redemptions | lag max (events) | lag at end | Postgres MiB (PSS) | Redis MiB | Redis keys | token_redemptions MiB per M | token_issues MiB per M | licenses MiB | autovacuum runs | autoanalyze runs | dead rows | checkpoints (timed/requested) | WAL bytes per redemption | full-page images per redemption | server µs/req | Redis µs/req (AOF rewrites included) | Redis forks | machine idle % | Postgres µs/redemption (its token’s issue row included) |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...[...settling, ...minutes].map((x) => `| ${label(x.minute)} | ${Math.round(x.rps)} | ${x.p99.toFixed(2)} | ${x.non2xx} | ${x.redemptions} | ${x.lagMax} | ${x.lagEnd} | ` +
      `${Number.isNaN(x.postgresMiB) ? 'n/a' : x.postgresMiB.toFixed(0)} | ${f1(x.redisMiB)} | ${x.redisKeys} | ${f1(x.redemptionsMiBPerM)} | ${f1(x.issuesMiBPerM)} | ${f1(x.licensesMiB)} | ` +
      `${x.autovacuums} | ${x.autoanalyzes} | ${x.deadRows} | ${x.checkpoints} | ${x.walBytes.toFixed(0)} | ${x.fpi.toFixed(3)} | ${f1(x.serverUs)} | ${f1(x.redisUs)} | ${x.redisForks} | ${x.idle.toFixed(0)} | ${f1(x.postgresUs)} |`),
  ];
  const verdicts = [
    `| target | measured | verdict |`, '|---|---|---|',
    `| last minute's req/s within 5 % of the first's | ${drift >= 0 ? '+' : ''}${drift.toFixed(1)} % (${Math.round(first.rps)} → ${Math.round(last.rps)}) | ${Math.abs(drift) <= 5 ? 'met' : 'missed'} |`,
    `| every minute's req/s within 5 % of the first's | lowest ${dip.toFixed(1)} % (minute ${lowest.minute}: ${Math.round(lowest.rps)}) | ${dip >= -5 ? 'met' : 'missed'} |`,
    `| last minute's p99 within 5 % of the first's | ${p99Drift >= 0 ? '+' : ''}${p99Drift.toFixed(1)} % (${first.p99.toFixed(2)} → ${last.p99.toFixed(2)} ms) | ${Math.abs(p99Drift) <= 5 ? 'met' : 'missed'} |`,
    `| lag bounded: every minute's largest under one second of the offered rate (${lagBound} events) | ${worstLag} | ${worstLag <= lagBound ? 'met' : 'missed'} |`,
    `| no non-2xx answer | ${minutes.reduce((n, x) => n + x.non2xx, 0)} | ${minutes.every((x) => x.non2xx === 0) ? 'met' : 'missed'} |`,
  ];
  process.stdout.write(`\nbench-soak ${new Date().toISOString()}: ${LICENSES} licenses, peak ${Math.round(peak.rps)} req/s (p99 ${(peak.p99 / 1000).toFixed(2)} ms), ` +
    `held at ${PERCENT} %: ${Math.round(rate)} req/s offered, ${CONNECTIONS} connections, ${SETTLE_MINUTES} min to settle (rows s1–s${SETTLE_MINUTES}) then ${MINUTES} measured; Redis at deploy/redis/license-service.conf (AOF, appendfsync everysec); ` +
    `Postgres ${own ? `a cluster of its own at its defaults${PG_SETTINGS.length > 0 ? ` but ${PG_SETTINGS.join(' ')}` : ''}` : 'BENCH_DATABASE_URL'} (autovacuum ${autovacuum})\n\n` +
    `${table.join('\n')}\n\n${verdicts.join('\n')}\n`);
  writeFileSync(CHART, soakSvg(`make bench-soak: validate, sign-token, check-quota and get-token at ${PERCENT} % of the peak (${Math.round(rate)} req/s offered), as deployed`, [
    { title: 'requests per second answered', values: minutes.map((x) => x.rps), format: (v) => Math.round(v).toLocaleString('en-US'), colour: '#1b9e5a' },
    { title: 'p99 latency, ms', values: minutes.map((x) => x.p99), format: (v) => v.toFixed(2), colour: '#2f6fdb' },
    { title: 'usage worker lag, events (largest of the minute)', values: minutes.map((x) => x.lagMax), format: (v) => Math.round(v).toLocaleString('en-US'), colour: '#e07b00' },
    { title: 'Postgres CPU µs per redemption', values: minutes.map((x) => x.postgresUs), format: (v) => v.toFixed(1), colour: '#8250df' },
    { title: 'Redis used_memory, MiB', values: minutes.map((x) => x.redisMiB), format: (v) => v.toFixed(1), colour: '#cf222e' },
    { title: 'token_redemptions MiB per million redemptions', values: minutes.map((x) => x.redemptionsMiBPerM), format: (v) => v.toFixed(1), colour: '#57606a' },
  ]));
  process.stderr.write(`bench-soak: chart written to ${CHART}\n`);

  await sql.end();
  await client.quit();
  await stopGracefully(service);
  await stopGracefully(redis);
  await own?.stop();
  rmSync(work, { recursive: true, force: true });
  process.exit(0);
}

main().catch((err: Error) => {
  process.stderr.write(`bench-soak failed: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
