import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuMicros } from './proc.js';
import { startPinned, startService, stopGracefully, type Pinned } from './services.js';
import { runWrk } from './wrk.js';

// The service as deployed: the usage worker runs while the load does, inside the server
// (`npm start`) or as its own process (`npm run worker`) on the other core, writing to the
// machine's Postgres. Each mode's processes are started for its run only, so no worker
// persists anything during the other scenarios.
const buildRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** How long the backlog may take to drain after a run before the figure says "> limit". */
const DRAIN_LIMIT_MS = 120_000;
const WARMUP_SECONDS = 2;

/** Waits until the streams are empty (the deployed worker drains them); false past DRAIN_LIMIT_MS. */
async function drained(lag: () => Promise<number>): Promise<boolean> {
  const until = Date.now() + DRAIN_LIMIT_MS;
  while ((await lag()) > 0) {
    if (Date.now() > until) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}

export type DeployedMode = 'worker inside' | 'worker apart';

export interface DeployedSample {
  mode: DeployedMode;
  connections: number;
  rps: number;
  p99: number;
  /** CPU per redemption, µs: the server, the worker process (apart), Redis, Postgres (every postgres process) */
  serverUs: number;
  workerUs: number | null;
  redisUs: number;
  postgresUs: number;
  /** events in the streams when the load stopped, and how long the worker then took to write them */
  backlog: number;
  drainMs: number;
}

/** Every postgres process of this machine (the bench writes to the machine's Postgres). */
function postgresPids(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'postgres') pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

function postgresCpu(pids: number[]): number {
  let sum = 0;
  for (const pid of pids) {
    try {
      sum += cpuMicros(pid);
    } catch {
      // a backend that ended: its CPU is lost to the figure (backends live as long as the pools)
    }
  }
  return sum;
}

export interface DeployedRun {
  mode: DeployedMode;
  connections: number;
  seconds: number;
  serverCpu: string;
  loadCpu: string;
  env: Record<string, string>;
  port: number;
  redis: Pinned;
  /** a file of fresh sign tokens for wrk's redeem.lua */
  tokens: string;
  /** another, for a warm-up run on the processes just started (their JIT is cold) */
  warmupTokens: string;
  /** events in the usage streams now */
  lag(): Promise<number>;
}

/** One run of validate against the service as deployed in `mode`. */
export async function measureDeployed(run: DeployedRun): Promise<DeployedSample> {
  const inside = run.mode === 'worker inside';
  const env = { ...run.env, PORT: String(run.port), RUN_WORKER: inside ? '1' : '0' };
  const server = await startService(run.serverCpu, env, run.port);
  const worker = inside ? null : await startPinned('worker', run.loadCpu, ['node', path.join(buildRoot, 'src/cli/worker.js')],
    { ...run.env, LOG_LEVEL: 'info' }, /usage worker running/, 0);
  try {
    const validate = (tokens: string, connections: number, seconds: number) => runWrk({
      cpu: run.loadCpu, url: `http://127.0.0.1:${run.port}/api/license/validate`, script: 'redeem.lua',
      connections, seconds, args: [tokens, '1'],
    });
    await validate(run.warmupTokens, run.connections, WARMUP_SECONDS);
    await drained(run.lag);
    const pg = postgresPids();
    const before = { server: cpuMicros(server.pid), worker: worker ? cpuMicros(worker.pid) : 0, redis: cpuMicros(run.redis.pid), pg: postgresCpu(pg) };
    const r = await validate(run.tokens, run.connections, run.seconds);
    const backlog = await run.lag();
    const stopped = Date.now();
    const drainMs = (await drained(run.lag)) ? Date.now() - stopped : Infinity;
    // CPU up to the end of the drain: every redemption of the run is written by then
    const per = (now: number, then: number) => (now - then) / r.requests;
    return {
      mode: run.mode, connections: run.connections, rps: r.rps, p99: r.p99,
      serverUs: per(cpuMicros(server.pid), before.server),
      workerUs: worker ? per(cpuMicros(worker.pid), before.worker) : null,
      redisUs: per(cpuMicros(run.redis.pid), before.redis),
      postgresUs: per(postgresCpu(pg), before.pg),
      backlog, drainMs,
    };
  } finally {
    await Promise.all([stopGracefully(server), ...(worker ? [stopGracefully(worker)] : [])]);
  }
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** The deployed modes' table: medians per mode and connection count. */
export function deployedTable(samples: DeployedSample[]): string {
  const out = [
    '| as deployed (validate) | conns | runs | req/s (median) | p99 ms | server µs | worker µs | Redis µs | Postgres µs | backlog at end | drain ms |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  const groups = new Map<string, DeployedSample[]>();
  for (const s of samples) groups.set(`${s.mode}|${s.connections}`, [...(groups.get(`${s.mode}|${s.connections}`) ?? []), s]);
  for (const g of groups.values()) {
    const m = (f: (s: DeployedSample) => number) => median(g.map(f));
    const first = g[0] as DeployedSample;
    const worker = first.workerUs === null ? '(in server)' : m((s) => s.workerUs ?? 0).toFixed(1);
    const drain = m((s) => s.drainMs);
    out.push(`| ${first.mode} | ${first.connections} | ${g.length} | ${Math.round(m((s) => s.rps))} | ${(m((s) => s.p99) / 1000).toFixed(2)} | ` +
      `${m((s) => s.serverUs).toFixed(1)} | ${worker} | ${m((s) => s.redisUs).toFixed(1)} | ${m((s) => s.postgresUs).toFixed(1)} | ` +
      `${Math.round(m((s) => s.backlog))} | ${Number.isFinite(drain) ? Math.round(drain) : `> ${DRAIN_LIMIT_MS}`} |`);
  }
  return out.join('\n');
}
