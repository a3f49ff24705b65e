import type { RedisClient } from '../redis/client.js';
import type { KeySpace } from '../redis/keys.js';

/**
 * Events written to the usage streams and not yet in Postgres (every worker's, wherever
 * it runs). Asked on a connection that is not blocked in XREADGROUP, it answers at once.
 */
export async function usageLag(redis: RedisClient, keys: KeySpace): Promise<number> {
  const lengths = await Promise.all(keys.streams.map((s) => redis.xlen(s)));
  return lengths.reduce((a, b) => a + b, 0);
}

/**
 * How long the oldest event not yet in Postgres has waited, in ms (0: none waits): the
 * lag in time, which is what a Redis lost without persistence would cost.
 */
export async function usageLagMs(redis: RedisClient, keys: KeySpace): Promise<number> {
  const firsts = await Promise.all(keys.streams.map((s) => redis.xrange(s, '-', '+', 'COUNT', 1)));
  let oldest = Infinity;
  for (const [entry] of firsts) if (entry) oldest = Math.min(oldest, Number(entry[0].split('-')[0]));
  return oldest === Infinity ? 0 : Math.max(0, Date.now() - oldest);
}
