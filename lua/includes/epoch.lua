--[[
  issuedMark(epochKey) -> the marker of a token issued now: "i" followed by the bucket's
  epoch. src/redis/restarts.ts raises every bucket's epoch when Redis comes back from a
  restart (or a failover) that may have lost writes: tokens marked in an earlier epoch
  cannot be proven unused (their redemption may be among the lost writes) and are refused
  as used. Without an epoch key the marker is "i".
    epochKey  {b}:epoch
]]
local function issuedMark(epochKey)
  return 'i' .. (redis.call('GET', epochKey) or '')
end
