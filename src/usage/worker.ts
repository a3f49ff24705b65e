import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Sql } from '../db/pg.js';
import type { Observe } from '../metrics/cells.js';
import { NO_METRICS, type Metrics } from '../metrics/registry.js';
import { isCluster, type RedisClient } from '../redis/client.js';
import type { KeySpace } from '../redis/keys.js';
import { GROUP } from './ack.js';
import { BatchWriter } from './batchWriter.js';
import { DeadLetters } from './deadLetters.js';
import { decodeEntry, type UsageEvent } from './events.js';
import { usageLag } from './lag.js';
import type { PartitionKeeper } from './partitionKeeper.js';

// The usage worker's loop: what it reads from the streams and when (its own pending
// events first after a failure, a dead consumer's claimed, batches paced by lingerMs and
// lingerEvents), its backoff, and its start and stop with what runs beside it. One concern:
// the reading side of the consumer group; what becomes of a batch once read is
// src/usage/batchWriter.ts.

const STOP_DRAIN_MS = 5000;

type StreamEntry = [id: string, fields: string[] | null];
type StreamReply = [key: string, entries: StreamEntry[]][] | null;

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
  private readonly writer: BatchWriter;
  private readonly batchSeconds: Observe;

  /** redis: a connection of its own, since reads block; metrics: where batches, events and failures are counted */
  constructor(
    private readonly redis: RedisClient,
    sql: Sql,
    private readonly keys: KeySpace,
    private readonly options: WorkerOptions,
    private readonly log: Logger,
    private readonly companion: Companion | null = null,
    private readonly metrics: Metrics = NO_METRICS,
    /** makes the days of the usage tables ahead and drops those past RETENTION_DAYS */
    private readonly partitions: PartitionKeeper | null = null,
  ) {
    this.deadLetters = new DeadLetters(redis, keys.deadLetters);
    this.writer = new BatchWriter(redis, sql, keys, this.deadLetters, options, log, metrics, {
      running: () => this.running,
      sleep: (ms) => this.sleep(ms),
    });
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
        await this.writer.flush(events);
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
      for (const [id, fields] of entries) out.push(...decodeEntry(stream, id, fields));
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
        for (const [id, fields] of entries) out.push(...decodeEntry(stream, id, fields));
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
