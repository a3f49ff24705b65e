--[[
  Write the Postgres copy of a license (or of its credentials) into Redis: used by
  hydration after a miss and by every admin change, after Postgres has committed.

  Versions make the two commute: whichever of a hydration (old row) and an admin change
  (new row) lands last, the newest version wins. The used and forfeited counts and the
  packages' units left are set only when the hash is created, because Redis runs ahead of
  Postgres on them by the worker lag: the caller computes them from Postgres plus the events
  still queued in the stream. A newer row adds the packages Redis does not hold yet (numbers
  above pm: new purchases, full) and has the current package settled again, since a new one
  may expire first (includes/packages.lua). A license hash written before packages existed
  (no pl, as the other scripts tell it) counts as missing. A fence (fence.lua) is lifted by
  the change that set it (ARGV[3]) or, once its deadline has passed, by a write whose row was
  read after it (ARGV[4]).

    KEYS[1] hash to write
    KEYS[2] the license's package hash {b}:pk:<firmaId> (none for the credentials hash)
    KEYS[3] the bucket's stamp {b}:node (includes/server.lua; license hashes only)
    KEYS[4] the license's floor {b}:fl:<firmaId> (lua/ack.lua; license hashes only)

    ARGV[1] version of the row (licenses.version)
    ARGV[2] used quota to start from when creating: a number, or "<used>:<released>" with the
            units given back so far (rr, lua/ack.lua), followed by "@<run id>" when those were
            computed from the usage stream of that Redis process; "" = not known yet (do not
            create, answer 3); "-" = this hash has no used count (credentials)
    ARGV[3] "1": this write completes one fenced admin change; "0" otherwise
    ARGV[4] ms since epoch by Postgres's clock when the row was read less a margin: fences
            whose deadline is before it are lifted ("0" = none)
    ARGV[5] forfeited quota to start from when creating ("" for credentials)
    ARGV[6] the license's packages that have not expired, or have units left, one a line:
            "<number>\t<expiry ms>\t<left>" (left as of creation when creating; a new package's
            amount otherwise); packages.lua forfeits the expired
    ARGV[7] the number of the license's last package (licenses.packages_made; "" for credentials)
    ARGV[8..] field, value, field, value...

  A credentials hash is written with the run id of the Redis process (n): one found with
  another's is written anew (credentials.lua and checkQuota.lua do not use it). A license
  hash is created only from counts that cannot be stale: computed from the stream of this
  very process, its bucket stamped with it (a stream read on a master a failover has since
  replaced held events the new one lacks), and not below the floor the worker left (a
  rebuild that read Postgres before the worker wrote a batch would count less). Otherwise it
  answers {3, 1}: the caller reads Postgres and the stream again.

  Returns {outcome, fenced} (SyncOutcome in src/redis/outcomes.ts): outcome 1 created,
  2 updated, 0 left alone (already as new or newer), 3 not created (no used count given);
  fenced 1 while a fence remains.
]]
-- @include packages
-- @include server

local h, packages = KEYS[1], KEYS[2]
local current = redis.call('HGET', h, 'v')
if current and packages and redis.call('HEXISTS', h, 'pl') == 0 then current = nil end
-- a credentials copy names the Redis process it was written on (n): one of another process
-- may lack its last change (includes/server.lua), so it is written again, keeping its fence
local here
if ARGV[2] == '-' then
  here = thisServer()
  if current and redis.call('HGET', h, 'n') ~= here then
    local fence = redis.call('HMGET', h, 'z', 'zd')
    redis.call('DEL', h)
    if fence[1] then redis.call('HSET', h, 'z', fence[1], 'zd', fence[2] or '0') end
    current = nil
  end
end
local outcome = 0
if not current and ARGV[2] == '' then return {3, 1} end

-- adds the packages numbered above `above`; the highest number added, or nil
local function addPackages(above)
  local added
  for no, exp, left in string.gmatch(ARGV[6], '(%d+)\t(%d+)\t(%d+)') do
    if tonumber(no) > above then
      redis.call('HSET', packages, no, exp .. '\t' .. left)
      added = no
    end
  end
  return added
end

local fields = {}
for i = 8, #ARGV do fields[#fields + 1] = ARGV[i] end
local used, released, readOn
if not current and ARGV[2] ~= '-' then
  used, released, readOn = string.match(ARGV[2], '^(%d+):(%d+)@?(%x*)$')
  if readOn and readOn ~= '' and (readOn ~= thisServer() or not onStampedServer(KEYS[3])) then return {3, 1} end
  local floor = KEYS[4] and redis.call('GET', KEYS[4])
  if floor and used then
    local counted, floorReleased = string.match(floor, '^(%d+):(%d+)$')
    if counted and (tonumber(used) + tonumber(released) < tonumber(counted) or tonumber(released) < tonumber(floorReleased)) then
      return {3, 1}
    end
  end
end
if not current then
  -- a small hash is a list that HGET and HMGET search from its start, in the order written:
  -- the fields every redemption reads and writes first, then the row's (src/licenses/rowCopy.ts
  -- licenseFields puts the redemption's first), then the counts a redemption does not read,
  -- the version last
  local created, counts = {}, {}
  if ARGV[2] ~= '-' then
    created = {'u', used or ARGV[2], 'pl', '0', 'pe', '', 'pn', '', 'f', ARGV[5]}
    counts = {'pm', ARGV[7], 'rr', released or '0'}
    redis.call('DEL', packages)
    addPackages(0)
  end
  for _, v in ipairs(fields) do created[#created + 1] = v end
  for _, v in ipairs(counts) do created[#created + 1] = v end
  if here then
    created[#created + 1] = 'n'
    created[#created + 1] = here
  end
  created[#created + 1] = 'v'
  created[#created + 1] = ARGV[1]
  redis.call('HSET', h, unpack(created))
  outcome = 1
elseif tonumber(current) < tonumber(ARGV[1]) then
  redis.call('HSET', h, 'v', ARGV[1], unpack(fields))
  if packages and addPackages(tonumber(redis.call('HGET', h, 'pm'))) then
    redis.call('HSET', h, 'pm', ARGV[7])
    demote(h, packages)
  end
  outcome = 2
end

local z = tonumber(redis.call('HGET', h, 'z') or '0')
if z > 0 and ARGV[3] == '1' then z = redis.call('HINCRBY', h, 'z', -1) end
if z > 0 and tonumber(redis.call('HGET', h, 'zd') or '0') < tonumber(ARGV[4]) then z = 0 end
if z <= 0 then redis.call('HDEL', h, 'z', 'zd') end
return {outcome, z > 0 and 1 or 0}
