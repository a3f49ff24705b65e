--[[
  Failed get-tokens per client address (unknown keys, and wrong passwords for keys the
  address is not trusted at: credentials.lua), a slow-down budget (includes/slowDown.lua):
  RATE_GET_TOKEN_FAILURES_PER_MIN at once and per minute after, each further attempt held
  for its turn up to the longest delay, refused beyond it. An attempt takes its place before
  any work is done for it; a successful one gives it back, a failed one settles it.

    KEYS[1] budget state (TAT)  {a:<address>}:fg; or, to give a place back or settle it, a key's
                                budget {k:<licenseKey>}:fk or :fp:<address> (credentials.lua)
    KEYS[2] its pending places  the same key followed by :p (includes/slowDown.lua)

    ARGV[1] "take", "give" (the attempt succeeded, or was not made) or "fail" (it failed)
    ARGV[2] failures per window (> 0)
    ARGV[3] window, ms
    ARGV[4] longest delay, ms
    ARGV[5] deadline of a take, ms since epoch by Redis's clock ("0" = none; includes/deadline.lua):
            later, its request has had its 503, and no place is taken
    ARGV[6] the attempt's id (its pending place)
    ARGV[7] how long a place may stay pending, ms
    ARGV[8] "1": take a place even if every free one is pending (the attempt has waited enough)
    ARGV[9] ms the attempt has waited for pending places (held at most ARGV[4] less this)

  Returns {DONE, delay ms (0: at once), remaining, ms until whole}
          {DONE, "wait", 0, ms until whole}: every free place is pending: ask again, nothing taken
          {OVER_RATE_LIMIT, ms until an attempt would be held no longer than the longest delay, 0, ms until whole}
]]
-- @include outcomes
-- @include deadline
-- @include slowDown

local now = redisNow()
local op, attempt = ARGV[1], ARGV[6]
if op == 'give' then
  failureGive(KEYS[1], KEYS[2], tonumber(ARGV[2]), tonumber(ARGV[3]), now, attempt)
  return {DONE, 0, 0, 0}
end
if op == 'fail' then
  failureSettle(KEYS[2], attempt)
  return {DONE, 0, 0, 0}
end
if pastDeadline(ARGV[5]) then return {DONE, 0, 0, 0} end
local delay, remaining, fullIn = failureTake(KEYS[1], KEYS[2], tonumber(ARGV[2]), tonumber(ARGV[3]), now, tonumber(ARGV[4]),
  tonumber(ARGV[9]), attempt, tonumber(ARGV[7]), ARGV[8] == '1')
if delay == WAIT then return {DONE, WAIT, 0, fullIn} end
if delay < 0 then return {OVER_RATE_LIMIT, -delay, 0, fullIn} end
return {DONE, delay, remaining, fullIn}
