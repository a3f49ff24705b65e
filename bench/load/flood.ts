import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { connectPostgres } from '../../src/db/pg.js';
import { cpuMicros } from './proc.js';
import { luaDir } from './wrk.js';
import { ADMIN_TOKEN, serviceEnv, startPinned, startService, stopAll, stopGracefully, type Pinned } from './services.js';

// make bench-flood: a real customer's get-token latency while 300 connections spray
// get-token with random (unknown) license keys. The service runs as deployed (usage worker
// inside, TRUST_PROXY=1 behind an imagined proxy); the customer is a sequential loop of
// get-tokens with the right password, measured alone and then under two sprays: (a) from
// one address, which the per-address failure limit shuts out, and (b) from a botnet, a new
// X-Forwarded-For on every request, which that limit never sees. Then (a) again against
// the same code with the defences turned off by configuration, and optionally against
// another build (FLOOD_COMPARE_SERVER, e.g. the commit before the defences).
const SERVER_CPU = process.env.BENCH_SERVER_CPU ?? '0';
const LOAD_CPU = process.env.BENCH_LOAD_CPU ?? '1';
const SECONDS = Number(process.env.FLOOD_SECONDS ?? 15);
const CONNECTIONS = Number(process.env.FLOOD_CONNECTIONS ?? 300);
const CUSTOMERS = Number(process.env.FLOOD_CUSTOMERS ?? 1);
/** another build's dist/src/cli/server.js, measured under spray (a) as a last phase */
const COMPARE_SERVER = process.env.FLOOD_COMPARE_SERVER;
const COMPARE_LABEL = process.env.FLOOD_COMPARE_LABEL ?? 'other build';
const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const LICENSES = 4;
/**
 * Rows added beside them with SQL (never in Redis): with a table this size Postgres finds a
 * key through the license_key index, whose idx_scan then counts get-token's look-ups alone
 * (the usage worker's statement reaches licenses by firma_id on every batch).
 */
const FILLER_LICENSES = Number(process.env.FLOOD_FILLER_LICENSES ?? 10_000);
const REDIS_PORT = 6394;
const PORTS = { defended: 9120, undefended: 9121, compare: 9122 };
const ATTACKER = '203.0.113.7'; // the one address of spray (a)
/** RATE_GET_TOKEN_FAILURES_PER_MIN of the defended service (its default) */
const FAILURE_LIMIT = 30;
/** the spray starts this long before the customer and stops this long after it */
const LEAD_MS = 1000;
/** Postgres flushes a backend's table statistics up to 10 s after its last transaction */
const PG_STATS_SETTLE_MS = 10_500;
/** however the run goes, it ends by then */
const DEADLINE_MS = 6 * 60_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---- everything started here stops with the driver, however it ends ----

const started: Pinned[] = [];
const sprays = new Set<ChildProcess>();
// Every process started from here (Redis, the services and their hashers, wrk) inherits
// this variable: the watchdog finds them by it, from their first instant.
const RUN_ID = randomBytes(8).toString('hex');
process.env.FLOOD_RUN_ID = RUN_ID;

/**
 * A detached shell, without the variable, that outlives the driver: when the driver is gone
 * (even by SIGKILL, which runs no exit handler) it kills every process whose environment
 * holds this run's FLOOD_RUN_ID.
 */
function startWatchdog(): void {
  const script = `while kill -0 "$1" 2>/dev/null; do sleep 1; done
for f in /proc/[0-9]*/environ; do
  if grep -qaF -- "FLOOD_RUN_ID=$2" "$f" 2>/dev/null; then p=\${f#/proc/}; kill -9 "\${p%/environ}" 2>/dev/null; fi
done`;
  const env = { ...process.env };
  delete env.FLOOD_RUN_ID;
  spawn('sh', ['-c', script, 'flood-watchdog', String(process.pid), RUN_ID], { detached: true, stdio: 'ignore', env }).unref();
}

