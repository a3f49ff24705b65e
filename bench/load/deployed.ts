import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuMicros, postgresCpu } from './proc.js';
import { walPosition } from './wal.js';
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

/**
 * How the service runs, and the load: "worker inside, Idempotency-Key" is the first
 * deployment with every validate carrying an Idempotency-Key of its own; "worker inside,
 * METRICS=0" the first with metrics off (every other mode records them, as npm start does);
 * "worker inside, REDIS_WAIT_REPLICAS=1" the first answering redemptions once a replica holds them.
 */
export type DeployedMode = 'worker inside' | 'worker apart' | 'worker inside, Idempotency-Key' | 'worker inside, METRICS=0'
  | 'worker inside, REDIS_WAIT_REPLICAS=1';

export interface DeployedSample {
  mode: DeployedMode;
  connections: number;
  rps: number;
  p99: number;
  p999: number;
  /** CPU per redemption, µs: the server, the worker process (apart), Redis, Postgres (every postgres process) */
  serverUs: number;
  workerUs: number | null;
  redisUs: number;
  postgresUs: number;
  /** WAL bytes Postgres wrote per redemption */
  walBytes: number;
  /** wrk's own CPU per request: it shares the load core with Redis */
  wrkUs: number;
  /** events in the streams when the load stopped, and how long the worker then took to write them */
  backlog: number;
  drainMs: number;
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

type DeploymentOptions = Pick<DeployedRun, 'mode' | 'serverCpu' | 'loadCpu' | 'env' | 'port' | 'warmupTokens' | 'lag' | 'connections'>;

/** The service started as `mode` deploys it, warmed up on tokens of its own, drained. */
async function startDeployment(run: DeploymentOptions): Promise<{ server: Pinned; worker: Pinned | null; stop(): Promise<void> }> {
  const inside = run.mode !== 'worker apart';
  const env = {
    ...run.env, PORT: String(run.port), RUN_WORKER: inside ? '1' : '0', METRICS: run.mode === 'worker inside, METRICS=0' ? '0' : '1',
    REDIS_WAIT_REPLICAS: run.mode === 'worker inside, REDIS_WAIT_REPLICAS=1' ? '1' : '0',
  };
  const server = await startService(run.serverCpu, env, run.port);
  const worker = inside ? null : await startPinned('worker', run.loadCpu, ['node', path.join(buildRoot, 'src/cli/worker.js')],
    { ...run.env, LOG_LEVEL: 'info' }, /usage worker running/, 0);
  const stop = async () => {
    await Promise.all([stopGracefully(server), ...(worker ? [stopGracefully(worker)] : [])]);
  };
  try {
    await validate(run, run.warmupTokens, WARMUP_SECONDS);
    await drained(run.lag);
  } catch (err) {
    await stop();
    throw err;
  }
  return { server, worker, stop };
}

function validate(run: Pick<DeployedRun, 'loadCpu' | 'port' | 'connections' | 'mode'>, tokens: string, seconds: number, rate?: number) {
  const keyed = run.mode === 'worker inside, Idempotency-Key';
  return runWrk({
    cpu: run.loadCpu, url: `http://127.0.0.1:${run.port}/api/license/validate`, script: rate === undefined ? 'redeem.lua' : 'paced.lua',
    connections: run.connections, seconds,
    args: rate === undefined ? [tokens, '1', ...(keyed ? ['keyed'] : [])] : [tokens, '1', String(Math.round(rate))],
  });
}

type Deployment = Awaited<ReturnType<typeof startDeployment>>;

/** One run of validate (as `run.mode` loads it) against a deployment started for it. */
async function measureOn(deployment: Deployment, run: DeployedRun): Promise<DeployedSample> {
  const { server, worker } = deployment;
  const before = { server: cpuMicros(server.pid), worker: worker ? cpuMicros(worker.pid) : 0, redis: cpuMicros(run.redis.pid), pg: postgresCpu(), wal: await walPosition() };
  const r = await validate(run, run.tokens, run.seconds);
  const backlog = await run.lag();
  const stopped = Date.now();
  const drainMs = (await drained(run.lag)) ? Date.now() - stopped : Infinity;
  // CPU up to the end of the drain: every redemption of the run is written by then
  const per = (now: number, then: number) => (now - then) / r.requests;
  return {
    mode: run.mode, connections: run.connections, rps: r.rps, p99: r.p99, p999: r.p999,
    serverUs: per(cpuMicros(server.pid), before.server),
    workerUs: worker ? per(cpuMicros(worker.pid), before.worker) : null,
    redisUs: per(cpuMicros(run.redis.pid), before.redis),
    postgresUs: per(postgresCpu(), before.pg),
    walBytes: per(await walPosition(), before.wal),
    wrkUs: r.wrkUs,
    backlog, drainMs,
  };
}

/** One run of validate against the service as deployed in `mode`. */
export async function measureDeployed(run: DeployedRun): Promise<DeployedSample> {
  const deployment = await startDeployment(run);
  try {
    return await measureOn(deployment, run);
  } finally {
    await deployment.stop();
  }
}

/**
 * The Idempotency-Key's cost: validate without and with a key on one deployment (worker
 * inside, as `npm start` runs it), `pairs` times, the order turning each pair, each run on
 * fresh tokens (mint()). One server process for both, so the pairs differ by the key alone.
 */
export async function measureKeyed(run: Omit<DeployedRun, 'mode' | 'tokens'> & { pairs: number; mint(): Promise<string> }): Promise<DeployedSample[]> {
  const plain: DeployedMode = 'worker inside';
  const keyed: DeployedMode = 'worker inside, Idempotency-Key';
  const deployment = await startDeployment({ ...run, mode: plain });
  const samples: DeployedSample[] = [];
  try {
    await validate({ ...run, mode: keyed }, await run.mint(), WARMUP_SECONDS); // the keyed path warmed up too
    await drained(run.lag);
    for (let i = 0; i < run.pairs; i++) {
      for (const mode of i % 2 === 0 ? [plain, keyed] : [keyed, plain]) {
        const sample = await measureOn(deployment, { ...run, mode, tokens: await run.mint() });
        samples.push(sample);
        process.stderr.write(`  Idempotency-Key A/B, ${mode} c=${run.connections} ${Math.round(sample.rps)} req/s server ` +
          `${sample.serverUs.toFixed(1)} us redis ${sample.redisUs.toFixed(1)} us wrk ${sample.wrkUs.toFixed(1)} us\n`);
      }
    }
  } finally {
    await deployment.stop();
  }
  return samples;
}

/** How often the metrics A/B scrapes /metrics while it measures with metrics on (Prometheus's default is every 15 s). */
const SCRAPE_EVERY_MS = 1_000;

/**
 * What metrics cost validate: two deployments as npm start runs them (worker inside), one
 * with METRICS=1 (scraped every second while measured) and one with METRICS=0, started
 * and warmed up once, then `pairs` pairs of runs, the order turning each pair, each run
 * on fresh tokens. Both stay up throughout (the switch is read at start), so both workers
 * share the usage streams whichever server is measured: the same for both modes.
 */
export async function measureMetrics(
  run: Omit<DeployedRun, 'mode' | 'tokens' | 'port'> & { ports: [number, number]; pairs: number; mint(): Promise<string> },
): Promise<DeployedSample[]> {
  const on: DeployedMode = 'worker inside';
  return measurePairs(run, [on, 'worker inside, METRICS=0'], 'metrics A/B', (mode) => {
    if (mode !== on) return () => {};
    const scraper = setInterval(() => {
      void fetch(`http://127.0.0.1:${run.ports[0]}/metrics`).then((r) => r.text(), () => '');
    }, SCRAPE_EVERY_MS);
    return () => clearInterval(scraper);
  });
}

/**
 * The price of REDIS_WAIT_REPLICAS=1: validate on two deployments of one Redis that has a
 * replica attached for both (src/redis/replicaWait.ts), one waiting for it and one not,
 * `pairs` times, the order turning each pair.
 */
export function measureReplicaWait(
  run: Omit<DeployedRun, 'mode' | 'tokens' | 'port'> & { ports: [number, number]; pairs: number; mint(): Promise<string> },
): Promise<DeployedSample[]> {
  return measurePairs(run, ['worker inside', 'worker inside, REDIS_WAIT_REPLICAS=1'], 'replica wait A/B', () => () => {});
}

/** Two deployments (modes[i] on ports[i]), measured in `pairs` pairs, each run on fresh tokens; during(mode) runs beside a run and returns its end. */
async function measurePairs(
  run: Omit<DeployedRun, 'mode' | 'tokens' | 'port'> & { ports: [number, number]; pairs: number; mint(): Promise<string> },
  modes: [DeployedMode, DeployedMode], label: string, during: (mode: DeployedMode) => () => void,
): Promise<DeployedSample[]> {
  const [first, second] = modes;
  const port = { [first]: run.ports[0], [second]: run.ports[1] } as Record<DeployedMode, number>;
  const started = new Map<DeployedMode, Deployment>();
  const samples: DeployedSample[] = [];
  try {
    // each warmed up on tokens of its own (on spent ones it would warm up the refusal instead)
    for (const mode of modes) {
      started.set(mode, await startDeployment({ ...run, mode, port: port[mode], warmupTokens: mode === first ? run.warmupTokens : await run.mint() }));
    }
    for (let i = 0; i < run.pairs; i++) {
      for (const mode of i % 2 === 0 ? [first, second] : [second, first]) {
        const tokens = await run.mint();
        const end = during(mode);
        const sample = await measureOn(started.get(mode) as Deployment, { ...run, mode, port: port[mode], tokens }).finally(end);
        samples.push(sample);
        process.stderr.write(`  ${label}, ${mode} c=${run.connections} ${Math.round(sample.rps)} req/s p99 ${(sample.p99 / 1000).toFixed(2)} ms ` +
          `server ${sample.serverUs.toFixed(1)} us redis ${sample.redisUs.toFixed(1)} us\n`);
      }
    }
  } finally {
    await Promise.all([...started.values()].map((d) => d.stop()));
  }
  return samples;
}

/** One open-loop run at a fixed rate (bench/load/paced.lua) in the sustained search. */
export interface SustainedProbe {
  mode: DeployedMode;
  rate: number;
  rps: number;
  p99: number;
  /** the most events seen waiting in the streams (sampled every SAMPLE_MS), and how long the drain took after */
  maxBacklog: number;
  drainMs: number;
  /** the answers kept up (rps ≥ 97 % of the rate) and the backlog stayed under one second of work */
  held: boolean;
}

const SAMPLE_MS = 100;

export interface SustainedSearch extends DeploymentOptions {
  /** seconds per probe */
  seconds: number;
  /** where the search starts and how it steps: fractions of this rate (ceiling (c)'s closed-loop req/s) */
  baseRps: number;
  /** a file of fresh tokens enough for `seconds` at 1.5 x baseRps, their issuance drained */
  mint(): Promise<string>;
}

/**
 * Sustained throughput as deployed: the highest rate at which the answers keep up and the
 * backlog of events not yet in Postgres stays under one second of work. Open-loop runs at
 * 0.5, 0.6, ... x baseRps until one fails, then one run halfway between the last that held
 * and the first that did not.
 */
export async function findSustained(search: SustainedSearch): Promise<SustainedProbe[]> {
  const { stop } = await startDeployment(search);
  const probes: SustainedProbe[] = [];
  const probe = async (rate: number) => {
    const tokens = await search.mint();
    let maxBacklog = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        maxBacklog = Math.max(maxBacklog, await search.lag());
        await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS));
      }
    })();
    const r = await validate(search, tokens, search.seconds, rate).finally(() => { sampling = false; });
    await sampler;
    maxBacklog = Math.max(maxBacklog, await search.lag());
    const stopped = Date.now();
    const drainMs = (await drained(search.lag)) ? Date.now() - stopped : Infinity;
    const held = r.rps >= 0.97 * rate && maxBacklog < rate && r.statusErrors + r.socketErrors === 0;
    const p: SustainedProbe = { mode: search.mode, rate, rps: r.rps, p99: r.p99, maxBacklog, drainMs, held };
    probes.push(p);
    process.stderr.write(`  sustained, ${search.mode}: ${Math.round(rate)}/s offered, ${Math.round(r.rps)} answered, ` +
      `backlog max ${maxBacklog}, ${held ? 'held' : 'fell behind'}\n`);
    return held;
  };
  try {
    let last = 0;
    for (let f = 0.5; f <= 2.01; f += 0.1) {
      const rate = f * search.baseRps;
      if (!(await probe(rate))) {
        if (last > 0) await probe((last + rate) / 2);
        break;
      }
      last = rate;
    }
  } finally {
    await stop();
  }
  return probes;
}

/** The highest rate that held, per mode. */
export function sustainedRate(probes: SustainedProbe[], mode: DeployedMode): number {
  return Math.max(0, ...probes.filter((p) => p.mode === mode && p.held).map((p) => p.rate));
}
