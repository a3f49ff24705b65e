import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { connectPostgres } from '../../src/db/pg.js';
import { KeySpace } from '../../src/redis/keys.js';
import { cpuMicros, rssKiB } from './proc.js';
import { luaDir, runWrk, type WrkResult } from './wrk.js';
import { ADMIN_TOKEN, requiredEnv, serviceEnv, startCeiling, startRedis, startReplica, startService, stopAll, stopGracefully, type Pinned } from './services.js';
import { printTable, type Sample } from './table.js';
import { api, createLicenses } from './licenses.js';
import { findSustained, measureDeployed, measureKeyed, measureMetrics, measureReplicaWait, type DeployedMode, type DeployedSample, type SustainedProbe } from './deployed.js';
import { chartRows, deployedFigures, deployedReport } from './deployedReport.js';
import { chartSvg } from './chart.js';
import { usageLag } from '../../src/usage/lag.js';
import { measureWorkers, workersReport, type DeploymentSample, type DeploymentsRun, type WorkersSample } from './workers.js';
import { buildsReport, measureBuilds, measureBuildsCheckQuota, turnsReport } from './baseline.js';
import { LicensePool, VALIDATE_LIMIT } from './licensePool.js';
import { tokenMinter, usageDrainer } from './minting.js';
import type { RedisClient } from '../../src/redis/client.js';

// make bench: the service against its ceilings, interleaved in one run, same connections,
// same pinning. SERVER_CPU runs the HTTP servers, LOAD_CPU runs wrk and Redis beside it.
const SERVER_CPU = process.env.BENCH_SERVER_CPU ?? '0';
const LOAD_CPU = process.env.BENCH_LOAD_CPU ?? '1';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const CONNECTIONS = (process.env.BENCH_CONNECTIONS ?? '16,64,256').split(',').map(Number);
const LICENSES = 32;
// BENCH_ONLY=validate: ceiling (c) against the service's validate, then the runs as deployed and
// their A/Bs (BENCH_DEPLOYED=0: the first part alone, for trying a change);
// BENCH_ONLY=idempotency: validate as deployed with and without an Idempotency-Key, nothing else;
// BENCH_ONLY=metrics: validate as deployed with METRICS=1 and METRICS=0, nothing else;
// BENCH_ONLY=wait: validate as deployed with REDIS_WAIT_REPLICAS=0 and 1, a replica attached, nothing else;
// BENCH_ONLY=workers: validate as deployed with WORKERS=1 and WORKERS=2, nothing else;
// BENCH_ONLY=baseline: validate as deployed, this build and BENCH_BASELINE's, nothing else;
// BENCH_ONLY=others: sign-token and check-quota (this build and BENCH_BASELINE's, in turns), nothing else;
// BENCH_ONLY=check-quota: check-quota as deployed, this build and BENCH_BASELINE's, nothing else
const ONLY = process.env.BENCH_ONLY;
const ONLY_VALIDATE = ONLY === 'validate';
const ONLY_OTHERS = ONLY === 'others';
/** an A/B alone: none of the other scenarios */
const ONLY_AB = ONLY === 'idempotency' || ONLY === 'metrics' || ONLY === 'wait' || ONLY === 'workers' || ONLY === 'baseline' || ONLY === 'check-quota' || ONLY_OTHERS;
/** whether the A/B of that name runs: BENCH_ONLY unset, validate (the deployed runs follow it) or its name */
const abRuns = (name: string) => !ONLY_AB || ONLY === name;
// the WORKERS=N comparison: the counts, and the cores the server processes may use
const WORKER_COUNTS = (process.env.BENCH_WORKER_COUNTS ?? '1,2').split(',').map(Number);
const WORKERS_CPUS = process.env.BENCH_WORKERS_CPUS ?? `${SERVER_CPU},${LOAD_CPU}`;
// pairs of runs (without and with an Idempotency-Key, one deployment) in the key's A/B
// 7 pairs: single pairs swing by ±15 % when the machine is noisy (2026-11-25), the median of 7 far less
const KEY_PAIRS = Number(process.env.BENCH_KEY_PAIRS ?? 7);
// pairs of runs (METRICS=0 and METRICS=1, two deployments) in the metrics A/B
const METRICS_PAIRS = Number(process.env.BENCH_METRICS_PAIRS ?? 7);
// BENCH_PROFILE=<dir>: the measured service writes a CPU profile there; a second, unprofiled
// instance on the same Redis and Postgres does the setup and mints the tokens
const PROFILE_DIR = process.env.BENCH_PROFILE;
const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const REDIS_PORT = 6391;
/** a replica of it, attached for the replica wait A/B only */
const REPLICA_PORT = 6392;
const PORTS = { service: 9100, a: 9101, b: 9102, c: 9103, minter: 9104, baseline: 9105, deployed: 9106, metricsOff: 9107, workers: 9108, pool: 9109, builds: 9110 };
// BENCH_DEPLOYED=0: skip the runs as deployed (usage worker running: bench/load/deployed.ts);
// BENCH_SUSTAINED=0 skips only the open-loop search for the sustained rate
const DEPLOYED = process.env.BENCH_DEPLOYED !== '0';
const SUSTAINED = DEPLOYED && process.env.BENCH_SUSTAINED !== '0';
// where the chart of req/s and p99 per scenario and mode goes
const CHART = process.env.BENCH_CHART ?? path.resolve(luaDir, '..', 'chart.svg');
// BENCH_BASELINE=<another checkout's dist folder>: that build of the service is measured in the
// same rounds as "service before", to compare a change before and after in one run; and
// validate as deployed of both builds, at their defaults (bench/load/baseline.ts): BUILD_PAIRS
// pairs, the tokens from BUILD_LICENSES licenses (each validates at most 100 times a minute)
const BASELINE = process.env.BENCH_BASELINE;
const BUILD_PAIRS = Number(process.env.BENCH_BASELINE_PAIRS ?? 5);
const BUILD_LICENSES = Number(process.env.BENCH_BASELINE_LICENSES ?? 4000);
if ((ONLY === 'baseline' || ONLY === 'check-quota') && BASELINE === undefined) {
  process.stderr.write(`bench: BENCH_ONLY=${ONLY} needs BENCH_BASELINE=<the build before's dist folder>\n`);
  process.exit(1);
}

