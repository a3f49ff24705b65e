import { scriptResult, type ScriptResult } from './scripts.js';
import type { RedisClient } from './client.js';
import type { RedisClock } from './clock.js';
import type { RedisRestarts } from './restarts.js';
import { SlotBatcher, type BatchedScript, type SlotItem } from './slotBatcher.js';

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

/** code, a, b of issueToken: OK's a is the remaining quota, b the organization name */
export type IssueResult = [code: ScriptResult, a: number, b: string];

/** issue.lua, for the tokens of one slot and turn. */
const issueScript: BatchedScript<Issuance, IssueResult> = {
  name: 'issue',
  pushKeys: (into, r) => into.push(r.keys.license, r.markers, r.keys.rateSign),
  pushArgs: (into, r) => into.push(r.limit, r.tokenId, r.firmaId, r.imzaTipi, r.expMs, r.markersExpireAt),
  result: (out, i) => [scriptResult(out[3 * i]), Number(out[3 * i + 1]), String(out[3 * i + 2] ?? '')],
};

export type IssueBatcher = SlotBatcher<Issuance, IssueResult>;

/** Issuances, batched per hash slot and event-loop turn (src/redis/slotBatcher.ts). */
export function issueBatcher(redis: RedisClient, windowMs: number, clock: RedisClock, restarts: RedisRestarts): IssueBatcher {
  return new SlotBatcher(redis, issueScript, windowMs, clock, restarts);
}
