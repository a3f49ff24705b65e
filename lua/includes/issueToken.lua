--[[
  The issuance of one sign token, of issue.lua. Needs rateStep (rateLimit.lua) and settle
  (packages.lua): remaining quota counts only packages that have not expired.

  issueToken(license, markers, rate, packages, stream, now, limit, windowMs, tokenId, firmaId, imzaTipi,
             expMs, markersExpireAt, issuedMark, generation) -> code, a, b, left, reset, limit
    license  license hash        {b}:l:<firmaId>   fields q bought, f forfeited, u used, a active, x expiry ms, n name,
                                 z fence, g generation, pn pe pl the packages (includes/packages.lua),
                                 ls the license's own sign-token limit ("" or none: limit)
    packages package hash        {b}:pk:<firmaId>  (includes/packages.lua)
    markers  token markers       {b}:t:<expiry minute>   field token id: "i<epoch>" issued, "u" used
    issuedMark  "i" followed by the bucket's epoch (includes/epoch.lua)
    rate     rate-limit counter  {b}:rs:<firmaId>
    stream   usage stream        {b}:ev   event "i" (EventValues.issued in src/redis/fields.ts)
    now      ms since epoch, as a string (it is the event's time)
    limit    the deployment's rate limit per window, a number (0 = off), unless the license has
             its own (ownLimit in includes/rateLimit.lua); below 0: not counted (get-token, which
             limits per license key before hashing)
    markersExpireAt  when the marker hash expires, ms since epoch (after its last token, plus slack);
             the latest any of its tokens asked for: a shorter keep never brings it earlier
    generation  the license's token generation the caller's credentials are of (sign-token:
             the access token's; get-token: the one read with the password hash); "" = not checked.
             A password change or a deactivation raises the license's (src/licenses/store.ts update)

  Outcomes (src/redis/outcomes.ts; a, b are 0 where the outcome has none); left, reset and
  limit are what the rate-limit step counted (requests the window still allows, ms until it
  resets, the limit it applied: the RateLimit fields of the answer; 0, 0, 0 when the limit
  is off or nothing was counted):
    DONE              a = remaining quota, b = organization name
    OVER_RATE_LIMIT   a = ms until the window resets
    COPY_MISSING      no copy, a fenced one (fence.lua), or one written before packages
                      (no pl): the caller hydrates from Postgres and retries (checked before
                      the count: the retry counts)
    TOKEN_REVOKED     the credentials are of an older generation
    LICENSE_EXPIRED
    LICENSE_INACTIVE
    NO_QUOTA_LEFT
  The marker makes the token redeemable; the stream event puts it in the Postgres audit
  trail with status "issued". A refusal changes nothing but the rate-limit count.
]]
local function issueToken(license, markers, rate, packages, stream, now, limit, windowMs, tokenId, firmaId, imzaTipi, expMs, markersExpireAt, issuedMark, generation)
  -- the copy first: it holds the limit to count with (a request is counted by the call that
  -- finds the copy: the caller's retry after a repair)
  local lic = redis.call('HMGET', license, 'q', 'u', 'a', 'x', 'n', 'z', 'g', 'f', 'pe', 'pl', 'ls')
  if not lic[1] or lic[6] or not lic[10] then return COPY_MISSING, 0, 0, 0, 0, 0 end

  local left, reset, applied = 0, 0, 0
  limit = ownLimit(lic[11], limit)
  if limit > 0 then
    local over
    over, left, reset = rateStep(rate, limit, windowMs)
    applied = limit
    if over then return OVER_RATE_LIMIT, reset, 0, 0, reset, applied end
  end
  if generation ~= '' and (lic[7] or '0') ~= generation then return TOKEN_REVOKED, 0, 0, left, reset, applied end
  if tonumber(lic[4]) <= tonumber(now) then return LICENSE_EXPIRED, 0, 0, left, reset, applied end
  if lic[3] ~= '1' then return LICENSE_INACTIVE, 0, 0, left, reset, applied end
  local remaining = tonumber(lic[1]) - tonumber(lic[8] or '0') - tonumber(lic[2])
  if remaining <= 0 then return NO_QUOTA_LEFT, 0, 0, left, reset, applied end
  if mustSettle(lic[9], lic[10], now) then
    local pn = settle(license, packages, stream, firmaId, now)
    remaining = tonumber(lic[1]) - tonumber(redis.call('HGET', license, 'f') or '0') - tonumber(lic[2])
    if pn == '' or remaining <= 0 then return NO_QUOTA_LEFT, 0, 0, left, reset, applied end
  end

  redis.call('HSET', markers, tokenId, issuedMark)
  -- set only when it moves the expiry later: the window's tokens share one, so this is once a
  -- hash, not a command a token in the AOF and on the replica link (a PEXPIREAT that changes
  -- nothing is written there all the same)
  if redis.call('PEXPIRETIME', markers) < tonumber(markersExpireAt) then redis.call('PEXPIREAT', markers, markersExpireAt) end
  -- the issued event: one field, its values tab-separated (EventValues.issued in src/redis/fields.ts)
  redis.call('XADD', stream, '*', 'i', tokenId .. '\t' .. firmaId .. '\t' .. imzaTipi .. '\t' .. now .. '\t' .. expMs)
  return DONE, remaining, lic[5] or '', left, reset, applied
end
