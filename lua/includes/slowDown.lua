--[[
  Failed-login budgets that slow down before they refuse (get-token). A budget allows
  `budget` failures per window and refills at that rate (GCRA: one state per subject,
  the theoretical arrival time TAT, ms since epoch). An attempt takes its place up front,
  before its password is checked, so concurrent attempts are counted; until it is checked
  the place is pending, in a sorted set beside the budget (attempt id -> ms its place may
  stay pending: its attempt is gone after that, and the place stays as a failure). A
  successful attempt gives its place back (failureGive), a failed one keeps it
  (failureSettle). Past the budget an attempt is not refused but held until its turn, one
  every window/budget ms, as long as that is at most maxDelay ms away; only beyond that is
  it refused.

  Only failures refuse an attempt, never attempts still being checked: when a place would
  be free without the pending ones, or only they push its turn past maxDelay, the attempt
  takes nothing and is told to WAIT: the caller asks again shortly (held, then, at most
  maxDelay less the time it has waited), and then finds places given back, or failures that
  hold it back or refuse it. With `force` (the caller has waited long enough for them) pending places
  count as taken, as failures would. So guesses stay at most `budget` at once and `budget`
  per window after, while correct logins behind the same subject wait for places to come
  back, never refused for attempts that have not failed.

  failureTake(key, pending, budget, windowMs, now, maxDelay, waited, attempt, pendingMs, force) -> delay, remaining, fullIn
    waited:      ms the attempt has already waited for pending places: it is held at most maxDelay - waited more
    delay >= 0:  go after delay ms (0: at once), place taken (pending under `attempt` for pendingMs)
    delay < 0:   refused, -delay ms until a new attempt would be held at most maxDelay; nothing taken
    delay WAIT:  every free place is pending: ask again; nothing taken
    remaining:   attempts the budget still allows at once; fullIn: ms until it is whole again
  failureGive(key, pending, budget, windowMs, now, attempt): the attempt succeeded (or was not made): its place back
  failureSettle(pending, attempt): the attempt failed: its place stays, no longer pending
]]
local WAIT = 'wait'

local function redisNow()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function intervalOf(budget, windowMs)
  local interval = math.floor(windowMs / budget)
  if interval < 1 then interval = 1 end
  return interval
end

local function failureTake(key, pending, budget, windowMs, now, maxDelay, waited, attempt, pendingMs, force)
  local interval = intervalOf(budget, windowMs)
  -- what is left of the longest hold once the attempt has waited; a refusal still says when a
  -- new attempt would be held at most maxDelay (at least 1 ms: at once)
  local allowance = maxDelay - waited
  if allowance < 0 then allowance = 0 end
  local span = interval * budget
  local tat = tonumber(redis.call('GET', key) or '0')
  if tat < now then tat = now end
  local delay = tat + interval - span - now
  if delay > 0 and not force then
    -- no free place now: what attempts still being checked hold may come back
    redis.call('ZREMRANGEBYSCORE', pending, '-inf', now)
    local checking = redis.call('ZCARD', pending)
    if checking > 0 then
      -- the delay as the failures alone set it: they refuse, or the attempt waits for the others
      local failed = tat - checking * interval
      if failed < now then failed = now end
      local failedDelay = failed + interval - span - now
      if failedDelay > allowance then return -math.max(1, failedDelay - maxDelay), 0, tat - now end
      if failedDelay <= 0 or delay > allowance then return WAIT, 0, tat - now end
    end
  end
  if delay > allowance then
    return -math.max(1, delay - maxDelay), 0, tat - now
  end
  tat = tat + interval
  redis.call('SET', key, string.format('%d', tat), 'PX', tat - now)
  redis.call('ZADD', pending, now + pendingMs, attempt)
  redis.call('PEXPIRE', pending, pendingMs)
  if delay < 0 then delay = 0 end
  local remaining = math.floor((now + span - tat) / interval)
  if remaining < 0 then remaining = 0 end
  return delay, remaining, tat - now
end

local function failureGive(key, pending, budget, windowMs, now, attempt)
  redis.call('ZREM', pending, attempt)
  local tat = tonumber(redis.call('GET', key) or '0') - intervalOf(budget, windowMs)
  if tat <= now then
    redis.call('DEL', key)
  else
    redis.call('SET', key, string.format('%d', tat), 'PX', tat - now)
  end
end

local function failureSettle(pending, attempt)
  redis.call('ZREM', pending, attempt)
end
