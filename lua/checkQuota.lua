--[[
  check-quota, step one: count the request against the license key's limit, and read the
  version of the license's Redis copy, against which the instance's cached answer is
  checked: an answer built from an older version is never served, so an admin change is
  visible on the very next request, on every instance, with no message to miss.

    KEYS[1] rate-limit counter  {k:<licenseKey>}:rq
    KEYS[2] credentials hash    {k:<licenseKey>}:c   field v version of the license row, z fence

    ARGV[1] limit per window (0 = off)
    ARGV[2] window, ms

  Returns {outcome, left, reset, version}: left and reset are what the rate-limit step
  counted (requests the window still allows, ms until it resets; 0, 0 when the limit is
  off); version is "" when there is no copy or it is fenced (the caller reloads), and when
  the outcome is OVER_RATE_LIMIT (names: src/redis/scripts.ts).
]]
-- @include outcomes
-- @include rateLimit

local limit = tonumber(ARGV[1])
local left, reset = 0, 0
if limit > 0 then
  local over
  over, left, reset = rateStep(KEYS[1], limit, ARGV[2])
  if over then return {OVER_RATE_LIMIT, 0, reset, ''} end
end
local copy = redis.call('HMGET', KEYS[2], 'v', 'z')
if not copy[1] or copy[2] then return {DONE, left, reset, ''} end
return {DONE, left, reset, copy[1]}
