--[[
  Read a license's copy for an answer that shows its figures (check-quota, the holder's
  reads), only on the Redis process its bucket is stamped with: a copy on a new process
  (a promoted replica, a restarted server) may predate writes the failover lost, and its
  count could be lower than one a client was shown (includes/server.lua).

    KEYS[1] license hash  {b}:l:<firmaId>
    KEYS[2] package hash  {b}:pk:<firmaId>
    KEYS[3] the slot's stamp {b}:node

    ARGV[1] "1": read the package hash too; "0": not
    ARGV[2..] the license hash's fields to read

  Returns {values of ARGV[2..] in order (nil where none), the package hash as HGETALL gives
  it (empty when not read)}, or the error NEWSERVER, reading nothing.
]]
-- @include server

if not onStampedServer(KEYS[3]) then return newServer() end
local fields = {}
for i = 2, #ARGV do fields[#fields + 1] = ARGV[i] end
local packages = {}
if ARGV[1] == '1' then packages = redis.call('HGETALL', KEYS[2]) end
return {redis.call('HMGET', KEYS[1], unpack(fields)), packages}
