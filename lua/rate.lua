--[[
  Count one request against a fixed-window rate limit.

    KEYS[1] rate-limit counter

    ARGV[1] limit per window (> 0)
    ARGV[2] window, ms

  Returns {0} when allowed, {1, ms until the window resets} when over the limit.
]]
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if count > tonumber(ARGV[1]) then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl < 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    ttl = tonumber(ARGV[2])
  end
  return {1, ttl}
end
return {0}
