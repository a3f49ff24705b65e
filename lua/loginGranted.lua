--[[
  get-token, after the password checked out: count the token against the key's
  tokens-issued limit (RATE_GET_TOKEN_PER_MIN, or the license's own, as credentials.lua
  reads it: only correct credentials are counted, so a
  stranger who knows the key cannot use up its holder's), give the attempt's place back
  to the failure budget it took (credentials.lua), and trust the address at this key for
  the trust window. Fixed window for the limit, as includes/rateLimit.lua.

    KEYS[1] tokens-issued counter  {k:<licenseKey>}:rg
    KEYS[2] the failure budget the attempt took: {k:<licenseKey>}:fk, or :fp:<address> when trusted
    KEYS[3] trusted addresses      {k:<licenseKey>}:ta
    KEYS[4] credentials hash       {k:<licenseKey>}:c    field lg the license's own tokens limit
    KEYS[5] the pending places of KEYS[2] (includes/slowDown.lua)

    ARGV[1] tokens per window (0 = off) unless the license has its own (ownLimit in includes/rateLimit.lua)
    ARGV[2] window, ms
    ARGV[3] key failures per window (0: no place was taken)
    ARGV[4] client address ("" = unknown: not trusted)
    ARGV[5] trust window, ms (0 = no trust)
    ARGV[6] most addresses trusted at one key (the most recent are kept)
    ARGV[7] the attempt's id (its pending place)

  Returns {DONE, left, reset, limit}: a token may be issued; left and reset as the counter
          says, limit the one applied (0, 0, 0: off)
          {OVER_RATE_LIMIT, 0, reset, limit}: the key's tokens for this window are issued (the place
          is given back and the address trusted all the same: its credentials were right)
]]
-- @include outcomes
-- @include rateLimit
-- @include slowDown

local now = redisNow()
local budget = tonumber(ARGV[3])
if budget > 0 then failureGive(KEYS[2], KEYS[5], budget, tonumber(ARGV[2]), now, ARGV[7]) end
local address, trustMs = ARGV[4], tonumber(ARGV[5])
if address ~= '' and trustMs > 0 then
  redis.call('ZADD', KEYS[3], now, address)
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - trustMs)
  local most = tonumber(ARGV[6])
  if redis.call('ZCARD', KEYS[3]) > most then redis.call('ZREMRANGEBYRANK', KEYS[3], 0, -most - 1) end
  redis.call('PEXPIRE', KEYS[3], trustMs)
end
local limit = ownLimit(redis.call('HGET', KEYS[4], 'lg'), tonumber(ARGV[1]))
if limit <= 0 then return {DONE, 0, 0, 0} end
local over, left, reset = rateStep(KEYS[1], limit, ARGV[2])
if over then return {OVER_RATE_LIMIT, 0, reset, limit} end
return {DONE, left, reset, limit}
