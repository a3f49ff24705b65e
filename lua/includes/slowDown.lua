--[[
  Failed-login budgets that slow down before they refuse (get-token). A budget allows
  `budget` failures per window and refills at that rate (GCRA: one state per subject,
  the theoretical arrival time TAT, ms since epoch). An attempt takes its place up front,
  before its password is checked, so concurrent attempts are counted; a successful one
  gives its place back (failureGive). Past the budget an attempt is not refused but held
  until its turn, one every window/budget ms, as long as that is at most maxDelay ms away;
  only beyond that is it refused. So guesses stay at most `budget` at once and `budget`
  per window after, while a correct login behind the same subject is late, not locked out.

  failureTake(key, budget, windowMs, now, maxDelay) -> delay, remaining, fullIn
    delay >= 0: go after delay ms (0: at once), place taken
    delay < 0:  refused, -delay ms until an attempt would be held at most maxDelay; nothing taken
    remaining:  attempts the budget still allows at once; fullIn: ms until it is whole again
  failureGive(key, budget, windowMs, now): gives one place back
]]
local function failureTake(key, budget, windowMs, now, maxDelay)
  local interval = math.floor(windowMs / budget)
  if interval < 1 then interval = 1 end
  local span = interval * budget
  local tat = tonumber(redis.call('GET', key) or '0')
  if tat < now then tat = now end
  local delay = tat + interval - span - now
  if delay > maxDelay then
    return -(delay - maxDelay), 0, tat - now
  end
  tat = tat + interval
  redis.call('SET', key, string.format('%d', tat), 'PX', tat - now)
  if delay < 0 then delay = 0 end
  local remaining = math.floor((now + span - tat) / interval)
  if remaining < 0 then remaining = 0 end
  return delay, remaining, tat - now
end

local function failureGive(key, budget, windowMs, now)
  local interval = math.floor(windowMs / budget)
  if interval < 1 then interval = 1 end
  local tat = tonumber(redis.call('GET', key) or '0') - interval
  if tat <= now then
    redis.call('DEL', key)
  else
    redis.call('SET', key, string.format('%d', tat), 'PX', tat - now)
  end
end

local function redisNow()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
