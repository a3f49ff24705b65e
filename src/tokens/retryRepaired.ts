import type { HotLicenses } from '../licenses/hot.js';
import { Outcome } from '../redis/outcomes.js';
import type { SlotItem } from '../redis/batchScripts.js';
import type { SlotBatcher } from '../redis/slotBatcher.js';

interface LicenseItem extends SlotItem {
  firmaId: string;
}

const copyMissing = (result: readonly [Outcome, ...unknown[]]): boolean => result[0] === Outcome.COPY_MISSING;

/**
 * After a batch script found a license's copy missing or fenced (COPY_MISSING): the call
 * again, once the license is reloaded from Postgres (HotLicenses.retryAfterMiss). The
 * scripts count a request only once they find the copy, which holds the license's own limit,
 * so the call that answers is the one that counted it. null: Postgres has no such license.
 */
export function retryRepaired<T extends LicenseItem, R extends readonly [Outcome, ...unknown[]]>(
  hot: HotLicenses, batcher: SlotBatcher<T, R>, item: T,
): Promise<R | null> {
  return hot.retryAfterMiss(item.firmaId, () => batcher.call(item), copyMissing);
}
