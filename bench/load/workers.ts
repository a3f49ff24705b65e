import { readFileSync } from 'node:fs';
import { cpuMicros } from './proc.js';
import { startPinned, stopGracefully, type Pinned } from './services.js';
import { median } from './table.js';
import { runWrk, type WrkResult } from './wrk.js';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// BENCH_ONLY=workers (and make bench): validate as deployed (usage worker inside child 0)
// with WORKERS=1 and WORKERS=2, the server processes allowed on every core of the bench
// (both N alike: the kernel places them), wrk and Redis pinned to the load core as ever.
// On a 2-core machine the second process competes with wrk and Redis for the load core.
const buildRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const WARMUP_SECONDS = 2;

export interface WorkersSample {
  workers: number;
  rps: number;
  p99: number;
  /** CPU per redemption, µs: every server process (the primary and its children), Redis, wrk */
  serverUs: number;
  redisUs: number;
  wrkUs: number;
  /** requests beyond the tokens minted (refused as used: the figure is then too high) */
  short: number;
}

export interface WorkersRun {
  counts: number[];
  rounds: number;
  seconds: number;
  connections: number;
  /** where the server processes may run (taskset list), and wrk */
  serverCpus: string;
  loadCpu: string;
  env: Record<string, string>;
  port: number;
  redis: Pinned;
  /** a file of fresh sign tokens, at least `atLeast`, their issuance drained */
  mint(atLeast: number): Promise<string>;
  /** waits until the usage streams are empty */
  drained(): Promise<void>;
}

/** The primary's CPU and its children's (living ones: none ends during a run). */
function treeMicros(pid: number): number {
  let sum = cpuMicros(pid);
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
  for (const child of children === '' ? [] : children.split(' ')) sum += cpuMicros(Number(child));
  return sum;
}

function validate(run: WorkersRun, tokens: string, seconds: number): Promise<WrkResult> {
  return runWrk({ cpu: run.loadCpu, url: `http://127.0.0.1:${run.port}/api/license/validate`, script: 'redeem.lua',
    connections: run.connections, seconds, args: [tokens, '1'] });
}

/** `rounds` rounds of one run per count, the order turning each round; each run on a deployment of its own. */
export async function measureWorkers(run: WorkersRun): Promise<WorkersSample[]> {
  const samples: WorkersSample[] = [];
  let fastest = 0;
  for (let round = 0; round < run.rounds; round++) {
    const counts = round % 2 === 0 ? run.counts : [...run.counts].reverse();
    for (const workers of counts) {
      const need = (seconds: number) => Math.ceil(1.5 * fastest * seconds);
      const [warmup, tokens] = [await run.mint(need(WARMUP_SECONDS)), await run.mint(need(run.seconds))];
      await run.drained();
      const env = { ...run.env, PORT: String(run.port), RUN_WORKER: '1', WORKERS: String(workers), LOG_LEVEL: 'info' };
      const ready = workers === 1 ? /"listening"/ : /listening: all children/;
      const server = await startPinned(`service WORKERS=${workers}`, run.serverCpus, ['node', path.join(buildRoot, 'src/cli/server.js')], env, ready, run.port);
      try {
        await validate(run, warmup, WARMUP_SECONDS);
        await run.drained();
        const before = { server: treeMicros(server.pid), redis: cpuMicros(run.redis.pid) };
        const r = await validate(run, tokens, run.seconds);
        await run.drained(); // the worker's writes belong to the redemptions
        const minted = readFileSync(tokens, 'utf8').split('\n').filter(Boolean).length;
        const sample: WorkersSample = {
          workers, rps: r.rps, p99: r.p99, serverUs: (treeMicros(server.pid) - before.server) / r.requests,
          redisUs: (cpuMicros(run.redis.pid) - before.redis) / r.requests, wrkUs: r.wrkUs, short: Math.max(0, r.requests - minted),
        };
        samples.push(sample);
        fastest = Math.max(fastest, r.rps);
        process.stderr.write(`  WORKERS=${workers} c=${run.connections} ${Math.round(r.rps)} req/s p99 ${(r.p99 / 1000).toFixed(2)} ms ` +
          `server ${sample.serverUs.toFixed(1)} us redis ${sample.redisUs.toFixed(1)} us${sample.short ? ` RAN OUT OF TOKENS by ${sample.short}` : ''}\n`);
      } finally {
        await stopGracefully(server);
      }
    }
  }
  return samples;
}

/** The table: medians per count, and N ÷ 1 of each round's runs. */
export function workersReport(samples: WorkersSample[], run: Pick<WorkersRun, 'connections' | 'serverCpus' | 'loadCpu'>): string {
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