const work = mkdtempSync(path.join(tmpdir(), 'bench-'));
const samples: Sample[] = [];

async function measure(name: string, connections: number, target: Pinned, redis: Pinned, script: string,
  args: string[], path_: string): Promise<WrkResult & Sample> {
  const cpu0 = cpuMicros(target.pid);
  const rcpu0 = cpuMicros(redis.pid);
  const rss0 = rssKiB(target.pid);
  const r = await runWrk({ cpu: LOAD_CPU, url: `http://127.0.0.1:${target.port}${path_}`, script, connections, seconds: SECONDS, args });
  const sample: Sample = {
    name, connections, rps: r.rps, p50: r.p50, p99: r.p99, p999: r.p999,
    serverUs: (cpuMicros(target.pid) - cpu0) / r.requests, redisUs: (cpuMicros(redis.pid) - rcpu0) / r.requests,
    non200: r.statusErrors + r.socketErrors, rssBefore: rss0, rssAfter: rssKiB(target.pid), requests: r.requests,
  };
  samples.push(sample);
  process.stderr.write(`  ${name.padEnd(22)} c=${connections} ${Math.round(r.rps)} req/s p99 ${(r.p99 / 1000).toFixed(2)} ms ` +
    `server ${sample.serverUs.toFixed(1)} us redis ${sample.redisUs.toFixed(1)} us non-200 ${sample.non200}\n`);
  return { ...r, ...sample };
}

