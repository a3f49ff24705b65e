-- wrk: POST /api/v1/auth/sign-token with the access tokens of several licenses in turn.
-- args: <access token file>
dofile(os.getenv("WRK_LUA_DIR") .. "/common.lua")

local requests_, i = {}, 0
function init(args)
  for token in io.lines(args[1]) do
    requests_[#requests_ + 1] = wrk.format("POST", nil,
      { ["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. token }, '{"imzaTipi":0}')
  end
end

function request()
  i = i % #requests_ + 1
  return requests_[i]
end

function done(summary, latency, requests) report(summary, latency) end
