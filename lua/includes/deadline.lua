--[[
  pastDeadline(deadline) -> true when this call reached Redis after its sender stopped
  waiting for the answer: the client has answered 503 by then, so the call must change
  nothing (a Redis paused or cut off runs what was queued when it comes back).
    deadline  ms since epoch by Redis's clock (src/redis/clock.ts), "0" = none
]]
local function pastDeadline(deadline)
  local d = tonumber(deadline)
  if not d or d == 0 then return false end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) > d
end
