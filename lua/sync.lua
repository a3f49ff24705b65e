--[[
  Write the Postgres copy of a license (or of its credentials) into Redis: used by
  hydration after a miss and by every admin change, after Postgres has committed.

  Versions make the two commute: whichever of a hydration (old row) and an admin change
  (new row) lands last, the newest version wins. The used counter is set only when the
  hash is created, because the Redis copy of it runs ahead of Postgres by the worker lag:
  the caller computes it from Postgres plus the redemptions still queued in the stream.
  A fence (fence.lua) is lifted by the change that set it (ARGV[3]) or, once its deadline
  has passed, by a write whose row was read after it (ARGV[4]).

    KEYS[1] hash to write

    ARGV[1] version of the row (licenses.version)
    ARGV[2] used quota to start from when creating: a number; "" = not known yet (do not
            create, answer 3); "-" = this hash has no used count (credentials)
    ARGV[3] "1": this write completes one fenced admin change; "0" otherwise
    ARGV[4] ms since epoch by Postgres's clock when the row was read less a margin: fences
            whose deadline is before it are lifted ("0" = none)
    ARGV[5..] field, value, field, value...

  Returns {outcome, fenced} (SyncOutcome in src/redis/scripts.ts): outcome 1 created,
  2 updated, 0 left alone (already as new or newer), 3 not created (no used count given);
  fenced 1 while a fence remains.
]]
local h = KEYS[1]
local current = redis.call('HGET', h, 'v')
local outcome = 0
if not current and ARGV[2] == '' then return {3, 1} end

local fields = {}
for i = 5, #ARGV do fields[#fields + 1] = ARGV[i] end
if not current then
  if ARGV[2] ~= '-' then
    fields[#fields + 1] = 'u'
    fields[#fields + 1] = ARGV[2]
  end
  redis.call('HSET', h, 'v', ARGV[1], unpack(fields))
  outcome = 1
elseif tonumber(current) < tonumber(ARGV[1]) then
  redis.call('HSET', h, 'v', ARGV[1], unpack(fields))
  outcome = 2
end

local z = tonumber(redis.call('HGET', h, 'z') or '0')
if z > 0 and ARGV[3] == '1' then z = redis.call('HINCRBY', h, 'z', -1) end
if z > 0 and tonumber(redis.call('HGET', h, 'zd') or '0') < tonumber(ARGV[4]) then z = 0 end
if z <= 0 then redis.call('HDEL', h, 'z', 'zd') end
return {outcome, z > 0 and 1 or 0}
