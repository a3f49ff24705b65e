-- wrk: GET /api/License/check-quota/{key} over a set of license keys (answers from the cache).
-- args: <license key file>
dofile(os.getenv("WRK_LUA_DIR") .. "/common.lua")

local requests_, i = {}, 0
function init(args)
  for key in io.lines(args[1]) do
    requests_[#requests_ + 1] = wrk.format("GET", "/api/License/check-quota/" .. key)
  end
end

function request()
  i = i % #requests_ + 1
  return requests_[i]
end

function done(summary, latency, requests) report(summary, latency) end
