/**
 * check-quota answers, per license key, for QUOTA_CACHE_SECONDS. An entry is the rendered
 * answer without its timestamp, which is added when it is sent. Admin changes evict the
 * entry here and, through Redis pub/sub, on every other instance.
 */
export interface CachedAnswer {
  status: string;
  /** body up to the timestamp value: `...,"timestamp":"` */
  head: string;
  headers?: readonly (readonly [string, string])[];
  expiresAt: number;
}

const MAX_ENTRIES = 100_000;

export class QuotaCache {
  private readonly entries = new Map<string, CachedAnswer>();

  constructor(private readonly ttlMs: number) {}

  get enabled(): boolean {
    return this.ttlMs > 0;
  }

  get(licenseKey: string, now: number): CachedAnswer | undefined {
    const hit = this.entries.get(licenseKey);
    if (hit === undefined) return undefined;
    if (hit.expiresAt > now) return hit;
    this.entries.delete(licenseKey);
    return undefined;
  }

  set(licenseKey: string, answer: Omit<CachedAnswer, 'expiresAt'>, now: number): void {
    if (this.ttlMs === 0) return;
    if (this.entries.size >= MAX_ENTRIES) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(licenseKey, { ...answer, expiresAt: now + this.ttlMs });
  }

  evict(licenseKey: string): void {
    this.entries.delete(licenseKey);
  }
}
