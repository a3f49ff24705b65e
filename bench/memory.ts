import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { connectPostgres } from '../src/db/pg.js';
import { KeySpace } from '../src/redis/keys.js';
import { createRedis } from '../src/redis/client.js';
import { loadConfig } from '../src/config.js';
import { UsageWorker } from '../src/usage/worker.js';
import { ADMIN_TOKEN, serviceEnv, startRedis, startService, stopAll } from './load/services.js';
import { runWrk } from './load/wrk.js';

// Redis memory per thing the service keeps (make bench-memory; docs/redis.md): the service
// as deployed against a private redis-server this script starts, its own REDIS_PREFIX ("mem",
// as long as the default "lic", so key names are as long as in production) and its own
// Postgres schema. It creates licenses, issues sign tokens that stay outstanding, redeems
// some of them (the last ones with an Idempotency-Key) while no usage worker runs, and reports per
// key kind MEMORY USAGE <key> SAMPLES 0 summed over the kind's keys and divided by what
// they hold (fields, entries, keys), beside INFO memory used_memory deltas per phase
// divided by their count.
const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const LICENSES = Number(process.env.MEMORY_LICENSES ?? 200);
const TOKENS = Number(process.env.MEMORY_TOKENS ?? 100_000);
/** redemptions without an Idempotency-Key, then KEYED with one of 20 characters */
const REDEMPTIONS = Number(process.env.MEMORY_REDEMPTIONS ?? 10_000);
const KEYED = Number(process.env.MEMORY_KEYED ?? 5_000);
const PREFIX = 'mem';
const SCHEMA = 'memory_bench';
const CPUS = process.env.BENCH_CPUS ?? '0,1';
const ORIGIN = 'https://imza.ornek.com.tr';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function call(method: string, url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const res = await fetch(url, { method, body: body === undefined ? undefined : JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });
  return { status: res.status, json: await res.json() };
}

/** runs task(i) for i < count, `width` at a time */
async function inParallel(count: number, width: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < count) await task(next++);
  }));
}

/** What a key holds, in the unit its bytes are divided by. */
async function unitsOf(redis: Redis, key: string, type: string): Promise<number> {
  if (type === 'hash') return redis.hlen(key);
  if (type === 'stream') return redis.xlen(key);
  return 1;
}

/** Key kinds by name (src/redis/keys.ts): the part after the hash tag (check-quota's counters `rq:<address>` as `rq`), or the tag's kind. */
function kindOf(key: string): string {
  const rest = key.slice(PREFIX.length + 1);
  const m = /^\{(k|a):[^}]*\}:(\w+)(?::.*)?$/.exec(rest) ?? /^\{\d+\}:(\w+)/.exec(rest);
  if (!m) return rest;
  return m.length === 3 ? `{${m[1]}:…}:${m[2]}` : `{b}:${m[1]}`;
}

interface KindFigures { keys: number; units: number; bytes: number }

async function census(redis: Redis): Promise<Map<string, KindFigures>> {
  const kinds = new Map<string, KindFigures>();
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${PREFIX}:*`, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) {
      const type = await redis.type(key);
      const bytes = Number(await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
      const kind = kindOf(key);
      const figures = kinds.get(kind) ?? { keys: 0, units: 0, bytes: 0 };
      figures.keys += 1;
      figures.units += await unitsOf(redis, key, type);
      figures.bytes += bytes;
      kinds.set(kind, figures);
    }
  } while (cursor !== '0');
  return kinds;
}

async function usedMemory(redis: Redis): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1]);
}

function report(title: string, kinds: Map<string, KindFigures>): string {
  const rows = [...kinds.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([kind, f]) =>
    `| \`${kind}\` | ${f.keys} | ${f.units} | ${f.bytes} | ${(f.bytes / f.keys).toFixed(0)} | ${(f.bytes / Math.max(1, f.units)).toFixed(1)} |`);
  return `\n${title}\n\n| key kind | keys | fields / entries (1 a string) | MEMORY USAGE bytes | per key | per field / entry |\n` +
    `|---|---|---|---|---|---|\n${rows.join('\n')}\n`;
}

