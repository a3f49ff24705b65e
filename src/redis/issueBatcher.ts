import type { RedisClient } from './client.js';
import type { RedisClock } from './clock.js';
import type { RedisRestarts } from './restarts.js';
import { SlotBatcher, type BatchedScript, type ScriptReply, type SlotItem } from './slotBatcher.js';

/** One issuance's keys and arguments (lua/includes/issueToken.lua). */
export interface Issuance extends SlotItem {
  markers: string;
  markersExpireAt: number;
  limit: number;
  tokenId: string;
  firmaId: string;
  imzaTipi: number;
  expMs: number;
}

/** issue.lua, for the tokens of one slot and turn. */
const issueScript: BatchedScript<Issuance> = {
  name: 'issue',
  pushKeys: (into, r) => into.push(r.keys.license, r.markers, r.keys.rateSign),
  pushArgs: (into, r) => into.push(r.limit, r.tokenId, r.firmaId, r.imzaTipi, r.expMs, r.markersExpireAt),
};

/** Issuances, batched per hash slot and event-loop turn (src/redis/slotBatcher.ts). */
export class IssueBatcher {
  private readonly batcher: SlotBatcher<Issuance>;

  constructor(redis: RedisClient, windowMs: number, clock: RedisClock, restarts: RedisRestarts) {
    this.batcher = new SlotBatcher(redis, issueScript, windowMs, clock, restarts);
  }

  /** code, a, b of issueToken */
  issue(r: Issuance): Promise<ScriptReply> {
    return this.batcher.call(r);
  }
}
