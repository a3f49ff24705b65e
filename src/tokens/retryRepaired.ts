import type { HotLicenses } from '../licenses/hot.js';
import { Outcome, type SlotItem } from '../redis/scripts.js';
import type { SlotBatcher } from '../redis/slotBatcher.js';

interface LicenseItem extends SlotItem {
  firmaId: string;
  /** rate limit per window (0: not counted) */
  limit: number;
}

const copyMissing = (result: readonly [Outcome, ...unknown[]]): boolean => result[0] === Outcome.COPY_MISSING;

/**
 * After a batch script found a license's copy missing or fenced (COPY_MISSING): the call
 * again, once the license is reloaded from Postgres (HotLicenses.retryAfterMiss). A retry
 * is the same request, so its rate limit is not counted again. null: Postgres has no such
 * license.
 */
export function retryRepaired<T extends LicenseItem, R extends readonly [Outcome, ...unknown[]]>(
  hot: HotLicenses, batcher: SlotBatcher<T, R>, item: T,
): Promise<R | null> {
  const retry = item.limit === 0 ? item : { ...item, limit: 0 };
  return hot.retryAfterMiss(item.firmaId, () => batcher.call(retry), copyMissing);
}