function stopEverything(): void {
  for (const child of sprays) child.kill('SIGKILL');
  stopAll(started);
}

// ---- measurements ----

/** CPU µs of the direct children of a process (the service's password hasher). */
function childrenCpu(parent: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === parent) out.set(Number(entry), cpuMicros(Number(entry)));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** utime + stime (+ those of the waited-for children: the finished wrk runs) of this process, µs */
function selfAndChildrenCpu(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 10_000;
}

/** Busy CPU µs of the whole machine (every core, every process). */
function machineBusy(): number {
  const f = (readFileSync('/proc/stat', 'utf8').split('\n')[0] as string).trim().split(/\s+/).slice(1).map(Number);
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
  return (total - (f[3] as number) - (f[4] as number)) * 10_000; // less idle and iowait
}

/** Local ports of the process's TCP connections to `remotePort` (its Postgres connections). */
function connectionPorts(pid: number, remotePort: number): number[] {
  const inodes = new Set<string>();
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m) inodes.add(m[1] as string);
      } catch {
        // closed meanwhile
      }
    }
  } catch {
    return [];
  }
  const ports: number[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || !inodes.has(f[9] as string)) continue;
      if (parseInt((f[2] as string).split(':')[1] as string, 16) === remotePort) ports.push(parseInt((f[1] as string).split(':')[1] as string, 16));
    }
  }
  return ports;
}

interface Snapshot {
  at: number;
  service: number;
  hasher: Map<number, number>;
  redis: number;
  /** the Postgres backends serving the service's connections */
  postgres: Map<number, number>;
  driver: number;
  machine: number;
}

interface Counters {
  /** scans of the schema's license_key index: get-token's look-ups by key */
  pgLookups: number;
  /** SET calls: the unknown-key markers written, one per look-up that found nothing */
  markers: number;
  keys: number;
  usedMemory: number;
}

interface CustomerResult {
  latencies: number[];
  statuses: Record<string, number>;
}

interface SprayResult {
  requests: number;
  seconds: number;
  statuses: Record<string, number>;
  timeouts: number;
  socketErrors: number;
  p50: number;
  p99: number;
}

interface Row {
  phase: string;
  customer: CustomerResult;
  spray: SprayResult | null;
  /** shares of one core; others: the rest of the machine's busy time (other people's processes) */
  cpu: { service: number; hasher: number; redis: number; postgres: number; others: number };
  wallSeconds: number;
  pgLookups: number;
  markers: number;
  keys: number;
  memoryMiB: number;
}

const rows: Row[] = [];

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

/** CUSTOMERS sequential loops of get-token with the right password, each its own license and address. */
async function customer(base: string, licenses: { key: string; password: string }[], ms: number): Promise<CustomerResult> {
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  const deadline = performance.now() + ms;
  await Promise.all(Array.from({ length: CUSTOMERS }, async (_, i) => {
    const license = licenses[i % licenses.length] as { key: string; password: string };
    const body = JSON.stringify({ licenseKey: license.key, password: license.password, imzaTipi: 0 });
    while (performance.now() < deadline) {
      const t0 = performance.now();
      let status: string;
      let retryAfter = 0;
      try {
        const res = await fetch(`${base}/api/v1/auth/get-token`, {
          method: 'POST', body, signal: AbortSignal.timeout(10_000),
          headers: { 'content-type': 'application/json', 'x-forwarded-for': `198.51.100.${10 + i}` },
        });
        await res.arrayBuffer();
        status = String(res.status);
        if (res.status !== 200) retryAfter = Number(res.headers.get('retry-after') ?? 1);
      } catch (err) {
        status = (err as Error).name === 'TimeoutError' ? 'timeout' : 'error';
      }
      latencies.push(performance.now() - t0);
      statuses[status] = (statuses[status] ?? 0) + 1;
      // a well-behaved client waits as it is told before trying again
      if (retryAfter > 0) await sleep(Math.min(retryAfter * 1000, deadline - performance.now()));
    }
  }));
  latencies.sort((a, b) => a - b);
  return { latencies, statuses };
}

