--[[
  Fixed-window rate limit step, shared by the scripts that include it.
  rateStep(key, limit, windowMs) -> over, remaining, resetMs: counts one request. over is
  true when the count is past the limit; remaining is how many more the window allows,
  resetMs the ms until it resets (what the RateLimit fields of the answer say:
  src/routes/rateLimitFields.ts).
  ownLimit(own, default) -> the limit that applies to one license: its own, a field of the
  hash the script reads anyway (written from licenses.rate_* by sync.lua; "" or absent = the
  deployment's), else the default the caller gave (RATE_*_PER_MIN). Read where the count is
  made, so an admin change is in force on the next request of every process. A default
  below 0 (NOT_COUNTED in src/redis/outcomes.ts) means the caller does not count here at all,
  whatever the license says: it stays below 0.
]]
local function ownLimit(own, default)
  if default < 0 or not own or own == '' then return default end
  return tonumber(own)
end


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
