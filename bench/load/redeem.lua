-- wrk: POST /api/license/validate, every request a distinct sign token (a real redemption).
-- args: <token file> <thread count> ["keyed"]. Each thread takes every n-th line of the file.
-- "keyed": every request also carries an Idempotency-Key of its own (never repeated, so each
-- is still a first redemption: the cost of the key on the request path).
dofile(os.getenv("WRK_LUA_DIR") .. "/common.lua")

local threads, counter = {}, 1
function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
  table.insert(threads, thread)
end

local bodies, next_index = {}, 1
local keyed, keyed_headers = false, nil
function init(args)
  local file, n = args[1], tonumber(args[2] or "1")
  local line_no = 0
  for line in io.lines(file) do
    if line_no % n == (id - 1) then bodies[#bodies + 1] = '{"token":"' .. line .. '"}' end
    line_no = line_no + 1
  end
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  keyed = args[3] == "keyed"
  keyed_headers = { ["Content-Type"] = "application/json" }
end

function request()
  local body = bodies[next_index]
  local n = next_index
  if next_index < #bodies then next_index = next_index + 1 end -- out of tokens: repeats show as non-200
  if keyed then
    keyed_headers["Idempotency-Key"] = "bench-" .. id .. "-" .. n
    return wrk.format(nil, nil, keyed_headers, body)
  end
  return wrk.format(nil, nil, nil, body)
end

