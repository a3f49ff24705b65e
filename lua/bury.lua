--[[
  Keep usage events Postgres refused for good as dead letters, each event once.

  A batch's refused events are buried before the batch is acknowledged
  (src/usage/batchWriter.ts). When the acknowledgement fails (its reply timed out, Redis
  was paused, the worker was killed in between), the batch stays pending and is written
  again, by this worker or the next: its good events insert nothing more, and its refused
  ones come here again. An event already buried among the last ARGV[1] dead letters (same
  stream, entry id and fields) is not added a second time, so the count operators see in
  /healthz is the events refused, and a replay sends each back once. The window only needs
  to reach back over the dead letters buried between a batch's two attempts.

    KEYS[1] dead letters  <prefix>:dead (stream; fields stream, id, error, code, event)

    ARGV[1] how many of the latest dead letters are compared
    ARGV[2..] five per refused event: its usage stream, its entry id, Postgres's message,
            its code, and its fields as JSON

  Returns the number of dead letters added.
]]

local function sameEvent(stream, id, event)
  return stream .. '\n' .. id .. '\n' .. event
end

local buried = {}
for _, entry in ipairs(redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', tonumber(ARGV[1]))) do
  local f = {}
  local fields = entry[2]
  for i = 1, #fields - 1, 2 do f[fields[i]] = fields[i + 1] end
  if f.stream and f.id and f.event then buried[sameEvent(f.stream, f.id, f.event)] = true end
end

local added = 0
for i = 2, #ARGV - 4, 5 do
  local key = sameEvent(ARGV[i], ARGV[i + 1], ARGV[i + 4])
  if not buried[key] then
    redis.call('XADD', KEYS[1], '*', 'stream', ARGV[i], 'id', ARGV[i + 1], 'error', ARGV[i + 2], 'code', ARGV[i + 3],
      'event', ARGV[i + 4])
    buried[key] = true
    added = added + 1
  end
end
return added
