import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Sql } from '../db/pg.js';
import type { Count, Observe } from '../metrics/cells.js';
import { NO_METRICS, type Metrics } from '../metrics/registry.js';
import { isCluster, type RedisClient } from '../redis/client.js';
import { bucketOf, type KeySpace } from '../redis/keys.js';
import { DeadLetters, isPermanent, type Refused as RefusedEvent } from './deadLetters.js';
import { decodeEvent, type UsageEvent } from './events.js';
import { usageLag } from './lag.js';
import type { PartitionKeeper } from './partitionKeeper.js';
import { persistBatch, type UsedCounts } from './persist.js';
import { firmaOf, secondRedemptions } from './secondRedemptions.js';
import { runScript } from '../redis/scriptCall.js';
import { scripts } from '../redis/scriptBuilders.js';

export const GROUP = 'usage';
const STOP_DRAIN_MS = 5000;

type StreamEntry = [id: string, fields: string[] | null];
type StreamReply = [key: string, entries: StreamEntry[]][] | null;

type Refused = RefusedEvent<UsageEvent>;

export interface WorkerOptions {
  /** events read per stream at most (XREADGROUP COUNT) */
  batchSize: number;
  blockMs: number;
  claimIdleMs: number;
  /**
   * How long events may gather before a batch that is not full is read: one Postgres
   * statement and one acknowledgement per stream carry every event of the interval, so the
   * cost per event falls as the batch grows. It bounds the time an event waits for it; a
   * full batch is followed by the next read at once.
   */
  lingerMs: number;
  /**
   * Events a batch needs for its fixed costs to be small beside theirs: at a rate that
   * gathers them sooner than lingerMs, the worker lingers only that long, so batches stay
   * about this size and Postgres works in shorter bursts (a shorter stall for requests on
   * the same machine, and fewer events waiting at any time).
   */
  lingerEvents: number;
  /** quota.low webhooks at this percentage of the total left (WEBHOOK_QUOTA_LOW_PERCENT; default 10) */
  quotaLowPercent?: number;
}

/** What runs beside the worker and stops with it (the webhook sender: src/webhooks/worker.ts). */
export interface Companion {
  start(): void;
  /** while the worker writes what is queued */
  stop(timeoutMs: number): Promise<void>;
  /** once it has stopped writing: what it wrote with may be closed */
  stopped?(): Promise<void>;
}

/**
 * Moves usage events from the Redis streams to Postgres: one transaction per batch,
 * idempotent by token id; XACK (and XDEL, so the streams stay small) only after COMMIT.
 * Events stay in the streams while Postgres is down; a dead consumer's are reclaimed.
 */
