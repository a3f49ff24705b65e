import type { IdempotencyRecord, LicenseKeys } from './keys.js';
import { Outcome } from './outcomes.js';
import type { Args, Reply, ScriptCall } from './scriptCall.js';
import { outcomeOf } from './scriptReplies.js';

// The batch scripts, redeem.lua and issue.lua (lua/includes/batch.lua): what one item is,
// how a batch of a slot's items is laid out and how each item's result is read from the
// one reply. One concern: a batch call differs from every other call in being assembled
// item by item (SlotBatcher, src/redis/slotBatcher.ts, does it in two parts).

/** What a batch script is called about: one token of a license, whose bucket is its hash slot. */
export interface SlotItem {
  keys: LicenseKeys;
}

/** One redemption (lua/includes/redeemToken.lua). */
export interface Redemption extends SlotItem {
  markers: string;
  /** rate limit per window (0: off) unless the license has its own; NOT_COUNTED: not counted */
  limit: number;
  /** origin host, normalised ("" = none) */
  host: string;
  tokenId: string;
  firmaId: string;
  imzaTipi: number;
  iatMs: number;
  /** the origin as sent, or null */
  origin: string | null;
  /** its Idempotency-Key's record (LicenseKeys.idempotency), or null: sent without one */
  idempotency: IdempotencyRecord | null;
  /** sign: the receipt's payload up to its documents, which the script completes (src/routes/receipt.ts); "" for validate */
  receiptPrefix: string;
}

/** One issuance (lua/includes/issueToken.lua). */
export interface Issuance extends SlotItem {
  markers: string;
  markersExpireAt: number;
  /** rate limit per window (0: off) unless the license has its own; NOT_COUNTED: not counted (get-token) */
  limit: number;
  tokenId: string;
  firmaId: string;
  imzaTipi: number;
  expMs: number;
  /** the token generation of the caller's credentials, checked against the license's; "" = not checked */
  generation: string;
}

/** DONE: used, remaining; OVER_RATE_LIMIT: ms to wait; then what the rate-limit step counted and the limit it applied; then a sign's receipt (DONE; else "") */
export type Redeemed = [outcome: Outcome, a: number, b: number, rateRemaining: number, rateResetMs: number, rateLimit: number, receipt: string];
/** DONE: remaining quota, organization name; OVER_RATE_LIMIT: ms to wait; then what the rate-limit step counted and the limit it applied */
export type Issued = [outcome: Outcome, a: number, b: string, rateRemaining: number, rateResetMs: number, rateLimit: number];

/**
 * A batch script's layout (lua/includes/batch.lua): KEYS = the slot's stream and epoch,
 * then four per item, then the extra keys some items name; ARGV = now, rate window,
 * deadline, then the item's arguments; `width` values back per item, in order.
 */
export interface BatchLayout<T extends SlotItem, R> {
  name: 'redeem' | 'issue';
  /** values per item in the reply (eachToken's width) */
  width: 6 | 7;
  pushKeys(into: Args, item: T): void;
  /** keys beyond the four, pushed after every item's four */
  pushExtraKeys?(into: Args, item: T): void;
  pushArgs(into: Args, item: T): void;
  /** item i's result, read from the reply */
  result(reply: Reply, i: number): R;
}

export const redeemLayout: BatchLayout<Redemption, Redeemed> = {
  name: 'redeem',
  width: 7,
  pushKeys: (into, r) => into.push(r.keys.license, r.markers, r.keys.rateValidate, r.keys.packages),
  pushExtraKeys: (into, r) => {
    if (r.idempotency !== null) into.push(r.idempotency.current, r.idempotency.previous, r.idempotency.later);
  },
  pushArgs: (into, r) => into.push(r.limit, r.host, r.tokenId, r.firmaId, r.imzaTipi, r.iatMs, r.origin === null ? '' : `+${r.origin}`,
    r.idempotency === null ? '' : r.idempotency.field, r.receiptPrefix),
  result: (out, i) => [outcomeOf(out[7 * i]), Number(out[7 * i + 1]), Number(out[7 * i + 2]),
    Number(out[7 * i + 3]), Number(out[7 * i + 4]), Number(out[7 * i + 5]), String(out[7 * i + 6] ?? '')],
};

export const issueLayout: BatchLayout<Issuance, Issued> = {
  name: 'issue',
  width: 6,
  pushKeys: (into, r) => into.push(r.keys.license, r.markers, r.keys.rateSign, r.keys.packages),
  pushArgs: (into, r) => into.push(r.limit, r.tokenId, r.firmaId, r.imzaTipi, r.expMs, r.markersExpireAt, r.generation),
  result: (out, i) => [outcomeOf(out[6 * i]), Number(out[6 * i + 1]), String(out[6 * i + 2] ?? ''),
    Number(out[6 * i + 3]), Number(out[6 * i + 4]), Number(out[6 * i + 5])],
};

/** The arguments of a batch script's call (key count first) for `count` items of one slot, item(i) giving each. */
export function batchArgs<T extends SlotItem>(
  layout: BatchLayout<T, unknown>, count: number, item: (i: number) => T, nowMs: number, windowMs: number, deadlineMs: number,
): Args {
  const first = item(0).keys;
  const args: Args = [0, first.stream, first.epoch];
  for (let i = 0; i < count; i++) layout.pushKeys(args, item(i));
  if (layout.pushExtraKeys) for (let i = 0; i < count; i++) layout.pushExtraKeys(args, item(i));
  args.push(first.stamp);
  args[0] = args.length - 1;
  args.push(nowMs, windowMs, deadlineMs);
  for (let i = 0; i < count; i++) layout.pushArgs(args, item(i));
  return args;
}

const PAST_DEADLINE_REPLY: Reply = [Outcome.PAST_DEADLINE, 0, 0, 0, 0, 0, ''];

/** Item i's result in a batch script's reply of `count` items; a reply shorter than `width` per item came too late. */
export function batchResult<R>(layout: Pick<BatchLayout<never, R>, 'result' | 'width'>, reply: unknown, i: number, count: number): R {
  const out = reply as Reply;
  return out.length < count * layout.width ? layout.result(PAST_DEADLINE_REPLY, 0) : layout.result(out, i);
}

/** A batch script's call for items of one slot (bench/ and test/ use it; SlotBatcher uses the two parts above). */
export function batchCall<T extends SlotItem, R>(
  layout: BatchLayout<T, R>, items: readonly T[], nowMs: number, windowMs: number, deadlineMs: number,
): ScriptCall<R[]> {
  return {
    name: layout.name,
    args: batchArgs(layout, items.length, (i) => items[i] as T, nowMs, windowMs, deadlineMs),
    read: (reply) => items.map((_, i) => batchResult(layout, reply, i, items.length)),
  };
}
