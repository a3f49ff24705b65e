// What the Lua scripts (lua/*.lua) answer, as names both sides read: the outcome codes
// (scriptSource puts them into every script as Lua constants), what a rate-limit step
// counted, and sync.lua's outcomes. One concern: the vocabulary of a script's verdict,
// shared by every caller whatever script it runs. (The letters of the hashes and events the
// scripts read and write are in ./fields.ts.)

/**
 * What happened, one name per state whichever script found it. The scripts read the same
 * names: scriptSource puts them into every script as Lua constants ("-- @include outcomes").
 */
export enum Outcome {
  DONE = 0,
  OVER_RATE_LIMIT = 1,
  /** no marker for a token we signed: Redis lost it, and perhaps its redemption with it */
  MARKER_MISSING = 2,
  /** redeemed already, or issued before a restart that may have lost its redemption (src/redis/restarts.ts) */
  TOKEN_SPENT = 3,
  /** no Redis copy of the license, or one fenced by an admin change (lua/fence.lua): reload from Postgres */
  COPY_MISSING = 4,
  LICENSE_EXPIRED = 5,
  LICENSE_INACTIVE = 6,
  ORIGIN_NOT_ALLOWED = 7,
  NO_QUOTA_LEFT = 8,
  /** Postgres has no such license (said so lately, or just now) */
  NO_SUCH_LICENSE = 9,
  /** the call reached Redis after its deadline and changed nothing (its client had its 503) */
  PAST_DEADLINE = 10,
  /** the token expired before it could be redeemed (found by the caller, never by a script) */
  TOKEN_EXPIRED = 11,
  /** the credentials (an access token, a password hash read) are of an older token generation: a password change or deactivation since */
  TOKEN_REVOKED = 12,
  /** validate: the Idempotency-Key was used with another token */
  IDEMPOTENCY_KEY_REUSED = 13,
  /** check-quota: an answer built from a version no longer current, or read too long ago, to be stored (lua/quotaAnswer.lua): read again */
  STALE_ANSWER = 14,
  /** release: the token was never redeemed (issued only, or unknown) */
  NOT_REDEEMED = 15,
  /** release: the token's unit was given back before */
  ALREADY_RELEASED = 16,
  /** release: past RELEASE_WINDOW_SECONDS after the redemption */
  RELEASE_WINDOW_PASSED = 17,
  /** release: the license's releasesPerDay is 0 */
  RELEASES_OFF = 18,
  /** release: the license's releases of the day are all used */
  RELEASE_ALLOWANCE_USED = 19,
  /** release: the package the unit came from has expired (the unit would only be forfeited) */
  PACKAGE_EXPIRED = 20,
}

/** What a rate-limit step counted (lua/includes/rateLimit.lua): requests the window still allows, ms until it resets; both 0 when the limit is off. */
export interface RateCount {
  remaining: number;
  resetMs: number;
  /**
   * The limit the step applied, where a license may have its own (ownLimit in
   * lua/includes/rateLimit.lua; 0: off, or nothing counted); absent: the deployment's, as
   * the RateLimitFields were made with (src/routes/rateLimitFields.ts).
   */
  limit?: number;
}

/**
 * A script's limit argument that counts nothing, whatever the license's own limit says: a
 * plain look-up, get-token's issuance (counted per key, not per license).
 */
export const NOT_COUNTED = -1;

/** What an answer says of a request no step counted: no RateLimit fields (the limit 0). */
export const NOTHING_COUNTED: RateCount = { remaining: 0, resetMs: 0, limit: 0 };

/** Outcomes of sync.lua, which writes a Postgres row into Redis (NOT_CREATED: no copy, and no used count to make one). */
export const enum SyncOutcome { UNCHANGED = 0, CREATED = 1, UPDATED = 2, NOT_CREATED = 3 }
