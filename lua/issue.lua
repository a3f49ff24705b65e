--[[
  Issue sign tokens (get-token, sign-token): one or more tokens of one hash slot in one
  call, the requests that reached one server in the same event-loop turn (a batch of one is
  a call like any other). Each is issued as includes/issueToken.lua says, in the order
  given.

    KEYS[1]          usage stream of the slot   {b}:ev
    KEYS[2]          epoch of the slot          {b}:epoch (includes/epoch.lua)
    KEYS[4i-1..4i+2] token i's license hash, token markers, rate-limit counter, package hash
                     (i = 1..n)
    KEYS[4n+3]       stamp of the slot          {b}:node (includes/server.lua)

    ARGV[1]  now, ms since epoch
    ARGV[2]  rate window, ms
    ARGV[3]  deadline, ms since epoch by Redis's clock ("0" = none; includes/deadline.lua)
    ARGV[7i-3..7i+3] token i: rate limit (the deployment's, 0 = off, unless the license has its
             own; below 0 = not counted), token id, firma id, imza tipi,
             token expiry ms, marker hash expiry ms, token generation ("" = not checked)

  Returns {code1, a1, b1, left1, reset1, limit1, code2, ...}: issueToken's result for each token,
  in order (codes listed in includes/issueToken.lua).
]]
-- @include outcomes
-- @include deadline
-- @include epoch
-- @include server
-- @include rateLimit
-- @include packages
-- @include issueToken
-- @include batch

return eachToken(7, 6, function(k, v, mark)
  return issueToken(KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[1], ARGV[1], tonumber(ARGV[v]), ARGV[2],
    ARGV[v + 1], ARGV[v + 2], ARGV[v + 3], ARGV[v + 4], ARGV[v + 5], mark, ARGV[v + 6])
end)
