--[[
  Issue one sign token (get-token, sign-token): checks the license and records the token.

  The marker makes the token redeemable; the stream event puts it in the Postgres audit
  trail with status "issued". A refusal changes nothing but the rate-limit count.

    KEYS[1] license hash        {b}:l:<firmaId>
    KEYS[2] token markers       {b}:t:<expiry minute>   field token id: "i" issued, "u" used
    KEYS[3] rate-limit counter  {b}:rs:<firmaId>
    KEYS[4] usage stream        {b}:ev

    ARGV[1] now, ms since epoch
    ARGV[2] rate limit per window (0 = off; get-token limits per license key before hashing)
    ARGV[3] rate window, ms
    ARGV[4] token id
    ARGV[5] firma id
    ARGV[6] imza tipi
    ARGV[7] token expiry, ms since epoch
    ARGV[8] when the marker hash expires, ms since epoch (after its last token, plus slack)

  Returns {code, a, b}:
    0 OK                  a = remaining quota, b = organization name
    1 RATE_LIMITED        a = ms until the window resets
    4 LICENSE_MISS        the caller hydrates from Postgres and retries
    8 LICENSE_EXPIRED
    9 LICENSE_INACTIVE
    10 INSUFFICIENT_QUOTA a = remaining (0)
]]
-- @include rateLimit

local now = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])

if limit > 0 then
  local wait = overRateLimit(KEYS[3], limit, ARGV[3])
  if wait then return {1, wait} end
end

local lic = redis.call('HMGET', KEYS[1], 'q', 'u', 'a', 'x', 'n')
if not lic[1] then return {4} end
if tonumber(lic[4]) <= now then return {8} end
if lic[3] ~= '1' then return {9} end
local remaining = tonumber(lic[1]) - tonumber(lic[2])
if remaining <= 0 then return {10, 0} end

redis.call('HSET', KEYS[2], ARGV[4], 'i')
redis.call('PEXPIREAT', KEYS[2], ARGV[8])
redis.call('XADD', KEYS[4], '*', 'k', 'i', 't', ARGV[4], 'f', ARGV[5], 'i', ARGV[6], 's', ARGV[1], 'e', ARGV[7])
return {0, remaining, lic[5]}
