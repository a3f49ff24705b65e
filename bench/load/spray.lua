-- wrk: POST /api/v1/auth/get-token with a random license key (a fresh UUID, so an unknown
-- one) and a random password on every request: an unknown-key flood.
-- args: <X-Forwarded-For: one address for every request, or "random" for a new address per
--        request (a botnet behind the trusted proxy)>
-- Prints the WRK line of common.lua and a STATUS line: replies by HTTP status.
dofile(os.getenv("WRK_LUA_DIR") .. "/common.lua")
count_statuses()

local forwarded = "random"
local headers = { ["Content-Type"] = "application/json" }
local random = math.random

function init(args)
  forwarded = args[1] or "random"
  seed_random()
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
