import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { connectPostgres } from '../../src/db/pg.js';
import type { RedisClient } from '../../src/redis/client.js';
import { KeySpace } from '../../src/redis/keys.js';
import { usageLag } from '../../src/usage/lag.js';
import { serviceEnv, startRedis, startService, stopAll, stopGracefully } from './services.js';
import { runWrk } from './wrk.js';
import { createLicenses } from './licenses.js';

// make bench-lag: the usage worker's lag at peak validate load, as deployed (`npm start`:
// the worker inside the server process). The lag is what a Redis lost without persistence
// costs (docs/durability.md#the-window-of-a-redis-loss): redemptions answered 200 and not yet in Postgres.
// Samples the lag every 100 ms during the run, then times the drain. The lag is read from
// Redis as /healthz computes it (usageLag), not through /healthz, whose report may be up to a
// second old: the samples and the drain time would be a second coarse.

const SERVER_CPU = process.env.BENCH_SERVER_CPU ?? '0';
const LOAD_CPU = process.env.BENCH_LOAD_CPU ?? '1';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const REDIS_PORT = 6392;
const PORT = 9110;
const LICENSES = 32;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const work = mkdtempSync(path.join(tmpdir(), 'bench-lag-'));
  const setup = await connectPostgres(DATABASE_URL, 'public', 1);
  await setup.unsafe('drop schema if exists bench cascade');
  await setup.end();
  const redis = await startRedis(LOAD_CPU, REDIS_PORT);
  const lagReader = new Redis(REDIS_PORT);
  const keys = new KeySpace('bench');
  const lagOf = (): Promise<number> => usageLag(lagReader as unknown as RedisClient, keys);
  const service = await startService(SERVER_CPU, { ...serviceEnv(REDIS_PORT, DATABASE_URL, PORT), RUN_WORKER: '1' }, PORT);
  const all = [redis, service];
  process.on('exit', () => stopAll(all));
  const base = `http://127.0.0.1:${PORT}`;

  const access = (await createLicenses(base, LICENSES)).map((l) => l.access);
  const accessFile = path.join(work, 'access.txt');
  writeFileSync(accessFile, access.join('\n') + '\n');
  const tokens = path.join(work, 'tokens.txt');
  writeFileSync(tokens, '');
  await runWrk({ cpu: LOAD_CPU, url: `${base}/api/v1/auth/sign-token`, script: 'mint.lua', connections: 64,
    seconds: Math.ceil(SECONDS * 2.5) + 1, args: [accessFile, tokens] });
  while ((await lagOf()) > 0) await sleep(100);
  const minted = readFileSync(tokens, 'utf8').split('\n').filter(Boolean).length;

  const samples: number[] = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      samples.push(await lagOf());
      await sleep(100);
    }
  })();
  const r = await runWrk({ cpu: LOAD_CPU, url: `${base}/api/license/validate`, script: 'redeem.lua', connections: CONNECTIONS,
    seconds: SECONDS, args: [tokens, '1'] });
  const atEnd = await lagOf();
  sampling = false;
  await sampler;
  const drainStart = Date.now();
  while ((await lagOf()) > 0) await sleep(20);
  const drainMs = Date.now() - drainStart;

  const sorted = [...samples].sort((a, b) => a - b);
  const pct = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;
  const perMs = r.rps / 1000;
  const line = (label: string, events: number) => `${label} ${events} events (${(events / perMs).toFixed(0)} ms of redemptions)`;
  process.stdout.write([
    `usage worker lag at peak validate load, as deployed (worker inside the server, server on cpu ${SERVER_CPU}, ` +
      `wrk + Redis on cpu ${LOAD_CPU}, ${CONNECTIONS} connections, ${SECONDS} s, ${minted} tokens):`,
    `  validate: ${Math.round(r.rps)} req/s, p99 ${(r.p99 / 1000).toFixed(2)} ms, non-200 ${r.statusErrors + r.socketErrors}`,
    `  ${line('lag median', pct(0.5))}; ${line('p99', pct(0.99))}; ${line('max', sorted[sorted.length - 1] ?? 0)}`,
    `  ${line('lag when the load stopped', atEnd)}; drained in ${drainMs} ms`,
    '',
  ].join('\n'));
  lagReader.disconnect();
  await stopGracefully(service);
  stopAll(all);
  rmSync(work, { recursive: true, force: true });
  process.exit(0);
}

main().catch((err: Error) => {
  process.stderr.write(`bench-lag failed: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