async function main(): Promise<void> {
  const redis = await startRedis(LOAD_CPU, REDIS_PORT);
  const env = serviceEnv(REDIS_PORT, DATABASE_URL, PORTS.service);
  const sqlSetup = await connectPostgres(DATABASE_URL, 'public', 1);
  await sqlSetup.unsafe('drop schema if exists bench cascade');
  await sqlSetup.end();
  const service = await startService(SERVER_CPU, env, PORTS.service, PROFILE_DIR);
  const minter = PROFILE_DIR === undefined ? service : await startService(LOAD_CPU, { ...env, PORT: String(PORTS.minter) }, PORTS.minter);
  const ceilings = {
    a: await startCeiling('a', SERVER_CPU, env, PORTS.a),
    b: await startCeiling('b', SERVER_CPU, env, PORTS.b),
    c: await startCeiling('c', SERVER_CPU, env, PORTS.c),
  };
  const baseline = BASELINE === undefined ? null : await startService(SERVER_CPU, { ...env, PORT: String(PORTS.baseline) }, PORTS.baseline, undefined, BASELINE);
  const all = [redis, service, minter, ceilings.a, ceilings.b, ceilings.c, ...(baseline ? [baseline] : [])];
  process.on('exit', () => stopAll(all));

  const { drain, end: endDrainer } = await usageDrainer(env, DATABASE_URL);

  const base = `http://127.0.0.1:${minter.port}`;
  process.stderr.write(`bench: ${LICENSES} licenses, ${SECONDS}s runs x${RUNS}, connections ${CONNECTIONS.join('/')}, ` +
    `servers on cpu ${SERVER_CPU}, wrk + Redis on cpu ${LOAD_CPU}\n`);
  const licenses = await createLicenses(base, LICENSES);
  const accessFile = path.join(work, 'access.txt');
  writeFileSync(accessFile, licenses.map((l) => l.access).join('\n') + '\n');
  /** Fresh access tokens: they last 15 minutes, less than a run with a baseline takes. */
  const refreshAccess = async () => {
    for (const l of licenses) {
      l.access = (await api('POST', `${base}/api/v1/auth/get-token`, { licenseKey: l.key, password: l.password, imzaTipi: 0 })).accessToken;
    }
    writeFileSync(accessFile, licenses.map((l) => l.access).join('\n') + '\n');
  };
  const keyFile = path.join(work, 'keys.txt');
  writeFileSync(keyFile, licenses.map((l) => l.key).join('\n') + '\n');
  const credFile = path.join(work, 'credentials.txt');
  writeFileSync(credFile, licenses.map((l) => `${l.key} ${l.password}`).join('\n') + '\n');

  const usedTotal = async () => {
    let sum = 0;
    for (const l of licenses) sum += (await api('GET', `${base}/admin/v1/licenses/${l.key}`, undefined, ADMIN_TOKEN)).data.usedQuota;
    return sum;
  };
  const redisClient = new Redis(REDIS_PORT);
  const mint = tokenMinter({ work, loadCpu: LOAD_CPU, seconds: SECONDS, base, accessFile });
  /** As mint, their issuance events then drained. */
  const mintDrained = async (atLeast = 0, access = accessFile, from = base) => {
    const file = await mint(atLeast, access, from);
    await drain();
    return file;
  };
  const books: string[] = [];
  // wrk abandons the requests in flight when its time is up: the server may still redeem
  // them, unseen. So the books balance when 200s <= increment <= 200s + connections.
  const checkBooks = async (name: string, before: number, r: WrkResult, connections: number) => {
    const after = await usedTotal();
    const ok200 = r.requests - r.statusErrors - r.socketErrors;
    const spent = after - before;
    const ok = spent >= ok200 && spent <= ok200 + connections;
    books.push(`${name}: 200s seen ${ok200}, usedQuota +${spent} (abandoned in flight: ${spent - ok200}) ${ok ? 'balanced' : 'MISMATCH'}`);
  };

  const redeeming = async (name: string, connections: number, target: Pinned, tokens: string) => {
    const before = await usedTotal();
    const r = await measure(name, connections, target, redis, 'redeem.lua', [tokens, '1'], '/api/license/validate');
    await checkBooks(`${name} c=${connections}`, before, r, connections);
    const minted = readFileSync(tokens, 'utf8').split('\n').filter(Boolean).length;
    // redeem.lua repeats its last token when the file runs out: the repeats are refused
    if (r.requests > minted) books.push(`${name} c=${connections}: RAN OUT OF TOKENS (${minted} minted, ${r.requests} requests)`);
    await drain();
  };

  // validate: ceilings and service interleaved, each round with fresh tokens for the
  // redeemers, minted up front; ceiling (c) and the service take turns going first
  for (const connections of ONLY_AB ? [] : CONNECTIONS) {
    if (connections !== CONNECTIONS[0]) await refreshAccess();
    for (let run = 0; run < RUNS; run++) {
      const forCeiling = await mint();
      const forService = await mint();
      const forBaseline = baseline ? await mint() : '';
      await drain();
      if (!ONLY_VALIDATE) {
        await measure('ceiling (a) uws+json', connections, ceilings.a, redis, 'redeem.lua', [forCeiling, '1'], '/api/license/validate');
        await measure('ceiling (b) +jwt', connections, ceilings.b, redis, 'redeem.lua', [forCeiling, '1'], '/api/license/validate');
      }
      const turns: [string, Pinned, string][] = [['ceiling (c) +evalsha', ceilings.c, forCeiling], ['service validate', service, forService]];
      if (baseline) turns.push(['service before', baseline, forBaseline]);
      for (let i = 0; i < run % turns.length; i++) turns.push(turns.shift() as [string, Pinned, string]);
      for (const [name, target, tokens] of turns) await redeeming(name, connections, target, tokens);
    }
  }

  // validate as deployed: the usage worker writing to Postgres while the load runs
  const deployed: DeployedSample[] = [];
  const keyed: DeployedSample[] = [];
  const metered: DeployedSample[] = [];
  const waited: DeployedSample[] = [];
  const workerSamples: WorkersSample[] = [];
  const buildSamples: DeploymentSample[] = [];
  const quotaBuildSamples: DeploymentSample[] = [];
  let buildLicenses = 0;
  const probes: SustainedProbe[] = [];
  if (DEPLOYED) {
    await refreshAccess();
    const benchKeys = new KeySpace('bench');
    const lag = () => usageLag(redisClient as unknown as RedisClient, benchKeys);
    const common = { connections: 64, serverCpu: SERVER_CPU, loadCpu: LOAD_CPU, env, port: PORTS.deployed, lag };
    for (let run = 0; run < (ONLY_AB ? 0 : RUNS); run++) {
      const modes: DeployedMode[] = run % 2 === 0 ? ['worker inside', 'worker apart'] : ['worker apart', 'worker inside'];
      for (const mode of modes) {
        const [tokens, warmupTokens] = [await mint(), await mint()];
        await drain();
        const sample = await measureDeployed({ ...common, mode, seconds: SECONDS, redis, tokens, warmupTokens });
        deployed.push(sample);
        process.stderr.write(`  as deployed, ${mode} c=64 ${Math.round(sample.rps)} req/s server ${sample.serverUs.toFixed(1)} us redis ` +
          `${sample.redisUs.toFixed(1)} us wrk ${sample.wrkUs.toFixed(1)} us backlog ${sample.backlog} drained in ${sample.drainMs} ms\n`);
        await drain();
      }
    }
    const freshTokens = () => mintDrained();
    // validate with and without an Idempotency-Key, in pairs on one deployment
    if (abRuns('idempotency')) {
      await refreshAccess();
      keyed.push(...await measureKeyed({ ...common, seconds: SECONDS, redis, warmupTokens: await mint(), pairs: KEY_PAIRS, mint: freshTokens }));
    }
    // validate with metrics on and off, in pairs on two deployments
    if (abRuns('metrics')) {
      await refreshAccess();
      metered.push(...await measureMetrics({
        ...common, ports: [PORTS.deployed, PORTS.metricsOff], seconds: SECONDS, redis, warmupTokens: await mint(), pairs: METRICS_PAIRS, mint: freshTokens,
      }));
    }
    // validate waiting for a replica and not, in pairs on two deployments, a replica of the bench's Redis attached for both
    if (abRuns('wait')) {
      await refreshAccess();
      const replica = await startReplica(LOAD_CPU, REPLICA_PORT, REDIS_PORT);
      try {
        waited.push(...await measureReplicaWait({
          ...common, ports: [PORTS.deployed, PORTS.metricsOff], seconds: SECONDS, redis, warmupTokens: await mint(), pairs: METRICS_PAIRS, mint: freshTokens,
        }));
      } finally {
        await stopGracefully(replica);
      }
    }
    // validate as deployed, each round on fresh deployments: WORKERS=1 and WORKERS=2, then the two builds
    const deployments: Omit<DeploymentsRun, 'rounds' | 'port' | 'mint'> = {
      seconds: SECONDS, connections: 64, serverCpus: WORKERS_CPUS, loadCpu: LOAD_CPU, redis,
      drained: async () => {
        while ((await lag()) > 0) await new Promise((resolve) => setTimeout(resolve, 20));
      },
    };
    if (abRuns('workers')) {
      await refreshAccess();
      workerSamples.push(...await measureWorkers({ ...deployments, counts: WORKER_COUNTS, rounds: RUNS, env, port: PORTS.workers, mint: (n) => mintDrained(n) }));
    }
    if (BASELINE !== undefined && abRuns('baseline')) {
      // licenses of their own, made (passwords hashed) on a service that may use every core
      const poolService = await startService(WORKERS_CPUS, { ...env, PORT: String(PORTS.pool) }, PORTS.pool);
      all.push(poolService);
      const poolBase = `http://127.0.0.1:${PORTS.pool}`;
      const pool = await LicensePool.create(poolBase, BUILD_LICENSES, (access, n) => mintDrained(n, access, poolBase), work);
      await drain();
      buildSamples.push(...await measureBuilds({
        ...deployments, rounds: BUILD_PAIRS, port: PORTS.builds, mint: (n) => pool.tokens(n), ended: () => pool.ended(),
      }, BASELINE, requiredEnv(REDIS_PORT, DATABASE_URL, PORTS.builds)));
      buildLicenses = pool.size;
      await stopGracefully(poolService);
    }
    if (BASELINE !== undefined && abRuns('check-quota')) {
      await drain(); // the logins' events: each deployment starts on empty streams
      quotaBuildSamples.push(...await measureBuildsCheckQuota({ ...deployments, rounds: BUILD_PAIRS, port: PORTS.builds }, keyFile, BASELINE,
        requiredEnv(REDIS_PORT, DATABASE_URL, PORTS.builds)));
    }
    const ceiling64 = samples.filter((s) => s.name === 'ceiling (c) +evalsha' && s.connections === 64).map((s) => s.rps).sort((a, b) => a - b);
    const baseRps = ceiling64[Math.floor(ceiling64.length / 2)];
    if (SUSTAINED && !ONLY_AB && baseRps !== undefined) {
      const probeSeconds = 2 * SECONDS;
      for (const mode of ['worker inside', 'worker apart'] as DeployedMode[]) {
        await refreshAccess();
        const warmupTokens = await mint();
        await drain();
        probes.push(...await findSustained({
          ...common, mode, seconds: probeSeconds, baseRps, warmupTokens,
          mint: async () => {
            const file = await mint(Math.ceil(2 * baseRps * probeSeconds));
            await drain();
            return file;
          },
        }));
      }
    }
  }
  const figures = deployedFigures(samples, deployed, probes, 64, keyed, metered, waited);
  const deployedReportText = (deployed.length + keyed.length + metered.length + waited.length > 0 ? `\nValidate as deployed (bench/load/deployed.ts):\n\n${deployedReport(figures, 64)}` : '') +
    (workerSamples.length > 0 ? `\n${workersReport(workerSamples, { connections: 64, serverCpus: WORKERS_CPUS, loadCpu: LOAD_CPU })}` : '') +
    (buildSamples.length > 0 ? `\n${buildsReport(buildSamples, {
      connections: 64, serverCpus: WORKERS_CPUS, loadCpu: LOAD_CPU, seconds: SECONDS, baselineRoot: BASELINE ?? '', licenses: buildLicenses, validateLimit: VALIDATE_LIMIT,
    })}` : '') +
    (quotaBuildSamples.length > 0 ? `\n${buildsReport(quotaBuildSamples, {
      connections: 64, serverCpus: WORKERS_CPUS, loadCpu: LOAD_CPU, seconds: SECONDS, baselineRoot: BASELINE ?? '', licenses: LICENSES, validateLimit: null,
    })}` : '');
  /** The chart of every scenario measured, written when the tables are printed. */
  const writeChart = () => {
    writeFileSync(CHART, chartSvg(`make bench, ${new Date().toISOString().slice(0, 10)}: ${SECONDS} s runs, medians of ${RUNS}`, chartRows(samples, figures)));
    process.stderr.write(`bench: chart written to ${CHART}\n`);
  };

  /** sign-token and check-quota at 64 connections, this build and the baseline in turns */
  let othersReportText = '';
  const measureOthers = async () => {
    await refreshAccess();
    for (let run = 0; run < RUNS; run++) {
      // with a baseline, the two builds take turns going first
      const builds: [string, Pinned][] = [['service', service], ...(baseline ? [['before:', baseline] as [string, Pinned]] : [])];
      if (run % 2 === 1) builds.reverse();
      for (const [name, target] of builds) {
        await measure(`${name} sign-token`, 64, target, redis, 'signtoken.lua', [accessFile], '/api/v1/auth/sign-token');
        await drain();
      }
      // check-quota's target is a ratio to ceiling (a): measured again beside it, in turns
      await measure('ceiling (a) beside check-quota', 64, ceilings.a, redis, 'redeem.lua', [accessFile, '1'], '/api/license/validate');
      for (const [name, target] of builds) await measure(`${name} check-quota`, 64, target, redis, 'checkquota.lua', [keyFile], '/');
    }
    if (baseline) othersReportText = turnsReport(samples, 'sign-token') + turnsReport(samples, 'check-quota');
  };

  if (ONLY_OTHERS) await measureOthers();
  if (ONLY_VALIDATE || ONLY_AB) {
    // a part of the run: bench/chart.svg stays the whole run's, unless BENCH_CHART names a file
    if (process.env.BENCH_CHART) writeChart();
    printTable(samples, { books, memory: '' });
    process.stdout.write(deployedReportText + othersReportText);
    await stopGracefully(service);
    stopAll(all);
    process.exit(0);
  }

  // the other endpoints, at 64 connections
  await measureOthers();
  await measure('service get-token', 16, service, redis, 'gettoken.lua', [credFile], '/api/v1/auth/get-token');

  // validate while get-token hashes passwords beside it
  const underLoad = await mint();
  await drain();
  const [loaded] = await Promise.all([
    measure('validate + get-token', 64, service, redis, 'redeem.lua', [underLoad, '1'], '/api/license/validate'),
    runWrk({ cpu: LOAD_CPU, url: `${base}/api/v1/auth/get-token`, script: 'gettoken.lua', connections: 8, seconds: SECONDS, args: [credFile] }),
  ]);
  void loaded;
  await drain();

  // Redis memory per outstanding token: the markers of earlier runs are deleted first, so
  // none of them expires in the middle of the measurement
  for (const key of await redisClient.keys('bench:*:t:*')) await redisClient.del(key);
  const memBefore = Number(/used_memory:(\d+)/.exec(await redisClient.info('memory'))?.[1]);
  const fresh = await mint();
  await drain();
  const outstanding = readFileSync(fresh, 'utf8').split('\n').filter(Boolean).length;
  const memAfter = Number(/used_memory:(\d+)/.exec(await redisClient.info('memory'))?.[1]);
  const markerHashes = (await redisClient.keys('bench:*:t:*')).length;

  writeChart();
  printTable(samples, {
    books,
    memory: `Redis memory per outstanding token: ${((memAfter - memBefore) / outstanding).toFixed(0)} bytes ` +
      `(used_memory delta over ${outstanding} fresh tokens, held in ${markerHashes} marker hashes)`,
  });
  process.stdout.write(deployedReportText + othersReportText);
  await Promise.all([redisClient.quit(), endDrainer()]);
  rmSync(work, { recursive: true, force: true });
  stopAll(all);
  process.exit(0);
}

main().catch((err: Error) => {
  process.stderr.write(`bench failed: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
