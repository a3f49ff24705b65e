import type { Redis } from 'ioredis';
import { isCluster, type RedisClient } from '../redis/client.js';
import { bucketOf, type KeySpace } from '../redis/keys.js';
import { runScript } from '../redis/scriptCall.js';
import { scripts } from '../redis/scriptBuilders.js';
import type { UsageEvent } from './events.js';
import type { UsedCounts } from './persist.js';

// The consumer group of the usage streams and the acknowledgement that takes a written
// batch out of it. One concern: the one call per stream (lua/ack.lua) that ends the events'
// life in Redis and, in the same script, corrects the Redis copies against what Postgres
// now counts; the worker creates the group and reads in it (src/usage/worker.ts).

/** The consumer group every usage worker reads the streams in. */
export const GROUP = 'usage';

/**
 * One call per stream (lua/ack.lua): acknowledge the batch's entries and trim them off
 * the stream (a worker killed in between leaves nothing acknowledged yet still counted as
 * lag), and drop the Redis copies of licenses whose used count is below what Postgres now
 * holds (only ever after Redis lost data: they are rebuilt from Postgres when next used). A single connection's calls leave in one write.
 */
export async function acknowledge(
  redis: RedisClient, keys: KeySpace, events: UsageEvent[], counts: UsedCounts, rebuild: ReadonlySet<string> = new Set(),
): Promise<void> {
  const byStream = new Map<string, { ids: string[]; licenses: string[]; floors: string[]; used: string[] }>();
  const of = (stream: string) => {
    let entry = byStream.get(stream);
    if (!entry) byStream.set(stream, (entry = { ids: [], licenses: [], floors: [], used: [] }));
    return entry;
  };
  for (const e of events) {
    const ids = of(e.stream).ids;
    // the events of one entry (src/usage/events.ts entryEvents) follow one another: its id once
    if (ids[ids.length - 1] !== e.id) ids.push(e.id);
  }
  for (const [firmaId, { counted, released }] of counts) {
    if (rebuild.has(firmaId)) continue;
    const bucket = bucketOf(firmaId);
    const entry = of(keys.streams[bucket] as string);
    entry.licenses.push(keys.licenseHash(firmaId, bucket));
    entry.floors.push(keys.floorOf(firmaId, bucket));
    entry.used.push(`${counted}:${released}`);
  }
  for (const firmaId of rebuild) {
    const bucket = bucketOf(firmaId);
    const entry = of(keys.streams[bucket] as string);
    entry.licenses.push(keys.licenseHash(firmaId, bucket));
    entry.floors.push(keys.floorOf(firmaId, bucket));
    entry.used.push('-');
  }
  const socket = isCluster(redis) ? undefined : (redis as Redis).stream as Redis['stream'] | undefined;
  socket?.cork();
  const acks = [...byStream].map(([stream, { ids, licenses, floors, used }]) =>
    runScript(redis, scripts.ack(stream, GROUP, ids, licenses, floors, used)));
  socket?.uncork();
  await Promise.all(acks);
}
