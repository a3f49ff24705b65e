-- wrk: POST /api/v1/auth/get-token with license key and password (argon2id-bound).
-- args: <file of "licenseKey password" lines>
dofile(os.getenv("WRK_LUA_DIR") .. "/common.lua")

function init(args)
  for line in io.lines(args[1]) do
    local key, password = line:match("^(%S+) (%S+)$")
    prepared[#prepared + 1] = wrk.format("POST", nil, { ["Content-Type"] = "application/json" },
      '{"licenseKey":"' .. key .. '","password":"' .. password .. '","imzaTipi":0}')
  end
end
