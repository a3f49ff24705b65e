--[[
  Write the Postgres copy of a license (or of its credentials) into Redis: used by
  hydration after a miss and by every admin change, after Postgres has committed.

  Versions make the two commute: whichever of a hydration (old row) and an admin change
  (new row) lands last, the newest version wins. The used counter is set only when the
  hash is created, because the Redis copy of it runs ahead of Postgres by the worker lag.

    KEYS[1] hash to write

    ARGV[1] version of the row (licenses.version)
    ARGV[2] used quota to start from when creating ("" = no such field)
    ARGV[3..] field, value, field, value...

  Returns 1 created, 2 updated, 0 left alone (already as new or newer).
]]
local current = redis.call('HGET', KEYS[1], 'v')
local fields = {}
for i = 3, #ARGV do fields[#fields + 1] = ARGV[i] end
if not current then
  if ARGV[2] ~= '' then
    fields[#fields + 1] = 'u'
    fields[#fields + 1] = ARGV[2]
  end
  redis.call('HSET', KEYS[1], 'v', ARGV[1], unpack(fields))
  return 1
end
if tonumber(current) < tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 'v', ARGV[1], unpack(fields))
  return 2
end
return 0
