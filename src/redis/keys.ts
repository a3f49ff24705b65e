// Key layout. Every key starts with REDIS_PREFIX. Keys of one license share the hash tag
// of its bucket, {b}, together with that bucket's usage stream, so redeem.lua and
// issue.lua touch one slot on Redis Cluster. Credentials and per-key rate limits are
// found by license key (get-token, check-quota) and carry the tag {k:<licenseKey>}.

/** Number of usage streams; fixed for a deployment (changing it strands queued events). */
export const STREAM_BUCKETS = 16;

export function bucketOf(firmaId: string): number {
  // FNV-1a: firma ids are random, any even spread will do
  let h = 0x811c9dc5;
  for (let i = 0; i < firmaId.length; i++) {
    h ^= firmaId.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % STREAM_BUCKETS;
}

export interface LicenseKeys {
  license: string;
  rateValidate: string;
  rateSign: string;
  stream: string;
  tokenPrefix: string;
}

export class KeySpace {
  readonly invalidationChannel: string;
  readonly streams: string[];

  constructor(readonly prefix: string) {
    this.invalidationChannel = `${prefix}:invalidate`;
    this.streams = [];
    for (let b = 0; b < STREAM_BUCKETS; b++) this.streams.push(`${prefix}:{${b}}:ev`);
  }

  forLicense(firmaId: string): LicenseKeys {
    const tag = `${this.prefix}:{${bucketOf(firmaId)}}`;
    return {
      license: `${tag}:l:${firmaId}`,
      rateValidate: `${tag}:rv:${firmaId}`,
      rateSign: `${tag}:rs:${firmaId}`,
      stream: `${tag}:ev`,
      tokenPrefix: `${tag}:t:`,
    };
  }

  credentials(licenseKey: string): string {
    return `${this.prefix}:{k:${licenseKey}}:c`;
  }

  rateGetToken(licenseKey: string): string {
    return `${this.prefix}:{k:${licenseKey}}:rg`;
  }

  rateCheckQuota(licenseKey: string): string {
    return `${this.prefix}:{k:${licenseKey}}:rq`;
  }
}
