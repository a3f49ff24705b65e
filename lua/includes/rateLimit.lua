--[[
  Fixed-window rate limit step, shared by the scripts that include it.
  rateStep(key, limit, windowMs) -> over, remaining, resetMs: counts one request. over is
  true when the count is past the limit; remaining is how many more the window allows,
  resetMs the ms until it resets (what the RateLimit fields of the answer say:
  src/routes/rateLimitFields.ts).
]]
local function rateStep(key, limit, windowMs)
  local count = redis.call('INCR', key)
  local ttl
  if count == 1 then
    redis.call('PEXPIRE', key, windowMs)
    ttl = tonumber(windowMs)
  else
    ttl = redis.call('PTTL', key)
    if ttl < 0 then
      -- a counter without expiry would block forever: give it one
      redis.call('PEXPIRE', key, windowMs)
      ttl = tonumber(windowMs)
    end
  end
  local remaining = limit - count
  if remaining < 0 then remaining = 0 end
  return count > limit, remaining, ttl
end
