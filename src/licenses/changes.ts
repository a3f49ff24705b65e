import { ServiceUnavailable } from '../errors.js';
import type { HotLicenses } from './hot.js';
import type { LicenseRow, LicenseStore } from './store.js';

/**
 * How long an admin change may take from fencing the Redis copies to committing in
 * Postgres; past it Postgres refuses the change (src/licenses/store.ts), so a hydration
 * may lift the fence without missing it.
 */
export const CHANGE_DEADLINE_MS = 2000;

/**
 * An admin change to an existing license, never leaving Postgres and Redis split:
 *  1. fence the Redis copies (lua/fence.lua); if Redis cannot be reached, stop here: 503,
 *     nothing changed;
 *  2. change Postgres, before the deadline;
 *  3. write the new copies, lifting the fence.
 * If step 3 fails, the admin gets 503 but the change is made, and no instance serves the
 * old copy: while fenced, every request reloads from Postgres, and the first reload after
 * the deadline lifts the fence. `apply` answers the new row, null for "no such license",
 * or another outcome that changed nothing (which lifts the fence at once).
 */
export async function changeLicense<T extends string>(
  store: LicenseStore,
  hot: HotLicenses,
  licenseKey: string,
  apply: (deadlineMs: number) => Promise<LicenseRow | T | null>,
): Promise<LicenseRow | T | null> {
  const target = await store.locate(licenseKey);
  if (target === null) return null;
  const deadline = target.nowMs + CHANGE_DEADLINE_MS;
  await hot.fence(target.firmaId, licenseKey, deadline);
  const outcome = await apply(deadline);
  if (outcome !== null && typeof outcome === 'object') {
    await hot.write(outcome, true);
    return outcome;
  }
  const current = await store.byKey(licenseKey);
  if (current === null) return null; // deleted meanwhile: nothing to serve, the fence is moot
  if (outcome === null) {
    // the deadline passed before Postgres ran the change: nothing changed, the fence lifts by itself
    throw new ServiceUnavailable('admin change missed its deadline');
  }
  await hot.write(current, true);
  return outcome;
}
