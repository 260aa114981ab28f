-- bench-launch.lua — what a launch costs before it is a kernel: microseconds per tiny launch
-- issued eagerly (n launches, one sync) and replayed from a deferred stream (a recorded
-- sequence of 100 launches submitted as one: a CUDA graph, a re-submitted command buffer).
--   xpulua scripts/bench-launch.lua [--device cuda:0] [--n 100] [--passes 20] [-o table|jsonl|csv]
local xpu = require "xpu"
local report = require "xpu.report"
local settle = require "xpu.settle"

local cli = require "xpu.cli"

local NAME = "bench-launch"
local opts = cli.parse(arg, {
  name = NAME,
  about = "Microseconds per tiny launch, issued eagerly and replayed from a deferred stream.",
  example = "xpulua scripts/bench-launch.lua --device cpu:0 --n 100 --passes 20 -o jsonl",
  options = {
    { "device", "string", "cpu:0", "the device to time", value = "ID" },
    { "n", "int", 100, "launches per pass", unit = "launches" },
    { "passes", "int", 20, "timed passes per mode", unit = "passes" },
  },
  output = true,
})

local d, err = xpu.device(opts.device)
if not d then cli.die(NAME, "%s", err) end
local w = report.writer(opts.output, d, "launch", { "mode", "launches" })
local k = d:kernel "copy_bytes"
local src, dst = d:buffer(("launch"):rep(43):sub(1, 256)), d:buffer(256)

-- seconds per launch to the final sync, and of that the host's own: until the loop returned
local function pass(s)
  local t0 = xpu.now()
  for _ = 1, opts.n do k:launch(s, 1, 256, dst, src, 256) end
  local t1 = xpu.now()
  s:sync()
  return (xpu.now() - t0) / opts.n, (t1 - t0) / opts.n
end

local rows = {}
for _, mode in ipairs { "eager", "deferred" } do
  local s = d:stream()
  s:set_deferred(mode == "deferred")
  settle.ensure(d)
  pass(s) -- the first deferred pass records and instantiates; later passes replay it
  pass(s)
  local t, h = {}, {}
  for p = 1, opts.passes do t[p], h[p] = pass(s) end
  local st, host = report.stats(t), report.stats(h)
  rows[#rows + 1] = { mode, opts.n, st.median * 1e6, st.min * 1e6, st.max * 1e6, host.median * 1e6 }
  w:record(report.with_stats({ mode = mode, launches = opts.n, median_us = st.median * 1e6, min_us = st.min * 1e6,
                               max_us = st.max * 1e6, host_median_us = host.median * 1e6 }, st))
  s:release()
end
if dst:download() ~= src:download() then cli.die(NAME, "the launches did not copy: the instrument is broken") end
w:table {
  title = ("launch cost on %s (%s), host wall clock per launch incl. the final sync"):format(d.id, d.name),
  header = { "mode", "launches/seq", "median us", "min us", "max us", "host us (to the last submit)" }, rows = rows }
