--[[
  get-token, step one: count the attempt against the license key's limit, then read the
  credentials. The limit is counted before any password is hashed, so guessing is bounded.
  check-quota and history use it with no limit to find a key's firma id.

    KEYS[1] credentials hash    {k:<licenseKey>}:c   fields f firma id, h password hash, g token generation, z fence
    KEYS[2] rate-limit counter  {k:<licenseKey>}:rg
    KEYS[3] unknown-key marker  {k:<licenseKey>}:u   set when Postgres had no such key

    ARGV[1] rate limit per window (0 = off)
    ARGV[2] rate window, ms

  Returns {outcome, left, reset, ...}: left and reset are what the rate-limit step counted
  (attempts the window still allows, ms until it resets; 0, 0 when the limit is off).
  Outcomes (names: src/redis/scripts.ts):
    {DONE, left, reset, firmaId, passwordHash, generation ("0" when the copy has none)}
    {OVER_RATE_LIMIT, 0, ms until the window resets}
    {COPY_MISSING, left, reset}      no copy, or a fenced one (fence.lua): the caller reads Postgres
    {NO_SUCH_LICENSE, left, reset}   Postgres said so lately: no look-up
]]
-- @include outcomes
-- @include rateLimit

local limit = tonumber(ARGV[1])
local left, reset = 0, 0
if limit > 0 then
  local over
  over, left, reset = rateStep(KEYS[2], limit, ARGV[2])
  if over then return {OVER_RATE_LIMIT, 0, reset} end
end
local cred = redis.call('HMGET', KEYS[1], 'f', 'h', 'z', 'g')
if cred[1] and not cred[3] then return {DONE, left, reset, cred[1], cred[2], cred[4] or '0'} end
if redis.call('EXISTS', KEYS[3]) == 1 then return {NO_SUCH_LICENSE, left, reset} end
return {COPY_MISSING, left, reset}
