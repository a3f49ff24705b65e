-- wrk: GET /api/License/check-quota/{key} over a set of license keys (answers from the cache).
-- args: <license key file>
dofile(os.getenv("WRK_LUA_DIR") .. "/common.lua")

function init(args)
  for key in io.lines(args[1]) do
    prepared[#prepared + 1] = wrk.format("GET", "/api/License/check-quota/" .. key)
  end
end
