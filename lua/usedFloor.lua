--[[
  Raise licenses' used counts to at least what Postgres now holds, after the usage worker
  has written a batch. Redis counts every redemption before Postgres does, so its count is
  never legitimately lower; it is lower only after Redis lost data that the worker still
  wrote afterwards (a batch held in memory across the loss, or an AOF that lost its last
  second). Run in the transaction that acknowledges the batch.

    KEYS[i] license hash   {b}:l:<firmaId>   (one slot: the stream's bucket)

    ARGV[i] used quota Postgres holds for license i

  Returns the number of counts raised. A license Redis does not hold is left alone (it is
  rebuilt from Postgres when next used).
]]
local raised = 0
for i = 1, #KEYS do
  local used = redis.call('HGET', KEYS[i], 'u')
  if used and tonumber(used) < tonumber(ARGV[i]) then
    redis.call('HSET', KEYS[i], 'u', ARGV[i])
    raised = raised + 1
  end
end
return raised
