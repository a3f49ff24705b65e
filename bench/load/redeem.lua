-- wrk: POST /api/license/validate, every request a distinct sign token (a real redemption).
-- args: <token file> <thread count> ["keyed" | "documents:N"]. Each thread takes every n-th
-- line of the file. "keyed": every request also carries an Idempotency-Key of its own (never
-- repeated, so each is still a first redemption: the cost of the key on the request path).
-- "documents:N": the body also lists N documents, for POST /api/Signature/sign.
dofile(os.getenv("WRK_LUA_DIR") .. "/common.lua")

local threads, counter = {}, 1
function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
  table.insert(threads, thread)
end

local bodies, next_index = {}, 1
local keyed, head = false, nil

-- ',"documents":[...]' of n documents (names and digests as a signing application sends them)
local function documents(n)
  local list = {}
  for i = 1, n do
    list[i] = string.format('{"name":"recete-%04d.xml","sha256":"%064x"}', i, i)
  end
  return ',"documents":[' .. table.concat(list, ',') .. ']'
end

function init(args)
  local file, n = args[1], tonumber(args[2] or "1")
  local extra = ""
  local count = string.match(args[3] or "", "^documents:(%d+)$")
  if count then extra = documents(tonumber(count)) end
  local line_no = 0
  for line in io.lines(file) do
    if line_no % n == (id - 1) then bodies[#bodies + 1] = '{"token":"' .. line .. '"' .. extra .. '}' end
    line_no = line_no + 1
  end
  keyed = args[3] == "keyed"
  -- each request written by one concatenation (wrk.format builds a table and formats
  -- every header each time: a cost on the core wrk shares with Redis, larger with a key)
  local host = wrk.host .. (wrk.port and (":" .. wrk.port) or "")
  head = "POST " .. wrk.path .. " HTTP/1.1\r\nHost: " .. host .. "\r\nContent-Type: application/json\r\n"
  if keyed then head = head .. "Idempotency-Key: bench-" .. id .. "-" end
  -- wrk's CPU time (os.clock: the whole process) once the token file is read
  started_cpu = os.clock()
end

-- wrk shares its core with Redis: its own CPU per request is part of what a run measures
function done(summary, latency, requests)
  report(summary, latency, (os.clock() - threads[1]:get("started_cpu")) * 1e6)
end

function request()
  local body = bodies[next_index]
  local n = next_index
  if next_index < #bodies then next_index = next_index + 1 end -- out of tokens: repeats show as non-200
  if keyed then return head .. n .. "\r\nContent-Length: " .. #body .. "\r\n\r\n" .. body end
  return head .. "Content-Length: " .. #body .. "\r\n\r\n" .. body
end
