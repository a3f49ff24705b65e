import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { connectPostgres } from '../../src/db/pg.js';
import { MARKER_SLACK_MS, MARKER_WINDOW_MS } from '../../src/redis/keys.js';
import { SIGN_TOKEN_SECONDS } from '../../src/tokens/jwt.js';
import { cpuMicros, postgresCpu, rssKiB } from './proc.js';
import { KeySpace } from '../../src/redis/keys.js';
import { usageLag } from '../../src/usage/lag.js';
import type { RedisClient } from '../../src/redis/client.js';
import { runWrk } from './wrk.js';
import { ADMIN_TOKEN, serviceEnv, startRedis, startService, stopAll } from './services.js';

// make soak: mint-then-redeem at a fixed pace for SOAK_SECONDS with the usage worker in the
// server (as deployed), sampling server RSS and Redis memory; then a batch of unredeemed
// tokens, and the memory they hold until their markers expire.
const SERVER_CPU = process.env.BENCH_SERVER_CPU ?? '0';
const LOAD_CPU = process.env.BENCH_LOAD_CPU ?? '1';
const SECONDS = Number(process.env.SOAK_SECONDS ?? 600);
const DELAY_MS = Number(process.env.SOAK_DELAY_MS ?? 6); // per connection; sets the pace
const CONNECTIONS = Number(process.env.SOAK_CONNECTIONS ?? 32);
const SAMPLE_S = 30;
// Redis holds a token's marker for up to 370 s (300 s lifetime, the rest of its expiry
// minute, 10 s slack): memory is at steady state only after that, so flatness is judged
// from then on.
const WARMUP_S = 390;
const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const REDIS_PORT = 6393;
const PORT = 9110;

