import { readFileSync } from 'node:fs';
import { connectPostgres } from '../../src/db/pg.js';
import { startAsDeployed } from './asDeployed.js';
import { api, createLicenses, type BenchLicense } from './licenses.js';
import { cpuMicros, postgresCpu, treeMicros } from './proc.js';
import { runWrk, type WrkResult } from './wrk.js';

// make bench-flood, after flood.js (FLOOD_ONLY=public: this alone): validate's latency for
// other customers, quiet and under four floods of public GETs, from many connections:
//   healthz     - GET /healthz;
//   history     - GET /api/License/history/{key}?limit=500 by ONE license holder with its
//                 own valid access token, its license holding a few thousand redemptions
//                 in Postgres, so every page is full (500 rows);
//   check-quota - GET /api/License/check-quota/{a random UUID}: keys no license has;
//   jwks        - GET /.well-known/jwks.json, the service's set of one signing key (the
//                 cacheable answer; an empty set would be the no-cache one), from
//                 FLOOD_JWKS_CONNECTIONS (200, the flood first measured) connections.
// The service runs as deployed at its defaults (npm start, every limit on, the usage worker
// inside): whatever it answers the flood with is counted by status, not assumed. The
// customers' validate is a paced loop (paced.lua: open loop at FLOOD_VALIDATE_RATE a second,
// fresh sign tokens); validate allows 100 a minute per company, so the loop's tokens come
// from licenses of the pool (bench/load/licensePool.ts), at most 100 each: other companies
// than the flooding one. Each flood's run follows a quiet run of its own, so the drift of a
// shared machine shows in both. The target: validate's p99 under a flood within 2× quiet.
// Pinning (2 cores): the service on BENCH_SERVER_CPU (0); Redis, the flood's wrk and the
// loop's wrk on BENCH_LOAD_CPU (1), as in flood.js: the flood's client takes CPU from Redis
// too, which an attacker on other machines would not.
const SERVER_CPU = process.env.BENCH_SERVER_CPU ?? '0';
const LOAD_CPU = process.env.BENCH_LOAD_CPU ?? '1';
const SECONDS = Number(process.env.FLOOD_SECONDS ?? 15);
const CONNECTIONS = Number(process.env.FLOOD_CONNECTIONS ?? 300);
const JWKS_CONNECTIONS = Number(process.env.FLOOD_JWKS_CONNECTIONS ?? 200);
const RATE = Number(process.env.FLOOD_VALIDATE_RATE ?? 200);
/**
 * The loop's connections bound its requests in flight: a second's worth, so it keeps its
 * pace while answers take up to a second (wrk times a request from when it is sent: a loop
 * short of connections would send late, and hide that wait from its percentiles).
 */
const LOOP_CONNECTIONS = RATE;
const HISTORY_REDEMPTIONS = Number(process.env.FLOOD_HISTORY_REDEMPTIONS ?? 3000);
const FLOODS = (process.env.FLOOD_PUBLIC ?? 'healthz,history,check-quota,jwks').split(',') as Flood[];
const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const NAMESPACE = 'pubflood';
const REDIS_PORT = 6395;
const PORTS = { service: 9130, helper: 9131 };
/** the flood starts this long before the loop and stops this long after it */
const LEAD_MS = 1000;
/** validate's p99 under a flood ÷ quiet, at most */
const TARGET = 2;
/** redemptions made at once for the history holder */
const IN_FLIGHT = 16;

type Flood = 'healthz' | 'history' | 'check-quota' | 'jwks';
const LABELS: Record<Flood, string> = {
  healthz: 'GET /healthz', history: 'GET history?limit=500, one holder', 'check-quota': 'GET check-quota/{random UUID}',
  jwks: `GET /.well-known/jwks.json, ${JWKS_CONNECTIONS} connections`,
};
const connectionsOf = (flood: Flood): number => (flood === 'jwks' ? JWKS_CONNECTIONS : CONNECTIONS);

