--[[
  Issue one sign token (get-token, sign-token): checks the license and records the token.
  The steps are issueToken (includes/issueToken.lua).

    KEYS[1] license hash        {b}:l:<firmaId>
    KEYS[2] token markers       {b}:t:<expiry minute>
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

  Returns {code, a, b}: issueToken's result (codes listed in includes/issueToken.lua).
]]
-- @include rateLimit
-- @include issueToken

local code, a, b = issueToken(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], tonumber(ARGV[2]), ARGV[3],
  ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8])
return {code, a, b}
