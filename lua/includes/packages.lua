--[[
  A license's packages in Redis: which one a redemption spends, and forfeiting the expired.
  Needs nothing; used by includes/redeemToken.lua, includes/issueToken.lua and settle.lua.

    license   license hash   {b}:l:<firmaId>   fields q bought (every package, and corrections),
              f forfeited, u used (so remaining = q - f - u), pn the current package's number,
              pe its expiry ms, pl its units left, pm the highest package number Redis holds
    packages  package hash   {b}:pk:<firmaId>  field package number -> "<expiry ms>\t<units left>",
              every package that has not expired but the current one (a spent one stays until
              its expiry, so that a release can give a unit back to it)
    stream    usage stream   {b}:ev   event "f" (EventValues.forfeited in src/redis/fields.ts)

  The current package is the one that expires first (the lower number first on a tie) among
  those with units left: a redemption spends it, the common case reading pe and pl with the
  license's other fields and writing pl with u. It has to be settled again when it is spent
  (pl 0), when it has expired (pe <= now), and when there is none (pe ""): demote(license,
  packages) leaves none after sync.lua added a package or release.lua gave one a unit back,
  since that one may expire first. Settling forfeits every package expired at now with units left:
  f rises by them and each is a forfeit event, in the stream's order with the redemptions, so
  a unit is either spent before its package's expiry or forfeited with it, never both.

  mustSettle(pe, pl, now) -> whether the current package needs settling
  settle(license, packages, stream, firmaId, now) -> pn, pe, pl of the new current package
    (pn "" when no package has units left)
  demote(license, packages): no package current, the one that was back among the others
]]
local function mustSettle(pe, pl, now)
  return not pe or pe == '' or tonumber(pe) <= tonumber(now) or tonumber(pl) <= 0
end

-- Puts the current package back among the others (with its units left), leaving none current:
-- the next redemption settles again. After a package was added or given a unit back (release.lua),
-- it may be the one to spend first.
local function demote(license, packages)
  local cur = redis.call('HMGET', license, 'pn', 'pe', 'pl')
  if cur[1] and cur[1] ~= '' and cur[2] and cur[2] ~= '' then
    redis.call('HSET', packages, cur[1], cur[2] .. '\t' .. (cur[3] or '0'))
  end
  redis.call('HSET', license, 'pn', '', 'pe', '', 'pl', 0)
end

local function settle(license, packages, stream, firmaId, now)
  demote(license, packages)
  local t = tonumber(now)
  local all = redis.call('HGETALL', packages)
  local bestNo, bestExp, bestExpText, bestLeft
  local forfeited = 0
  for i = 1, #all, 2 do
    local no = all[i]
    local expText, leftText = string.match(all[i + 1], '^(%d+)\t(%-?%d+)$')
    local exp, left = tonumber(expText), tonumber(leftText)
    if not exp or exp <= t then
      redis.call('HDEL', packages, no)
      if left > 0 then
        forfeited = forfeited + left
        -- the forfeit event: one field, its values tab-separated (EventValues.forfeited)
        redis.call('XADD', stream, '*', 'f', firmaId .. '\t' .. no .. '\t' .. leftText .. '\t' .. now)
      end
    elseif left <= 0 then
      -- spent, kept until it expires: a release may give it a unit back (release.lua)
    elseif not bestExp or exp < bestExp or (exp == bestExp and tonumber(no) < tonumber(bestNo)) then
      bestNo, bestExp, bestExpText, bestLeft = no, exp, expText, leftText
    end
  end
  if forfeited > 0 then redis.call('HINCRBY', license, 'f', forfeited) end
  if not bestNo then
    redis.call('HSET', license, 'pn', '', 'pe', '', 'pl', 0)
    return '', '', 0
  end
  redis.call('HDEL', packages, bestNo)
  redis.call('HSET', license, 'pn', bestNo, 'pe', bestExpText, 'pl', bestLeft)
  return bestNo, bestExp, tonumber(bestLeft)
end
