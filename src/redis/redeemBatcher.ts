import { scriptResult, type ScriptResult } from './scripts.js';
import type { RedisClient } from './client.js';
import type { RedisClock } from './clock.js';
import type { RedisRestarts } from './restarts.js';
import { SlotBatcher, type BatchedScript, type SlotItem } from './slotBatcher.js';

/** One redemption's keys and arguments (lua/includes/redeemToken.lua). */
export interface Redemption extends SlotItem {
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

/** redeem.lua, for the tokens of one slot and turn. */
const redeemScript: BatchedScript<Redemption, RedeemResult> = {
  name: 'redeem',
  pushKeys: (into, r) => into.push(r.keys.license, r.markers, r.keys.rateValidate),
  pushArgs: (into, r) => into.push(r.limit, r.host, r.tokenId, r.firmaId, r.imzaTipi, r.iatMs, r.origin === null ? '' : `+${r.origin}`),
  result: (out, i) => [scriptResult(out[3 * i]), Number(out[3 * i + 1]), Number(out[3 * i + 2])],
};

export type RedeemBatcher = SlotBatcher<Redemption, RedeemResult>;

/** Redemptions, batched per hash slot and event-loop turn (src/redis/slotBatcher.ts). */
export function redeemBatcher(redis: RedisClient, windowMs: number, clock: RedisClock, restarts: RedisRestarts): RedeemBatcher {
  return new SlotBatcher(redis, redeemScript, windowMs, clock, restarts);
}
