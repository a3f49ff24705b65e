import type { Redis } from 'ioredis';
import { isCluster, type RedisClient } from './client.js';
import type { RedisClock } from './clock.js';
import type { RedisRestarts } from './restarts.js';
import { STREAM_BUCKETS } from './keys.js';
import type { ReplicaWait } from './replicaWait.js';
import { functionOf } from './library.js';
import { batchArgs, batchResult, type BatchLayout, type SlotItem } from './batchScripts.js';

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
 * (bench/README.md, Findings behind the design), so tokens per call is what saves CPU.
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
    /** a call that meets a Redis process not yet verified recovers it and runs again */
    private readonly restarts: RedisRestarts,
    /** REDIS_WAIT_REPLICAS (redemptions only): answer once the replicas hold the turn's writes */
    private readonly replicaWait: ReplicaWait | null = null,
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
    this.scheduled = false;
    const now = Date.now();
    const deadline = this.clock.deadline(now);
    // a Cluster spreads the calls over several sockets: only a single connection is corked
    const single = isCluster(this.redis) ? null : this.redis as Redis;
    const socket = single?.stream as Redis['stream'] | undefined;
    // one WAIT after the turn's calls on the one connection; on a Cluster, one per call, on its node
    const turnWait = single !== null && this.replicaWait !== null ? new TurnWait() : null;
    socket?.cork();
    for (const queue of this.queues) {
      if (queue.length === 0) continue;
      for (let i = 0; i < queue.length; i += MAX_PER_CALL) this.send(queue.slice(i, i + MAX_PER_CALL), now, deadline, turnWait);
      queue.length = 0;
    }
    if (turnWait !== null && single !== null) turnWait.settle((this.replicaWait as ReplicaWait).afterTurn(single));
    socket?.uncork();
  }

  private send(part: Pending<T, R>[], now: number, deadline: number, turnWait: TurnWait | null): void {
    const { layout, replicaWait } = this;
    const count = part.length;
    const args = batchArgs(layout, count, (i) => (part[i] as Pending<T, R>).item, now, this.windowMs, deadline);
    const plain = () => this.redis[layout.name](...(args as [number, ...(string | number)[]]));
    // a call sent again after a recovery keeps its deadline (past it, it changes nothing) and, with
    // replicas to wait for, has its own WAIT: the turn's was sent before it. So the turn's own call
    // is a raw FCALL: one that finds no library is made again by fencedFrom, with its WAIT.
    const again = replicaWait === null ? plain : () => replicaWait.withCall(this.redis, layout.name, args);
    const first = turnWait !== null ? turnWait.after(this.redis.fcall(functionOf(layout.name), ...(args as [number, ...(string | number)[]])))
      : replicaWait !== null ? again() : plain();
    this.restarts.fencedFrom(first, again).then((reply) => {
      for (let i = 0; i < count; i++) (part[i] as Pending<T, R>).resolve(batchResult(layout, reply, i, count));
    }, (err: unknown) => {
      for (const p of part) p.reject(err);
    });
  }
}

/** The WAIT of one turn, which every call of the turn waits for before it is answered. */
class TurnWait {
  private acked: Promise<void> | null = null;
  private readonly waiting: (() => void)[] = [];

  /** the call's reply once the turn's WAIT has succeeded (the WAIT is sent after the calls) */
  after<V>(call: Promise<V>): Promise<V> {
    return new Promise<void>((resolve) => this.waiting.push(resolve)).then(() => Promise.all([call, this.acked])).then(([reply]) => reply);
  }

  settle(acked: Promise<void>): void {
    this.acked = acked;
    for (const go of this.waiting) go();
  }
}