/** wrk with spray.lua: CONNECTIONS connections of random unknown keys from `forwarded` ("random": a botnet). */
function spray(base: string, forwarded: string, seconds: number): Promise<SprayResult> {
  const argv = ['-c', LOAD_CPU, 'wrk', '-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '--timeout', '10s',
    '-s', path.join(luaDir, 'spray.lua'), `${base}/api/v1/auth/get-token`, '--', forwarded];
  const child = spawn('taskset', argv, { env: { ...process.env, WRK_LUA_DIR: luaDir } });
  sprays.add(child);
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      sprays.delete(child);
      const line = (prefix: string) => out.split('\n').find((l) => l.startsWith(prefix));
      const wrkLine = line('WRK ');
      const statusLine = line('STATUS ');
      if (code !== 0 || !wrkLine || !statusLine) {
        reject(new Error(`wrk failed (${code}): ${out.slice(-500)}`));
        return;
      }
      const w = JSON.parse(wrkLine.slice(4)) as Record<string, number>;
      const s = JSON.parse(statusLine.slice(7)) as { statuses: Record<string, number>; timeouts: number };
      resolve({
        requests: w.requests as number, seconds: (w.duration_us as number) / 1e6, statuses: s.statuses,
        timeouts: s.timeouts, socketErrors: w.socket_errors as number, p50: w.p50 as number, p99: w.p99 as number,
      });
    });
  });
}

