-- wrk: GET /api/License/check-quota/{key} over a set of license keys (answers from the cache).
-- args: <license key file>
dofile(os.getenv("WRK_LUA_DIR") .. "/common.lua")

local threads = {}
function setup(thread)
  threads[#threads + 1] = thread
end

function init(args)
  for key in io.lines(args[1]) do
    prepared[#prepared + 1] = wrk.format("GET", "/api/License/check-quota/" .. key)
  end
  -- wrk's CPU time (os.clock: the whole process) once the key file is read
  started_cpu = os.clock()
end

-- wrk shares its core with Redis: its own CPU per request is part of what a run measures
function done(summary, latency, requests)
  report(summary, latency, (os.clock() - threads[1]:get("started_cpu")) * 1e6)
end
