-- wrk soak: each connection mints a sign token, then redeems it, again and again (every
-- validate a real redemption), paced by delay() to a target rate.
-- args: <access token file> <delay ms per request per connection>
dofile(os.getenv("WRK_LUA_DIR") .. "/common.lua")

local sign, tokens, pause, i = {}, {}, 0, 0
function init(args)
  for token in io.lines(args[1]) do
    sign[#sign + 1] = wrk.format("POST", "/api/v1/auth/sign-token",
      { ["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. token }, '{"imzaTipi":0}')
  end
  pause = tonumber(args[2] or "0")
end

function request()
  local token = table.remove(tokens)
  if token then
    return wrk.format("POST", "/api/license/validate", { ["Content-Type"] = "application/json" },
      '{"token":"' .. token .. '"}')
  end
  i = i % #sign + 1
  return sign[i]
end

function response(status, headers, body)
  local token = body:match('"signToken":"([^"]+)"')
  if token then tokens[#tokens + 1] = token end
end

function delay() return pause end

