-- wrk script for scripts/bench-scale.sh: asks WRK_COUNTERS counters,
-- k000000 onwards, for one ID each in turn (/v1/counters/NAME/ids?count=1),
-- each wrk thread starting at its own place in the round, and reports as
-- wrk-report.lua does (which it loads from beside itself).
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "wrk-report.lua")

local counters = tonumber(os.getenv("WRK_COUNTERS") or "1")
local threads = 0

function setup(thread)
  thread:set("thread_number", threads)
  threads = threads + 1
end

local turn = 0

function init(args)
  -- Threads start far apart (by the golden ratio), so that they do not ask
  -- the same counter at the same moment.
  turn = math.floor((thread_number or 0) * counters * 0.618) % counters
end

function request()
  local path = string.format("/v1/counters/k%06d/ids?count=1", turn)
  turn = (turn + 1) % counters
  return wrk.format("GET", path)
end
