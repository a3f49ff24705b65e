-- wrk: a flood of one public GET, for bench/load/publicFloods.ts.
-- args: healthz                          GET /healthz
--       history <license key> <token>    GET /api/License/history/{key}?limit=500, one holder's access token
--       check-quota                      GET /api/License/check-quota/{a random UUID}: keys no license has
--       jwks                             GET /.well-known/jwks.json
-- Prints the WRK line of common.lua and a STATUS line: replies by HTTP status.
dofile(os.getenv("WRK_LUA_DIR") .. "/common.lua")
count_statuses()

local kind = nil

function init(args)
  kind = args[1]
  seed_random()
  if kind == "healthz" then
    prepared[1] = wrk.format("GET", "/healthz")
  elseif kind == "history" then
    prepared[1] = wrk.format("GET", "/api/License/history/" .. args[2] .. "?limit=500", { ["Authorization"] = "Bearer " .. args[3] })
  elseif kind == "jwks" then
    prepared[1] = wrk.format("GET", "/.well-known/jwks.json")
  elseif kind ~= "check-quota" then
    error("publicflood.lua: unknown flood " .. tostring(kind))
  end
end

local shared_request = request
function request()
  if kind == "check-quota" then return wrk.format("GET", "/api/License/check-quota/" .. uuid()) end
  return shared_request()
end
