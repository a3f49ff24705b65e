--[[
  The Redis process a call runs on. A replica promoted by a failover (Sentinel, Cluster, a
  virtual IP moved by hand) and a server restarted from its AOF or RDB are other processes,
  with other run ids, holding a copy of the data that may lack the last writes the service
  was answered for: a redemption among them would leave its token "issued" again. So a
  script that changes what a bucket holds first checks the bucket's stamp, the run id of the
  process the bucket was last verified on (src/redis/restarts.ts writes it with stamp.lua
  after raising the bucket's epoch and dropping the license copies). On any other process it
  changes nothing and answers the error NEWSERVER: the caller recovers that process and
  calls again. The check is part of the script, so no write can come between it and the
  script's own, and it needs no client to notice a reconnection: a Cluster client that
  follows a MOVED to the promoted replica is caught as surely as one that reconnects.

  The service calls its scripts as one function library (src/redis/library.ts), which
  holds this file once, above every function: the run id read by a function's first call
  stays in thisProcess for the calls after it, so a call costs a GET and a comparison, not
  an INFO. That value cannot outlive its process: a restarted server, a promoted replica or
  a FUNCTION LOAD starts with a new library, thisProcess empty, and reads its own INFO.
  Included in a plain script (stamp.lua), the variable lasts one call.

  thisServer() -> the run id of the process running the call (INFO server, once)
  onStampedServer(stamp) -> true when the key stamp names the process running the call
    stamp  {b}:node
  newServer() -> the NEWSERVER error to return, naming this process's run id
]]
local thisProcess

local function thisServer()
  if thisProcess == nil then thisProcess = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)') end
  return thisProcess
end

local function newServer()
  return redis.error_reply('NEWSERVER this bucket was last verified on another Redis process (a failover or a restart): '
    .. 'recover run_id:' .. thisServer() .. ' first')
end

local function onStampedServer(stamp)
  return redis.call('GET', stamp) == thisServer()
end
