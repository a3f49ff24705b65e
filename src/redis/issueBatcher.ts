import type { RedisClient } from './client.js';
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

/** issue.lua alone, issueMany.lua for the tokens of one slot and turn. */
const issueScripts: BatchedScript<Issuance> = {
  many: 'issueMany',
  one: (redis, r, now, windowMs) => redis.issue(r.keys.license, r.markers, r.keys.rateSign, r.keys.stream,
    now, r.limit, windowMs, r.tokenId, r.firmaId, r.imzaTipi, r.expMs, r.markersExpireAt),
  pushKeys: (into, r) => into.push(r.keys.license, r.markers, r.keys.rateSign),
  pushArgs: (into, r) => into.push(r.limit, r.tokenId, r.firmaId, r.imzaTipi, r.expMs, r.markersExpireAt),
};

/** Issuances, batched per hash slot and event-loop turn (src/redis/slotBatcher.ts). */
export class IssueBatcher {
  private readonly batcher: SlotBatcher<Issuance>;

  constructor(redis: RedisClient, windowMs: number) {
    this.batcher = new SlotBatcher(redis, issueScripts, windowMs);
  }

  /** code, a, b of issueToken */
  issue(r: Issuance): Promise<ScriptReply> {
    return this.batcher.call(r);
  }
}
