-- bench-matvec-kernel.lua — one decode mat-vec kernel by name, e.g. a Vulkan `_dot4` twin
-- (what the routes pick where the device has the packed dot; bench-decode times the plain
-- `<fmt>_q8k_wave`): bit gate against the CPU first (a wave per row, and 2 groups so each wave
-- walks several rows), then deferred batches on weights rotated past the caches, as
-- xpu.decode.time does. Prints the manifest's note (on Vulkan: which module the pipeline is).
--   xpulua scripts/bench-matvec-kernel.lua --device vulkan:0 [--kernel K ...] [--n N]
-- Without --kernel: every <fmt>_q8k_wave and <fmt>_q8k_wave_dot4 the device has.
local xpu = require "xpu"
local report = require "xpu.report"
local decode = require "xpu.decode"

local opts = { device = "cpu:0", n = 20, kernels = {} }
local i = 1
while i <= #arg do
  local a, v = arg[i], arg[i + 1]
  if a == "--device" then opts.device = v
  elseif a == "--kernel" then opts.kernels[#opts.kernels + 1] = v
  elseif a == "--n" then opts.n = tonumber(v)
  else io.stderr:write("bench-matvec-kernel: unknown argument '", a, "'\n"); os.exit(2) end
  i = i + 2
end

local d = assert(xpu.device(opts.device))
if #opts.kernels == 0 then
  for _, fmt in ipairs(decode.formats) do
    for _, suffix in ipairs { "", "_dot4" } do
      local name = fmt .. "_q8k_wave" .. suffix
      if d:kernel_available(name) then opts.kernels[#opts.kernels + 1] = name end
    end
  end
end

-- == the CPU's portable body, element by element, at `groups` groups of 256
local function gate(k, fmt, groups)
  local rows, cols = 96, 4096
  local fx = decode.fixture(fmt, rows, cols, 3)
  local y = d:buffer(decode.NAN:rep(rows))
  k:launch(nil, groups, 256, y, d:buffer(fx.resident), d:buffer(fx.x), rows, cols, 0)
  d:default_stream():sync()
  return y:download() == xpu.quant.matvec_host(fmt, fx.resident, fx.x, rows, cols, "portable")
end

local function time(k, fmt, rows, cols)
  local distinct = math.min(rows, 256)
  local fx = decode.fixture(fmt, distinct, cols, 5)
  local resident = fx.resident:rep((rows + distinct - 1) // distinct):sub(1, rows * fx.row_bytes)
  local bytes = rows * fx.row_bytes
  local copies = math.max(2, math.ceil((d.integrated and 256 << 20 or 1 << 30) / bytes))
  local ws = {}
  for c = 1, copies do ws[c] = d:buffer(resident) end
  local x, y, s = d:buffer(fx.x), d:buffer(rows * 4), d:stream()
  s:set_deferred(true)
  local times, batch = {}, copies
  for r = 1, opts.n + 3 do
    local m = s:timer_begin()
    for b = 1, batch do k:launch(s, (rows + 7) // 8, 256, y, ws[b], x, rows, cols, 0) end
    local sec = s:timer_end(m) / batch
    if r > 3 then times[#times + 1] = sec end
  end
  for c = 1, copies do ws[c]:release() end
  s:release()
  return report.stats(times), bytes
end

local rows = {}
for _, name in ipairs(opts.kernels) do
  local k, fmt = d:kernel(name), name:match "^(.-)_q8k"
  local ok = gate(k, fmt, 12) and gate(k, fmt, 2)
  if not ok then io.stderr:write("bench-matvec-kernel: bit gate failed for ", name, "\n"); os.exit(1) end
  for _, shape in ipairs { { 14336, 4096 }, { 4096, 14336 } } do
    local st, bytes = time(k, fmt, shape[1], shape[2])
    rows[#rows + 1] = { name, ("%dx%d"):format(shape[1], shape[2]), st.median * 1e6, st.min * 1e6,
                        bytes / st.median / 1e9, k.manifest.note }
  end
end
print(report.table { title = ("mat-vec kernels on %s (%s), deferred, rotated"):format(d.id, d.name),
                     header = { "kernel", "rows x cols", "median us", "min us", "GB/s", "note" }, rows = rows })
