-- vk-alloc-history.lua — the same mat-vec timed on fresh weight allocations, trial after trial
-- in one process: each trial allocates ~1 GiB of rotated weights (4096x14336), times them twice
-- (deferred batches, so the host's time is not counted), times one eager launch per buffer
-- ("cold single"), frees them, and keeps a spacer of trial * 37 MiB (SPACER=0: none). On
-- NVIDIA's Vulkan driver the per-launch time of a trial is stable to 1 % but grew from trial
-- to trial (docs/PERF.md); in a fresh process the same kernel alone is fast again. Those
-- figures predate xpu.settle (each trial's upload is host time, the device idle); each timing
-- now settles first, and with settling every 20 ms the benches' in-process slowdown was gone
-- (docs/PERF.md, "Clocks between cells"): a slowdown left here would be the allocations'.
--   xpulua lab/vk-alloc-history.lua [DEVICE] [KERNEL] [KERNEL2]
local xpu = require "xpu"; local decode = require "xpu.decode"; local report = require "xpu.report"
local settle = require "xpu.settle"
local cli = require "xpu.cli"
local opts = cli.parse(arg, {
  name = "vk-alloc-history", dir = "lab",
  about = "The same mat-vec timed on fresh weight allocations, trial after trial in one process.",
  example = "SPACER=0 xpulua lab/vk-alloc-history.lua vulkan:0 iq4_nl_q8k_wave_dot4 q8_0_q8k_wave",
  options = {},
  args = { { "DEVICE", "the device", default = "vulkan:0" },
           { "KERNEL", "the first kernel", default = "iq4_nl_q8k_wave_dot4", key = "kernel1" },
           { "KERNEL2", "the second kernel", default = "q8_0_q8k_wave", key = "kernel2" } },
})
local d, why = xpu.device(opts.device)
if not d then cli.die("vk-alloc-history", "%s", tostring(why)) end
for _, name in ipairs { opts.kernel1, opts.kernel2 } do
  if not d:kernel_available(name) then cli.fail("vk-alloc-history", "KERNEL '%s': %s has no such kernel", name, d.id) end
end
local rows, cols = 4096, 14336
local spacers = {}
local function weights(fmt)
  local fx = decode.fixture(fmt, 64, cols, 5)
  local resident = fx.resident:rep(rows // 64)
  local copies = math.max(2, math.ceil((1 << 30) / #resident))
  local ws = {}
  for c = 1, copies do ws[c] = d:buffer(resident) end
  return ws, d:buffer(fx.x), #resident
end
local function time_ws(k, ws, x, n)
  local y, s = d:buffer(rows * 4), d:stream()
  s:set_deferred(true)
  local t = {}
  settle.ensure(d)
  for r = 1, n + 3 do
    local m = s:timer_begin()
    for b = 1, #ws do k:launch(s, (rows + 7) // 8, 256, y, ws[b], x, rows, cols, 0) end
    local sec = s:timer_end(m) / #ws
    if r > 3 then t[#t + 1] = sec end
  end
  s:release(); y:release()
  local st = report.stats(t)
  return st.median * 1e6, st.min * 1e6, st.max * 1e6
end
-- each buffer alone: 8 launches on it (first is cold), median of the last 7 -> per-buffer us
local function per_buffer(k, ws, x)
  local y, s = d:buffer(rows * 4), d:default_stream()
  local out = {}
  settle.ensure(d)
  for b = 1, #ws do
    local m = s:timer_begin()
    k:launch(s, (rows + 7) // 8, 256, y, ws[b], x, rows, cols, 0)
    out[#out + 1] = ("%.0f"):format(s:timer_end(m) * 1e6)
  end
  y:release()
  return table.concat(out, " ")
end
for _, name in ipairs { opts.kernel1, opts.kernel2 } do
  local k, fmt = d:kernel(name), name:match "^(.-)_q8k"
  for trial = 1, 4 do
    local ws, x, bytes = weights(fmt)
    local a = { time_ws(k, ws, x, 10) }
    local b = { time_ws(k, ws, x, 10) }
    print(("%s trial %d (%d copies of %d MB): %.1f [%.1f-%.1f] then %.1f [%.1f-%.1f] us; cold single: %s"):format(
      name, trial, #ws, bytes >> 20, a[1], a[2], a[3], b[1], b[2], b[3], per_buffer(k, ws, x)))
    io.stdout:flush()
    for _, w in ipairs(ws) do w:release() end
    x:release()
    if os.getenv("SPACER") ~= "0" then spacers[#spacers + 1] = d:buffer((trial * 37) << 20) end
  end
end
