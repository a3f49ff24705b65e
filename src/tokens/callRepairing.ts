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
 * A batch script's call about a license, reloading the license from Postgres while the
 * script finds its copy missing or fenced (HotLicenses.retryOnMiss). A retry is the same
 * request, so its rate limit is not counted again. null: Postgres has no such license.
 */
export function callRepairing<T extends LicenseItem, R extends readonly [Outcome, ...unknown[]]>(
  hot: HotLicenses, batcher: SlotBatcher<T, R>, item: T,
): Promise<R | null> {
  return hot.retryOnMiss(item.firmaId, (retry) => batcher.call(retry && item.limit !== 0 ? { ...item, limit: 0 } : item), copyMissing);
}
