import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { KeySpace } from '../src/redis/keys.js';
import { batchCall, redeemLayout, type Redemption } from '../src/redis/batchScripts.js';
import { attachScripts } from '../src/redis/library.js';

// How ioredis is driven: CPU µs per redeemed token of this process (the client) and of Redis
// (INFO cpu), 64 calls in flight, each completion sending the next as the server does, for
// ways of passing the arguments, of receiving the reply, and of grouping tokens per call.
// Every token is refused at its marker lookup: the figures are the per-call costs around
// the script, which is what these choices change. Redis should run on another core.
// Run: taskset -c 0 node dist/bench/ioredis.js (REDIS_URL, IOREDIS_CALLS, IOREDIS_ROUNDS).
type Call = (...args: (string | number | Buffer)[]) => Promise<unknown>;

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { enableAutoPipelining: false });
attachScripts(redis);
const client = redis as unknown as { redeem: Call; redeemBuffer: Call };
const CALLS = Number(process.env.IOREDIS_CALLS ?? 100_000);
const ROUNDS = Number(process.env.IOREDIS_ROUNDS ?? 5);
const IN_FLIGHT = 64;

const firma = randomUUID();
const licenseKeys = new KeySpace('bench-io').forLicense(firma);
const redemption: Redemption = {
  keys: licenseKeys, markers: licenseKeys.markers(1795312340000).key, limit: 0, host: '', tokenId: randomUUID(),
  firmaId: firma, imzaTipi: 0, iatMs: 1795312340000, origin: null, idempotency: null, receiptPrefix: '',
};

/** A call of redeem.lua with n tokens, laid out by the service's builder, its arguments in the given form. */
function batch(n: number, form: 'as sent' | 'strings' | 'key buffers' = 'as sent', replies: 'strings' | 'buffers' = 'strings'): () => Promise<unknown> {
  const layout = () => batchCall(redeemLayout, Array.from({ length: n }, () => redemption), Date.now(), 60000, 0).args;
  const call = replies === 'buffers' ? client.redeemBuffer : client.redeem;
  const numKeys = 2 + 3 * n;
  const keyBuffers = layout().slice(1, 1 + numKeys).map((k) => Buffer.from(String(k)));
  if (form === 'strings') return () => call.call(redis, ...layout().map(String));
  if (form === 'key buffers') return () => call.call(redis, numKeys, ...keyBuffers, ...layout().slice(1 + numKeys));
  return () => call.call(redis, ...layout());
}

interface Variant { name: string; tokens: number; call: () => Promise<unknown> }
const variants: Variant[] = [
  { name: 'redeem: strings and numbers (as sent)', tokens: 1, call: batch(1) },
  { name: 'redeem: every argument a string', tokens: 1, call: batch(1, 'strings') },
  { name: 'redeem: keys as cached Buffers', tokens: 1, call: batch(1, 'key buffers') },
  { name: 'redeem: Buffer replies (redeemBuffer)', tokens: 1, call: batch(1, 'as sent', 'buffers') },
  { name: 'redeem: 2 tokens per call', tokens: 2, call: batch(2) },
  { name: 'redeem: 4 tokens per call', tokens: 4, call: batch(4) },
];

async function redisCpuMicros(): Promise<number> {
  const info = await redis.info('cpu');
  const field = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1e6;
}

/** µs per token: [client, Redis] */
async function measure(v: Variant): Promise<[number, number]> {
  const calls = Math.ceil(CALLS / v.tokens);
  let sent = 0;
  const redis0 = await redisCpuMicros();
  const start = process.cpuUsage();
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    while (sent < calls) {
      sent++;
      await v.call();
    }
  }));
  const used = process.cpuUsage(start);
  const redisUsed = (await redisCpuMicros()) - redis0;
  return [(used.user + used.system) / (calls * v.tokens), redisUsed / (calls * v.tokens)];
}

for (const v of variants) await measure(v); // warm up, and loads the scripts
const results = variants.map(() => ({ client: [] as number[], redis: [] as number[] }));
for (let round = 0; round < ROUNDS; round++) {
  for (let v = 0; v < variants.length; v++) {
    const [c, r] = await measure(variants[v] as Variant);
    results[v]!.client.push(c);
    results[v]!.redis.push(r);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const spread = (xs: number[]) => `${(((Math.max(...xs) - Math.min(...xs)) / median(xs)) * 100).toFixed(0)}%`;
const base = { client: median(results[0]!.client), redis: median(results[0]!.redis) };
process.stdout.write(`CPU µs per token, medians of ${ROUNDS} interleaved rounds of ${CALLS} tokens (ratio to the first row, spread)\n`);
for (let v = 0; v < variants.length; v++) {
  const { client: c, redis: r } = results[v]!;
  process.stdout.write(`${variants[v]!.name.padEnd(40)} client ${median(c).toFixed(2)} (${(median(c) / base.client).toFixed(2)}x, ${spread(c)})` +
    `  Redis ${median(r).toFixed(2)} (${(median(r) / base.redis).toFixed(2)}x, ${spread(r)})\n`);
}
await redis.quit();
