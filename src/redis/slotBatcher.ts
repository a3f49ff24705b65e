import type { Redis } from 'ioredis';
import { isCluster, type RedisClient } from './client.js';
import type { RedisClock } from './clock.js';
import type { RedisRestarts } from './restarts.js';
import { STREAM_BUCKETS, type LicenseKeys } from './keys.js';

export type ScriptReply = (string | number | null)[];

/** What is batched: a call about one license, whose bucket is its hash slot. */
export interface SlotItem {
  keys: LicenseKeys;
}

/**
 * A script driven by SlotBatcher, laid out as lua/includes/batch.lua says (KEYS = stream,
 * epoch, then three keys per item; ARGV = now, rate window, deadline, then the item's
 * arguments; three values back per item, in order).
 */
export interface BatchedScript<T extends SlotItem, R> {
  name: 'redeem' | 'issue';
  pushKeys(into: (string | number)[], item: T): void;
  pushArgs(into: (string | number)[], item: T): void;
  /** item i's result, read from the script's reply (three values per item, from 3i) */
  result(reply: ScriptReply, i: number): R;
}

/** code, a, b per item (lua/includes/batch.lua) */
const RESULT_WIDTH = 3;
/** ScriptResult.LATE (./scripts.ts), as one item's result */
const LATE_REPLY: ScriptReply = [12, 0, 0];

interface Pending<T, R> {
  item: Readonly<T>;
  resolve(result: R): void;
  reject(err: unknown): void;
}

/** At most this many items per script call, so one call never holds Redis for long. */
const MAX_PER_CALL = 64;

/**
 * Calls go to Redis once per event-loop turn: the items of a turn that fall in one hash slot
 * become one call of the script (a lone item is a batch of one), and a single connection's
 * writes are corked so the turn's calls leave in one write.
 * Each call costs about 9 µs of server CPU and 8 µs of Redis CPU whatever it carries
 * (bench/README.md, Attempts), so tokens per call is what saves CPU on both sides.
 */
export class SlotBatcher<T extends SlotItem, R> {
  private readonly queues: Pending<T, R>[][] = [];
  private scheduled = false;
  private readonly flushBound = () => this.flush();

  constructor(
    private readonly redis: RedisClient,
    private readonly script: BatchedScript<T, R>,
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
    const { script } = this;
    const first = (part[0] as Pending<T, R>).item.keys;
    const args: (string | number)[] = [2 + 3 * part.length, first.stream, first.epoch];
    for (const p of part) script.pushKeys(args, p.item);
    args.push(now, this.windowMs, deadline);
    for (const p of part) script.pushArgs(args, p.item);
    this.redis[script.name](...(args as [number, ...(string | number)[]])).then((out) => {
      // past the deadline the script did nothing and answered one code for all
      const late = out.length < part.length * RESULT_WIDTH;
      for (let i = 0; i < part.length; i++) (part[i] as Pending<T, R>).resolve(late ? script.result(LATE_REPLY, 0) : script.result(out, i));
    }, (err: unknown) => {
      for (const p of part) p.reject(err);
    });
  }
}
