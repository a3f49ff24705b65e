import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { connectPostgres } from '../../src/db/pg.js';
import { KeySpace } from '../../src/redis/keys.js';
import type { RedisClient } from '../../src/redis/client.js';
import { usageLag } from '../../src/usage/lag.js';
import { LicensePool } from './licensePool.js';
import { tokenMinter } from './minting.js';
import { requiredEnv, serviceEnv, startPinned, startRedis, startService, stopAll, stopGracefully, type Pinned } from './services.js';
import { buildRoot, READY } from './workers.js';

// The set-up of a bench that measures the service as deployed, at its default limits: a
// private Redis, the service started as `npm start` starts it (its environment holds only
// what has no fitting default, plus what the caller adds), and beside it a second service
// with the bench's lifted limits, which makes the licenses and mints the sign tokens
// (sign-token's 100 a minute per license would refuse the minting; it is not what is
// measured). Both share one Redis prefix and Postgres schema, so the measured service
// redeems what the other minted; its usage worker (inside it, as deployed) writes to Postgres.

/** How long the usage streams may take to empty before a bench gives up. */
const DRAIN_LIMIT_MS = 120_000;

export interface AsDeployed {
  /** the measured service (WORKERS unset: a process per core of its CPU set, the usage worker inside) */
  service: Pinned;
  redis: Pinned;
  /** the service with lifted limits that made the licenses and mints */
  helper: Pinned;
  /** the build before, deployed the same way on the same CPUs, Redis and Postgres (options.baseline); null without one */
  baseline: Pinned | null;
  /** licenses for runs at validate's default limit (bench/load/licensePool.ts) */
  pool: LicensePool;
  /** waits until the usage streams are empty: every redemption answered is in Postgres */
  drained(): Promise<void>;
  /** a scratch folder, removed by stop() */
  work: string;
  /** stops what was started here, drops the schema and the scratch folder */
  stop(): Promise<void>;
}

export interface AsDeployedOptions {
  /** the Redis prefix and Postgres schema (dropped first) */
  namespace: string;
  redisPort: number;
  servicePort: number;
  helperPort: number;
  /** taskset CPU lists: the measured service; Redis and wrk; the helper service (idle while measuring) */
  serverCpu: string;
  loadCpu: string;
  helperCpu: string;
  databaseUrl: string;
  /** settings the deployment under test is given beyond requiredEnv's (e.g. TRUST_PROXY behind a proxy) */
  env?: Record<string, string>;
  /** licenses made up front (the pool grows when a run needs more) */
  licenses: number;
  /** how long a mint runs when the rate is not known yet (tokenMinter) */
  mintSeconds: number;
  /** the dist folder of the measured service (default: this build's; BENCH_BASELINE gives the build before's) */
  root?: string;
  /** a second measured service beside the first: the build before's dist folder, and its port */
  baseline?: { root: string; port: number };
}

export async function startAsDeployed(o: AsDeployedOptions): Promise<AsDeployed> {
  const work = mkdtempSync(path.join(tmpdir(), `bench-${o.namespace}-`));
  const setup = await connectPostgres(o.databaseUrl, 'public', 1);
  await setup.unsafe(`drop schema if exists "${o.namespace}" cascade`);
  const started: Pinned[] = [];
  process.on('exit', () => stopAll(started));
  const namespace = { REDIS_PREFIX: o.namespace, PG_SCHEMA: o.namespace };

  const redis = await startRedis(o.loadCpu, o.redisPort);
  started.push(redis);
  // the helper first: it creates the schema, so the two never migrate at once
  const helper = await startService(o.helperCpu, { ...serviceEnv(o.redisPort, o.databaseUrl, o.helperPort), ...namespace }, o.helperPort);
  started.push(helper);
  const deploy = async (label: string, root: string, port: number) => {
    const p = await startPinned(label, o.serverCpu, ['node', path.join(root, 'src/cli/server.js')],
      { PATH: process.env.PATH, ...requiredEnv(o.redisPort, o.databaseUrl, port), ...namespace, ...o.env }, READY, port, false);
    started.push(p);
    return p;
  };
  const service = await deploy('service', o.root ?? buildRoot, o.servicePort);
  // the build before, an instance beside it: idle while the other is measured (its worker drains the streams too)
  const baseline = o.baseline === undefined ? null : await deploy('service before', o.baseline.root, o.baseline.port);

  const redisClient = new Redis(o.redisPort);
  const keys = new KeySpace(o.namespace);
  const drained = async () => {
    const until = Date.now() + DRAIN_LIMIT_MS;
    while ((await usageLag(redisClient as unknown as RedisClient, keys)) > 0) {
      if (Date.now() > until) throw new Error(`the usage streams did not empty in ${DRAIN_LIMIT_MS / 1000} s`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  const helperBase = `http://127.0.0.1:${o.helperPort}`;
  const mint = tokenMinter({ work, loadCpu: o.loadCpu, seconds: o.mintSeconds, base: helperBase, accessFile: '' });
  const pool = await LicensePool.create(helperBase, o.licenses, async (access, atLeast) => {
    const file = await mint(atLeast, access);
    await drained(); // the issuance events, before anything is measured
    return file;
  }, work);

  const stop = async () => {
    await stopGracefully(service);
    if (baseline) await stopGracefully(baseline);
    await redisClient.quit();
    stopAll(started);
    await setup.unsafe(`drop schema if exists "${o.namespace}" cascade`);
    await setup.end();
    rmSync(work, { recursive: true, force: true });
  };
  return { service, redis, helper, baseline, pool, drained, work, stop };
}
