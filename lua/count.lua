--[[
  One request counted against a fixed-window limit (includes/rateLimit.lua), for a route
  whose limit is the only thing it asks Redis: history, whose pages are read from Postgres.
  The limit is checked before the Postgres reads, so a client paging hard is refused here
  and its load never reaches the database the other endpoints' usage is written to.

    KEYS[1] rate-limit counter  {b}:rh:<firmaId> (history pages of one license)

    ARGV[1] limit per window (> 0: a caller whose limit is off does not call)
    ARGV[2] window, ms

  Returns {DONE, left, reset}: counted, within the limit; left: requests the window still
          allows, reset: ms until it resets (what the RateLimit fields say)
          {OVER_RATE_LIMIT, 0, reset}: counted, past the limit; wait reset ms
  (names: src/redis/outcomes.ts)
]]
-- @include outcomes
-- @include rateLimit

local over, left, reset = rateStep(KEYS[1], tonumber(ARGV[1]), ARGV[2])
if over then return {OVER_RATE_LIMIT, 0, reset} end
return {DONE, left, reset}
