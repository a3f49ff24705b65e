--[[
  Fixed-window rate limit step, shared by the scripts that include it.
  overRateLimit(key, limit, windowMs): counts one request; returns the ms until the window
  resets when the count is over the limit, nil while it is within.
]]
local function overRateLimit(key, limit, windowMs)
  local count = redis.call('INCR', key)
  if count == 1 then redis.call('PEXPIRE', key, windowMs) end
  if count <= limit then return nil end
  local ttl = redis.call('PTTL', key)
  if ttl < 0 then
    -- a counter without expiry would block forever: give it one
    redis.call('PEXPIRE', key, windowMs)
    ttl = tonumber(windowMs)
  end
  return ttl
end
