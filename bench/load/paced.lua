-- wrk: redeem.lua at a fixed rate, open loop (as wrk2 paces): request k is due at
-- start + k / rate whatever the answers before it took, so a server or worker that falls
-- behind sees the backlog build up instead of a gentler load. Sends are paced by wrk's
-- delay() in whole milliseconds; the connections bound how many are in flight.
-- args: <token file> <thread count> <requests per second, all threads together>
dofile(os.getenv("WRK_LUA_DIR") .. "/redeem.lua")

local ffi = require("ffi")
ffi.cdef[[
  typedef struct { long tv_sec; long tv_nsec; } timespec_t;
  int clock_gettime(int clk_id, timespec_t *tp);
]]
local ts = ffi.new("timespec_t")
local function now_ms()
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1e6
end

local redeem_init = init
local interval_ms, due = 0, nil
function init(args)
  redeem_init(args)
  local threads = tonumber(args[2] or "1")
  interval_ms = 1000 * threads / tonumber(args[3])
end

function delay()
  local t = now_ms()
  if due == nil then due = t end
  local wait = due - t
  due = due + interval_ms
  if wait <= 0 then return 0 end
  return math.floor(wait + 0.5)
end