interface Phase {
  flood: Flood;
  underFlood: boolean;
  loop: WrkResult;
  /** loop requests beyond its tokens (refused as used) */
  short: number;
  floodRun: WrkResult | null;
  /** shares of one core over the phase */
  cpu: { service: number; redis: number; postgres: number };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A license with `count` redemptions, made through the helper service (its limits lifted). */
async function historyHolder(helperBase: string, count: number): Promise<BenchLicense> {
  const [holder] = await createLicenses(helperBase, 1);
  if (holder === undefined) throw new Error('no license for the history holder');
  let left = count;
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    while (left-- > 0) {
      const { signToken } = await api('POST', `${helperBase}/api/v1/auth/sign-token`, { imzaTipi: 0 }, holder.access);
      await api('POST', `${helperBase}/api/license/validate`, { token: signToken });
    }
  }));
  return holder;
}

/**
 * The set the jwks flood asks for, checked to be the real case: keys in it, cacheable. An
 * empty set (a service without signing keys) is a smaller, no-cache answer, not worth a row.
 */
async function publishedKeys(base: string): Promise<string> {
  const res = await fetch(`${base}/.well-known/jwks.json`);
  const body = await res.text();
  const { keys } = JSON.parse(body) as { keys: unknown[] };
  if (res.status !== 200 || keys.length === 0) throw new Error(`the JWKS is ${res.status} ${body}: the service has no signing keys`);
  return `${keys.length} key(s), ${body.length} bytes, Cache-Control ${res.headers.get('cache-control')}`;
}

async function main(): Promise<void> {
  for (const f of FLOODS) if (!(f in LABELS)) throw new Error(`FLOOD_PUBLIC: unknown flood ${f} (${Object.keys(LABELS).join(', ')})`);
  const loopTokens = RATE * (SECONDS + 1);
  const deployed = await startAsDeployed({
    namespace: NAMESPACE, redisPort: REDIS_PORT, servicePort: PORTS.service, helperPort: PORTS.helper,
    serverCpu: SERVER_CPU, loadCpu: LOAD_CPU, helperCpu: `${SERVER_CPU},${LOAD_CPU}`, databaseUrl: DATABASE_URL,
    // two phases per flood, a license serving again a minute after its phase
    licenses: Number(process.env.FLOOD_VALIDATE_LICENSES ?? Math.ceil(loopTokens / 100) * Math.min(2 * FLOODS.length, 4)),
    mintSeconds: 2,
  });
  const { service, redis, pool, drained } = deployed;
  const base = `http://127.0.0.1:${service.port}`;
  const helperBase = `http://127.0.0.1:${deployed.helper.port}`;
  process.stderr.write(`bench-flood (public GETs): service as deployed on cpu ${SERVER_CPU}; Redis, the flood's wrk (${CONNECTIONS} ` +
    `connections; jwks ${JWKS_CONNECTIONS}) and the validate loop (${RATE}/s) on cpu ${LOAD_CPU}; ${SECONDS} s phases\n`);

  let holder: BenchLicense | null = null;
  if (FLOODS.includes('history')) {
    holder = await historyHolder(helperBase, HISTORY_REDEMPTIONS);
    await drained();
    const sql = await connectPostgres(DATABASE_URL, NAMESPACE, 1);
    const [row] = await sql`select count(*)::int as n from token_redemptions where firma_id = ${holder.firmaId}`;
    await sql.end();
    const page = await api('GET', `${helperBase}/api/License/history/${holder.key}?limit=500`, undefined, holder.access);
    process.stderr.write(`  history holder: ${row?.n} redemptions in Postgres, a page of ${page.data.items.length}\n`);
  }

  if (FLOODS.includes('jwks')) process.stderr.write(`  jwks: ${await publishedKeys(base)}\n`);

  const phases: Phase[] = [];
  const phase = async (flood: Flood, underFlood: boolean) => {
    const tokens = await pool.tokens(loopTokens);
    const floodArgs = flood === 'history' && holder !== null
      // a fresh access token (they last 15 minutes), as a client would fetch
      ? ['history', holder.key, (await api('POST', `${helperBase}/api/v1/auth/get-token`,
        { licenseKey: holder.key, password: holder.password, imzaTipi: 0 })).accessToken as string]
      : [flood];
    await drained();
    const before = { at: performance.now(), service: treeMicros(service.pid), redis: cpuMicros(redis.pid), postgres: postgresCpu() };
    const floodRun = underFlood ? runWrk({ cpu: LOAD_CPU, url: base, script: 'publicflood.lua', connections: connectionsOf(flood),
      seconds: SECONDS + (2 * LEAD_MS) / 1000, args: floodArgs }) : null;
    if (underFlood) await sleep(LEAD_MS);
    const loop = await runWrk({ cpu: LOAD_CPU, url: `${base}/api/license/validate`, script: 'paced.lua',
      connections: LOOP_CONNECTIONS, seconds: SECONDS, args: [tokens, '1', String(RATE)] });
    const flooded = floodRun === null ? null : await floodRun;
    const wallUs = (performance.now() - before.at) * 1000;
    const cpu = {
      service: (treeMicros(service.pid) - before.service) / wallUs, redis: (cpuMicros(redis.pid) - before.redis) / wallUs,
      postgres: (postgresCpu() - before.postgres) / wallUs,
    };
    await drained();
    pool.ended();
    const minted = readFileSync(tokens, 'utf8').split('\n').filter(Boolean).length;
    const p: Phase = { flood, underFlood, loop, short: Math.max(0, loop.requests - minted), floodRun: flooded, cpu };
    phases.push(p);
    process.stderr.write(`  ${underFlood ? LABELS[flood] : `quiet (before ${flood})`}: validate ${Math.round(loop.rps)}/s ` +
      `p50 ${(loop.p50 / 1000).toFixed(2)} ms p99 ${(loop.p99 / 1000).toFixed(2)} ms non-200 ${loop.statusErrors + loop.socketErrors}` +
      (flooded ? `; flood ${Math.round(flooded.rps)} req/s ${JSON.stringify(flooded.statuses)} socket errors ${flooded.socketErrors}` : '') + '\n');
  };
  for (const flood of FLOODS) {
    await phase(flood, false);
    await phase(flood, true);
  }
  process.stdout.write(report(phases));
  await deployed.stop();
  process.exit(0);
}

