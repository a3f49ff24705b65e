-- wrk: a signing fleet's mix, for make bench-soak. A web application trades an access token
-- for a sign token (sign-token), a desktop application redeems it (validate: a real
-- redemption each); every 20th round a dashboard asks check-quota, every 1000th a web
-- application logs in again (get-token: a password hash, as rare as logins are). The
-- licenses take turns, so each stays under its default limits. Open loop at a rate
-- (common.lua's pacer); rate 0: as fast as answered (the peak).
-- args: <license file: key, password, access token per line, space-separated> <requests per second, 0: unpaced>
dofile(os.getenv("WRK_LUA_DIR") .. "/common.lua")
count_statuses()

local sign, quota, login = {}, {}, {}
-- each kind of request goes round the licenses on its own turn, so each license gets its
-- share of every kind (one turn for all would give check-quota only every 20th license)
local tokens, round = {}, 0
local turns = { sign = 0, quota = 0, login = 0 }
local function next_of(kind, list)
  turns[kind] = turns[kind] % #list + 1
  return list[turns[kind]]
end

function init(args)
  for line in io.lines(args[1]) do
    local key, password, access = line:match("^(%S+) (%S+) (%S+)$")
    if key then
      sign[#sign + 1] = "POST /api/v1/auth/sign-token HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\n" ..
        "Authorization: Bearer " .. access .. "\r\nContent-Length: 14\r\n\r\n{\"imzaTipi\":0}"
      quota[#quota + 1] = "GET /api/license/check-quota/" .. key .. " HTTP/1.1\r\nHost: soak\r\n\r\n"
      local body = '{"licenseKey":"' .. key .. '","password":"' .. password .. '","imzaTipi":0}'
      login[#login + 1] = "POST /api/v1/auth/get-token HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\n" ..
        "Content-Length: " .. #body .. "\r\n\r\n" .. body
    end
  end
  local rate = tonumber(args[2] or "0")
  delay = pacer(rate > 0 and 1000 / rate or 0)
end

function request()
  local token = table.remove(tokens)
  if token then
    local body = '{"token":"' .. token .. '"}'
    return "POST /api/license/validate HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\nContent-Length: " ..
      #body .. "\r\n\r\n" .. body
  end
  round = round + 1
  if round % 1000 == 0 then return next_of("login", login) end
  if round % 20 == 0 then return next_of("quota", quota) end
  return next_of("sign", sign)
end

local counted = response
function response(status, headers, body)
  counted(status, headers, body)
  local token = body:match('"signToken":"([^"]+)"')
  if token then tokens[#tokens + 1] = token end
end
