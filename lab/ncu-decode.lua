-- ncu-decode.lua — two launches of each CUDA decode mat-vec at 14336x4096, at the launcher's grid,
-- for a profiler:  ncu -k regex:q8k_wave --launch-count 10 --section SpeedOfLight \
--   --section WarpStateStats --section Occupancy --section MemoryWorkloadAnalysis \
--   xpulua lab/ncu-decode.lua
local xpu = require "xpu"
local decode = require "xpu.decode"
local cli = require "xpu.cli"
cli.parse(arg, {
  name = "ncu-decode", dir = "lab",
  about = "Two launches of each CUDA decode mat-vec at 14336x4096, for a profiler (ncu).",
  example = "ncu -k regex:q8k_wave --launch-count 10 --section SpeedOfLight xpulua lab/ncu-decode.lua",
  options = {},
})
local d, why = xpu.device "cuda:0"
if not d then cli.die("ncu-decode", "%s", tostring(why)) end
for _, fmt in ipairs(decode.formats) do
  local rows, cols = 14336, 4096
  local fx = decode.fixture(fmt, 256, cols, 5)
  local w = d:buffer(fx.resident:rep(rows // 256))
  local x, y = d:buffer(fx.x), d:buffer(rows * 4)
  local k = d:kernel(fmt .. "_q8k_wave")
  for _ = 1, 2 do k:launch(nil, decode.groups(d, k, rows), 256, y, w, x, rows, cols, 0) end
  d:default_stream():sync()
  w:release()
end
