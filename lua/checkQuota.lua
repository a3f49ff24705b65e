--[[
  check-quota, step one: count the request against the license key's limit, and read the
  version of the license's Redis copy, against which the instance's cached answer is
  checked: an answer built from an older version is never served, so an admin change is
  visible on the very next request, on every instance, with no message to miss.

    KEYS[1] rate-limit counter  {k:<licenseKey>}:rq
    KEYS[2] credentials hash    {k:<licenseKey>}:c   field v version of the license row, z fence

    ARGV[1] limit per window (0 = off)
    ARGV[2] window, ms

  Returns {DONE, version} when allowed (version "" when there is no copy or it is fenced:
  the caller reloads), {OVER_RATE_LIMIT, ms until the window resets} when over the limit.
  (Outcome names: src/redis/scripts.ts.)
]]
-- @include outcomes
-- @include rateLimit

local limit = tonumber(ARGV[1])
if limit > 0 then
  local wait = overRateLimit(KEYS[1], limit, ARGV[2])
  if wait then return {OVER_RATE_LIMIT, wait} end
end
local copy = redis.call('HMGET', KEYS[2], 'v', 'z')
if not copy[1] or copy[2] then return {DONE, ''} end
return {DONE, copy[1]}
