-- copy-ramp.lua — a 1 GiB copy timed launch by launch from a process's start: back to back,
-- then with 100 ms and 20 ms of host time between launches, then back to back again. On
-- NVIDIA's Vulkan driver (H200, 580) the first five launches of a process ran at about half
-- the rate of the rest; CUDA's first launch is at full rate (docs/PERF.md).
--   xpulua lab/copy-ramp.lua [DEVICE]
local xpu = require "xpu"
local cli = require "xpu.cli"
local opts = cli.parse(arg, {
  name = "copy-ramp", dir = "lab",
  about = "A 1 GiB copy timed launch by launch from a process's start, with and without host gaps between launches.",
  example = "xpulua lab/copy-ramp.lua vulkan:0",
  options = {},
  args = { { "DEVICE", "the device", default = "vulkan:0" } },
})
local d, why = xpu.device(opts.device)
if not d then cli.die("copy-ramp", "%s", tostring(why)) end
local bytes = 1 << 30
local k, s = d:kernel "stream_copy", d:default_stream()
local src, dst = d:buffer(bytes), d:buffer(bytes)
local chunk = ("xpulua bandwidth"):rep(1 << 22)
for off = 0, bytes - 1, #chunk do src:upload(chunk, off) end
local t0 = xpu.now()
local function rep()
  local m = s:timer_begin(); k:launch(s, bytes // 65536, 256, dst, src, bytes); local sec = s:timer_end(m)
  return ("%.0f"):format(2 * bytes / sec / 1e9)
end
local function phase(name, n, gap)
  local out = {}
  for i = 1, n do
    if gap > 0 then local t = xpu.now(); while xpu.now() - t < gap do end end
    out[#out + 1] = rep()
  end
  print(("%s %s t=%.2fs: %s"):format(d.id, name, xpu.now() - t0, table.concat(out, " ")))
end
phase("start", 30, 0)
phase("gaps 100ms", 8, 0.1)
phase("back to back", 30, 0)
phase("gaps 20ms", 8, 0.02)
