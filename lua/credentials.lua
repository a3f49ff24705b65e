--[[
  get-token, step one: count the attempt against the license key's limit, then read the
  credentials. The limit is counted before any password is hashed, so guessing is bounded.
  check-quota and history use it with no limit to find a key's firma id.

    KEYS[1] credentials hash    {k:<licenseKey>}:c   fields f firma id, h password hash, z fence
    KEYS[2] rate-limit counter  {k:<licenseKey>}:rg
    KEYS[3] unknown-key marker  {k:<licenseKey>}:u   set when Postgres had no such key

    ARGV[1] rate limit per window (0 = off)
    ARGV[2] rate window, ms

  Returns (outcome names: src/redis/scripts.ts):
    {DONE, firmaId, passwordHash}
    {OVER_RATE_LIMIT, ms until the window resets}
    {COPY_MISSING}      no copy, or a fenced one (fence.lua): the caller reads Postgres
    {NO_SUCH_LICENSE}   Postgres said so lately: no look-up
]]
-- @include outcomes
-- @include rateLimit

local limit = tonumber(ARGV[1])
if limit > 0 then
  local wait = overRateLimit(KEYS[2], limit, ARGV[2])
  if wait then return {OVER_RATE_LIMIT, wait} end
end
local cred = redis.call('HMGET', KEYS[1], 'f', 'h', 'z')
if cred[1] and not cred[3] then return {DONE, cred[1], cred[2]} end
if redis.call('EXISTS', KEYS[3]) == 1 then return {NO_SUCH_LICENSE} end
return {COPY_MISSING}
