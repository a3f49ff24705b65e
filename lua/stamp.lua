--[[
  Recovery of a bucket on a Redis process that its stamp does not name (includes/server.lua),
  the last step of src/redis/restarts.ts: stamp the bucket with this process and, unless
  the caller found its data whole, raise its epoch, so tokens issued before are refused as
  used (their redemption may be among the writes lost). Sent to the process itself, never
  routed: on a Cluster the caller has read the stamp there. Every service process that meets
  the new server calls it, and only the first changes anything: a second raise would refuse
  the tokens issued in between.

    KEYS[1] the bucket's stamp  {b}:node
    KEYS[2] the bucket's epoch  {b}:epoch (includes/epoch.lua)

    ARGV[1] run id of the process the caller recovered (whose copies it dropped if any was lost)
    ARGV[2] the stamp the caller read ("" = none): if it changed since, nothing is done
    ARGV[3] "1": keep the epoch, the data is whole (a slot moved from a master still serving,
            or an upgrade from the version before stamps, which named this same process);
            "0": raise it

  Returns -1: run on another process, nothing done; -2: the stamp changed since it was
  read, nothing done; 0: stamped already; 1: epoch raised and stamped; 2: stamped, epoch kept.
]]
-- @include server

local here = thisServer()
if here ~= ARGV[1] then return -1 end
local stamp = redis.call('GET', KEYS[1])
if stamp == here then return 0 end
if (stamp or '') ~= ARGV[2] then return -2 end
redis.call('SET', KEYS[1], here)
if ARGV[3] == '1' then return 2 end
redis.call('INCR', KEYS[2])
return 1