async function main(): Promise<void> {
  setTimeout(() => {
    process.stderr.write(`bench-flood: not done after ${DEADLINE_MS / 1000} s, stopping\n`);
    process.exit(1);
  }, DEADLINE_MS).unref();
  startWatchdog();
  process.on('exit', stopEverything);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => process.exit(130));
  // the customer's client and wrk share the load core with Redis; the service has its own
  spawnSync('taskset', ['-a', '-p', '-c', LOAD_CPU, String(process.pid)], { stdio: 'ignore' });

  const setup = await connectPostgres(DATABASE_URL, 'public', 1);
  await setup.unsafe('drop schema if exists flood cascade');
  await setup.unsafe('drop schema if exists flood_cmp cascade');
  // as startRedis does, but keeping the process title: Redis would otherwise write its title
  // over its environment, and the watchdog could not find it
  const redis = await startPinned('redis', LOAD_CPU, ['redis-server', '--port', String(REDIS_PORT), '--bind', '127.0.0.1',
    '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction', '--set-proc-title', 'no'], {},
  /Ready to accept connections/, REDIS_PORT);
  started.push(redis);
  const redisClient = new Redis(REDIS_PORT);

  const env = (port: number, schema: string, prefix: string): Record<string, string> => ({
    ...serviceEnv(REDIS_PORT, DATABASE_URL, port),
    PG_SCHEMA: schema, REDIS_PREFIX: prefix,
    // as deployed: the usage worker inside, behind one trusted proxy
    RUN_WORKER: '1', TRUST_PROXY: '1',
    // the customer's own key is not limited (it logs in far more often than 10 a minute here)
    RATE_GET_TOKEN_PER_MIN: '0',
    // the defences at their defaults, spelled out so the caller's environment cannot change them
    RATE_GET_TOKEN_FAILURES_PER_MIN: String(FAILURE_LIMIT), UNKNOWN_KEY_CACHE_SECONDS: '60', PASSWORD_QUEUE_MAX: '64',
  });
  const start = async (label: string, port: number, extra: Record<string, string>, schema = 'flood', prefix = 'flood',
    serverJs?: string): Promise<Pinned> => {
    const e = { ...env(port, schema, prefix), ...extra };
    const service = serverJs === undefined
      ? await startService(SERVER_CPU, e, port)
      : await startPinned(label, SERVER_CPU, ['node', serverJs], { ...e, LOG_LEVEL: 'info' }, /"listening"/, port);
    started.push(service);
    return service;
  };

  const api = async (base: string, method: string, url: string, body?: unknown, token?: string): Promise<any> => { // eslint-disable-line @typescript-eslint/no-explicit-any
    const res = await fetch(`${base}${url}`, {
      method, body: body === undefined ? undefined : JSON.stringify(body),
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    });
    const json = await res.json();
    if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  /**
   * FILLER_LICENSES rows with SQL, then LICENSES licenses through the admin API and one
   * get-token each (starts the hasher, times a verification).
   */
  const prepare = async (base: string, schema: string) => {
    await setup.unsafe(`insert into "${schema}".licenses (firma_id, license_key, organization_name, password_hash, total_quota, expiry_date)
      select 'filler-' || g, gen_random_uuid()::text, 'Filler', 'not a hash', 0, now() + interval '1 year'
      from generate_series(1, ${FILLER_LICENSES}) g`);
    await setup.unsafe(`analyze "${schema}".licenses`);
    const licenses: { key: string; password: string }[] = [];
    for (let i = 0; i < LICENSES; i++) {
      const password = `flood-customer-${i}`;
      const created = await api(base, 'POST', '/admin/v1/licenses', {
        organizationName: `Flood ${i}`, password, totalQuota: 1e12, expiryDate: '2099-01-01T00:00:00Z',
      }, ADMIN_TOKEN);
      licenses.push({ key: created.data.licenseKey, password });
    }
    for (const l of licenses) await api(base, 'POST', '/api/v1/auth/get-token', { licenseKey: l.key, password: l.password, imzaTipi: 0 });
    return licenses;
  };

  const pgPort = Number(new URL(DATABASE_URL).port || 5432);
  const snapshot = async (service: Pinned): Promise<Snapshot> => {
    const ports = connectionPorts(service.pid, pgPort);
    const backends = ports.length === 0 ? [] : await setup.unsafe(
      'select pid from pg_stat_activity where client_port = any($1::int[])', [ports]);
    const postgres = new Map<number, number>();
    for (const b of backends) {
      try {
        postgres.set(Number(b.pid), cpuMicros(Number(b.pid)));
      } catch {
        // gone meanwhile
      }
    }
    return {
      at: performance.now(), service: cpuMicros(service.pid), hasher: childrenCpu(service.pid), redis: cpuMicros(redis.pid),
      postgres, driver: selfAndChildrenCpu(), machine: machineBusy(),
    };
  };
  const counters = async (schema: string): Promise<Counters> => {
    const [scans] = await setup.unsafe(
      `select idx_scan as n from pg_stat_user_indexes where schemaname = $1 and indexrelname = 'licenses_license_key_key'`, [schema]);
    const stats = await redisClient.info('commandstats');
    const memory = await redisClient.info('memory');
    return {
      pgLookups: Number(scans?.n ?? 0),
      markers: Number(/cmdstat_set:calls=(\d+)/.exec(stats)?.[1] ?? 0),
      keys: await redisClient.dbsize(),
      usedMemory: Number(/used_memory:(\d+)/.exec(memory)?.[1]),
    };
  };

  const phase = async (name: string, service: Pinned, schema: string, licenses: { key: string; password: string }[],
    forwarded: string | null): Promise<void> => {
    const base = `http://127.0.0.1:${service.port}`;
    const c0 = await counters(schema);
    const s0 = await snapshot(service);
    let sprayed: SprayResult | null = null;
    let served: CustomerResult;
    if (forwarded === null) {
      served = await customer(base, licenses, SECONDS * 1000);
    } else {
      const load = spray(base, forwarded, SECONDS + (2 * LEAD_MS) / 1000);
      await sleep(LEAD_MS);
      served = await customer(base, licenses, SECONDS * 1000);
      sprayed = await load;
    }
    const s1 = await snapshot(service);
    await sleep(PG_STATS_SETTLE_MS);
    const c1 = await counters(schema);
    const wallUs = (s1.at - s0.at) * 1000;
    const delta = (a: Map<number, number>, b: Map<number, number>) => [...b].reduce((sum, [pid, us]) => sum + us - (a.get(pid) ?? 0), 0);
    const hasher = delta(s0.hasher, s1.hasher);
    const postgres = delta(s0.postgres, s1.postgres);
    const ours = s1.service - s0.service + hasher + s1.redis - s0.redis + postgres + s1.driver - s0.driver;
    const row: Row = {
      phase: name, customer: served, spray: sprayed, wallSeconds: wallUs / 1e6,
      cpu: {
        service: (s1.service - s0.service) / wallUs, hasher: hasher / wallUs, redis: (s1.redis - s0.redis) / wallUs,
        postgres: postgres / wallUs, others: Math.max(0, s1.machine - s0.machine - ours) / wallUs,
      },
      pgLookups: c1.pgLookups - c0.pgLookups, markers: c1.markers - c0.markers, keys: c1.keys - c0.keys,
      memoryMiB: (c1.usedMemory - c0.usedMemory) / 1048576,
    };
    rows.push(row);
    const l = served.latencies;
    process.stderr.write(`  ${name}: customer n=${l.length} p50 ${percentile(l, 50).toFixed(1)} ms p99 ${percentile(l, 99).toFixed(1)} ms ` +
      `max ${(l[l.length - 1] ?? NaN).toFixed(1)} ms ${JSON.stringify(served.statuses)}` +
      (sprayed ? `; spray ${Math.round(sprayed.requests / sprayed.seconds)} req/s ${JSON.stringify(sprayed.statuses)} timeouts ${sprayed.timeouts}` : '') +
      `; cpu service ${(row.cpu.service * 100).toFixed(0)}% hasher ${(row.cpu.hasher * 100).toFixed(0)}% redis ${(row.cpu.redis * 100).toFixed(0)}%` +
      ` postgres ${(row.cpu.postgres * 100).toFixed(0)}% others ${(row.cpu.others * 100).toFixed(0)}%` +
      `; pg look-ups ${row.pgLookups}\n`);
  };

  process.stderr.write(`bench-flood: ${CONNECTIONS} spraying connections, ${CUSTOMERS} customer loop(s), ${SECONDS} s phases, ` +
    `service on cpu ${SERVER_CPU}, wrk + Redis + customer on cpu ${LOAD_CPU}\n`);
  const defended = await start('service', PORTS.defended, {});
  const licenses = await prepare(`http://127.0.0.1:${defended.port}`, 'flood');
  await phase('customer alone', defended, 'flood', licenses, null);
  await phase('(a) one address', defended, 'flood', licenses, ATTACKER);
  await phase('(b) botnet', defended, 'flood', licenses, 'random');
  await stopGracefully(defended);

  // the same code and schema, the configurable defences off: no per-address limit, no
  // negative cache, a queue that never sheds (unknown keys are still answered without hashing)
  const undefended = await start('service', PORTS.undefended,
    { RATE_GET_TOKEN_FAILURES_PER_MIN: '0', UNKNOWN_KEY_CACHE_SECONDS: '0', PASSWORD_QUEUE_MAX: '100000' });
  for (const l of licenses) await api(`http://127.0.0.1:${undefended.port}`, 'POST', '/api/v1/auth/get-token', { licenseKey: l.key, password: l.password, imzaTipi: 0 });
  await phase('(a) one address, defences off', undefended, 'flood', licenses, ATTACKER);
  await stopGracefully(undefended);

  if (COMPARE_SERVER !== undefined) {
    const other = await start('compare', PORTS.compare, {}, 'flood_cmp', 'floodcmp', path.resolve(COMPARE_SERVER));
    const otherLicenses = await prepare(`http://127.0.0.1:${other.port}`, 'flood_cmp');
    await phase(`customer alone, ${COMPARE_LABEL}`, other, 'flood_cmp', otherLicenses, null);
    await phase(`(a) one address, ${COMPARE_LABEL}`, other, 'flood_cmp', otherLicenses, ATTACKER);
    await stopGracefully(other);
  }

  printTable();
  await redisClient.quit();
  await setup.unsafe('drop schema if exists flood cascade');
  await setup.unsafe('drop schema if exists flood_cmp cascade');
  await setup.end();
  process.exit(0);
}

