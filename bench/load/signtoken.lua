-- wrk: POST /api/v1/auth/sign-token with the access tokens of several licenses in turn.
-- args: <access token file>
dofile(os.getenv("WRK_LUA_DIR") .. "/common.lua")

function init(args)
  for token in io.lines(args[1]) do
    prepared[#prepared + 1] = wrk.format("POST", nil,
      { ["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. token }, '{"imzaTipi":0}')
  end
end
