import type { Redis } from 'ioredis';
import { isCluster, type RedisClient } from './client.js';
import type { RedisClock } from './clock.js';
import type { RedisRestarts } from './restarts.js';
import { STREAM_BUCKETS } from './keys.js';
import { batchArgs, batchResult, type BatchLayout, type SlotItem } from './scripts.js';

interface Pending<T, R> {
  item: Readonly<T>;
  resolve(result: R): void;
  reject(err: unknown): void;
}

/** At most this many items per script call, so one call never holds Redis for long. */
const MAX_PER_CALL = 64;

/**
 * Calls of a batch script (redeem.lua, issue.lua) go to Redis once per event-loop turn:
 * the items of a turn that fall in one hash slot become one call (a lone item is a batch
 * of one), and a single connection's writes are corked so the turn's calls leave in one
 * write. Every call costs about the same whatever it carries, on both sides
 * (bench/README.md, Attempts), so tokens per call is what saves CPU.
 */
export class SlotBatcher<T extends SlotItem, R> {
  private readonly queues: Pending<T, R>[][] = [];
  private scheduled = false;
  private readonly flushBound = () => this.flush();

  constructor(
    private readonly redis: RedisClient,
    private readonly layout: BatchLayout<T, R>,
    private readonly windowMs: number,
    private readonly clock: RedisClock,
    /** no script runs against a Redis that came back until it has been looked at */
    private readonly restarts: RedisRestarts,
  ) {
    for (let b = 0; b < STREAM_BUCKETS; b++) this.queues.push([]);
  }

  /** Queues an item for this turn's call of its slot; the item is read, never changed. */
  call(item: Readonly<T>): Promise<R> {
    return new Promise((resolve, reject) => {
      (this.queues[item.keys.bucket] as Pending<T, R>[]).push({ item, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(this.flushBound);
      }
    });
  }

  private flush(): void {
    if (!this.restarts.ready) {
      // stays scheduled: calls queue up behind the check
      this.restarts.ensure().then(this.flushBound, (err: unknown) => this.failAll(err));
      return;
    }
    this.scheduled = false;
    const now = Date.now();
    const deadline = this.clock.deadline(now);
    // a Cluster spreads the calls over several sockets: only a single connection is corked
    const socket = isCluster(this.redis) ? undefined : (this.redis as Redis).stream as Redis['stream'] | undefined;
    socket?.cork();
    for (const queue of this.queues) {
      if (queue.length === 0) continue;
      for (let i = 0; i < queue.length; i += MAX_PER_CALL) this.send(queue.slice(i, i + MAX_PER_CALL), now, deadline);
      queue.length = 0;
    }
    socket?.uncork();
  }

  private failAll(err: unknown): void {
    this.scheduled = false;
    for (const queue of this.queues) {
      for (const p of queue) p.reject(err);
      queue.length = 0;
    }
  }

  private send(part: Pending<T, R>[], now: number, deadline: number): void {
    const { layout } = this;
    const count = part.length;
    const args = batchArgs(layout, count, (i) => (part[i] as Pending<T, R>).item, now, this.windowMs, deadline);
    this.redis[layout.name](...(args as [number, ...(string | number)[]])).then((reply) => {
      for (let i = 0; i < count; i++) (part[i] as Pending<T, R>).resolve(batchResult(layout, reply, i, count));
    }, (err: unknown) => {
      for (const p of part) p.reject(err);
    });
  }
}
