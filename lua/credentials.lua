--[[
  get-token, step one: read a license key's credentials and, when they exist, take the
  attempt's place in the failed-login budget that applies to it (includes/slowDown.lua),
  before any password is hashed. check-quota and history use it with every limit off to
  find a key's firma id.

  Which budget: an address that got a token for this key within the trust window is
  trusted there, and held only to the budget of its own failures at this key (KEYS[5]);
  any other address shares the key's budget (KEYS[4]), and is held to its own address
  budget as well (failures.lua, called next by the caller). So nobody's failures slow down
  a trusted address, and a stranger who knows the key cannot lock its holder out.

  The tokens-issued limit (RATE_GET_TOKEN_PER_MIN, or the license's own: field lg) counts
  logins that got through (loginGranted.lua); here it is only read, so a key already at its
  limit is refused before a hash is spent on it.

    KEYS[1] credentials hash       {k:<licenseKey>}:c    fields f firma id, h password hash, g token generation, z fence,
                                                         lg the license's own tokens limit ("" or none: ARGV[1]),
                                                         n the Redis process it was written on (sync.lua)
    KEYS[2] tokens-issued counter  {k:<licenseKey>}:rg
    KEYS[3] unknown-key marker     {k:<licenseKey>}:u    set when Postgres had no such key
    KEYS[4] key failure budget     {k:<licenseKey>}:fk
    KEYS[5] pair failure budget    {k:<licenseKey>}:fp:<address>
    KEYS[6] trusted addresses      {k:<licenseKey>}:ta   sorted set, address -> ms of its last token
    KEYS[7] pending places at KEYS[4]  {k:<licenseKey>}:fk:p   (includes/slowDown.lua)
    KEYS[8] pending places at KEYS[5]  {k:<licenseKey>}:fp:<address>:p

    ARGV[1] tokens per window (0 = off) unless the license has its own (ownLimit in
            includes/rateLimit.lua); below 0: not read (a plain look-up)
    ARGV[2] window, ms
    ARGV[3] client address ("" = unknown: trusted nowhere, no pair budget)
    ARGV[4] key failures per window (0 = no budget taken)
    ARGV[5] trust window, ms (0 = no address is trusted; with ARGV[4] 0 as well: a plain look-up)
    ARGV[6] longest delay, ms
    ARGV[7] "1" when the caller knows the address is refused for now (failures.lua): an untrusted
            attempt is then refused here without taking the key's budget
    ARGV[8] the attempt's id (its pending place)
    ARGV[9] how long a place may stay pending, ms
    ARGV[10] "1": take a place even if every free one is pending (the attempt has waited enough)
    ARGV[11] ms the attempt has waited for pending places (held at most ARGV[6] less this)

  Returns {outcome, left, reset, limit, ...}: left, reset and limit are the tokens-issued
  counter's (tokens the window still allows, ms until it resets, the limit that applies;
  0, 0, 0 when it is off or was not read).
  Outcomes (names: src/redis/outcomes.ts):
    {DONE, left, reset, limit, firmaId, passwordHash, generation ("0" when none), trusted (1/0),
           delay ms (>= 0: place taken; < 0: refused for -delay ms, nothing taken; "wait": every free
           place is pending, ask again, nothing taken; "": no budget),
           budget remaining, ms until the budget is whole}
    {OVER_RATE_LIMIT, 0, ms until the window resets, limit}   tokens-issued limit reached
    {COPY_MISSING, 0, 0, 0, held}  no copy, a fenced one (fence.lua), or one written on another Redis
                                 process (includes/server.lua: a failover or restart may have lost
                                 its last change): the caller reads Postgres. held 1: Redis holds a
                                 hash for the key (fenced, or of another process), so the key exists
                                 even where a process missed its announcement; 0: none
    {NO_SUCH_LICENSE, 0, 0, 0}   Postgres said so lately: no look-up
]]
-- @include outcomes
-- @include rateLimit
-- @include slowDown
-- @include server

-- the copy first: it holds the limit (loginGranted.lua counts against the same one)
local cred = redis.call('HMGET', KEYS[1], 'f', 'h', 'z', 'g', 'lg', 'n')
if not cred[1] or cred[3] or cred[6] ~= thisServer() then
  if redis.call('EXISTS', KEYS[3]) == 1 then return {NO_SUCH_LICENSE, 0, 0, 0} end
  return {COPY_MISSING, 0, 0, 0, (cred[1] or cred[3]) and 1 or 0}
end
local limit = ownLimit(cred[5], tonumber(ARGV[1]))
local left, reset = 0, 0
if limit > 0 then
  local issued = tonumber(redis.call('GET', KEYS[2]) or '0')
  reset = redis.call('PTTL', KEYS[2])
  if reset < 0 then reset = 0 end
  if issued >= limit and reset > 0 then return {OVER_RATE_LIMIT, 0, reset, limit} end
  left = limit - issued
  if left < 0 or reset == 0 then left = limit end
else
  limit = 0
end
local budget, trustMs = tonumber(ARGV[4]), tonumber(ARGV[5])
if budget == 0 and trustMs == 0 then return {DONE, left, reset, limit, cred[1], cred[2], cred[4] or '0', 0, '', 0, 0} end

local now = redisNow()
local address = ARGV[3]
local trusted = 0
if address ~= '' and trustMs > 0 then
  local last = redis.call('ZSCORE', KEYS[6], address)
  if last and tonumber(last) > now - trustMs then trusted = 1 end
end
if budget == 0 then return {DONE, left, reset, limit, cred[1], cred[2], cred[4] or '0', trusted, '', 0, 0} end
if trusted == 0 and ARGV[7] == '1' then
  return {DONE, left, reset, limit, cred[1], cred[2], cred[4] or '0', 0, -1, 0, 0}
end
local delay, remaining, fullIn = failureTake(trusted == 1 and KEYS[5] or KEYS[4], trusted == 1 and KEYS[8] or KEYS[7], budget,
  tonumber(ARGV[2]), now, tonumber(ARGV[6]), tonumber(ARGV[11]), ARGV[8], tonumber(ARGV[9]), ARGV[10] == '1')
return {DONE, left, reset, limit, cred[1], cred[2], cred[4] or '0', trusted, delay, remaining, fullIn}
