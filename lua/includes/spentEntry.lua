--[[
  How a call queues its redemptions on the usage stream. A redemption without a receipt is
  a line of one entry shared by the call's others when the caller says every reader takes
  such entries (ARGV[4] of the batch scripts, includes/batch.lua: src/usage/lineReaders.ts
  decides), else an entry of its own. An entry per call instead of per redemption costs
  Redis and the worker about a third as much per event (bench/README.md, findings). The
  lines waiting are written before any other event the call queues and at its end, so the
  stream keeps the order in which things happened (a forfeit after the redemptions before
  it: includes/packages.lua). Included by every script that includes packages.lua.

  queueSpent(stream, values, asLine) -> queues one redemption's values (EventValues.spent)
  flushSpent(stream) -> writes the lines waiting, as one entry "s" of a line each
]]
local spentLines = {}

local function flushSpent(stream)
  if #spentLines > 0 then
    redis.call('XADD', stream, '*', 's', table.concat(spentLines, '\n'))
    spentLines = {}
  end
end

local function queueSpent(stream, values, asLine)
  if asLine then
    spentLines[#spentLines + 1] = values
  else
    redis.call('XADD', stream, '*', 's', values)
  end
end
