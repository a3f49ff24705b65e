--[[
  Forfeit what a license's expired packages left, without a redemption to do it: the usage
  worker calls this for licenses whose packages Postgres says have expired with units left
  (src/usage/forfeitSweep.ts), so the figures fall at expiry even for a license nobody uses.
  Redemptions and issuances settle the same way on their own (includes/packages.lua).

    KEYS[1] license hash   {b}:l:<firmaId>
    KEYS[2] package hash   {b}:pk:<firmaId>
    KEYS[3] usage stream   {b}:ev
    KEYS[4] the slot's stamp {b}:node (includes/server.lua)

    ARGV[1] now, ms since epoch
    ARGV[2] firma id

  Returns {outcome, forfeited}: DONE with the units forfeited now (often 0: a package the
  worker has not yet seen spent or forfeited), or COPY_MISSING (no copy, a fenced one, or
  one written before packages: the caller hydrates and calls again); the error NEWSERVER,
  changing nothing, on a Redis process the stamp does not name.
]]
-- @include outcomes
-- @include packages
-- @include server

if not onStampedServer(KEYS[4]) then return newServer() end
local lic = redis.call('HMGET', KEYS[1], 'q', 'z', 'pe', 'pl', 'f')
if not lic[1] or lic[2] or not lic[4] then return {COPY_MISSING, 0} end
if not mustSettle(lic[3], lic[4], ARGV[1]) then return {DONE, 0} end
settle(KEYS[1], KEYS[2], KEYS[3], ARGV[2], ARGV[1])
return {DONE, tonumber(redis.call('HGET', KEYS[1], 'f') or '0') - tonumber(lic[5] or '0')}
