import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { connectPostgres } from '../../src/db/pg.js';
import { KeySpace } from '../../src/redis/keys.js';
import { usageLag } from '../../src/usage/lag.js';
import type { RedisClient } from '../../src/redis/client.js';
import { cpuMicros, postgresCpu } from './proc.js';
import { serviceEnv, startRedis, startService, stopAll, stopGracefully } from './services.js';
import { runWrk } from './wrk.js';
import { createLicenses } from './licenses.js';

// make profile-deployed: where the time goes as deployed. Validate at 64 connections against
// the service as `npm start` runs it (RUN_WORKER=0 for the request path alone), profiled
// with --cpu-prof (PROFILE_DIR), and beside it: how busy each core was, CPU per redemption
// of the server, Redis and Postgres, and Redis's own time per command (INFO commandstats).
const SERVER_CPU = process.env.BENCH_SERVER_CPU ?? '0';
const LOAD_CPU = process.env.BENCH_LOAD_CPU ?? '1';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const RUN_WORKER = process.env.RUN_WORKER ?? '1';
const PROFILE_DIR = process.env.PROFILE_DIR;
const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const REDIS_PORT = 6395;
const PORT = 9120;
const MINTER = 9121;

/** Busy and total jiffies of each CPU, from /proc/stat. */
function cores(): { busy: number; all: number }[] {
  return readFileSync('/proc/stat', 'utf8').split('\n').filter((l) => /^cpu\d/.test(l)).map((l) => {
    const f = l.split(/\s+/).slice(1, 9).map(Number) as number[];
    const [user, nice, system, , , irq, softirq, steal] = f as [number, number, number, number, number, number, number, number];
    return { busy: user + nice + system + irq + softirq + steal, all: f.reduce((a, b) => a + b, 0) };
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const work = mkdtempSync(path.join(tmpdir(), 'profile-deployed-'));
const setup = await connectPostgres(DATABASE_URL, 'public', 1);
await setup.unsafe('drop schema if exists bench cascade');
await setup.end();
const redis = await startRedis(LOAD_CPU, REDIS_PORT);
const env = serviceEnv(REDIS_PORT, DATABASE_URL, PORT);
const minter = await startService(LOAD_CPU, { ...env, PORT: String(MINTER) }, MINTER);
const service = await startService(SERVER_CPU, { ...env, RUN_WORKER }, PORT, PROFILE_DIR);
process.on('exit', () => stopAll([redis, minter, service]));
const base = `http://127.0.0.1:${MINTER}`;
const access = (await createLicenses(base, 32)).map((l) => l.access);
writeFileSync(path.join(work, 'access.txt'), access.join('\n') + '\n');
const mint = async (file: string) => {
  writeFileSync(file, '');
  await runWrk({ cpu: LOAD_CPU, url: `${base}/api/v1/auth/sign-token`, script: 'mint.lua', connections: 64, seconds: 3 * SECONDS, args: [path.join(work, 'access.txt'), file] });
  return file;
};
const client = new Redis(REDIS_PORT);
const keys = new KeySpace('bench');
const drained = async () => {
  while (RUN_WORKER !== '0' && (await usageLag(client as unknown as RedisClient, keys)) > 0) await sleep(20);
};
const validate = (tokens: string, seconds: number) => runWrk({ cpu: LOAD_CPU, url: `http://127.0.0.1:${PORT}/api/license/validate`,
  script: 'redeem.lua', connections: 64, seconds, args: [tokens, '1'] });

const [warm, tokens] = [await mint(path.join(work, 'warm.txt')), await mint(path.join(work, 'tokens.txt'))];
await drained();
await validate(warm, 2);
await drained();
await client.config('RESETSTAT');
const cores0 = cores();
const before = { server: cpuMicros(service.pid), redis: cpuMicros(redis.pid), pg: postgresCpu() };
const r = await validate(tokens, SECONDS);
const cores1 = cores();
await drained();
const n = r.requests;
const per = (now: number, then: number) => ((now - then) / n).toFixed(1);
const out = [
  `validate, 64 connections, ${SECONDS} s, ${RUN_WORKER === '0' ? 'request path alone (RUN_WORKER=0)' : 'as deployed (worker inside the server)'}:`,
  `  ${Math.round(r.rps)} req/s, p99 ${(r.p99 / 1000).toFixed(2)} ms`,
  `  busy during the load: ${cores1.map((c, i) => `cpu${i} ${((100 * (c.busy - (cores0[i]?.busy ?? 0))) / (c.all - (cores0[i]?.all ?? 0))).toFixed(0)} %`).join(', ')}`,
  `  CPU per redemption (to the end of the drain): server ${per(cpuMicros(service.pid), before.server)} µs, Redis ${per(cpuMicros(redis.pid), before.redis)} µs, ` +
    `Postgres ${per(postgresCpu(), before.pg)} µs`,
  '  Redis time per redemption by command (INFO commandstats; scripts include the commands they call):',
];
for (const line of (await client.info('commandstats')).split('\n')) {
  const m = /cmdstat_(\w+):calls=(\d+),usec=(\d+),usec_per_call=([\d.]+)/.exec(line);
  if (m && Number(m[3]) / n >= 0.05) out.push(`    ${(m[1] as string).padEnd(11)} ${(Number(m[3]) / n).toFixed(2)} µs (${m[2]} calls, ${m[4]} µs each)`);
}
process.stdout.write(out.join('\n') + '\n');
await client.quit();
await stopGracefully(service);
stopAll([redis, minter]);
rmSync(work, { recursive: true, force: true });
process.exit(0);
