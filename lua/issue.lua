--[[
  Issue one sign token (get-token, sign-token): checks the license and records the token.
  The steps are issueToken (includes/issueToken.lua).

    KEYS[1] license hash        {b}:l:<firmaId>
    KEYS[2] token markers       {b}:t:<expiry minute>
    KEYS[3] rate-limit counter  {b}:rs:<firmaId>
    KEYS[4] usage stream        {b}:ev
    KEYS[5] epoch               {b}:epoch (includes/epoch.lua)

    ARGV[1] now, ms since epoch
    ARGV[2] deadline, ms since epoch by Redis's clock ("0" = none; includes/deadline.lua)
    ARGV[3] rate limit per window (0 = off; get-token limits per license key before hashing)
    ARGV[4] rate window, ms
    ARGV[5] token id
    ARGV[6] firma id
    ARGV[7] imza tipi
    ARGV[8] token expiry, ms since epoch
    ARGV[9] when the marker hash expires, ms since epoch (after its last token, plus slack)

  Returns {code, a, b}: issueToken's result (codes listed in includes/issueToken.lua),
  or {12, 0, 0} (LATE) past the deadline, having changed nothing.
]]
-- @include deadline
-- @include epoch
-- @include rateLimit
-- @include issueToken

if pastDeadline(ARGV[2]) then return {12, 0, 0} end
local code, a, b = issueToken(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], tonumber(ARGV[3]), ARGV[4],
  ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9], issuedMark(KEYS[5]))
return {code, a, b}
