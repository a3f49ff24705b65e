--[[
  The redemption of one sign token, of redeem.lua. Needs rateStep (rateLimit.lua).

  redeemToken(license, markers, rate, stream, now, limit, windowMs, host, tokenId, firmaId,
              imzaTipi, iat, origin, issuedMark, idem, idemExpireAt) -> code, a, b, left, reset
    license  license hash        {b}:l:<firmaId>   fields q total, u used, a active, x expiry ms, d domains, z fence
    markers  token markers       {b}:t:<expiry minute>   field token id: "i<epoch>" issued, "u" used
    issuedMark  "i" followed by the bucket's epoch (issuedMark in includes/epoch.lua)
    rate     rate-limit counter  {b}:rv:<firmaId>
    stream   usage stream        {b}:ev   event "u" (EventValues.used in src/redis/scripts.ts)
    now      ms since epoch, as a string (it is the event's time)
    limit    rate limit per window, a number (0 = off)
    host     origin host name, normalised ("" = none)
    origin   origin as the client sent it (nil = none)
    idem     the Idempotency-Key's record  {b}:ik:<firmaId>:<key>  "<token id>\t<used>\t<remaining>"
             (nil = no key): a redemption made with the key leaves it, expiring with the
             token (idemExpireAt, ms since epoch), and a retry with the key finds it

  Outcomes (src/redis/scripts.ts; a, b are 0 where the outcome has none); left and reset
  are what the rate-limit step counted (requests the window still allows, ms until it
  resets; 0, 0 when the limit is off):
    DONE                a = used quota, b = remaining quota; for a retry with the key of
                        this token's redemption, the figures that redemption answered (it
                        spends nothing)
    IDEMPOTENCY_KEY_REUSED  the key was used with another token (checked after the copy)
    OVER_RATE_LIMIT     a = ms until the window resets
    COPY_MISSING        no license copy, or one fenced by an admin change (fence.lua): the
                        caller hydrates from Postgres and retries (checked first)
    MARKER_MISSING      no marker for a token we signed: Redis lost it, and perhaps its
                        redemption with it (the caller refuses it: fail closed)
    TOKEN_SPENT         used, or issued in an earlier epoch: Redis came back from a restart
                        that may have lost its redemption (src/redis/restarts.ts; fail closed)
    LICENSE_EXPIRED
    LICENSE_INACTIVE
    ORIGIN_NOT_ALLOWED
    NO_QUOTA_LEFT
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

local function redeemToken(license, markers, rate, stream, now, limit, windowMs, host, tokenId, firmaId, imzaTipi, iat, origin, issuedMark, idem, idemExpireAt)
  local left, reset = 0, 0
  if limit > 0 then
    local over
    over, left, reset = rateStep(rate, limit, windowMs)
    if over then return OVER_RATE_LIMIT, reset, 0, 0, reset end
  end

  -- the license first: a token of a company Redis does not hold is not "unknown" until
  -- Postgres has been asked about the company
  local lic = redis.call('HMGET', license, 'q', 'u', 'a', 'x', 'd', 'z')
  if not lic[1] or lic[6] then return COPY_MISSING, 0, 0, left, reset end

  if idem then
    local earlier = redis.call('GET', idem)
    if earlier then
      local t, u, r = string.match(earlier, '^([^\t]*)\t(%d+)\t(%d+)$')
      if t ~= tokenId then return IDEMPOTENCY_KEY_REUSED, 0, 0, left, reset end
      return DONE, tonumber(u), tonumber(r), left, reset
    end
  end

  local marker = redis.call('HGET', markers, tokenId)
  if not marker then return MARKER_MISSING, 0, 0, left, reset end
  if marker ~= issuedMark then return TOKEN_SPENT, 0, 0, left, reset end
  if tonumber(lic[4]) <= tonumber(now) then return LICENSE_EXPIRED, 0, 0, left, reset end
  if lic[3] ~= '1' then return LICENSE_INACTIVE, 0, 0, left, reset end

  local domains = lic[5]
  if domains and domains ~= '' and not originAllowed(domains, host) then return ORIGIN_NOT_ALLOWED, 0, 0, left, reset end

  local total = tonumber(lic[1])
  local used = tonumber(lic[2])
  if used >= total then return NO_QUOTA_LEFT, 0, 0, left, reset end

  redis.call('HSET', markers, tokenId, 'u')
  used = redis.call('HINCRBY', license, 'u', 1)
  -- the used event: one field, its values tab-separated (EventValues.used in src/redis/scripts.ts)
  if origin then
    redis.call('XADD', stream, '*', 'u', tokenId .. '\t' .. firmaId .. '\t' .. imzaTipi .. '\t' .. now .. '\t' .. iat .. '\t' .. origin)
  else
    redis.call('XADD', stream, '*', 'u', tokenId .. '\t' .. firmaId .. '\t' .. imzaTipi .. '\t' .. now .. '\t' .. iat)
  end
  if idem then redis.call('SET', idem, tokenId .. '\t' .. used .. '\t' .. (total - used), 'PXAT', idemExpireAt) end
  return DONE, used, total - used, left, reset
end
