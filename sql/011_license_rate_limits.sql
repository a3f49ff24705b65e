-- A license's own rate limits, per minute, over the deployment's RATE_*_PER_MIN: a large
-- hospital validates more than 100 times a minute, a small clinic fewer. null: the
-- deployment's default; 0: no limit for this license. Copied into the Redis hashes the
-- limits are counted from (src/licenses/hot.ts), where the scripts read them on every
-- request (lua/includes/rateLimit.lua ownLimit), so a change is in force on the next one.
alter table licenses
  add column rate_get_token_per_min integer check (rate_get_token_per_min >= 0),
  add column rate_sign_token_per_min integer check (rate_sign_token_per_min >= 0),
  add column rate_validate_per_min integer check (rate_validate_per_min >= 0),
  add column rate_check_quota_per_min integer check (rate_check_quota_per_min >= 0);
