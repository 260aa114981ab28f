-- idle-ramp.lua — what a device's read rate does after it sat idle: opens it, reads once, lets
-- it idle S seconds, then streams 128 MiB reads back to back (replayed batches, windows of
-- about 10 ms) for L seconds and prints the rate of the windows (all of the first 0.1 s, then
-- one each 0.25 s) and when the rate first reached 90 % of the last second's median. On the
-- H200 with NVIDIA's Vulkan driver, after 8 s or more idle: about 1450 GB/s for at least 50 ms,
-- then 3500 by 0.55 s; CUDA reads at full rate from the first window (docs/PERF.md).
--   xpulua lab/idle-ramp.lua [--device D] [--idle S] [--load L]
local xpu = require "xpu"
local report = require "xpu.report"
local settle = require "xpu.settle"

local cli = require "xpu.cli"

local NAME = "idle-ramp"
local opts = cli.parse(arg, {
  name = NAME, dir = "lab",
  about = "A device's read rate after it sat idle: windows of back-to-back reads, and when 90 % of the settled rate came.",
  example = "xpulua lab/idle-ramp.lua --device cpu:0 --idle 2 --load 1",
  options = {
    { "device", "string", "cpu:0", "the device to time", value = "D" },
    { "idle", "number", 10, "idle time before the reads", unit = "seconds", min = 0 },
    { "load", "number", 2, "time spent reading", unit = "seconds", min = 0 },
  },
  output = true,
})

local d, why = xpu.device(opts.device)
if not d then cli.die(NAME, "%s", tostring(why)) end
local w = report.writer(opts.output, d, "idle-ramp", { "t_s" })
local bytes = 128 << 20
local buf = d:buffer(("xpulua idle-ramp "):rep(bytes // 17 + 1):sub(1, bytes))
local read = settle.reader(d)
local function window(n) return read(buf, bytes, n) end
local n, sec = 1, 0
window(1)
repeat _, sec = window(n); if sec < 0.0075 then n = n * 2 end until sec >= 0.0075 or n >= 4096
report.log("idle-ramp: %s (%s), %d reads of 128 MiB a window; idle %g s", d.id, d.name, n, opts.idle)
os.execute(("sleep %g"):format(opts.idle))
local t0, rows, all, next_t = xpu.now(), {}, {}, 0.1
while true do
  local gbs = window(n)
  local t = xpu.now() - t0
  all[#all + 1] = { t, gbs }
  if t <= 0.1 or t >= next_t then
    rows[#rows + 1] = { ("%.3f"):format(t), gbs }
    w:record(report.with_stats({ t_s = tonumber(("%.3f"):format(t)), idle_s = opts.idle, reads = n, gbs = gbs },
      report.stats { gbs }, "GB/s")) -- one window: one sample
    if t > 0.1 then next_t = next_t + 0.25 end
  end
  if t >= opts.load then break end
end
local tail = {}
for _, w in ipairs(all) do if w[1] >= opts.load - 1 then tail[#tail + 1] = w[2] end end
local settled = report.stats(tail).median
local reached = "-"
for _, w in ipairs(all) do if w[2] >= 0.9 * settled then reached = ("%.3f s"):format(w[1]); break end end
w:table { title = ("read rate on %s after %g s idle, windows of %d x 128 MiB; 90 %% of the last second's median (%.0f GB/s) first at %s"):format(
  d.id, opts.idle, n, settled, reached), header = { "s since load began", "GB/s" }, rows = rows }
