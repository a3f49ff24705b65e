--[[
  Redeem one sign token (validate): the only place where quota is spent.

  Everything below runs atomically, so a token is spent at most once and quota never goes
  below zero, whatever the concurrency. The steps are redeemToken (includes/redeemToken.lua).

    KEYS[1] license hash        {b}:l:<firmaId>
    KEYS[2] token markers       {b}:t:<expiry minute>
    KEYS[3] rate-limit counter  {b}:rv:<firmaId>
    KEYS[4] usage stream        {b}:ev
    KEYS[5] epoch               {b}:epoch (includes/epoch.lua)

    ARGV[1] now, ms since epoch
    ARGV[2] deadline, ms since epoch by Redis's clock ("0" = none; includes/deadline.lua)
    ARGV[3] rate limit per window (0 = off)
    ARGV[4] rate window, ms
    ARGV[5] origin host name, normalised ("" = none)
    ARGV[6] token id
    ARGV[7] firma id
    ARGV[8] imza tipi
    ARGV[9] token iat, ms
    ARGV[10] origin as the client sent it (absent = none)

  Returns {code, a, b}: redeemToken's result (codes listed in includes/redeemToken.lua),
  or {12, 0, 0} (LATE) past the deadline, having changed nothing.
]]
-- @include deadline
-- @include epoch
-- @include rateLimit
-- @include redeemToken

if pastDeadline(ARGV[2]) then return {12, 0, 0} end
local code, a, b = redeemToken(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], tonumber(ARGV[3]), ARGV[4], ARGV[5],
  ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10], issuedMark(KEYS[5]))
return {code, a, b}
