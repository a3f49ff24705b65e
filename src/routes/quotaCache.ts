import type { Headers } from '../http/reply.js';

/**
 * check-quota answers, per license key, for QUOTA_CACHE_SECONDS. An entry is the rendered
 * answer without its timestamp, which is added when it is sent, and the version of the
 * license it was built from: an entry older than the license's current version (an admin
 * change) is never served (lua/checkQuota.lua).
 */
export interface CachedAnswer {
  version: string;
  status: string;
  /** body up to the timestamp value: `...,"timestamp":"` */
  head: string;
  headers?: Headers;
  expiresAt: number;
}

const MAX_ENTRIES = 100_000;

export class QuotaCache {
  private readonly entries = new Map<string, CachedAnswer>();

  constructor(private readonly ttlMs: number) {}

  get(licenseKey: string, version: string, now: number): CachedAnswer | undefined {
    const hit = this.entries.get(licenseKey);
    if (hit === undefined) return undefined;
    if (hit.expiresAt > now && hit.version === version) return hit;
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
}
