-- xpu.workgroup — the workgroup primitives' test kernels (workgroup_reduce, workgroup_scan)
-- as route rows: the op and dtype codes of kernels/workgroup.h, the rows (one per kernel and
-- dtype, regimes "reduce" and "scan") and the queries that pick them.
local xpu = require "xpu"

local M = {}

M.OPS = { add = 0, max = 1, min = 2 }
M.DTYPES = { f32 = 0, i32 = 1, i64 = 2 }
M.REDUCE, M.SCAN = "reduce", "scan"
xpu.regime(M.REDUCE)
xpu.regime(M.SCAN)

-- The facts the rows' shape half and the launcher (src/ops/workgroup/launch.c) read.
local FACTS = { "op", "block", "trips" }

-- What the kernels serve: an op code, a block of whole 32-lane waves, at least one trip.
local function shape(q)
  if not q.op or not q.block then return "query has no op / block" end
  if q.op < 0 or q.op > 2 then return ("op %d is not add (0), max (1) or min (2)"):format(q.op) end
  if q.block < 32 or q.block > 1024 or q.block % 32 ~= 0 then
    return ("block %d is not whole 32-lane waves, 32 to 1024 threads"):format(q.block)
  end
  if (q.trips or 1) < 1 then return ("trips %d: a group makes at least one"):format(q.trips) end
end

-- The reduce for f32, i32 and i64; the scan, exact, for i32 and i64 only (an f32 query is
-- refused at Format: no row serves it).
function M.rows(t)
  for _, dt in ipairs { "f32", "i32", "i64" } do
    t:register { name = "workgroup-reduce-" .. dt, regime = M.REDUCE, format = dt, priority = 10,
                 facts = FACTS, kernel = "workgroup_reduce", shape = shape }
  end
  for _, dt in ipairs { "i32", "i64" } do
    t:register { name = "workgroup-scan-" .. dt, regime = M.SCAN, format = dt, priority = 10,
                 facts = FACTS, kernel = "workgroup_scan", shape = shape }
  end
  return t
end

-- The query for `regime` ("reduce" or "scan") over dtype with op (a name of M.OPS or a code).
function M.query(regime, dtype, op, block, trips)
  local code = M.OPS[op] or op
  if math.type(code) ~= "integer" then
    error(("workgroup.query: op '%s' is not add, max, min or an integer code"):format(tostring(op)), 2)
  end
  return xpu.query { regime = regime, format = dtype, op = code, block = block, trips = trips or 1 }
end

return M
