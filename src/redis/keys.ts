import { SIGN_TOKEN_SECONDS } from '../tokens/jwt.js';

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

/**
 * Token markers live in one hash per bucket and minute of token expiry, expiring as a
 * whole a little after the last of its tokens: Redis drops one key a minute per bucket
 * instead of reclaiming every token's key lazily, and a token costs a hash field instead
 * of a key with an expiry (figures in bench/README.md).
 */
export const MARKER_WINDOW_MS = 60_000;

/**
 * How long a token's marker outlives the token. Past its expiry a token is refused before
 * Redis is asked, so the marker only has to cover clock skew between servers; a marker gone
 * early makes its token refused (fail closed), never spent twice. A marker outlives its
 * token by up to a minute (MARKER_WINDOW_MS) plus this.
 */
export const MARKER_SLACK_MS = 10_000;

/**
 * Idempotency-Key records live in one hash per bucket and window of this length (by the
 * time of the redemption that claimed the key), a field each, so a record costs a hash field
 * and no key or expiry of its own (a key each cost Redis more per keyed redemption: bench/README.md).
 * A record lives as long as its token; a window is a token's life and the clock slack
 * between servers, so a live record is in the current window's hash or the one before, or,
 * claimed by a server whose clock is a little ahead, the one after: a call names all three.
 * A window's hash expires a window after its last claim.
 */
const DAY_MS = 86_400_000;

export const IDEMPOTENCY_WINDOW_MS = SIGN_TOKEN_SECONDS * 1000 + MARKER_SLACK_MS;

/** Where a validate's Idempotency-Key is recorded (lua/includes/redeemToken.lua). */
export interface IdempotencyRecord {
  /** the record hash of the redemption's window, where a first redemption claims its key */
  current: string;
  /** the window before's, whose records may still be alive */
  previous: string;
  /** the window after's: another server's clock a little ahead may have claimed the key there */
  later: string;
  /** the key's field in them: keys are the license's own */
  field: string;
}

export interface LicenseKeys {
  /** the stream bucket, which is also the hash tag of every key here */
  bucket: number;
  license: string;
  /** the license's packages with units left but its current one (lua/includes/packages.lua) */
  packages: string;
  rateValidate: string;
  rateSign: string;
  /** history and ledger pages read in the current window (lua/count.lua) */
  rateHistory: string;
  stream: string;
  /** the bucket's epoch, raised after a Redis restart that may have lost writes (src/redis/restarts.ts) */
  epoch: string;
  /** the run id of the Redis process the bucket was last verified on (lua/includes/server.lua, src/redis/restarts.ts) */
  stamp: string;
  /** Postgres's counts of the license when the worker last found no copy to compare (lua/ack.lua): no copy is made counting less (lua/sync.lua) */
  floor: string;
  /** the marker hash of tokens expiring at expMs, and when the hash itself expires */
  markers(expMs: number): { key: string; expiresAt: number };
  /** where Idempotency-Key `key` is recorded by a redemption at nowMs (IDEMPOTENCY_WINDOW_MS) */
  idempotency(key: string, nowMs: number): IdempotencyRecord;
  /** where a release's Idempotency-Key is recorded: apart from validate's and sign's, so a key of one never answers the other */
  releaseIdempotency(key: string, nowMs: number): IdempotencyRecord;
  /** the license's releases of the UTC day of nowMs (lua/release.lua), and when that counter expires */
  releasesToday(nowMs: number): { key: string; expiresAt: number };
}

export class KeySpace {
  readonly invalidationChannel: string;
  readonly streams: string[];
  /** every bucket's epoch key (LicenseKeys.epoch) */
  readonly epochs: string[];
  /** every bucket's stamp (LicenseKeys.stamp) */
  readonly stamps: string[];
  /** where versions before stamps kept the run id of the one Redis server (read once, to upgrade without raising the epochs) */
  readonly legacyRunId: string;
  /** usage events Postgres refused for good (src/usage/deadLetters.ts) */
  readonly deadLetters: string;

  constructor(readonly prefix: string) {
    this.invalidationChannel = `${prefix}:invalidate`;
    this.deadLetters = `${prefix}:dead`;
    this.legacyRunId = `${prefix}:runid`;
    this.streams = [];
    this.epochs = [];
    this.stamps = [];
    for (let b = 0; b < STREAM_BUCKETS; b++) {
      this.streams.push(`${prefix}:{${b}}:ev`);
      this.epochs.push(`${prefix}:{${b}}:epoch`);
      this.stamps.push(`${prefix}:{${b}}:node`);
    }
  }

  /** A license's floor (LicenseKeys.floor), for the worker. */
  floorOf(firmaId: string, bucket = bucketOf(firmaId)): string {
    return `${this.prefix}:{${bucket}}:fl:${firmaId}`;
  }

  /** A license's hash alone, of the bucket's stream (LicenseKeys.license; forLicense makes every key of the license). */
  licenseHash(firmaId: string, bucket = bucketOf(firmaId)): string {
    return `${this.prefix}:{${bucket}}:l:${firmaId}`;
  }

