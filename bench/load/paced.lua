-- wrk: redeem.lua at a fixed rate, open loop (common.lua's pacer). Sends are paced by wrk's
-- delay() in whole milliseconds; the connections bound how many are in flight.
-- args: <token file> <thread count> <requests per second, all threads together>
dofile(os.getenv("WRK_LUA_DIR") .. "/redeem.lua")

local redeem_init = init
function init(args)
  redeem_init(args)
  local threads = tonumber(args[2] or "1")
  delay = pacer(1000 * threads / tonumber(args[3]))
end
