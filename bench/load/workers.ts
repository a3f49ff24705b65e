import { Redis } from 'ioredis';
import { readFileSync } from 'node:fs';
import { cpuMicros, postgresCpu, treeMicros } from './proc.js';
import { walPosition } from './wal.js';
import { startPinned, stopGracefully, type Pinned } from './services.js';
import { median } from './table.js';
import { runWrk, type WrkResult } from './wrk.js';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// Validate (or check-quota) as deployed (usage worker inside child 0), one deployment started for each run,
// in rounds whose order turns: BENCH_ONLY=workers compares WORKERS=1 and WORKERS=2 of this
// build, BENCH_ONLY=baseline this build and the build before (bench/load/baseline.ts), and
// BENCH_ONLY=check-quota the two builds' check-quota. The
// server processes may run on every core of the bench (all variants alike: the kernel
// places them), wrk and Redis pinned to the load core as ever. On a 2-core machine a second
// process competes with wrk and Redis for the load core.
export const buildRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const WARMUP_SECONDS = 2;
/** Ready: the primary's word when several processes serve, the process's own when it serves alone (no "child" in its line). */
export const READY = /"msg":"listening: all children"|^(?![^\n]*"child":)[^\n]*"msg":"listening"/m;

/** One way of deploying: a build (its src/cli/server.js is what `npm start` runs) and the whole environment it gets. */
export interface Variant {
  label: string;
  root: string;
  env: Record<string, string | undefined>;
}

export interface DeploymentSample {
  label: string;
  /** the round (a pair, with two variants) it was measured in */
  round: number;
  rps: number;
  p50: number;
  p99: number;
  p999: number;
  /** CPU per request (a redemption, or a check-quota), µs: every server process (the primary and its children), Redis, Postgres (every postgres process of the machine), wrk */
  serverUs: number;
  redisUs: number;
  /** Redis's own time in script calls (INFO commandstats: evalsha, eval, fcall) per redemption, µs: steadier than its process CPU on a busy machine */
  scriptUs: number;
  postgresUs: number;
  /** WAL bytes Postgres wrote per redemption */
  walBytes: number;
  wrkUs: number;
  /** requests beyond the tokens minted (refused as used: the figure is then too high) */
  short: number;
  /** answers other than 200 (and socket errors): refusals count in req/s too */
  non200: number;
}

export interface DeploymentsRun {
  rounds: number;
  seconds: number;
  connections: number;
  /** where the server processes may run (taskset list), and wrk */
  serverCpus: string;
  loadCpu: string;
  port: number;
  redis: Pinned;
  /** a file of fresh sign tokens, at least `atLeast` (0: the rate is not known yet), their issuance drained */
  mint(atLeast: number): Promise<string>;
  /** waits until the usage streams are empty */
  drained(): Promise<void>;
  /** a deployment's runs are over (its tokens spent or abandoned) */
  ended?(): void;
  /** a file of license keys: the runs are check-quota over them (answers from the cache), not validate; nothing is minted */
  checkQuotaKeys?: string;
}

/** Redis's time so far in script calls, µs (INFO commandstats: a script's commands count in its own call's time). */
async function scriptMicros(port: number): Promise<number> {
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true });
  try {
    let usec = 0;
    for (const m of (await client.info('commandstats')).matchAll(/^cmdstat_(?:evalsha|eval|fcall):calls=\d+,usec=(\d+)/gm)) usec += Number(m[1]);
    return usec;
  } finally {
    client.disconnect();
  }
}

/** validate on `tokens`, or check-quota when the run names its keys */
function load(run: DeploymentsRun, tokens: string, seconds: number): Promise<WrkResult> {
  if (run.checkQuotaKeys !== undefined) {
    return runWrk({ cpu: run.loadCpu, url: `http://127.0.0.1:${run.port}/`, script: 'checkquota.lua',
      connections: run.connections, seconds, args: [run.checkQuotaKeys] });
  }
  return runWrk({ cpu: run.loadCpu, url: `http://127.0.0.1:${run.port}/api/license/validate`, script: 'redeem.lua',
    connections: run.connections, seconds, args: [tokens, '1'] });
}

/**
 * `rounds` rounds of one run per variant, the order turning each round; each run on a
 * deployment of its own, warmed up for 2 s on tokens of its own and drained first. Tokens
 * are minted for 1.5 x the fastest rate seen; the very first run's after its warm-up, at 3 x
 * the warm-up's rate (cold processes: seen at half the rate of the run after).
 */
