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

-- A random version-4 UUID (math.random: seed it in init()).
-- n <= 4 hex digits (kept small: LuaJIT formats %x from a double)
local function hex(n)
  return string.format("%0" .. n .. "x", math.random(0, 16 ^ n - 1))
end
function uuid()
  -- version 4, variant 10xx
  return hex(4) .. hex(4) .. "-" .. hex(4) .. "-4" .. hex(3) .. "-" .. string.format("%x", math.random(8, 11)) .. hex(3) .. "-" ..
    hex(4) .. hex(4) .. hex(4)
end

-- A different random sequence in every run and thread.
function seed_random()
  math.randomseed(os.time() + tonumber(tostring({}):match("0x(%x+)") or "0", 16) % 1000003)
end

-- Replies counted by HTTP status: a script calling count_statuses() gets setup(), response()
-- and done() that count per thread (wrk gives each its own Lua state) and print, after the
-- WRK line, a STATUS line: {"statuses":{"<status>":n,...},"timeouts":n,"connect":n,"read":n,"write":n}.
function count_statuses()
  statuses = {}
  local threads = {}
  function setup(thread)
    threads[#threads + 1] = thread
  end
  function response(status, headers, body)
    statuses[status] = (statuses[status] or 0) + 1
  end
  function done(summary, latency, requests)
    report(summary, latency)
    local total = {}
    for _, thread in ipairs(threads) do
      for status, n in pairs(thread:get("statuses")) do total[status] = (total[status] or 0) + n end
    end
    local parts = {}
    for status, n in pairs(total) do parts[#parts + 1] = string.format('"%d":%d', status, n) end
    local e = summary.errors
    io.write(string.format('STATUS {"statuses":{%s},"timeouts":%d,"connect":%d,"read":%d,"write":%d}\n',
      table.concat(parts, ","), e.timeout, e.connect, e.read, e.write))
  end
end

-- Open-loop pacing, as wrk2 paces: request k is due at start + k * interval_ms whatever the
-- answers before it took, so a server that falls behind sees a backlog build up instead of a
-- gentler load. Returns a delay() for wrk (whole milliseconds until the next is due);
-- interval_ms 0: no pause.
function pacer(interval_ms)
  local ffi = require("ffi")
  ffi.cdef[[
    typedef struct { long tv_sec; long tv_nsec; } pacer_timespec_t;
    int clock_gettime(int clk_id, pacer_timespec_t *tp);
  ]]
  local ts = ffi.new("pacer_timespec_t")
  local due = nil
  return function()
    if interval_ms == 0 then return 0 end
    ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
    local t = tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1e6
    if due == nil then due = t end
    local wait = due - t
    due = due + interval_ms
    if wait <= 0 then return 0 end
    return math.floor(wait + 0.5)
  end
end
