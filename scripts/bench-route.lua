-- bench-route.lua — nanoseconds per pick (a hit on the first candidate, and a miss that walks
-- every row of the format) and per dispatch through a stored row, for tables of 8, 64 and 512
-- C rows and Lua rows; allocations counted over the timed loops.
--   xpulua scripts/bench-route.lua [-o table|jsonl|csv]
local xpu = require "xpu"
local report = require "xpu.report"

local cli = require "xpu.cli"

local NAME = "bench-route"
local opts = cli.parse(arg, {
  name = NAME,
  about = "Nanoseconds per route pick (hit and miss) and per dispatch, for tables of 8, 64 and 512 C and Lua rows.",
  example = "xpulua scripts/bench-route.lua -o jsonl",
  options = {},
  output = true,
})

local cpu = xpu.device "cpu:0" or cli.die(NAME, "no cpu:0 device")
local w = report.writer(opts.output, cpu, "route", { "rows", "table_rows" })
local formats = { "q4_0", "q8_0", "q4_K", "q6_K", "iq4_nl", "q5_K", "q2_K", "q3_K" }

local function build(n, c_rows)
  local t = xpu.new_routes(("bench-%d-%s"):format(n, c_rows and "c" or "lua"))
  for i = 1, n do
    local spec = { name = ("row%04d"):format(i), regime = "decode", format = formats[(i - 1) % #formats + 1],
                   priority = i, kernel = "copy_bytes" }
    if c_rows then
      spec.multiple = { in_dim = 256, out_dim = 32 }
      spec.ready_when = { "bound" }
      t:register_c(spec)
    else
      spec.shape = function(q)
        if q.in_dim % 256 ~= 0 then return "in width not 256-aligned" end
        if q.out_dim % 32 ~= 0 then return "out width not 32-aligned" end
      end
      spec.ready = function(c) if not c.receiver.bound then return "slab is not bound" end end
      t:register(spec)
    end
  end
  return t:freeze()
end

-- The best of 5 passes (ns a call), and the 5 passes' stats.
local function time_ns(iters, f)
  for _ = 1, iters // 10 do f() end
  local t = {}
  for p = 1, 5 do
    local t0 = xpu.now()
    for _ = 1, iters do f() end
    t[p] = (xpu.now() - t0) / iters * 1e9
  end
  local st = report.stats(t)
  return st.min, st
end

-- The cost of the Lua loop and method call around an empty C function, to subtract.
local empty = time_ns(200000, function() return cpu.id end)

local src, dst = cpu:buffer(("x"):rep(64)), cpu:buffer(64)
local rows = {}
for _, kind in ipairs { "C", "Lua" } do
  for _, n in ipairs { 8, 64, 512 } do
    local t = build(n, kind == "C")
    local hit = xpu.call { query = xpu.query { format = "q6_K", regime = "decode", in_dim = 4096, out_dim = 4096 },
                           receiver = { bound = true }, operands = { dst = dst, src = src } }
    local miss = xpu.call { query = xpu.query { format = "q6_K", regime = "decode", in_dim = 4000, out_dim = 4096 },
                            receiver = { bound = true } }
    local row = t:bind(hit)
    local f_hit = function() return t:pick(hit) end
    local f_miss = function() return t:pick(miss) end
    local pick_hit, hit_st = time_ns(100000, f_hit)
    local pick_miss = time_ns(20000, f_miss)
    -- allocations over 10000 more picks, warm, with the collector paused (a collector step
    -- may resize Lua's string table, which is not pick's doing)
    collectgarbage("collect")
    collectgarbage("stop")
    local a0 = xpu.T.alloc_count()
    for _ = 1, 10000 do f_hit(); f_miss() end
    local allocs = xpu.T.alloc_count() - a0
    collectgarbage("restart")
    local dispatch = time_ns(100000, function() row:dispatch(hit) end)
    local c_hit = math.huge
    for _ = 1, 5 do c_hit = math.min(c_hit, xpu.T.time_pick(t, hit, 200000)) end
    rows[#rows + 1] = { kind, n, c_hit, pick_hit - empty, pick_miss - empty, dispatch - empty, allocs }
    -- the stats are the Lua pick hit's five passes, in ns a call (the figures are each the best)
    w:record(report.with_stats({ rows = kind, table_rows = n, pick_c_ns = c_hit, pick_hit_ns = pick_hit - empty,
                                 pick_miss_ns = pick_miss - empty, dispatch_ns = dispatch - empty, allocations = allocs },
                               hit_st, "ns"))
  end
end

w:table {
  title = ("route resolution on %s (%s); Lua call overhead %.0f ns subtracted"):format(cpu.id, cpu.name, empty),
  header = { "rows", "table", "pick ns (C loop)", "pick hit ns", "pick miss ns", "dispatch ns", "allocs" },
  rows = rows,
}