function report(phases: Phase[]): string {
  const ms = (us: number) => (us / 1000).toFixed(2);
  const pct = (v: number) => `${(v * 100).toFixed(0)} %`;
  const out = [
    `Validate for other customers under floods of public GETs (bench/load/publicFloods.ts): the service as deployed ` +
    `(npm start's defaults under taskset -c ${SERVER_CPU}: every limit on, the usage worker inside); validate paced at ${RATE}/s ` +
    `(${LOOP_CONNECTIONS} connections, fresh sign tokens, at most 100 per license) for ${SECONDS} s; each flood: wrk, ${CONNECTIONS} ` +
    `connections (jwks: ${JWKS_CONNECTIONS}), closed loop, ${SECONDS + (2 * LEAD_MS) / 1000} s around the loop; Redis and both wrk on cpu ${LOAD_CPU}. ` +
    'CPU: share of one core over the phase (Postgres: every postgres process of the machine).',
    '',
    '| flood | phase | validate req/s | validate p50 ms | validate p99 ms | validate non-200 | p99 ÷ quiet (target ≤ 2×) | ' +
    'flood req/s | flood replies by status | flood socket errors | flood p50 / p99 ms | service CPU | Redis CPU | Postgres CPU |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const p of phases) {
    const quiet = phases.find((q) => q.flood === p.flood && !q.underFlood);
    const ratio = quiet && p.underFlood ? p.loop.p99 / quiet.loop.p99 : NaN;
    const verdict = Number.isNaN(ratio) ? '–' : `${ratio.toFixed(2)}× (${ratio <= TARGET ? 'met' : 'missed'})`;
    const f = p.floodRun;
    const statuses = f?.statuses ? Object.entries(f.statuses).sort().map(([s, n]) => `${n}×${s}`).join(', ') : '–';
    out.push(`| ${LABELS[p.flood]} | ${p.underFlood ? 'under the flood' : 'quiet'} | ${Math.round(p.loop.rps)} | ${ms(p.loop.p50)} | ` +
      `${ms(p.loop.p99)} | ${p.loop.statusErrors + p.loop.socketErrors}${p.short ? ` (ran out of tokens by ${p.short})` : ''} | ${verdict} | ` +
      `${f ? Math.round(f.rps) : '–'} | ${statuses} | ${f ? f.socketErrors : '–'} | ${f ? `${ms(f.p50)} / ${ms(f.p99)}` : '–'} | ` +
      `${pct(p.cpu.service)} | ${pct(p.cpu.redis)} | ${pct(p.cpu.postgres)} |`);
  }
  return out.join('\n') + '\n';
}

main().catch((err: Error) => {
  process.stderr.write(`bench-flood (public GETs) failed: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
