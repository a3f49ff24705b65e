-- wrk: POST /api/v1/auth/get-token with a random license key (a fresh UUID, so an unknown
-- one) and a random password on every request: an unknown-key flood.
-- args: <X-Forwarded-For: one address for every request, or "random" for a new address per
--        request (a botnet behind the trusted proxy)>
-- Prints the WRK line of common.lua and a STATUS line: replies by HTTP status.
dofile(os.getenv("WRK_LUA_DIR") .. "/common.lua")

local forwarded = "random"
local headers = { ["Content-Type"] = "application/json" }
local random = math.random

-- per thread (wrk gives each thread its own Lua state); done() collects them
statuses = {}

local threads = {}
function setup(thread)
  threads[#threads + 1] = thread
end

function init(args)
  forwarded = args[1] or "random"
  -- a different sequence in every run and thread
  math.randomseed(os.time() + tonumber(tostring({}):match("0x(%x+)") or "0", 16) % 1000003)
end

-- n <= 4 hex digits (kept small: LuaJIT formats %x from a double)
local function hex(n)
  return string.format("%0" .. n .. "x", random(0, 16 ^ n - 1))
end

local function uuid()
  -- version 4, variant 10xx
  return hex(4) .. hex(4) .. "-" .. hex(4) .. "-4" .. hex(3) .. "-" .. string.format("%x", random(8, 11)) .. hex(3) .. "-" ..
    hex(4) .. hex(4) .. hex(4)
end

function request()
  if forwarded == "random" then
    headers["X-Forwarded-For"] = random(1, 223) .. "." .. random(0, 255) .. "." .. random(0, 255) .. "." .. random(1, 254)
  else
    headers["X-Forwarded-For"] = forwarded
  end
  return wrk.format("POST", nil, headers,
    '{"licenseKey":"' .. uuid() .. '","password":"guess-' .. random(0, 999999999) .. '","imzaTipi":0}')
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
  report(summary, latency)
  local total = {}
  for _, thread in ipairs(threads) do
    for status, n in pairs(thread:get("statuses")) do total[status] = (total[status] or 0) + n end
  end
  local parts = {}
  for status, n in pairs(total) do parts[#parts + 1] = string.format('"%d":%d', status, n) end
  local e = summary.errors
  io.write(string.format('STATUS {"statuses":{%s},"timeouts":%d,"connect":%d,"read":%d,"write":%d}\n',
    table.concat(parts, ","), e.timeout, e.connect, e.read, e.write))
end
