// A license's own rate limits (sql/011_license_rate_limits.sql): what the admin API, the
// store and the audit log call them. The request path reads them from the Redis copies
// (src/licenses/rowCopy.ts lays them out, lua/includes/rateLimit.lua ownLimit reads them).

/** A license's own rate limits per minute, by the admin API's names: null is the deployment's default (RATE_*_PER_MIN), 0 no limit. */
export interface RateLimits {
  getToken: number | null;
  signToken: number | null;
  validate: number | null;
  checkQuota: number | null;
}

/** The column of each limit, in the admin API's order. */
export const RATE_LIMIT_COLUMNS: Record<keyof RateLimits, string> = {
  getToken: 'rate_get_token_per_min',
  signToken: 'rate_sign_token_per_min',
  validate: 'rate_validate_per_min',
  checkQuota: 'rate_check_quota_per_min',
};

/** Every limit the deployment's. */
export const DEFAULT_RATE_LIMITS: RateLimits = { getToken: null, signToken: null, validate: null, checkQuota: null };

/** A limit as a Redis copy holds it: "" for the deployment's (sync.lua writes only the fields it is given, so a reset is written, not removed). */
export const copiedLimit = (limit: number | null): string | number => limit ?? '';
