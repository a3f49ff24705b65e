-- wrk: mints sign tokens through POST /api/v1/auth/sign-token and appends them to a file.
-- args: <access token file> <output file>
local requests_, i, out = {}, 0, nil
function init(args)
  for token in io.lines(args[1]) do
    requests_[#requests_ + 1] = wrk.format("POST", nil,
      { ["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. token }, '{"imzaTipi":0}')
  end
  out = io.open(args[2], "a")
  out:setvbuf("line")
end

function request()
  i = i % #requests_ + 1
  return requests_[i]
end

function response(status, headers, body)
  local token = body:match('"signToken":"([^"]+)"')
  if token then out:write(token, "\n") end
end

function done(summary, latency, requests)
  io.write(string.format('WRK {"requests":%d,"duration_us":%d,"status_errors":%d,"socket_errors":0,"p50":0,"p99":0,"p999":0}\n',
    summary.requests, summary.duration, summary.errors.status))
end
