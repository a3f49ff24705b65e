--[[
  The Redis process holding a bucket, asked before a license copy is rebuilt from the
  bucket's usage stream and Postgres (src/licenses/hot.ts): sync.lua creates the copy only on
  this same process, so a copy computed from the stream of a master a failover has since
  replaced never lands on the new one (includes/server.lua).

    KEYS[1] the bucket's stamp {b}:node

  Returns this process's run id, or the error NEWSERVER when the bucket is not stamped with
  it (the caller recovers the process and asks again).
]]
-- @include server

if not onStampedServer(KEYS[1]) then return newServer() end
return thisServer()
