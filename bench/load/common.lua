-- Shared by the wrk scripts (dofile'd first; a script may define its own request()).

-- The requests a script's init() prepares; request() goes round them in turn.
prepared = {}
local turn = 0
function request()
  turn = turn % #prepared + 1
  return prepared[turn]
end

-- One JSON line with the figures the driver reads; cpu_us: wrk's own CPU time during the
-- run, when the script measured it (-1: not measured).
function report(summary, latency, cpu_us)
  local e = summary.errors
  io.write(string.format(
    'WRK {"requests":%d,"duration_us":%d,"status_errors":%d,"socket_errors":%d,"p50":%d,"p99":%d,"p999":%d,"cpu_us":%d}\n',
    summary.requests, summary.duration, e.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9), cpu_us or -1))
end

function done(summary, latency, requests) report(summary, latency) end
