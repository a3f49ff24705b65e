import { ScriptResult } from '../api/results.js';
import type { RedisClient } from '../redis/client.js';
import type { KeySpace } from '../redis/keys.js';
import type { KnownKeys } from './knownKeys.js';
import { encodeDomains } from './origin.js';
import type { LicenseRow, LicenseStore } from './store.js';

/** The live state of a license as the request path sees it (Redis, ahead of Postgres). */
export interface LiveLicense {
  firmaId: string;
  licenseKey: string;
  organizationName: string;
  totalQuota: number;
  usedQuota: number;
  expiryMs: number;
  isActive: boolean;
}

/** What get-token needs of a license key. */
export interface Credentials {
  firmaId: string;
  passwordHash: string;
}

/**
 * The Redis copy of the licenses: written from Postgres rows (hydration and admin changes,
 * both through sync.lua so they commute) and read back for check-quota and the admin API.
 */
export class HotLicenses {
  // license key -> firma id never changes once created, so it may be remembered forever
  private readonly firmaIds = new Map<string, string>();

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeySpace,
    private readonly store: LicenseStore,
    /** every license key there is: keys not in it are not looked up in Postgres */
    private readonly known: KnownKeys,
    /** how long Redis remembers that Postgres has no such key (UNKNOWN_KEY_CACHE_SECONDS) */
    private readonly unknownKeyMs: number,
  ) {}

  async write(row: LicenseRow): Promise<void> {
    const k = this.keys.forLicense(row.firmaId);
    await Promise.all([
      this.redis.del(this.keys.unknownKey(row.licenseKey)),
      this.redis.sync(k.license, row.version, row.usedQuota,
        'q', row.totalQuota, 'a', row.isActive ? '1' : '0', 'x', row.expiryDate.getTime(),
        'd', encodeDomains(row.domains), 'n', row.organizationName, 'k', row.licenseKey),
      this.redis.sync(this.keys.credentials(row.licenseKey), row.version, '',
        'f', row.firmaId, 'h', row.passwordHash),
    ]);
    this.firmaIds.set(row.licenseKey, row.firmaId);
    this.known.add(row.licenseKey);
  }

  /** Reloads one license from Postgres after a Redis miss; false when it does not exist. */
  async hydrateFirma(firmaId: string): Promise<boolean> {
    const row = await this.store.byFirmaId(firmaId);
    if (!row) return false;
    await this.write(row);
    return true;
  }

  /** The license from Postgres, written to Redis; its absence is remembered there for a while. */
  private async hydrateKey(licenseKey: string): Promise<LicenseRow | null> {
    const row = await this.store.byKey(licenseKey);
    if (row) await this.write(row);
    else if (this.unknownKeyMs > 0) await this.redis.set(this.keys.unknownKey(licenseKey), '1', 'PX', this.unknownKeyMs);
    return row;
  }

  /**
   * A license key's credentials, counting the attempt against `limit` per window first
   * (0: not counted): from Redis, else from Postgres. null: no such license; a key that
   * is not among the known keys, or that Redis remembers Postgres did not have, costs no
   * Postgres look-up. A number: rate limited for that many ms.
   */
  async credentials(licenseKey: string, limit = 0, windowMs = 60_000): Promise<Credentials | number | null> {
    const found = await this.redis.credentials(
      this.keys.credentials(licenseKey), this.keys.rateGetToken(licenseKey), this.keys.unknownKey(licenseKey), limit, windowMs,
    );
    const code = found[0] as ScriptResult;
    if (code === ScriptResult.OK) return { firmaId: String(found[1]), passwordHash: String(found[2]) };
    if (code === ScriptResult.RATE_LIMITED) return Number(found[1]);
    if (code === ScriptResult.LICENSE_UNKNOWN || !this.known.has(licenseKey)) return null;
    return this.hydrateKey(licenseKey);
  }

  async firmaIdOf(licenseKey: string): Promise<string | null> {
    const known = this.firmaIds.get(licenseKey);
    if (known !== undefined) return known;
    const found = await this.credentials(licenseKey);
    const firmaId = found === null || typeof found === 'number' ? null : found.firmaId;
    if (firmaId !== null) this.firmaIds.set(licenseKey, firmaId);
    return firmaId;
  }

  /** The live license, hydrating it once if Redis has lost it; null when it does not exist. */
  async read(licenseKey: string): Promise<LiveLicense | null> {
    const firmaId = await this.firmaIdOf(licenseKey);
    if (firmaId === null) return null;
    const key = this.keys.forLicense(firmaId).license;
    for (let attempt = 0; attempt < 2; attempt++) {
      const [q, u, a, x, n] = await this.redis.hmget(key, 'q', 'u', 'a', 'x', 'n');
      if (q != null) {
        return {
          firmaId, licenseKey, organizationName: n ?? '', totalQuota: Number(q), usedQuota: Number(u),
          expiryMs: Number(x), isActive: a === '1',
        };
      }
      if (!(await this.hydrateFirma(firmaId))) return null;
    }
    return null;
  }
}
