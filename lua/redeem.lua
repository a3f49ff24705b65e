--[[
  Redeem sign tokens (validate; sign, which adds a receipt), the only place where quota is
  spent: one or more tokens of one hash slot in one call, the tokens that reached one
  server in the same event-loop turn (a batch of one is a call like any other). Each runs
  atomically as includes/redeemToken.lua says, in the order given, so a token is spent at
  most once (two copies of one token in a batch spend once) and quota never goes below zero.

    KEYS[1]          usage stream of the slot   {b}:ev
    KEYS[2]          epoch of the slot          {b}:epoch (includes/epoch.lua)
    KEYS[4i-1..4i+2] token i's license hash, token markers, rate-limit counter, package hash
                     (i = 1..n)
    KEYS[4n+3..]     for each token sent with an Idempotency-Key, in token order, the
                     record hashes of the current window, the one before and the one after
                     {b}:ik:<window> (includes/redeemToken.lua)
    KEYS[#KEYS]      stamp of the slot          {b}:node (includes/server.lua)

    ARGV[1]  now, ms since epoch
    ARGV[2]  rate window, ms
    ARGV[3]  deadline, ms since epoch by Redis's clock ("0" = none; includes/deadline.lua)
    ARGV[9i-5..9i+3] token i: rate limit (the deployment's, 0 = off, unless the license has its own;
             below 0 = not counted), origin host ("" = none), token id,
             firma id, imza tipi, token iat ms, origin prefixed "+" ("" = none), its
             Idempotency-Key's field in the record hashes ("" = sent without a key), the
             receipt's prefix (sign; "" for validate)

  Returns {code1, a1, b1, left1, reset1, limit1, receipt1, code2, ...}: redeemToken's result
  for each token, in order, seven values each (codes listed in includes/redeemToken.lua; the
  receipt "" but for a sign's DONE).
]]
-- @include outcomes
-- @include constants
-- @include deadline
-- @include epoch
-- @include server
-- @include rateLimit
-- @include packages
-- @include idempotency
-- @include redeemToken
-- @include batch

local nextIdem = 3 + 4 * tokenCount(9)
return eachToken(9, 7, function(k, v, mark)
  local origin = ARGV[v + 6]
  if origin == '' then origin = nil else origin = string.sub(origin, 2) end
  local field, current, previous, later = ARGV[v + 7], nil, nil, nil
  if field == '' then
    field = nil
  else
    current, previous, later = KEYS[nextIdem], KEYS[nextIdem + 1], KEYS[nextIdem + 2]
    nextIdem = nextIdem + 3
  end
  return redeemToken(KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[1], ARGV[1], tonumber(ARGV[v]), ARGV[2],
    ARGV[v + 1], ARGV[v + 2], ARGV[v + 3], ARGV[v + 4], ARGV[v + 5], origin, mark, field, current, previous, later, ARGV[v + 8])
end)
