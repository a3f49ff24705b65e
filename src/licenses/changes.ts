import { ServiceUnavailable } from '../errors.js';
import type { RedisClient } from '../redis/client.js';
import type { KeySpace } from '../redis/keys.js';
import type { AuditActor } from './audit.js';
import type { HotLicenses } from './hot.js';
import type { Passwords, Requester } from './passwords.js';
import { onlyWebhook, type LicenseChange, type LicenseStore, type NewLicense } from './store.js';
import type { LicenseRow } from './licenseRow.js';
import type { NewPackage, Purchase } from './purchases.js';

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
async function changeLicense<T extends string, R extends LicenseRow = LicenseRow>(
  store: LicenseStore,
  hot: HotLicenses,
  licenseKey: string,
  apply: (deadlineMs: number) => Promise<R | T | null>,
): Promise<R | T | null> {
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

/** A license as the admin API shows it: the Postgres row, with the counts and package balances of the Redis copy (ahead by the worker lag). */
export type LicenseView = LicenseRow;

/** New license or changes as the admin sends them: a password, not its hash. */
export type LicenseInput = Omit<NewLicense, 'passwordHash'> & { password: string };
export type LicenseEdit = Omit<LicenseChange, 'passwordHash'> & { password?: string };

/** The admin API's use cases (the admin API of /admin/openapi.json): Postgres first, then the Redis copy, then every instance. */
export class LicenseAdmin {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeySpace,
    private readonly store: LicenseStore,
    private readonly hot: HotLicenses,
    private readonly passwords: Passwords,
  ) {}

  /** null: the license key is taken. Every change is recorded with its actor in the audit log (./audit.ts). */
  async create(input: LicenseInput, requester: Requester, actor: AuditActor): Promise<LicenseView | null> {
    const { password, ...rest } = input;
    // before Postgres: an "unknown key" remembered in Redis must not outlive the create
    await this.redis.del(this.keys.unknownKey(input.licenseKey));
    const row = await this.store.create({ ...rest, passwordHash: await this.passwords.hash(password, requester) }, actor);
    if (row === null) return null;
    await this.hot.write(row); // no copy existed, so none can be stale if this fails
    // every instance learns of the key (src/licenses/knownKeys.ts)
    await this.redis.publish(this.keys.invalidationChannel, row.licenseKey);
    return this.view(row);
  }

  async read(licenseKey: string): Promise<LicenseView | null> {
    const row = await this.store.byKey(licenseKey);
    return row === null ? null : this.view(row);
  }

  /** null: no such license; 'unsigned': a webhook URL would be left without a secret (nothing changed). */
  async update(licenseKey: string, edit: LicenseEdit, requester: Requester, actor: AuditActor): Promise<LicenseView | 'unsigned' | null> {
    const { password, ...rest } = edit;
    const passwordHash = password === undefined ? undefined : await this.passwords.hash(password, requester);
    const change = { ...rest, passwordHash };
    // the webhook settings are the worker's, read from Postgres at each delivery: no Redis copy to fence or write
    const row = onlyWebhook(change)
      ? await this.store.update(licenseKey, change, null, actor)
      : await changeLicense<'unsigned'>(this.store, this.hot, licenseKey, (deadline) => this.store.update(licenseKey, change, deadline, actor));
    return row === null || row === 'unsigned' ? row : this.view(row);
  }

  /**
   * A purchase; with an idempotency key, a retry credits once (and says it is a replay).
   * 'reused': the key belongs to another purchase.
   */
  async addQuota(
    licenseKey: string, pkg: NewPackage, actor: AuditActor,
  ): Promise<(LicenseView & { replayed: boolean }) | 'reused' | null> {
    const { idempotencyKey } = actor;
    const row = await changeLicense<'reused', Purchase>(this.store, this.hot, licenseKey, (deadline) => this.store.addQuota(licenseKey, pkg, deadline, idempotencyKey, actor));
    return row === null || row === 'reused' ? row : { ...(await this.view(row)), replayed: row.replayed };
  }

  /** Rows as the admin API shows them (a page of the license list). */
  views(rows: readonly LicenseRow[]): Promise<LicenseView[]> {
    return Promise.all(rows.map((row) => this.view(row)));
  }

  private async view(row: LicenseRow): Promise<LicenseView> {
    const live = await this.hot.liveCounts(row.firmaId);
    if (live === null) return row;
    // a package Redis still holds shows its live balance, so the packages add up to the live
    // used count; one it no longer holds (expired) is as the worker wrote it
    const packages = row.packages.map((p) => {
      const left = live.packageLeft.get(p.no);
      return left === undefined ? p : { ...p, used: Math.max(0, p.amount - p.forfeited - Math.max(0, left)) };
    });
    return { ...row, totalQuota: live.totalQuota, usedQuota: live.usedQuota, packages };
  }
}