async function main(): Promise<void> {
  const started = Date.now();
  const [redisPort, servicePort] = [await freePort(), await freePort()];
  const redisProc = await startRedis(CPUS, redisPort);
  const env = { ...serviceEnv(redisPort, DATABASE_URL, servicePort), REDIS_PREFIX: PREFIX, PG_SCHEMA: SCHEMA, RATE_CHECK_QUOTA_PER_MIN: '1000000000' };
  const setup = await connectPostgres(DATABASE_URL, 'public', 1);
  await setup.unsafe(`drop schema if exists ${SCHEMA} cascade`);
  const service = await startService(CPUS, env, servicePort);
  process.on('exit', () => stopAll([redisProc, service]));
  const redis = new Redis(redisPort);
  const sql = await connectPostgres(DATABASE_URL, SCHEMA, 2);
  const config = loadConfig(env, 'worker');
  const drain = async () => {
    const worker = new UsageWorker(createRedis(config, 'memory-drain', { commandTimeoutMs: 60_000 }), sql, new KeySpace(PREFIX),
      { batchSize: 5000, blockMs: 20, claimIdleMs: 60_000, lingerMs: 0, lingerEvents: 1 }, pino({ level: 'silent' }));
    await worker.start();
    while ((await worker.lag()) > 0) await new Promise((r) => setTimeout(r, 50));
    await worker.stop();
  };
  const base = `http://127.0.0.1:${servicePort}`;
  const lines: string[] = [];
  const say = (line: string) => {
    lines.push(line);
    process.stderr.write(`memory: ${line}\n`);
  };
  // one license through every step first, and a drain (the worker creates every bucket's
  // stream and group), so the phases below count what grows with their count only
  const createLicense = async (i: number): Promise<string> => {
    const password = `memory-password-${i}`;
    const created = await call('POST', `${base}/admin/v1/licenses`, {
      organizationName: `Örnek Sağlık ${i} A.Ş.`, password, totalQuota: 1_000_000_000, expiryDate: '2099-01-01T00:00:00Z',
      domains: ['*.ornek.com.tr', 'imza.ornek.com.tr'],
    }, { authorization: `Bearer ${ADMIN_TOKEN}` });
    if (created.status !== 201) throw new Error(`create: ${created.status} ${JSON.stringify(created.json)}`);
    const key = created.json.data.licenseKey as string;
    const got = await call('POST', `${base}/api/v1/auth/get-token`, { licenseKey: key, password, imzaTipi: 0 });
    if (got.status !== 200) throw new Error(`get-token: ${got.status}`);
    await call('GET', `${base}/api/License/check-quota/${key}`, undefined);
    return got.json.accessToken as string;
  };
  const warm = await createLicense(-1);
  const warmSign = await call('POST', `${base}/api/v1/auth/sign-token`, { imzaTipi: 0 }, { authorization: `Bearer ${warm}` });
  await call('POST', `${base}/api/license/validate`, { token: warmSign.json.signToken, origin: ORIGIN }, { 'idempotency-key': 'warm-up' });
  await drain();
  const mem0 = await usedMemory(redis);

  // licenses, each hydrated the way a customer's first calls do: get-token (credentials,
  // license copy, get-token rate counter, one sign token) and check-quota (its counter for
  // this client, and its cached answer while QUOTA_CACHE_SECONDS lasts)
  const access: string[] = [];
  await inParallel(LICENSES, 8, async (i) => {
    access.push(await createLicense(i));
  });
  await drain();
  const mem1 = await usedMemory(redis);
  say(`${LICENSES} licenses (hydrated: get-token and check-quota once each; their issued events drained): ` +
    `used_memory +${mem1 - mem0} B, ${((mem1 - mem0) / LICENSES).toFixed(0)} B per license (its get-token's marker included)`);

  // outstanding sign tokens, minted through sign-token by wrk (no worker: their events queue)
  const work = mkdtempSync(path.join(tmpdir(), 'memory-bench-'));
  const accessFile = path.join(work, 'access.txt');
  const tokenFile = path.join(work, 'tokens.txt');
  writeFileSync(accessFile, access.join('\n') + '\n');
  writeFileSync(tokenFile, '');
  const tokens = () => readFileSync(tokenFile, 'utf8').split('\n').filter(Boolean);
  let seconds = 3;
  for (;;) {
    await runWrk({ cpu: CPUS, url: `${base}/api/v1/auth/sign-token`, script: 'mint.lua', connections: 64, seconds, args: [accessFile, tokenFile] });
    const have = tokens().length;
    if (have >= TOKENS) break;
    seconds = Math.ceil(((TOKENS - have) / Math.max(have, 1)) * seconds) + 1;
  }
  const minted = tokens();
  const mem2 = await usedMemory(redis);
  const issuedCensus = await census(redis);
  // what was issued: the queued events (wrk leaves the answers of its last requests unread)
  const issued = issuedCensus.get('{b}:ev')?.units ?? minted.length;
  say(`${issued} sign tokens issued, their issued events queued: used_memory +${mem2 - mem1} B, ` +
    `${((mem2 - mem1) / issued).toFixed(1)} B per token (marker + queued event)`);
  await drain();
  const mem3 = await usedMemory(redis);
  say(`issued events drained (the worker keeping up): used_memory +${mem3 - mem1} B over the licenses, ` +
    `${((mem3 - mem1) / issued).toFixed(1)} B per outstanding token`);

  // redemptions with no worker running, so their used events queue: first without a key,
  // then KEYED more, each with an Idempotency-Key of 20 characters of its own
  const redeem = async (from: number, count: number, keyed: boolean): Promise<number> => {
    let refused = 0;
    await inParallel(count, 64, async (i) => {
      const headers: Record<string, string> = keyed ? { 'idempotency-key': `sign-job-${String(i).padStart(11, '0')}` } : {};
      const r = await call('POST', `${base}/api/license/validate`, { token: minted[from + i], origin: ORIGIN }, headers);
      if (r.status !== 200) refused++;
    });
    return refused;
  };
  const plain = Math.min(REDEMPTIONS, minted.length - KEYED);
  const refusedPlain = await redeem(0, plain, false);
  const mem4 = await usedMemory(redis);
  const plainCensus = await census(redis);
  say(`${plain} redemptions without a key (${refusedPlain} refused), no worker: used_memory +${mem4 - mem3} B, ` +
    `${((mem4 - mem3) / plain).toFixed(1)} B per redemption (its queued used event; marker "i" -> "u")`);
  const refusedKeyed = await redeem(plain, KEYED, true);
  const mem5 = await usedMemory(redis);
  const keyedCensus = await census(redis);
  say(`${KEYED} redemptions with an Idempotency-Key of 20 characters (${refusedKeyed} refused): used_memory +${mem5 - mem4} B, ` +
    `${((mem5 - mem4) / KEYED).toFixed(1)} B per keyed redemption (queued used event + idempotency record)`);

  const out = [
    `make bench-memory, ${new Date().toISOString()}, Redis ${/redis_version:(\S+)/.exec(await redis.info('server'))?.[1]}, ` +
      `${((Date.now() - started) / 1000).toFixed(0)} s`,
    ...lines.map((l) => `- ${l}`),
    report('After issuing (no worker: the issued events still queued):', issuedCensus),
    report(`After ${plain} redemptions without a key (no worker since the issued events were drained):`, plainCensus),
    report(`After ${KEYED} more with an Idempotency-Key:`, keyedCensus),
  ].join('\n');
  process.stdout.write(out + '\n');

  await Promise.all([redis.quit(), sql.end()]);
  stopAll([service, redisProc]);
  await setup.unsafe(`drop schema if exists ${SCHEMA} cascade`);
  await setup.end();
  rmSync(work, { recursive: true, force: true });
  process.exit(0);
}

main().catch((err: Error) => {
  process.stderr.write(`bench-memory failed: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
