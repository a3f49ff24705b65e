--[[
  Count one request against a fixed-window rate limit.

    KEYS[1] rate-limit counter

    ARGV[1] limit per window (> 0)
    ARGV[2] window, ms

  Returns {0} when allowed, {1, ms until the window resets} when over the limit.
]]
-- @include rateLimit

local wait = overRateLimit(KEYS[1], tonumber(ARGV[1]), ARGV[2])
if wait then return {1, wait} end
return {0}
