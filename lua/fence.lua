--[[
  Fence the Redis copy of a license (its license hash or its credentials hash) before an
  admin change is written to Postgres. While fenced, the scripts treat the copy as missing
  (COPY_MISSING), so the request path reloads it from Postgres instead of serving what the
  change is replacing. The change lifts its fence when it writes the new copy (sync.lua);
  if that write never comes (Redis failed, the instance died), a hydration that read
  Postgres after the deadline lifts it (no change can commit after its deadline).

    KEYS[1] the hash to fence

    ARGV[1] deadline of the change, ms since epoch by Postgres's clock

  Fields: z changes in flight, zd the latest of their deadlines.
  Returns the number of changes in flight.
]]
local deadline = tonumber(ARGV[1])
local current = tonumber(redis.call('HGET', KEYS[1], 'zd') or '0')
if deadline > current then redis.call('HSET', KEYS[1], 'zd', ARGV[1]) end
return redis.call('HINCRBY', KEYS[1], 'z', 1)
