--[[
  check-quota, step two, after a miss in checkQuota.lua: store the answer a process built
  from the license it read, or hand back the answer another process stored first, so every
  process serves one answer per license and version.

  The rules, in order:
    1. the copy's version is not the one the answer was built from (an admin change came
       between the version's read and now, or is in flight): not stored, STALE_ANSWER;
    2. an answer of this version is stored already: it is kept and handed back (the first
       stored wins, so processes that missed together serve one snapshot);
    3. the answer's stamp is half the cache lifetime old or more (its loader was slow):
       not stored, STALE_ANSWER;
    4. else it is stored, expiring at stamp + lifetime, and handed back.
  STALE_ANSWER hands back the copy's current version and Redis's time: the caller reads the
  license again with those as its version and stamp.

  Why no client sees an older figure after a newer one between admin changes: the answers
  stored for one version follow one another, each stored into an empty slot once the one
  before has expired. An answer stamped s (its license read after s) is stored before
  s + lifetime/2 (rule 3) and expires at s + lifetime; the next, stamped s', is stored at
  t' >= s + lifetime, and s' > t' - lifetime/2 >= s + lifetime/2, after the first was
  stored: its license was read after the first's, and used quota only rises. So a slow
  loader holding an older figure cannot store it after a newer answer expired (rule 3), nor
  an answer read before an admin change be stored after it (rule 1). And no answer is older
  than the lifetime: its figures were read after its stamp, it is gone at stamp + lifetime.
  Unknown license keys never come here (a spray of random keys stores nothing).

    KEYS[1] credentials hash  {k:<licenseKey>}:c   field v version of the license row, z fence
    KEYS[2] cached answer     {k:<licenseKey>}:qa  fields v version, s status line, b body head,
            n the Redis process it was stored on, t its tag: the version, the microsecond of
            the store and the first 8 digits of that process's run id, which no other answer
            stored for the key shares (one Redis process runs one script at a time; the run
            id tells a promoted replica's answer from its old master's, whose clock may
            differ), so a process holding an answer of that tag holds these very bytes
            (checkQuota.lua)

    ARGV[1] version the answer was built from (checkQuota.lua's version; "" = not known)
    ARGV[2] its stamp: Redis's time in ms when that version was read, before the license
    ARGV[3] cache lifetime, ms (QUOTA_CACHE_SECONDS)
    ARGV[4] status line of the answer
    ARGV[5] its body up to the timestamp's value

  Returns {outcome, status, head, version, now, tag} (names: src/redis/outcomes.ts): DONE with
  the answer to serve (this one or the one kept) and its tag ("" for one an older build
  stored); STALE_ANSWER with the copy's version ("" when
  there is no copy or it is fenced) and Redis's time in ms.
]]
-- @include outcomes
-- @include server

-- a copy or an answer of another Redis process is none (checkQuota.lua says why)
local here = thisServer()
local copy = redis.call('HMGET', KEYS[1], 'v', 'z', 'n')
local version = copy[1]
if not version or copy[2] or copy[3] ~= here then version = '' end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if version == '' or version ~= ARGV[1] then return {STALE_ANSWER, '', '', version, now, ''} end

local kept = redis.call('HMGET', KEYS[2], 'v', 's', 'b', 'n', 't')
if kept[1] == version and kept[4] == here then return {DONE, kept[2], kept[3], version, now, kept[5] or ''} end

local lifetime = tonumber(ARGV[3])
local expiresAt = tonumber(ARGV[2]) + lifetime
if now - tonumber(ARGV[2]) >= lifetime / 2 then return {STALE_ANSWER, '', '', version, now, ''} end
local tag = version .. '.' .. t[1] .. string.format('%06d', tonumber(t[2])) .. '.' .. string.sub(here, 1, 8)
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'v', version, 's', ARGV[4], 'b', ARGV[5], 'n', here, 't', tag)
redis.call('PEXPIREAT', KEYS[2], expiresAt)
return {DONE, ARGV[4], ARGV[5], version, now, tag}
