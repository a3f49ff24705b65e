--[[
  Failed get-tokens per client address (unknown keys and wrong passwords): "check" before
  any work is done for the address, "count" after a failure. Fixed window, as rateLimit.

    KEYS[1] failure counter  {a:<address>}:fg

    ARGV[1] "check" or "count"
    ARGV[2] failures allowed per window (> 0)
    ARGV[3] window, ms

  Returns {0} allowed (or counted), {1, ms until the window resets} when over the limit.
]]
if ARGV[1] == 'count' then
  local count = redis.call('INCR', KEYS[1])
  if count == 1 or redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
  return {0}
end
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if count < tonumber(ARGV[2]) then return {0} end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then ttl = tonumber(ARGV[3]) end
return {1, ttl}
