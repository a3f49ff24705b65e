--[[
  Acknowledge a batch of one usage stream once Postgres has committed it, in one call:
  XACK its entries, trim the stream of every entry that no consumer still holds, and drop
  the copies of licenses whose count of redemptions is below what Postgres now holds.

  Trimming instead of deleting entry by entry: every entry below the oldest one still
  pending (read by some worker, not yet acknowledged), or when none is pending every entry
  up to the last the group has handed out, has been read and acknowledged, so XTRIM MINID
  drops them, whole stream nodes at a time; entries other workers hold, and entries not
  yet read, stay.

  Dropping copies behind Postgres: Redis counts every redemption before Postgres does, so
  its count of them (u + rr: used, and the units given back since, which only grows) is never
  legitimately lower; it is lower only after Redis lost data that the
  worker still wrote afterwards (a batch held in memory across the loss, or an AOF that lost
  its last second). Its count of releases (rr) is never lower either, unless a failover lost
  a release the worker had written (u + rr then agree with Postgres, u alone is too high).
  Such a copy is dropped, and rebuilt from Postgres and the stream when
  next used (src/licenses/hot.ts): raising the count alone would leave the packages' units
  left above it. Its package hash stays until then: nothing reads it without the license
  hash, and sync.lua writes it anew with the copy. A license Redis does not hold is left alone.
  A count of "-" drops the copy whatever it holds: Redis counted a second redemption of one
  token that Postgres did not (src/usage/secondRedemptions.ts), so Redis is ahead of it by
  that one for good; rebuilt, the copy agrees with Postgres again.

    KEYS[1]        usage stream     {b}:ev
    KEYS[2..n+1]   license hashes   {b}:l:<firmaId>   (the stream's slot)
    KEYS[n+2..2n+1] their floors    {b}:fl:<firmaId>: where a copy was dropped, or none was found,
                   Postgres's counts are kept a minute, and sync.lua makes no copy counting
                   less (a rebuild that read Postgres before this batch was written would)

    ARGV[1]            consumer group
    ARGV[2]            k, the number of entry ids
    ARGV[3..k+2]       the batch's entry ids on this stream
    ARGV[k+3..k+n+2]   "<counted>:<released>" for license i (KEYS[i+1]): the redemptions Postgres
                       has counted, its used quota plus the units given back (licenses.released_quota),
                       which only grows, as Redis's u + rr (used, released) does (a release
                       lowers u alone), and those units given back; "-": drop it whatever it holds

  Returns the number of copies dropped.
]]
local stream, group = KEYS[1], ARGV[1]
local k = tonumber(ARGV[2])

-- XACK in slices: unpack is bounded by Lua's stack
local SLICE = 4000
for first = 3, k + 2, SLICE do
  redis.call('XACK', stream, group, unpack(ARGV, first, math.min(first + SLICE - 1, k + 2)))
end

-- "ms-seq" -> ms, seq
local function parse(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end

-- Trim below the oldest entry still pending, or past the last entry the group has handed
-- out when none is pending. (No group: Redis lost it, and the stream with it: nothing to trim.)
local groups = redis.pcall('XINFO', 'GROUPS', stream)
if not groups.err then
  for _, g in ipairs(groups) do
    local info = {}
    for i = 1, #g, 2 do info[g[i]] = g[i + 1] end
    if info['name'] == group then
      local threshold
      if tonumber(info['pending']) > 0 then
        threshold = redis.call('XPENDING', stream, group)[2]
      else
        local ms, seq = parse(info['last-delivered-id'])
        threshold = string.format('%d-%d', ms, seq + 1)
      end
      redis.call('XTRIM', stream, 'MINID', threshold)
    end
  end
end

local FLOOR_MS = 60000
local n = (#KEYS - 1) / 2
local dropped = 0
for i = 2, n + 1 do
  local counts = redis.call('HMGET', KEYS[i], 'u', 'rr')
  local given = ARGV[k + i + 1]
  local counted, released = string.match(given, '^(%d+):(%d+)$')
  local rr = tonumber(counts[2] or '0')
  local drop = counts[1] and (not counted or tonumber(counts[1]) + rr < tonumber(counted) or rr < tonumber(released))
  if drop then
    redis.call('DEL', KEYS[i])
    dropped = dropped + 1
  end
  if counted and (drop or not counts[1]) then redis.call('SET', KEYS[n + i], given, 'PX', FLOOR_MS) end
end
return dropped
