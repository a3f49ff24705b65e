--[[
  Redeem one sign token (validate): the only place where quota is spent.

  Everything below runs atomically, so a token is spent at most once and quota never goes
  below zero, whatever the concurrency. A refusal changes nothing but the rate-limit count.

    KEYS[1] license hash        {b}:l:<firmaId>   fields q total, u used, a active, x expiry ms, d domains
    KEYS[2] token markers       {b}:t:<expiry minute>   field token id: "i" issued, "u" used
    KEYS[3] rate-limit counter  {b}:rv:<firmaId>
    KEYS[4] usage stream        {b}:ev

    ARGV[1] now, ms since epoch
    ARGV[2] rate limit per window (0 = off)
    ARGV[3] rate window, ms
    ARGV[4] origin host name, normalised ("" = none)
    ARGV[5] token id
    ARGV[6] firma id
    ARGV[7] imza tipi
    ARGV[8] token iat, ms
    ARGV[9] origin as the client sent it (absent = none)

  Returns {code, a, b}:
    0 OK               a = used quota, b = remaining quota
    1 RATE_LIMITED     a = ms until the window resets
    2 TOKEN_UNKNOWN    no marker: the caller consults Postgres, re-seeds it and retries
    3 TOKEN_USED
    4 LICENSE_MISS     no license copy: the caller hydrates from Postgres and retries
    5 LICENSE_INVALID  inactive or past expiry
    6 ORIGIN_DENIED
    7 QUOTA_EXHAUSTED  a = remaining (0)
]]
-- @include rateLimit

local now = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])

if limit > 0 then
  local wait = overRateLimit(KEYS[3], limit, ARGV[3])
  if wait then return {1, wait} end
end

local marker = redis.call('HGET', KEYS[2], ARGV[5])
if not marker then return {2} end
if marker == 'u' then return {3} end

local lic = redis.call('HMGET', KEYS[1], 'q', 'u', 'a', 'x', 'd')
if not lic[1] then return {4} end

if lic[3] ~= '1' or tonumber(lic[4]) <= now then return {5} end

local domains = lic[5]
if domains and domains ~= '' then
  local host = ARGV[4]
  if host == '' then return {6} end
  if not string.find(domains, ',' .. host .. ',', 1, true) then
    -- "*.example.com" matches every name below example.com, never example.com itself
    local allowed = false
    local dot = string.find(host, '.', 1, true)
    while dot do
      if string.find(domains, ',*' .. string.sub(host, dot) .. ',', 1, true) then
        allowed = true
        break
      end
      dot = string.find(host, '.', dot + 1, true)
    end
    if not allowed then return {6} end
  end
end

local total = tonumber(lic[1])
local used = tonumber(lic[2])
if used >= total then return {7, 0} end

redis.call('HSET', KEYS[2], ARGV[5], 'u')
used = redis.call('HINCRBY', KEYS[1], 'u', 1)
if ARGV[9] then
  redis.call('XADD', KEYS[4], '*', 'k', 'u', 't', ARGV[5], 'f', ARGV[6], 'i', ARGV[7], 's', ARGV[1], 'c', ARGV[8], 'o', ARGV[9])
else
  redis.call('XADD', KEYS[4], '*', 'k', 'u', 't', ARGV[5], 'f', ARGV[6], 'i', ARGV[7], 's', ARGV[1], 'c', ARGV[8])
end
return {0, used, total - used}
