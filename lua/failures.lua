--[[
  Failed get-tokens per client address (unknown keys and wrong passwords). Every attempt
  takes a slot before any work is done for it, and gives it back when it succeeds, so a
  burst sent at once cannot pass a check that is counted only afterwards. Fixed window,
  as rateLimit.lua.

    KEYS[1] failure counter  {a:<address>}:fg

    ARGV[1] "take" or "give" (the attempt succeeded)
    ARGV[2] failures allowed per window (> 0)
    ARGV[3] window, ms
    ARGV[4] deadline of a take, ms since epoch by Redis's clock ("0" = none; includes/deadline.lua):
            later, its request has had its 503, and no slot is taken

  The counter holds failures and attempts under way; a refused attempt is not counted.

  Returns {DONE} allowed (or given back), {OVER_RATE_LIMIT, ms until the window resets}.
]]
-- @include outcomes
-- @include deadline

if ARGV[1] == 'give' then
  if tonumber(redis.call('GET', KEYS[1]) or '0') > 0 then redis.call('DECR', KEYS[1]) end
  return {DONE}
end
if pastDeadline(ARGV[4]) then return {DONE} end
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  ttl = tonumber(ARGV[3])
end
if count <= tonumber(ARGV[2]) then return {DONE} end
-- refused: no work is done for it, so it is no failure either
redis.call('DECR', KEYS[1])
return {OVER_RATE_LIMIT, ttl}
