--[[
  The redemption of one sign token, of redeem.lua. Needs overRateLimit (rateLimit.lua).

  redeemToken(license, markers, rate, stream, now, limit, windowMs, host, tokenId, firmaId,
              imzaTipi, iat, origin, issuedMark) -> code, a, b
    license  license hash        {b}:l:<firmaId>   fields q total, u used, a active, x expiry ms, d domains, z fence
    markers  token markers       {b}:t:<expiry minute>   field token id: "i<epoch>" issued, "u" used
    issuedMark  "i" followed by the bucket's epoch (issuedMark in includes/epoch.lua)
    rate     rate-limit counter  {b}:rv:<firmaId>
    stream   usage stream        {b}:ev
    now      ms since epoch, as a string (it is the event's time)
    limit    rate limit per window, a number (0 = off)
    host     origin host name, normalised ("" = none)
    origin   origin as the client sent it (nil = none)

  Codes (a, b are 0 where the code has none):
    0 OK               a = used quota, b = remaining quota
    1 RATE_LIMITED     a = ms until the window resets
    2 TOKEN_UNKNOWN    no marker for a token we signed: Redis lost it, and perhaps its
                       redemption with it; refused as used (fail closed)
    3 TOKEN_USED       used, or issued in an earlier epoch: Redis came back from a restart
                       that may have lost its redemption (src/redis/restarts.ts; fail closed)
    4 LICENSE_MISS     no license copy, or one fenced by an admin change (fence.lua): the
                       caller hydrates from Postgres and retries (checked first)
    5 LICENSE_INVALID  inactive or past expiry
    6 ORIGIN_DENIED
    7 QUOTA_EXHAUSTED  a = remaining (0)
  A refusal changes nothing but the rate-limit count.
]]
local function originAllowed(domains, host)
  if host == '' then return false end
  if string.find(domains, ',' .. host .. ',', 1, true) then return true end
  -- "*.example.com" matches every name below example.com, never example.com itself
  local dot = string.find(host, '.', 1, true)
  while dot do
    if string.find(domains, ',*' .. string.sub(host, dot) .. ',', 1, true) then return true end
    dot = string.find(host, '.', dot + 1, true)
  end
  return false
end

local function redeemToken(license, markers, rate, stream, now, limit, windowMs, host, tokenId, firmaId, imzaTipi, iat, origin, issuedMark)
  if limit > 0 then
    local wait = overRateLimit(rate, limit, windowMs)
    if wait then return 1, wait, 0 end
  end

  -- the license first: a token of a company Redis does not hold is not "unknown" until
  -- Postgres has been asked about the company
  local lic = redis.call('HMGET', license, 'q', 'u', 'a', 'x', 'd', 'z')
  if not lic[1] or lic[6] then return 4, 0, 0 end

  local marker = redis.call('HGET', markers, tokenId)
  if not marker then return 2, 0, 0 end
  if marker ~= issuedMark then return 3, 0, 0 end
  if lic[3] ~= '1' or tonumber(lic[4]) <= tonumber(now) then return 5, 0, 0 end

  local domains = lic[5]
  if domains and domains ~= '' and not originAllowed(domains, host) then return 6, 0, 0 end

  local total = tonumber(lic[1])
  local used = tonumber(lic[2])
  if used >= total then return 7, 0, 0 end

  redis.call('HSET', markers, tokenId, 'u')
  used = redis.call('HINCRBY', license, 'u', 1)
  if origin then
    redis.call('XADD', stream, '*', 'k', 'u', 't', tokenId, 'f', firmaId, 'i', imzaTipi, 's', now, 'c', iat, 'o', origin)
  else
    redis.call('XADD', stream, '*', 'k', 'u', 't', tokenId, 'f', firmaId, 'i', imzaTipi, 's', now, 'c', iat)
  end
  return 0, used, total - used
end