function printTable(): void {
  const ms = (v: number) => (Number.isNaN(v) ? '–' : v < 10 ? v.toFixed(1) : v.toFixed(0));
  const pct = (v: number) => `${(v * 100).toFixed(0)} %`;
  const statuses = (s: Record<string, number>, except: string) =>
    Object.entries(s).filter(([k]) => k !== except).map(([k, n]) => `${n}×${k}`).join(', ') || '0';
  const signed = (v: number, digits: number) => `${v >= 0 ? '+' : '−'}${Math.abs(v).toFixed(digits)}`;
  const out: string[] = [];
  out.push(`| phase | customer get-tokens | customer p50 ms | p99 ms | max ms | customer non-200 | spray req/s | spray 401 | spray 429 | spray 503 | spray other | spray p50 / p99 ms | server µs per spray request | server CPU | hasher CPU | Redis CPU | Postgres CPU | others' CPU | Postgres look-ups (÷ spray requests) | unknown-key markers | Redis keys, memory |`);
  out.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    const l = r.customer.latencies;
    const s = r.spray;
    const other = s ? Object.entries(s.statuses).filter(([k]) => !['401', '429', '503'].includes(k)).reduce((a, [, n]) => a + n, 0) + s.socketErrors : 0;
    out.push(`| ${r.phase} | ${l.length} | ${ms(percentile(l, 50))} | ${ms(percentile(l, 99))} | ${ms(l[l.length - 1] ?? NaN)} | ` +
      `${statuses(r.customer.statuses, '200')} | ` +
      (s ? `${Math.round(s.requests / s.seconds)} | ${s.statuses['401'] ?? 0} | ${s.statuses['429'] ?? 0} | ${s.statuses['503'] ?? 0} | ${other} | ` +
        `${ms(s.p50 / 1000)} / ${ms(s.p99 / 1000)} | ${Math.round((r.cpu.service * r.wallSeconds * 1e6) / s.requests)} | ` : '– | – | – | – | – | – | – | ') +
      `${pct(r.cpu.service)} | ${pct(r.cpu.hasher)} | ${pct(r.cpu.redis)} | ${pct(r.cpu.postgres)} | ${pct(r.cpu.others)} | ` +
      `${r.pgLookups}${s ? ` (${(r.pgLookups / s.requests).toFixed(3)})` : ''} | ${r.markers} | ${signed(r.keys, 0)}, ${signed(r.memoryMiB, 1)} MiB |`);
  }
  out.push('');
  for (const r of rows) {
    const s = r.spray;
    if (!s || r.phase.includes('off') || !(s.statuses['429'] ?? 0)) continue;
    out.push(`${r.phase}: ${s.statuses['401'] ?? 0} failures (401) before the limit of ` +
      `${FAILURE_LIMIT} a minute shut the address out (429); Postgres looked up ${r.pgLookups} keys.`);
  }
  out.push(`CPU: share of one core over the phase: the service process; its nice-19 password hasher; the private Redis; ` +
    `the Postgres backends of the service's connections; others': the rest of the machine's busy time, less wrk and ` +
    `this driver (processes not started here: on a shared machine, other people's work). ` +
    `Customer: ${CUSTOMERS} sequential loop(s) of get-token with the right password, ${SECONDS} s; ` +
    `spray: wrk, ${CONNECTIONS} connections, random unknown UUID keys, ${SECONDS + (2 * LEAD_MS) / 1000} s around it. ` +
    `"spray other" counts other statuses and socket errors (timeouts, resets).`);
  process.stdout.write(out.join('\n') + '\n');
}

main().catch((err: Error) => {
  process.stderr.write(`bench-flood failed: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
