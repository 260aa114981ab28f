-- vk-steps-probe.lua — which earlier work in a process slows a Vulkan mat-vec: one set of
-- 4096x14336 weights (~1 GiB rotated) allocated once and timed fresh (deferred batches, GPU
-- time), then again after each step: eager launches without and with timer marks, a
-- download, a small gate-sized launch, the shared-memory stream_read, one launch of each
-- other decode kernel. On the H200 none moved it (docs/PERF.md); the slowdown that
-- lab/vk-alloc-history.lua showed was later found to be the clock, dropped during the
-- uploads of new weights (docs/PERF.md, "Clocks between cells").
--   xpulua lab/vk-steps-probe.lua [DEVICE] [KERNEL]
local xpu = require "xpu"; local decode = require "xpu.decode"; local report = require "xpu.report"
local settle = require "xpu.settle"
local cli = require "xpu.cli"
local opts = cli.parse(arg, {
  name = "vk-steps-probe", dir = "lab",
  about = "Which earlier work in a process slows a Vulkan mat-vec: the same weights timed again after each step.",
  example = "xpulua lab/vk-steps-probe.lua vulkan:0 q6_K_q8k_wave_dot4",
  options = {},
  args = { { "DEVICE", "the device", default = "vulkan:0" },
           { "KERNEL", "the mat-vec kernel", default = "q6_K_q8k_wave_dot4" } },
})
local d, why = xpu.device(opts.device)
if not d then cli.die("vk-steps-probe", "%s", tostring(why)) end
local name = opts.kernel
if not d:kernel_available(name) then cli.fail("vk-steps-probe", "KERNEL '%s': %s has no such kernel", name, d.id) end
local k, fmt = d:kernel(name), name:match "^(.-)_q8k"
local rows, cols = 4096, 14336
local fx = decode.fixture(fmt, 64, cols, 5)
local resident = fx.resident:rep(rows // 64)
local copies = math.max(2, math.ceil((1 << 30) / #resident))
local A = {} for c = 1, copies do A[c] = d:buffer(resident) end
local x, y = d:buffer(fx.x), d:buffer(rows * 4)
local function time()
  settle.ensure(d) -- each step is host work; the device settles before it is timed
  local s = d:stream(); s:set_deferred(true)
  local t = {}
  for r = 1, 13 do
    local m = s:timer_begin()
    for b = 1, #A do k:launch(s, (rows + 7) // 8, 256, y, A[b], x, rows, cols, 0) end
    local sec = s:timer_end(m) / #A
    if r > 3 then t[#t + 1] = sec end
  end
  s:release()
  return ("%.1f"):format(report.stats(t).median * 1e6)
end
local function step(what, fn) fn(); print(("%-44s then %s us"):format(what, time())); io.stdout:flush() end
print("fresh", time())
step("eager launches, default stream, no marks", function()
  for b = 1, #A do k:launch(nil, (rows + 7) // 8, 256, y, A[b], x, rows, cols, 0) end
  d:default_stream():sync()
end)
step("eager launches, default stream, marks", function()
  local s = d:default_stream()
  for b = 1, #A do local m = s:timer_begin(); k:launch(s, (rows + 7) // 8, 256, y, A[b], x, rows, cols, 0); s:timer_end(m) end
end)
step("download of y", function() y:download() end)
step("gate-sized launch (96 rows, 12 groups)", function()
  local g = decode.fixture(fmt, 96, 4096, 3)
  k:launch(nil, 12, 256, d:buffer(96 * 4), d:buffer(g.resident), d:buffer(g.x), 96, 4096, 0)
  d:default_stream():sync()
end)
step("stream_read (shared memory)", function()
  local out = d:buffer(1024 * 8 * 4)
  d:kernel("stream_read"):launch(nil, 1024, 256, out, A[1], #resident, 1024)
  d:default_stream():sync()
end)
for _, other in ipairs { "q4_0_q8k_wave_dot4", "iq4_nl_q8k_wave_dot4", "q4_K_q8k_wave", "q8_0_q8k_wave" } do
  step("one launch of " .. other, function()
    local f = other:match "^(.-)_q8k"
    local g = decode.fixture(f, 96, 4096, 3)
    d:kernel(other):launch(nil, 12, 256, d:buffer(96 * 4), d:buffer(g.resident), d:buffer(g.x), 96, 4096, 0)
    d:default_stream():sync()
  end)
end