const usedMemory = async (r: Redis) => Number(/used_memory:(\d+)/.exec(await r.info('memory'))?.[1]);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const work = mkdtempSync(path.join(tmpdir(), 'soak-'));
  const redis = await startRedis(LOAD_CPU, REDIS_PORT);
  const setup = await connectPostgres(DATABASE_URL, 'public', 1);
  await setup.unsafe('drop schema if exists bench cascade');
  await setup.end();
  const env = { ...serviceEnv(REDIS_PORT, DATABASE_URL, PORT), RUN_WORKER: '1' };
  const service = await startService(SERVER_CPU, env, PORT);
  process.on('exit', () => stopAll([redis, service]));
  const base = `http://127.0.0.1:${PORT}`;
  const client = new Redis(REDIS_PORT);
  const post = async (url: string, body: unknown, token?: string) => (await fetch(url, {
    method: 'POST', body: JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
  })).json() as Promise<any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  const access: string[] = [];
  for (let i = 0; i < 16; i++) {
    const created = await post(`${base}/admin/v1/licenses`, { organizationName: `Soak ${i}`, password: 'soak-password',
      totalQuota: 1e12, expiryDate: '2099-01-01T00:00:00Z' }, ADMIN_TOKEN);
    access.push((await post(`${base}/api/v1/auth/get-token`, { licenseKey: created.data.licenseKey, password: 'soak-password', imzaTipi: 0 })).accessToken);
  }
  const accessFile = path.join(work, 'access.txt');
  writeFileSync(accessFile, access.join('\n') + '\n');

  // unredeemed tokens first, on an idle system: the Redis memory each one holds
  const mem0 = await usedMemory(client);
  const batch = 20000;
  for (let i = 0; i < batch; i += 100) {
    await Promise.all(Array.from({ length: 100 }, (_, j) => post(`${base}/api/v1/auth/sign-token`, { imzaTipi: 0 }, access[(i + j) % access.length])));
  }
  await sleep(2000); // the worker has moved the issuance events out of the streams
  const perToken = (await usedMemory(client) - mem0) / batch;

  // per window: the backlog of events not yet in Postgres, and the CPU per redemption that
  // reached Postgres in the window, of the server (worker inside) and of Postgres, whose
  // tables grow all along
  const sql = await connectPostgres(DATABASE_URL, 'bench', 1);
  const persisted = async () => Number((await sql`select coalesce(sum(used_quota), 0)::float8 as n from licenses`)[0]?.n);
  const keys = new KeySpace('bench');
  interface SoakSample { t: number; rss: number; redis: number; keys: number; backlog: number; serverUs: number; postgresUs: number }
  const samples: SoakSample[] = [];
  let last = { server: cpuMicros(service.pid), pg: postgresCpu(), persisted: await persisted() };
  const started = Date.now();
  const load = runWrk({ cpu: LOAD_CPU, url: base, script: 'soak.lua', connections: CONNECTIONS, seconds: SECONDS, args: [accessFile, String(DELAY_MS)] });
  let running = true;
  void load.finally(() => (running = false));
  while (running) {
    await sleep(SAMPLE_S * 1000);
    if (!running) break;
    const now = { server: cpuMicros(service.pid), pg: postgresCpu(), persisted: await persisted() };
    const redeemed = Math.max(1, now.persisted - last.persisted);
    const s: SoakSample = {
      t: Math.round((Date.now() - started) / 1000), rss: rssKiB(service.pid), redis: await usedMemory(client), keys: await client.dbsize(),
      backlog: await usageLag(client as unknown as RedisClient, keys),
      serverUs: (now.server - last.server) / redeemed, postgresUs: (now.pg - last.pg) / redeemed,
    };
    last = now;
    samples.push(s);
    process.stderr.write(`  t=${s.t}s rss ${(s.rss / 1024).toFixed(1)} MiB redis ${(s.redis / 1048576).toFixed(1)} MiB keys ${s.keys} ` +
      `backlog ${s.backlog} server ${s.serverUs.toFixed(1)} µs Postgres ${s.postgresUs.toFixed(1)} µs per redemption\n`);
  }
  const result = await load;
  const after = samples.filter((s) => s.t >= WARMUP_S);
  const growth = (pick: (s: (typeof samples)[0]) => number) => {
    const values = after.map(pick);
    return values.length ? (Math.max(...values) / (values[0] as number) - 1) * 100 : NaN;
  };
  const lines = [
    `soak: ${SECONDS}s, ${CONNECTIONS} connections, ${DELAY_MS} ms pause: ${Math.round(result.rps)} req/s ` +
      `(half sign-token, half validate), p99 ${(result.p99 / 1000).toFixed(2)} ms, non-200 ${result.statusErrors + result.socketErrors}`,
    after.length === 0
      ? `(shorter than the ${WARMUP_S}s warm-up: no flatness figures)`
      : `after ${WARMUP_S}s warm-up (one marker lifetime): server RSS grew ${growth((s) => s.rss).toFixed(1)}% at most, ` +
        `Redis used_memory ${growth((s) => s.redis).toFixed(1)}% at most`,
    `${batch} unredeemed tokens hold ${perToken.toFixed(0)} bytes each in Redis`,
  ];

  // once every marker has expired, Redis is back where it started
  const memEnd = await usedMemory(client);
  const keysEnd = await client.dbsize();
  if (process.env.SOAK_WAIT_EXPIRY !== '0') {
    // a marker hash expires a minute of expiries plus the slack after the last token it holds
    await sleep(SIGN_TOKEN_SECONDS * 1000 + MARKER_WINDOW_MS + MARKER_SLACK_MS + 5_000);
    const memFreed = await usedMemory(client);
    lines.push(`at the end ${keysEnd} keys, ${(memEnd / 1048576).toFixed(1)} MiB; after the markers expired ` +
      `${await client.dbsize()} keys, ${(memFreed / 1048576).toFixed(1)} MiB (${(mem0 / 1048576).toFixed(1)} MiB before any token)`);
  }
  process.stdout.write(lines.join('\n') + '\n');
  process.stdout.write(samples.map((s) => `t=${s.t}s rss=${(s.rss / 1024).toFixed(1)}MiB redis=${(s.redis / 1048576).toFixed(1)}MiB keys=${s.keys} ` +
    `backlog=${s.backlog} server=${s.serverUs.toFixed(1)}us postgres=${s.postgresUs.toFixed(1)}us (per redemption, sign-token included)`).join('\n') + '\n');
  // partitioned tables (sql/009) have no storage of their own: their partitions' is summed
  const [size] = await sql`select (select sum(pg_total_relation_size(relid)) from pg_partition_tree('token_redemptions'))::float8 as r,
    (select sum(pg_total_relation_size(relid)) from pg_partition_tree('token_issues'))::float8 as i,
    (select count(*) from token_redemptions)::float8 as n`;
  process.stdout.write(`Postgres at the end: ${size?.n} redemption rows; token_redemptions ${((size?.r as number) / 1048576).toFixed(0)} MiB, ` +
    `token_issues ${((size?.i as number) / 1048576).toFixed(0)} MiB (tables and indexes)\n`);
  await sql.end();
  await client.quit();
  rmSync(work, { recursive: true, force: true });
  stopAll([redis, service]);
  process.exit(0);
}

main().catch((err: Error) => {
  process.stderr.write(`soak failed: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
