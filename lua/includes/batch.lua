--[[
  The loop of the batch scripts (redeem.lua, issue.lua), whose KEYS are the slot's stream
  and epoch (includes/epoch.lua), then four keys per token, then any keys that some tokens
  name beyond those (redeem.lua: idempotency keys), then last the slot's stamp
  (includes/server.lua), and whose ARGV are now, the rate window and the deadline, then
  argsPerToken arguments per token.
  eachToken(argsPerToken, width, step): calls step(k, v, mark) for every token in order, k
  the index of its first key in KEYS, v of its first argument in ARGV, mark the issued
  marker of this epoch; returns the steps' results (code, a, b, rate remaining, rate reset
  ms, the rate limit applied, and with width 7 one value more, "" when the step gave none)
  flattened into one list, width per token. Past the deadline (includes/deadline.lua) it changes nothing and
  returns {PAST_DEADLINE}; on a Redis process the slot's stamp does not name, it changes
  nothing and returns the error NEWSERVER (includes/server.lua).
]]
local function tokenCount(argsPerToken)
  return (#ARGV - 3) / argsPerToken
end

local function eachToken(argsPerToken, width, step)
  if pastDeadline(ARGV[3]) then return {PAST_DEADLINE} end
  if not onStampedServer(KEYS[#KEYS]) then return newServer() end
  local mark = issuedMark(KEYS[2])
  local out = {}
  for i = 1, tokenCount(argsPerToken) do
    local code, a, b, left, reset, limit, extra = step(4 * i - 1, argsPerToken * (i - 1) + 4, mark)
    out[#out + 1] = code
    out[#out + 1] = a
    out[#out + 1] = b
    out[#out + 1] = left
    out[#out + 1] = reset
    -- a nil would end the reply there (Lua tables end at their first nil)
    out[#out + 1] = limit or 0
    if width == 7 then out[#out + 1] = extra or '' end
  end
  return out
end