export async function measureDeployments(run: DeploymentsRun, variants: Variant[]): Promise<DeploymentSample[]> {
  const samples: DeploymentSample[] = [];
  let fastest = 0;
  const need = (seconds: number) => Math.ceil(1.5 * fastest * seconds);
  const quota = run.checkQuotaKeys !== undefined;
  for (let round = 0; round < run.rounds; round++) {
    for (const variant of round % 2 === 0 ? variants : [...variants].reverse()) {
      const warmup = quota ? '' : await run.mint(need(WARMUP_SECONDS));
      let tokens = quota ? (run.checkQuotaKeys as string) : fastest > 0 ? await run.mint(need(run.seconds)) : '';
      await run.drained();
      const server = await startPinned(variant.label, run.serverCpus, ['node', path.join(variant.root, 'src/cli/server.js')],
        variant.env, READY, run.port, false);
      try {
        const warm = await load(run, warmup, WARMUP_SECONDS);
        if (tokens === '') tokens = await run.mint(Math.ceil(3 * warm.rps * run.seconds));
        await run.drained();
        const before = { server: treeMicros(server.pid), redis: cpuMicros(run.redis.pid), postgres: postgresCpu(), wal: await walPosition(), scripts: await scriptMicros(run.redis.port) };
        const r = await load(run, tokens, run.seconds);
        await run.drained(); // the worker's writes belong to the redemptions
        const minted = quota ? r.requests : readFileSync(tokens, 'utf8').split('\n').filter(Boolean).length;
        const sample: DeploymentSample = {
          label: variant.label, round, rps: r.rps, p50: r.p50, p99: r.p99, p999: r.p999, serverUs: (treeMicros(server.pid) - before.server) / r.requests,
          redisUs: (cpuMicros(run.redis.pid) - before.redis) / r.requests, postgresUs: (postgresCpu() - before.postgres) / r.requests, walBytes: (await walPosition() - before.wal) / r.requests,
          scriptUs: (await scriptMicros(run.redis.port) - before.scripts) / r.requests,
          wrkUs: r.wrkUs, short: Math.max(0, r.requests - minted),
          non200: r.statusErrors + r.socketErrors,
        };
        samples.push(sample);
        fastest = Math.max(fastest, r.rps);
        process.stderr.write(`  ${variant.label} c=${run.connections} ${Math.round(r.rps)} req/s p50 ${(r.p50 / 1000).toFixed(2)} ms ` +
          `p99 ${(r.p99 / 1000).toFixed(2)} ms server ${sample.serverUs.toFixed(1)} us redis ${sample.redisUs.toFixed(1)} us (scripts ${sample.scriptUs.toFixed(1)}) postgres ${sample.postgresUs.toFixed(1)} us non-200 ${sample.non200}` +
          `${sample.short ? ` RAN OUT OF TOKENS by ${sample.short}` : ''}\n`);
      } finally {
        await stopGracefully(server);
        run.ended?.();
      }
    }
  }
  return samples;
}

export interface WorkersSample extends DeploymentSample {
  workers: number;
}

/** WORKERS=N of this build for each count, with the bench's settings (`env`: serviceEnv) and the usage worker inside. */
export async function measureWorkers(run: DeploymentsRun & { counts: number[]; env: Record<string, string> }): Promise<WorkersSample[]> {
  const variants = run.counts.map((workers) => ({
    label: `WORKERS=${workers}`, root: buildRoot,
    env: { ...process.env, ...run.env, PORT: String(run.port), RUN_WORKER: '1', WORKERS: String(workers), LOG_LEVEL: 'info' },
  }));
  const samples = await measureDeployments(run, variants);
  return samples.map((s) => ({ ...s, workers: Number(s.label.slice('WORKERS='.length)) }));
}

/** The table: medians per count, and N ÷ 1 of each round's runs. */
export function workersReport(samples: WorkersSample[], run: Pick<DeploymentsRun, 'connections' | 'serverCpus' | 'loadCpu'>): string {
  const counts = [...new Set(samples.map((s) => s.workers))].sort((a, b) => a - b);
  const out = [
    `Validate as deployed, WORKERS=N (bench/load/workers.ts; server processes on cpus ${run.serverCpus}, wrk + Redis on cpu ${run.loadCpu}, c=${run.connections}):`,
    '',
    '| WORKERS | runs | req/s (median) | ÷ WORKERS=1 | p99 ms | server µs (all processes) | Redis µs | wrk µs |',
    '|---|---|---|---|---|---|---|---|',
  ];
  const one = median(samples.filter((s) => s.workers === 1).map((s) => s.rps));
  for (const n of counts) {
    const g = samples.filter((s) => s.workers === n);
    const m = (f: (s: WorkersSample) => number) => median(g.map(f));
    out.push(`| ${n} | ${g.length} | ${Math.round(m((s) => s.rps))} | ${(m((s) => s.rps) / one).toFixed(2)} | ${(m((s) => s.p99) / 1000).toFixed(2)} | ` +
      `${m((s) => s.serverUs).toFixed(1)} | ${m((s) => s.redisUs).toFixed(1)} | ${m((s) => s.wrkUs).toFixed(1)} |`);
  }
  const short = samples.filter((s) => s.short > 0).length;
  if (short > 0) out.push('', `${short} run(s) RAN OUT OF TOKENS: their req/s count refusals too`);
  return out.join('\n') + '\n';
}
