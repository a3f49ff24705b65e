--[[
  Release a redeemed sign token: its signing failed on the desktop (card pulled, wrong
  PIN), and the holder asks for the unit back. Once per token, within the release window of
  its redemption, within the license's daily allowance; the unit goes back to the package
  it came from. The service cannot tell a real failure from a claimed one: the allowance
  (releasesPerDay, 0 = off) bounds what a dishonest client can take back.

    KEYS[1] license hash     {b}:l:<firmaId>   fields u used, ra releases a day, pn pe pl
                             (includes/packages.lua), z fence, q bought, f forfeited, a active, x expiry ms
    KEYS[2] token markers    {b}:t:<expiry minute>   field token id: "u<package>:<ms>:<epoch>" once
                             redeemed (earlier versions: no epoch), then "r" once released
    KEYS[3] package hash     {b}:pk:<firmaId>
    KEYS[4] usage stream     {b}:ev   event "l" (EventValues.released in src/redis/fields.ts)
    KEYS[5] releases today   {b}:rl:<firmaId>:<UTC day>
    KEYS[6..8]               with an Idempotency-Key: the record hashes of the current window,
                             the one before and the one after (includes/idempotency.lua)
    KEYS[#KEYS-1]            the slot's epoch {b}:epoch (includes/epoch.lua)
    KEYS[#KEYS]              the slot's stamp {b}:node (includes/server.lua)

    ARGV[1] now, ms since epoch
    ARGV[2] token id
    ARGV[3] firma id
    ARGV[4] the release window, ms after the redemption
    ARGV[5] the reason given ("" = none; no tab or line break)
    ARGV[6] the Idempotency-Key's field in the record hashes ("" = none)
    ARGV[7] when the day's counter expires, ms since epoch

  Returns {outcome, used, remaining}: DONE with the license's used and remaining quota after
  the release (a retry with the key of this token's release: what that release answered,
  giving nothing more), or a refusal (src/redis/outcomes.ts): COPY_MISSING, LICENSE_INACTIVE,
  LICENSE_EXPIRED, NOT_REDEEMED
  (issued and never redeemed, or unknown), ALREADY_RELEASED, RELEASE_WINDOW_PASSED (or a
  redemption of an earlier version, which recorded no package, or of an earlier epoch: Redis
  failed over or restarted since, and a release of it may have been lost with the old server
  while Postgres has it), RELEASES_OFF,
  RELEASE_ALLOWANCE_USED, PACKAGE_EXPIRED (its package has expired: the unit would only be
  forfeited), IDEMPOTENCY_KEY_REUSED. A refusal changes nothing; so does a call on a Redis
  process the stamp does not name (the error NEWSERVER).
]]
-- @include outcomes
-- @include constants
-- @include idempotency
-- @include packages
-- @include server

if not onStampedServer(KEYS[#KEYS]) then return newServer() end
local license, markers, packages, stream, today = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local now, tokenId, firmaId = ARGV[1], ARGV[2], ARGV[3]
local idem = ARGV[6] ~= '' and ARGV[6] or nil

local lic = redis.call('HMGET', license, 'u', 'ra', 'pn', 'pe', 'pl', 'z', 'q', 'f', 'a', 'x')
if not lic[1] or lic[6] or not lic[5] then return {COPY_MISSING, 0, 0} end
if lic[9] ~= '1' then return {LICENSE_INACTIVE, 0, 0} end
if tonumber(lic[10]) <= tonumber(ARGV[1]) then return {LICENSE_EXPIRED, 0, 0} end

local marker = redis.call('HGET', markers, tokenId)
if marker == 'r' then
  if idem then
    local holder, used, remaining = keyHolder(idem, KEYS[6], KEYS[7], KEYS[8], now)
    if holder == tokenId then return {DONE, tonumber(used), tonumber(remaining)} end
    if holder then return {IDEMPOTENCY_KEY_REUSED, 0, 0} end
  end
  return {ALREADY_RELEASED, 0, 0}
end
if idem and keyHolder(idem, KEYS[6], KEYS[7], KEYS[8], now) then return {IDEMPOTENCY_KEY_REUSED, 0, 0} end
if not marker or string.sub(marker, 1, 1) ~= 'u' then return {NOT_REDEEMED, 0, 0} end
local packageNo, redeemedAt, epoch = string.match(marker, '^u(%d+):(%d+)(.*)$')
if not packageNo or tonumber(redeemedAt) + tonumber(ARGV[4]) < tonumber(now) then return {RELEASE_WINDOW_PASSED, 0, 0} end
if epoch ~= '' and epoch ~= ':' .. (redis.call('GET', KEYS[#KEYS - 1]) or '') then return {RELEASE_WINDOW_PASSED, 0, 0} end

local allowance = tonumber(lic[2] or '0')
if allowance <= 0 then return {RELEASES_OFF, 0, 0} end
if tonumber(redis.call('GET', today) or '0') >= allowance then return {RELEASE_ALLOWANCE_USED, 0, 0} end

-- the unit goes back to its package, unless that has expired (it would only forfeit)
local t = tonumber(now)
if lic[3] == packageNo and lic[4] ~= '' then
  if tonumber(lic[4]) <= t then return {PACKAGE_EXPIRED, 0, 0} end
  redis.call('HINCRBY', license, 'pl', 1)
else
  local entry = redis.call('HGET', packages, packageNo)
  local exp, left
  if entry then exp, left = string.match(entry, '^(%d+)\t(%-?%d+)$') end
  if not exp or tonumber(exp) <= t then return {PACKAGE_EXPIRED, 0, 0} end
  redis.call('HSET', packages, packageNo, exp .. '\t' .. (tonumber(left) + 1))
  -- it may expire before the current package: which one is spent first is settled again
  demote(license, packages)
end

local used = redis.call('HINCRBY', license, 'u', -1)
redis.call('HINCRBY', license, 'rr', 1)
local remaining = tonumber(lic[7]) - tonumber(lic[8] or '0') - used
redis.call('HSET', markers, tokenId, 'r')
redis.call('INCR', today)
redis.call('PEXPIREAT', today, ARGV[7])
if idem then claimKey(idem, KEYS[6], KEYS[7], KEYS[8], tokenId, now, now, used, remaining, '') end
-- the release event: one field, its values tab-separated (EventValues.released)
redis.call('XADD', stream, '*', 'l', tokenId .. '\t' .. firmaId .. '\t' .. packageNo .. '\t' .. now .. '\t' .. ARGV[5])
return {DONE, used, remaining}