  forLicense(firmaId: string): LicenseKeys {
    return new LicenseKeyRing(this, firmaId, bucketOf(firmaId));
  }

  credentials(licenseKey: string): string {
    return `${this.prefix}:{k:${licenseKey}}:c`;
  }

  /** tokens issued by get-token for this key in the current window */
  rateGetToken(licenseKey: string): string {
    return `${this.prefix}:{k:${licenseKey}}:rg`;
  }

  /** failed get-tokens at this key from addresses not trusted there (lua/credentials.lua) */
  keyFailures(licenseKey: string): string {
    return `${this.prefix}:{k:${licenseKey}}:fk`;
  }

  /** failed get-tokens at this key from one address trusted there */
  pairFailures(licenseKey: string, client: string): string {
    return `${this.prefix}:{k:${licenseKey}}:fp:${client}`;
  }

  /** addresses that got a token for this key lately, with when (lua/loginGranted.lua) */
  trustedAddresses(licenseKey: string): string {
    return `${this.prefix}:{k:${licenseKey}}:ta`;
  }

  /** set for a while when Postgres has no such license key, so floods of unknown keys stay off Postgres */
  unknownKey(licenseKey: string): string {
    return `${this.prefix}:{k:${licenseKey}}:u`;
  }

  /** failed get-tokens of a client (src/http/clientAddress.ts addressBucket) */
  failures(client: string): string {
    return `${this.prefix}:{a:${client}}:fg`;
  }

  /** the places of a failure budget (failures, keyFailures, pairFailures) held by attempts still being checked */
  pendingOf(budget: string): string {
    return `${budget}:p`;
  }

  /**
   * check-quota's counter of one client (an address bucket, src/http/clientAddress.ts) for
   * one license key, so a stranger who knows the key spends only his own count; a client
   * whose address is unknown ("") is counted on the key's own counter.
   */
  rateCheckQuota(licenseKey: string, client: string): string {
    return client === '' ? `${this.prefix}:{k:${licenseKey}}:rq` : `${this.prefix}:{k:${licenseKey}}:rq:${client}`;
  }

  /** check-quota's answer for a license key, shared by every process (lua/checkQuota.lua, lua/quotaAnswer.lua) */
  quotaAnswer(licenseKey: string): string {
    return `${this.prefix}:{k:${licenseKey}}:qa`;
  }
}

/**
 * The keys of one license (KeySpace.forLicense), made for every request that names the
 * license: the keys a redemption sends are made at once, the bucket's stream and epoch are
 * the KeySpace's own strings, and the rest is made when asked for.
 */
class LicenseKeyRing implements LicenseKeys {
  readonly license: string;
  readonly packages: string;
  readonly rateValidate: string;
  readonly stream: string;
  readonly epoch: string;
  readonly stamp: string;
  private readonly tag: string;

  constructor(space: KeySpace, private readonly firmaId: string, readonly bucket: number) {
    this.tag = `${space.prefix}:{${bucket}}`;
    this.license = space.licenseHash(firmaId, bucket);
    this.packages = `${this.tag}:pk:${firmaId}`;
    this.rateValidate = `${this.tag}:rv:${firmaId}`;
    this.stream = space.streams[bucket] as string;
    this.epoch = space.epochs[bucket] as string;
    this.stamp = space.stamps[bucket] as string;
  }

  get floor(): string {
    return `${this.tag}:fl:${this.firmaId}`;
  }

  get rateSign(): string {
    return `${this.tag}:rs:${this.firmaId}`;
  }

  get rateHistory(): string {
    return `${this.tag}:rh:${this.firmaId}`;
  }

  markers(expMs: number): { key: string; expiresAt: number } {
    const window = Math.floor(expMs / MARKER_WINDOW_MS);
    return { key: `${this.tag}:t:${window}`, expiresAt: (window + 1) * MARKER_WINDOW_MS + MARKER_SLACK_MS };
  }

  idempotency(key: string, nowMs: number): IdempotencyRecord {
    const window = Math.floor(nowMs / IDEMPOTENCY_WINDOW_MS);
    // firma ids are base64url (LicenseStore.newFirmaId): no ':' in them
    return { current: `${this.tag}:ik:${window}`, previous: `${this.tag}:ik:${window - 1}`,
      later: `${this.tag}:ik:${window + 1}`, field: `${this.firmaId}:${key}` };
  }

  releaseIdempotency(key: string, nowMs: number): IdempotencyRecord {
    // a key is printable ASCII: a tab cannot be part of one
    return { ...this.idempotency(key, nowMs), field: `${this.firmaId}\trelease\t${key}` };
  }

  releasesToday(nowMs: number): { key: string; expiresAt: number } {
    const day = Math.floor(nowMs / DAY_MS);
    // kept a day past its own, for clocks a little apart
    return { key: `${this.tag}:rl:${this.firmaId}:${day}`, expiresAt: (day + 2) * DAY_MS };
  }
}
