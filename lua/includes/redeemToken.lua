--[[
  The redemption of one sign token, of redeem.lua. Needs rateStep (rateLimit.lua), settle
  (packages.lua), the Idempotency-Key records (idempotency.lua) and the constants SIGN_TOKEN_MS and IDEMPOTENCY_WINDOW_MS (src/redis/scriptSource.ts luaConstants).

  redeemToken(license, markers, rate, packages, stream, now, limit, windowMs, host, tokenId, firmaId,
              imzaTipi, iat, origin, issuedMark, idem, current, previous, later, prefix)
    -> code, a, b, left, reset, limit, receipt
    license  license hash        {b}:l:<firmaId>   fields q bought, f forfeited, u used, a active, x expiry ms,
                                 d domains, z fence, pn pe pl the packages (includes/packages.lua),
                                 lv the license's own validate limit ("" or none: limit)
    packages package hash        {b}:pk:<firmaId>  (includes/packages.lua)
    markers  token markers       {b}:t:<expiry minute>   field token id: "i<epoch>" issued,
                                 "u<package>:<ms>:<epoch>" used in that epoch (earlier versions:
                                 "u<package>:<ms>", "u"), "r" released
    issuedMark  "i" followed by the bucket's epoch (issuedMark in includes/epoch.lua)
    rate     rate-limit counter  {b}:rv:<firmaId>
    stream   usage stream        {b}:ev   event "s" (EventValues.spent in src/redis/fields.ts: the
                                 package it spent, then the token's values), and "f" forfeits
    now      ms since epoch, as a string (it is the event's time)
    limit    the deployment's rate limit per window, a number (0 = off), unless the license
             has its own (ownLimit in includes/rateLimit.lua); below 0: not counted
    host     origin host name, normalised ("" = none)
    origin   origin as the client sent it (nil = none)
    prefix   sign: the receipt's payload up to its documents, '{"typ":"receipt",...,"documents":[...]'
             (src/routes/receipt.ts); "" for validate. A redemption completes it with
             ',"iat":<s>,"used_quota":<used>,"remaining_quota":<remaining>}' and the
             receipt is kept in the key's record, sent with the usage event (field r) and
             returned: the route signs exactly these bytes, and a retry gets them back
    idem     the field of the token's Idempotency-Key, "<firmaId>:<key>" (nil = none), in the
             record hashes current, previous and later: one hash per bucket and window {b}:ik:<window>
             (IDEMPOTENCY_WINDOW_MS in src/redis/keys.ts) of the redemption, the one before and
             the one after (another server's clock a little ahead: includes/idempotency.lua).
             A record "<token id>\t<token iat ms>\t<used>\t<remaining>", then "\t<receipt>"
             for a sign (JSON text holds no raw tab), names the token the key serves and
             what its redemption answered; it lives as long as its token
             (iat + SIGN_TOKEN_MS), so a live record is in one of the three hashes. A first keyed
             redemption claims the key in current (HGET previous and later, HSETNX current, PEXPIRE
             current: a window's hash lives a window after its last claim); a retry of its
             token reads the figures (and receipt) back; the key with another token, or
             with its token on the other endpoint (a receipt on one side only) or with other
             documents (a receipt that does not start with the prefix sent), is refused while
             the record lives.

  Outcomes (src/redis/outcomes.ts; a, b are 0 where the outcome has none); left, reset and
  limit are what the rate-limit step counted (requests the window still allows, ms until it
  resets, the limit it applied: the RateLimit fields of the answer; 0, 0, 0 when the limit
  is off or nothing was counted):
    DONE                a = used quota, b = remaining quota, receipt (sign; "" for validate);
                        for a retry with the key of this token's redemption, what that
                        redemption answered (it spends nothing), unless it was released since:
                        then TOKEN_SPENT, as without the key
    IDEMPOTENCY_KEY_REUSED  the key serves another token, or this one's other redemption
                        (any refusal below but a missing copy or marker is answered so when
                        the key is taken)
    OVER_RATE_LIMIT     a = ms until the window resets
    COPY_MISSING        no license copy, one fenced by an admin change (fence.lua), or one
                        written before packages (no pl): the caller hydrates from Postgres
                        and retries (checked first, before the count: the retry counts)
    MARKER_MISSING      no marker for a token we signed: Redis lost it, and perhaps its
                        redemption with it (the caller refuses it: fail closed)
    TOKEN_SPENT         used, or issued in an earlier epoch: Redis came back from a restart
                        that may have lost its redemption (src/redis/restarts.ts; fail closed)
    LICENSE_EXPIRED
    LICENSE_INACTIVE
    ORIGIN_NOT_ALLOWED
    NO_QUOTA_LEFT
  A refusal changes nothing but the rate-limit count (and the forfeits of packages that
  expired before it: packages.lua).
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

-- Whether a stored receipt answers a request with this prefix: none for none (validate), or
-- the prefix followed by what the redemption added (the same sign, the same documents).
local function sameRequest(receipt, prefix)
  if prefix == '' then return receipt == '' end
  return string.sub(receipt, 1, #prefix + 1) == prefix .. ','
end

-- Whether a "used" marker was written in this epoch (issuedMark's): a redemption of an earlier
-- one may have been released since on a Redis that a failover replaced, the release lost with
-- it while Postgres has it (the worker wrote it first), so its figures cannot be replayed.
-- Markers of earlier versions name no epoch and count as this one.
local function usedThisEpoch(marker, issuedMark)
  local rest = string.match(marker, '^u%d*:%d+(.*)$')
  return rest == nil or rest == '' or rest == ':' .. string.sub(issuedMark, 2)
end

-- A refusal of a token sent with a key that serves another token says so instead.
local function refused(code, field, current, previous, later, now, left, reset, applied)
  if field and keyHolder(field, current, previous, later, now) then return IDEMPOTENCY_KEY_REUSED, 0, 0, left, reset, applied end
  return code, 0, 0, left, reset, applied
end

local function redeemToken(license, markers, rate, packages, stream, now, limit, windowMs, host, tokenId, firmaId, imzaTipi, iat, origin, issuedMark, idem, current, previous, later, prefix)
  -- the license first: a token of a company Redis does not hold is not "unknown" until
  -- Postgres has been asked about the company, and the copy holds the limit to count with
  -- (a request is counted by the call that finds the copy: the caller's retry after a repair)
  local lic = redis.call('HMGET', license, 'q', 'u', 'a', 'x', 'd', 'z', 'f', 'pn', 'pe', 'pl', 'lv')
  if not lic[1] or lic[6] or not lic[10] then return COPY_MISSING, 0, 0, 0, 0, 0 end

  local left, reset, applied = 0, 0, 0
  limit = ownLimit(lic[11], limit)
  if limit > 0 then
    local over
    over, left, reset = rateStep(rate, limit, windowMs)
    applied = limit
    if over then return OVER_RATE_LIMIT, reset, 0, 0, reset, applied end
  end

  local marker = redis.call('HGET', markers, tokenId)
  if not marker then return MARKER_MISSING, 0, 0, left, reset, applied end
  if marker ~= issuedMark then
    -- spent: a retry with the key its redemption claimed gets that redemption's figures again,
    -- unless the redemption was released ("r", release.lua), or may have been (a redemption
    -- of an earlier epoch: usedThisEpoch): its unit is back and nothing is spent, so the
    -- retry is answered as one without the key, already used (a 200 would let the desktop
    -- sign for free). Both scripts run alone on this slot, so a release and a
    -- retry racing are answered in one order or the other, never both "spent" and released.
    if idem then
      local holder, used, remaining, receipt = keyHolder(idem, current, previous, later, now)
      if holder == tokenId and sameRequest(receipt, prefix) then
        if marker == 'r' or not usedThisEpoch(marker, issuedMark) then return TOKEN_SPENT, 0, 0, left, reset, applied end
        return DONE, tonumber(used), tonumber(remaining), left, reset, applied, receipt
      end
      if holder then return IDEMPOTENCY_KEY_REUSED, 0, 0, left, reset, applied end
    end
    return TOKEN_SPENT, 0, 0, left, reset, applied
  end
  if tonumber(lic[4]) <= tonumber(now) then return refused(LICENSE_EXPIRED, idem, current, previous, later, now, left, reset, applied) end
  if lic[3] ~= '1' then return refused(LICENSE_INACTIVE, idem, current, previous, later, now, left, reset, applied) end

  local domains = lic[5]
  if domains and domains ~= '' and not originAllowed(domains, host) then return refused(ORIGIN_NOT_ALLOWED, idem, current, previous, later, now, left, reset, applied) end

  local total = tonumber(lic[1]) - tonumber(lic[7] or '0')
  local used = tonumber(lic[2])
  if used >= total then return refused(NO_QUOTA_LEFT, idem, current, previous, later, now, left, reset, applied) end
  local pn, pl = lic[8], tonumber(lic[10] or '0')
  if mustSettle(lic[9], lic[10], now) then
    local pe
    pn, pe, pl = settle(license, packages, stream, firmaId, now)
    total = tonumber(lic[1]) - tonumber(redis.call('HGET', license, 'f') or '0')
    if pn == '' or used >= total then return refused(NO_QUOTA_LEFT, idem, current, previous, later, now, left, reset, applied) end
  end

  -- the script runs alone: the HSET below makes used + 1, the figures the record and receipt keep
  local receipt = ''
  if prefix ~= '' then
    -- %d: Lua writes a number of 15 digits or more as 1.2345678901234e+14 (a license may hold 10^14 units)
    receipt = prefix .. string.format(',"iat":%d,"used_quota":%d,"remaining_quota":%d}',
      math.floor(tonumber(now) / 1000), used + 1, total - used - 1)
  end
  if idem and not claimKey(idem, current, previous, later, tokenId, iat, now, used + 1, total - used - 1, receipt) then
    return IDEMPOTENCY_KEY_REUSED, 0, 0, left, reset, applied
  end
  used = used + 1
  redis.call('HSET', license, 'u', used, 'pl', pl - 1)
  -- used, with the package and the time: what a release of the token needs (release.lua)
  redis.call('HSET', markers, tokenId, 'u' .. pn .. ':' .. now .. ':' .. string.sub(issuedMark, 2))
  -- the spent event: one field, its values tab-separated, the package first (EventValues.spent in
  -- src/redis/fields.ts); a sign's adds its receipt as a second field (EVENT_RECEIPT in src/redis/fields.ts)
  local values = pn .. '\t' .. tokenId .. '\t' .. firmaId .. '\t' .. imzaTipi .. '\t' .. now .. '\t' .. iat
  if origin then values = values .. '\t' .. origin end
  if receipt == '' then
    redis.call('XADD', stream, '*', 's', values)
  else
    redis.call('XADD', stream, '*', 's', values, 'r', receipt)
  end
  return DONE, used, total - used, left, reset, applied, receipt
end
