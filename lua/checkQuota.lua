--[[
  check-quota, step one: count the request against the client's limit for this license key,
  read the version of the license's Redis copy, and answer from the cached answer when it
  was built from that version. Every process of every instance asks here, so they all serve
  the same answer, and an answer built before an admin change is never served: the change
  is visible on the very next request, with no message to miss. On a miss the caller reads
  the license and stores its answer with quotaAnswer.lua, which says how answers are kept.

    KEYS[1] rate-limit counter  {k:<licenseKey>}:rq:<address bucket> (one per client and key;
            {k:<licenseKey>}:rq for clients whose address is unknown)
    KEYS[2] credentials hash    {k:<licenseKey>}:c   field v version of the license row, z fence,
            lq the license's own limit ("" or none: ARGV[1]), n the Redis process it was written on
    KEYS[3] cached answer       {k:<licenseKey>}:qa  fields v version, s status line, b body head,
            n the Redis process it was stored on, t its tag (quotaAnswer.lua)

  A copy or an answer written on another Redis process than this one (a replica promoted
  since, or this server before a restart: includes/server.lua) is not used: it may predate
  writes the failover lost, and serving it could show a count lower than one served before.

    ARGV[1] limit per window (0 = off) unless the license has its own (ownLimit in
            includes/rateLimit.lua): read from the copy, so a change is in force at once
    ARGV[2] window, ms
    ARGV[3] "1": the cache is on (QUOTA_CACHE_SECONDS > 0); "0": off, nothing is read from it
    ARGV[4] the tag of the answer the calling process holds for this key ("" none): when it is
            the cached answer's, status and head are not sent back, the caller serves its own
            copy of those very bytes (a hit then moves a few bytes instead of a whole answer)

  Returns {outcome, left, reset, limit, version, now, status, head, tag}: left, reset and limit
  are what the rate-limit step counted (requests the window still allows, ms until it
  resets, the limit applied; 0, 0, 0 when the limit is off); version is "" when there is no copy or it is fenced (the caller
  reloads), and when the outcome is OVER_RATE_LIMIT (names: src/redis/outcomes.ts). On a hit
  status and head are the cached answer (the body up to its timestamp's value) and now is
  0, tag the answer's ("" for an answer stored without one, by an older build); on a hit of
  the caller's own tag the reply ends at now, which is -1. On a miss status, head and tag
  are "" and now is Redis's time in ms, read after the version: the stamp of the answer the
  caller is about to build.
]]
-- @include outcomes
-- @include rateLimit
-- @include server

-- the copy first: it holds the license's own limit (a copy Redis lost counts the request
-- at the default: the caller reloads it for the next)
local copy = redis.call('HMGET', KEYS[2], 'v', 'z', 'lq', 'n')
local here = thisServer()
local limit = ownLimit(copy[3], tonumber(ARGV[1]))
local left, reset = 0, 0
if limit > 0 then
  local over
  over, left, reset = rateStep(KEYS[1], limit, ARGV[2])
  if over then return {OVER_RATE_LIMIT, 0, reset, limit, '', 0, '', ''} end
else
  limit = 0
end
local version = copy[1]
if not version or copy[2] or copy[4] ~= here then version = '' end
if ARGV[3] == '1' and version ~= '' then
  local cached = redis.call('HMGET', KEYS[3], 'v', 'n', 't')
  if cached[1] == version and cached[2] == here then
    local tag = cached[3] or ''
    if tag ~= '' and tag == ARGV[4] then return {DONE, left, reset, limit, version, -1} end
    local answer = redis.call('HMGET', KEYS[3], 's', 'b')
    return {DONE, left, reset, limit, version, 0, answer[1], answer[2], tag}
  end
end
local t = redis.call('TIME')
return {DONE, left, reset, limit, version, tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), '', '', ''}
