--[[
  The redemption of one sign token, of redeem.lua. Needs rateStep (rateLimit.lua).

  redeemToken(license, markers, rate, stream, now, limit, windowMs, host, tokenId, firmaId,
              imzaTipi, iat, origin, issuedMark, idem, idemExpireAt) -> code, a, b, left, reset
    license  license hash        {b}:l:<firmaId>   fields q total, u used, a active, x expiry ms, d domains, z fence
    markers  token markers       {b}:t:<expiry minute>   field token id: "i<epoch>" issued, "u" used
             ("u\t<used>\t<remaining>" when redeemed with an Idempotency-Key: what it answered)
    issuedMark  "i" followed by the bucket's epoch (issuedMark in includes/epoch.lua)
    rate     rate-limit counter  {b}:rv:<firmaId>
    stream   usage stream        {b}:ev   event "u" (EventValues.used in src/redis/scripts.ts)
    now      ms since epoch, as a string (it is the event's time)
    limit    rate limit per window, a number (0 = off)
    host     origin host name, normalised ("" = none)
    origin   origin as the client sent it (nil = none)
    idem     the Idempotency-Key's record  {b}:ik:<firmaId>:<key>  the id of the token it serves
             (nil = no key): claimed by the redemption it guards, in the command that
             checks it is free (SET NX GET), expiring with the token's marker (idemExpireAt,
             ms since epoch). A retry of that token with the key finds it and answers the
             figures the marker keeps; the key with another token is refused. So a first
             keyed redemption costs one command more, a retry one command, and the rest
             nothing (bench/README.md)

  Outcomes (src/redis/scripts.ts; a, b are 0 where the outcome has none); left and reset
  are what the rate-limit step counted (requests the window still allows, ms until it
  resets; 0, 0 when the limit is off):
    DONE                a = used quota, b = remaining quota; for a retry with the key of
                        this token's redemption, the figures that redemption answered (it
                        spends nothing)
    IDEMPOTENCY_KEY_REUSED  the key serves another token (any refusal below but a missing
                        copy or marker is answered so when the key is taken)
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

-- A refusal of a token sent with a key that serves another token says so instead.
local function refused(code, idem, left, reset)
  if idem and redis.call('EXISTS', idem) == 1 then return IDEMPOTENCY_KEY_REUSED, 0, 0, left, reset end
  return code, 0, 0, left, reset
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

  local marker = redis.call('HGET', markers, tokenId)
  if not marker then return MARKER_MISSING, 0, 0, left, reset end
  if marker ~= issuedMark then
    -- spent: a retry with the key its redemption claimed gets that redemption's figures again
    if idem and redis.call('GET', idem) == tokenId then
      local u, r = string.match(marker, '^u\t(%d+)\t(%d+)$')
      if u then return DONE, tonumber(u), tonumber(r), left, reset end
    end
    return refused(TOKEN_SPENT, idem, left, reset)
  end
  if tonumber(lic[4]) <= tonumber(now) then return refused(LICENSE_EXPIRED, idem, left, reset) end
  if lic[3] ~= '1' then return refused(LICENSE_INACTIVE, idem, left, reset) end

  local domains = lic[5]
  if domains and domains ~= '' and not originAllowed(domains, host) then return refused(ORIGIN_NOT_ALLOWED, idem, left, reset) end

  local total = tonumber(lic[1])
  local used = tonumber(lic[2])
  if used >= total then return refused(NO_QUOTA_LEFT, idem, left, reset) end

  -- the key is claimed for this token by the command that finds whether it is free
  if idem and redis.call('SET', idem, tokenId, 'NX', 'PXAT', idemExpireAt, 'GET') then
    return IDEMPOTENCY_KEY_REUSED, 0, 0, left, reset
  end
  used = redis.call('HINCRBY', license, 'u', 1)
  redis.call('HSET', markers, tokenId, idem and ('u\t' .. used .. '\t' .. (total - used)) or 'u')
  -- the used event: one field, its values tab-separated (EventValues.used in src/redis/scripts.ts)
  if origin then
    redis.call('XADD', stream, '*', 'u', tokenId .. '\t' .. firmaId .. '\t' .. imzaTipi .. '\t' .. now .. '\t' .. iat .. '\t' .. origin)
  else
    redis.call('XADD', stream, '*', 'u', tokenId .. '\t' .. firmaId .. '\t' .. imzaTipi .. '\t' .. now .. '\t' .. iat)
  end
  return DONE, used, total - used, left, reset
end
