--[[
  Redeem one sign token (validate): the only place where quota is spent.

  Everything below runs atomically, so a token is spent at most once and quota never goes
  below zero, whatever the concurrency. The steps are redeemToken (includes/redeemToken.lua).

    KEYS[1] license hash        {b}:l:<firmaId>
    KEYS[2] token markers       {b}:t:<expiry minute>
    KEYS[3] rate-limit counter  {b}:rv:<firmaId>
    KEYS[4] usage stream        {b}:ev

    ARGV[1] now, ms since epoch
    ARGV[2] rate limit per window (0 = off)
    ARGV[3] rate window, ms
    ARGV[4] origin host name, normalised ("" = none)
    ARGV[5] token id
    ARGV[6] firma id
    ARGV[7] imza tipi
    ARGV[8] token iat, ms
    ARGV[9] origin as the client sent it (absent = none)

  Returns {code, a, b}: redeemToken's result (codes listed in includes/redeemToken.lua).
]]
-- @include rateLimit
-- @include redeemToken

local code, a, b = redeemToken(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4],
  ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9])
return {code, a, b}
