import type { Redis } from 'ioredis';
import { isCluster, type RedisClient } from './client.js';
import type { ScriptResult } from '../api/results.js';
import { STREAM_BUCKETS, type LicenseKeys } from './keys.js';

/** One redemption's keys and arguments (lua/includes/redeemToken.lua). */
export interface Redemption {
  keys: LicenseKeys;
  markers: string;
  limit: number;
  host: string;
  tokenId: string;
  firmaId: string;
  imzaTipi: number;
  iatMs: number;
  origin: string | null;
}

/** code, a, b of redeemToken */
export type RedeemResult = [code: ScriptResult, a: number, b: number];

interface Pending extends Redemption {
  resolve(result: RedeemResult): void;
  reject(err: unknown): void;
}

/** At most this many tokens per script call, so one call never holds Redis for long. */
const MAX_PER_CALL = 64;

/**
 * Redemptions go to Redis once per event-loop turn: the ones of a turn that fall in one
 * hash slot become one redeemMany.lua call, and a standalone connection's writes are corked
 * so the turn's calls leave in one write. A lone redemption is a plain redeem.lua call.
 * (Why: bench/README.md, Attempts.)
 */
export class RedeemBatcher {
  private readonly queues: Pending[][] = [];
  private scheduled = false;
  private readonly flushBound = () => this.flush();

  constructor(private readonly redis: RedisClient, private readonly windowMs: number) {
    for (let b = 0; b < STREAM_BUCKETS; b++) this.queues.push([]);
  }

  redeem(r: Redemption): Promise<RedeemResult> {
    return new Promise((resolve, reject) => {
      const p = r as Pending;
      p.resolve = resolve;
      p.reject = reject;
      (this.queues[r.keys.bucket] as Pending[]).push(p);
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(this.flushBound);
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const now = Date.now();
    // a Cluster spreads the calls over several sockets: only a single connection is corked
    const socket = isCluster(this.redis) ? undefined : (this.redis as Redis).stream as Redis['stream'] | undefined;
    socket?.cork();
    for (const queue of this.queues) {
      if (queue.length === 0) continue;
      if (queue.length === 1) this.sendOne(queue[0] as Pending, now);
      else for (let i = 0; i < queue.length; i += MAX_PER_CALL) this.sendMany(queue.slice(i, i + MAX_PER_CALL), now);
      queue.length = 0;
    }
    socket?.uncork();
  }

  private sendOne(p: Pending, now: number): void {
    const k = p.keys;
    const call = p.origin === null
      ? this.redis.redeem(k.license, p.markers, k.rateValidate, k.stream,
        now, p.limit, this.windowMs, p.host, p.tokenId, p.firmaId, p.imzaTipi, p.iatMs)
      : this.redis.redeem(k.license, p.markers, k.rateValidate, k.stream,
        now, p.limit, this.windowMs, p.host, p.tokenId, p.firmaId, p.imzaTipi, p.iatMs, p.origin);
    call.then((r) => p.resolve(r as unknown as RedeemResult), p.reject);
  }

  private sendMany(part: Pending[], now: number): void {
    const args: (string | number)[] = [1 + 3 * part.length, (part[0] as Pending).keys.stream];
    for (const p of part) args.push(p.keys.license, p.markers, p.keys.rateValidate);
    args.push(now, this.windowMs);
    for (const p of part) {
      args.push(p.limit, p.host, p.tokenId, p.firmaId, p.imzaTipi, p.iatMs, p.origin === null ? '' : `+${p.origin}`);
    }
    this.redis.redeemMany(...(args as [number, ...(string | number)[]])).then((out) => {
      for (let i = 0; i < part.length; i++) {
        (part[i] as Pending).resolve([out[3 * i] as number, out[3 * i + 1] as number, out[3 * i + 2] as number]);
      }
    }, (err: unknown) => {
      for (const p of part) p.reject(err);
    });
  }
}
