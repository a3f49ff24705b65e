--[[
  Idempotency-Key records, shared by the redemption (includes/redeemToken.lua) and the
  release of a token (release.lua). A record "<token id>\t<iat ms>\t<used>\t<remaining>",
  then "\t<receipt>" for a sign, in the hash of the window of its claim ({b}:ik:<window>,
  IDEMPOTENCY_WINDOW_MS in src/redis/keys.ts), names the token a key
  serves and what its request answered; it lives SIGN_TOKEN_MS from its iat (for a release:
  from the release). Needs the constant SIGN_TOKEN_MS and IDEMPOTENCY_WINDOW_MS.

  A call names three hashes by its server's clock: current, previous (a live record claimed
  a window ago) and later, the window after: servers' clocks differ by some milliseconds, so
  a server a little ahead may have claimed the key in a window that has not yet opened by
  this server's clock (a retry through it just after a window boundary would otherwise find
  nothing: 400 already used, its unit spent).
]]
-- The token whose live record the key (field) has in hash, and that redemption's used and
-- remaining quota and receipt ("" for validate, and in records written before receipts);
-- nil when there is none or its token has expired.
local function recordIn(hash, field, now)
  local record = redis.call('HGET', hash, field)
  if not record then return nil end
  local tokenId, iat, used, remaining, rest = string.match(record, '^([^\t]*)\t(%d+)\t(%d+)\t(%d+)(.*)$')
  if not iat or tonumber(iat) + SIGN_TOKEN_MS <= tonumber(now) then return nil end
  return tokenId, used, remaining, string.sub(rest, 2)
end

-- The token the key serves, with its redemption's figures and receipt; nil when it is free.
local function keyHolder(field, current, previous, later, now)
  local tokenId, used, remaining, receipt = recordIn(current, field, now)
  if tokenId then return tokenId, used, remaining, receipt end
  tokenId, used, remaining, receipt = recordIn(previous, field, now)
  if tokenId then return tokenId, used, remaining, receipt end
  return recordIn(later, field, now)
end

-- Claims the key for tokenId, recording the figures its redemption will answer; false when
-- a live record gives the key to another token. The common case, a key never seen, costs
-- HGET previous and later (nothing), HSETNX current and PEXPIRE current.
local function claimKey(field, current, previous, later, tokenId, iat, now, used, remaining, receipt)
  local holder = recordIn(previous, field, now)
  if holder and holder ~= tokenId then return false end
  holder = recordIn(later, field, now)
  if holder and holder ~= tokenId then return false end
  -- %d: the figures as integers, as recordIn reads them (Lua would write 10^14 as 1e+14)
  local record = tokenId .. '\t' .. iat .. string.format('\t%d\t%d', used, remaining)
  if receipt ~= '' then record = record .. '\t' .. receipt end
  if redis.call('HSETNX', current, field, record) == 0 then
    holder = recordIn(current, field, now)
    if holder and holder ~= tokenId then return false end
    redis.call('HSET', current, field, record) -- its token had expired
  end
  redis.call('PEXPIRE', current, IDEMPOTENCY_WINDOW_MS)
  return true
end