export class UsageWorker {
  private running = false;
  private stopBy = Infinity;
  private ownPendingFirst = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private lastClaim = 0;
  /** the last read brought a stream's whole COUNT: more are waiting */
  private full = false;
  readonly consumer = `${hostname()}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  readonly deadLetters: DeadLetters;
  private readonly written: Count;
  private readonly deadLettered: Count;
  private readonly secondRedemptions: Count;
  private readonly batchSeconds: Observe;

  /** redis: a connection of its own, since reads block; metrics: where batches, events and failures are counted */
  constructor(
    private readonly redis: RedisClient,
    private readonly sql: Sql,
    private readonly keys: KeySpace,
    private readonly options: WorkerOptions,
    private readonly log: Logger,
    private readonly companion: Companion | null = null,
    private readonly metrics: Metrics = NO_METRICS,
    /** makes the days of the usage tables ahead and drops those past RETENTION_DAYS */
    private readonly partitions: PartitionKeeper | null = null,
  ) {
    this.deadLetters = new DeadLetters(redis, keys.deadLetters);
    this.written = metrics.usageWritten.series({});
    this.deadLettered = metrics.usageDeadLettered.series({});
    this.secondRedemptions = metrics.usageSecondRedemptions.series({});
    this.batchSeconds = metrics.usageBatchDuration.series({});
  }

  async start(): Promise<void> {
    await this.partitions?.start();
    await this.ensureGroups();
    this.running = true;
    this.loop = this.run();
    this.companion?.start();
  }

  /**
   * Stops reading and writes what is queued, for at most timeoutMs: a Postgres that does
   * not answer cannot hold the stop. What is left stays in Redis (a batch in hand stays
   * pending, and is reclaimed by the next worker).
   */
  async stop(timeoutMs = STOP_DRAIN_MS): Promise<void> {
    this.stopBy = Date.now() + timeoutMs;
    this.running = false;
    this.wake?.();
    let timer: NodeJS.Timeout | undefined;
    await Promise.all([
      Promise.race([this.loop, new Promise<void>((resolve) => { timer = setTimeout(resolve, timeoutMs); })]),
      this.companion?.stop(timeoutMs),
    ]);
    clearTimeout(timer);
    await this.partitions?.stop();
    await this.companion?.stopped?.();
    this.redis.disconnect();
  }

  /** Events written to the streams and not yet in Postgres. */
  lag(): Promise<number> {
    return usageLag(this.redis, this.keys);
  }

  /** From '0', so events written before the group existed (a Redis restart) are read too. */
  private async ensureGroups(): Promise<void> {
    for (const stream of this.keys.streams) {
      await this.redis.xgroup('CREATE', stream, GROUP, '0', 'MKSTREAM').catch((err: Error) => {
        if (!String(err.message).includes('BUSYGROUP')) throw err;
      });
    }
  }

  /**
   * Reads and persists until stopped; once stopping, goes on until the streams are empty
   * (the server has answered its last request by then), until the stop's deadline.
   */
  private async run(): Promise<void> {
    let backoff = 100;
    let lastReadAt = 0;
    for (;;) {
      if (Date.now() > this.stopBy) break;
      let events: UsageEvent[] = [];
      try {
        const readAt = Date.now();
        events = await this.next();
        if (events.length === 0) {
          if (!this.running) break;
          continue;
        }
        const flushedFrom = this.metrics.now();
        await this.flush(events);
        this.batchSeconds.observe((this.metrics.now() - flushedFrom) / 1000);
        backoff = 100;
        // the events read gathered since the read before: at that rate, lingerEvents take this long
        const gathering = (this.options.lingerEvents * Math.max(1, readAt - lastReadAt)) / events.length;
        lastReadAt = readAt;
        const linger = readAt + Math.min(this.options.lingerMs, gathering) - Date.now();
        if (this.running && !this.full && linger > 0) await this.sleep(linger);
      } catch (err) {
        if (!this.running) break; // what is left stays in Redis for the next worker
        this.metrics.dependencyError(err, 'worker');
        // a read that timed out may still have been served (a Redis paused, then resumed):
        // its events are ours and pending, so read our own pending ones first
        this.ownPendingFirst = true;
        const message = (err as Error).message;
        // Redis lost its data (restart without persistence, FLUSH): the groups must be made again
        if (message.includes('NOGROUP')) await this.ensureGroups().catch(() => {});
        this.log.warn({ err, pending: events.length }, 'usage worker: will retry');
        await this.sleep(backoff);
        backoff = Math.min(backoff * 2, 5000);
      }
    }
  }

  /**
   * Persists a batch, then acknowledges it. Transient failures are retried (while
   * stopping, a few times, then the batch stays pending for the next worker). When
   * Postgres refuses the batch for good, it is halved until each refused event stands
   * alone: every other event is written and each refused one becomes a dead letter, so
   * no batch is retried forever and no event is dropped unrecorded.
   */
  private async flush(events: UsageEvent[]): Promise<void> {
    const writable = events.filter((e) => e.kind !== 'bad' && e.kind !== 'gone');
    const counts: UsedCounts = new Map();
    const seconds: Refused[] = [];
    const refusedByPostgres = await this.persistIsolating(writable, counts, seconds);
    const refused: Refused[] = events
      .filter((e) => e.kind === 'bad')
      .map((event) => ({ event, error: 'malformed usage event', code: 'BAD_EVENT' }));
    refused.push(...refusedByPostgres);
    const rebuild = new Set<string>();
    for (const second of seconds) {
      rebuild.add(firmaOf(second));
      this.log.error({ stream: second.event.stream, id: second.event.id, error: second.error },
        'a second redemption of one token reached Postgres: not counted, kept as a dead letter, the license\'s Redis copy rebuilt');
    }
    this.secondRedemptions.inc(seconds.length);
    refused.push(...seconds);
    if (refused.length > 0) {
      await this.deadLetters.bury(refused);
      this.deadLettered.inc(refused.length);
      for (const { event, error, code } of refused) {
        this.log.warn({ stream: event.stream, id: event.id, code, error }, 'usage event refused for good: moved to dead letters');
      }
    }
    await this.ack(events, counts, rebuild);
    this.written.inc(writable.length - refusedByPostgres.length - seconds.length);
  }

  private async persistIsolating(events: UsageEvent[], counts: UsedCounts, seconds: Refused[]): Promise<Refused[]> {
    if (events.length === 0) return [];
    try {
      await this.persistRetrying(events, counts, seconds);
      return [];
    } catch (err) {
      if (!isPermanent(err)) throw err;
      if (events.length === 1) {
        const e = err as Error & { code: string };
        return [{ event: events[0] as UsageEvent, error: e.message, code: e.code }];
      }
      const half = events.length >> 1;
      return [...await this.persistIsolating(events.slice(0, half), counts, seconds), ...await this.persistIsolating(events.slice(half), counts, seconds)];
    }
  }

  /** Retries transient failures with backoff; throws a permanent one at once. */
  private async persistRetrying(events: UsageEvent[], counts: UsedCounts, seconds: Refused[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const written = await persistBatch(this.sql, events, this.options.quotaLowPercent);
        for (const [firmaId, c] of written.counts) {
          const before = counts.get(firmaId);
          counts.set(firmaId, before === undefined ? c
            : { counted: Math.max(c.counted, before.counted), released: Math.max(c.released, before.released) });
        }
        // committed: a failure from here on sends the batch again, which inserts nothing more and finds the same
        seconds.push(...await secondRedemptions(this.sql, events, written.redemptionsInserted));
        return;
      } catch (err) {
        if (isPermanent(err) || (!this.running && attempt >= 3)) throw err;
        this.metrics.dependencyError(err, 'worker');
        this.log.warn({ err, events: events.length }, 'usage worker: Postgres write failed, retrying');
        await this.sleep(Math.min(100 * 2 ** attempt, 5000));
      }
    }
  }

  /**
   * One call per stream (lua/ack.lua): acknowledge the batch's entries and trim them off
   * the stream (a worker killed in between leaves nothing acknowledged yet still counted as
   * lag), and drop the Redis copies of licenses whose used count is below what Postgres now
   * holds (only ever after Redis lost data: they are rebuilt from Postgres when next used). A single connection's calls leave in one write.
   */
  private async ack(events: UsageEvent[], counts: UsedCounts, rebuild: ReadonlySet<string> = new Set()): Promise<void> {
    const byStream = new Map<string, { ids: string[]; licenses: string[]; floors: string[]; used: string[] }>();
    const of = (stream: string) => {
      let entry = byStream.get(stream);
      if (!entry) byStream.set(stream, (entry = { ids: [], licenses: [], floors: [], used: [] }));
      return entry;
    };
    for (const e of events) of(e.stream).ids.push(e.id);
    for (const [firmaId, { counted, released }] of counts) {
      if (rebuild.has(firmaId)) continue;
      const bucket = bucketOf(firmaId);
      const entry = of(this.keys.streams[bucket] as string);
      entry.licenses.push(this.keys.licenseHash(firmaId, bucket));
      entry.floors.push(this.keys.floorOf(firmaId, bucket));
      entry.used.push(`${counted}:${released}`);
    }
    for (const firmaId of rebuild) {
      const bucket = bucketOf(firmaId);
      const entry = of(this.keys.streams[bucket] as string);
      entry.licenses.push(this.keys.licenseHash(firmaId, bucket));
      entry.floors.push(this.keys.floorOf(firmaId, bucket));
      entry.used.push('-');
    }
    const socket = isCluster(this.redis) ? undefined : (this.redis as Redis).stream as Redis['stream'] | undefined;
    socket?.cork();
    const acks = [...byStream].map(([stream, { ids, licenses, floors, used }]) =>
      runScript(this.redis, scripts.ack(stream, GROUP, ids, licenses, floors, used)));
    socket?.uncork();
    await Promise.all(acks);
  }

  private async next(): Promise<UsageEvent[]> {
    const now = Date.now();
    if (now - this.lastClaim >= Math.min(this.options.claimIdleMs, 5000)) {
      this.lastClaim = now;
      const claimed = await this.claim();
      if (claimed.length > 0) return claimed;
    }
    return this.read();
  }

  /** Takes over events another consumer read and never acknowledged (it died), and our own. */
  private async claim(): Promise<UsageEvent[]> {
    const out: UsageEvent[] = [];
    for (const stream of this.keys.streams) {
      const [, entries] = (await this.redis.xautoclaim(
        stream, GROUP, this.consumer, this.options.claimIdleMs, '0-0', 'COUNT', this.options.batchSize,
      )) as [string, StreamEntry[]];
      for (const [id, fields] of entries) out.push(decodeEvent(stream, id, fields));
      if (out.length >= this.options.batchSize) break;
    }
    this.full = out.length >= this.options.batchSize;
    return out;
  }

  /** New events ('>'), or after a failure this consumer's own pending ones ('0') until none is left. */
  private async read(): Promise<UsageEvent[]> {
    const { batchSize, blockMs } = this.options;
    const from = this.ownPendingFirst ? '0' : '>';
    let replies: StreamReply[];
    if (isCluster(this.redis)) {
      // streams live in different slots: one read each, then a pause when all were empty
      replies = await Promise.all(this.keys.streams.map((s) =>
        this.redis.xreadgroup('GROUP', GROUP, this.consumer, 'COUNT', batchSize, 'STREAMS', s, from) as Promise<StreamReply>));
      if (from === '>' && replies.every((r) => r === null) && this.running) await this.sleep(blockMs);
    } else {
      const ids = this.keys.streams.map(() => from);
      replies = [(await this.redis.xreadgroup(
        'GROUP', GROUP, this.consumer, 'COUNT', batchSize, 'BLOCK', blockMs, 'STREAMS', ...this.keys.streams, ...ids,
      )) as StreamReply];
    }
    const out: UsageEvent[] = [];
    this.full = false;
    for (const reply of replies) {
      for (const [stream, entries] of reply ?? []) {
        if (entries.length >= batchSize) this.full = true;
        for (const [id, fields] of entries) out.push(decodeEvent(stream, id, fields));
      }
    }
    if (from === '0' && out.length === 0) this.ownPendingFirst = false;
    return out;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wake = null;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
    });
  }
}
