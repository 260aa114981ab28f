-- cpu-matvec-probe.lua — what one core's mat-vec body does alone (xpu.quant.matvec_host: the
-- kernel body on the calling thread, no pool), for the figures in docs/PERF.md's CPU section.
--   xpulua lab/cpu-matvec-probe.lua rates [PATH]        one core, 8 MiB L3-resident
--       matrices (3584x4096 and 1024x14336) per format, best of 7
--   xpulua lab/cpu-matvec-probe.lua rows [FMT] [PATH]   one core from DRAM: the same
--       58.7 M weights as 28672x2048 .. 2048x28672, three rotated copies, best of 6
--   xpulua lab/cpu-matvec-probe.lua once FMT [PATH] [N] N calls (default 1) at 1024x14336,
--       for an instruction count:  valgrind --tool=callgrind xpulua lab/cpu-matvec-probe.lua
--       once q4_K avx2 1  (then callgrind_annotate --inclusive=yes: rows_<fmt>_<path> / blocks)
-- PATH: portable, avx2 or vnni (default avx2; valgrind runs no AVX-512, so count with avx2).
local xpu = require "xpu"
local decode = require "xpu.decode"

local cli = require "xpu.cli"
local NAME = "cpu-matvec-probe"
local opts = cli.parse(arg, {
  name = NAME, dir = "lab",
  about = "One core's mat-vec body alone: rates [PATH] | rows [FMT] [PATH] | once FMT [PATH] [N].",
  example = "xpulua lab/cpu-matvec-probe.lua rows q4_K avx2",
  options = {},
  args = { { "MODE", "rates, rows or once", required = true, kind = "choice", choices = { "rates", "rows", "once" } },
           { "A2", "rates: PATH; rows: FMT (q4_0); once: FMT" }, { "A3", "rows, once: PATH (avx2)" },
           { "A4", "once: calls (1)", kind = "int", unit = "calls" } },
})
local mode, a2, a3, a4 = opts.mode, opts.a2, opts.a3, opts.a4
local PATHS = { portable = true, avx2 = true, vnni = true }
local path_arg = mode == "rates" and a2 or a3
if path_arg and not PATHS[path_arg] then cli.fail(NAME, "PATH '%s': not portable, avx2 or vnni", path_arg) end
local fmt_arg = mode ~= "rates" and a2 or nil
if fmt_arg and not pcall(xpu.quant.info, fmt_arg) then cli.fail(NAME, "FMT '%s': not a format (e.g. q4_0)", fmt_arg) end

-- rows x cols weights of fmt, `copies` distinct strings of them, and the activation
local function matrix(fmt, rows, cols, copies)
  local fx = decode.fixture(fmt, 64, cols, 5)
  local ws = {}
  for c = 1, copies do ws[c] = fx.resident:rep(rows // 64) end -- long strings are never shared
  return ws, fx.x
end

local function best_of(n, ws, fmt, x, rows, cols, path)
  local best = math.huge
  for r = 1, n do
    local t0 = xpu.now()
    xpu.quant.matvec_host(fmt, ws[r % #ws + 1], x, rows, cols, path)
    best = math.min(best, xpu.now() - t0)
  end
  return best
end

if mode == "rates" then
  local path = a2 or "avx2"
  for _, fmt in ipairs(decode.formats) do
    local out = {}
    for _, sh in ipairs { { 3584, 4096 }, { 1024, 14336 } } do
      local ws, x = matrix(fmt, sh[1], sh[2], 1)
      local t = best_of(7, ws, fmt, x, sh[1], sh[2], path)
      out[#out + 1] = ("%dx%d %.0f us %.1f GB/s"):format(sh[1], sh[2], t * 1e6, #ws[1] / t / 1e9)
    end
    print(fmt, table.concat(out, "   "))
  end
elseif mode == "rows" then
  local fmt, path = a2 or "q4_0", a3 or "avx2"
  for _, cols in ipairs { 2048, 4096, 8192, 14336, 28672 } do
    local rows = 4096 * 14336 // cols
    local ws, x = matrix(fmt, rows, cols, 3)
    local t = best_of(6, ws, fmt, x, rows, cols, path)
    print(("%s %dx%d %.0f us %.1f GB/s"):format(fmt, rows, cols, t * 1e6, #ws[1] / t / 1e9))
  end
elseif mode == "once" and a2 then
  local ws, x = matrix(a2, 1024, 14336, 1)
  for _ = 1, tonumber(a4) or 1 do xpu.quant.matvec_host(a2, ws[1], x, 1024, 14336, a3 or "avx2") end
else
  cli.fail(NAME, "once needs a FMT (usage: rates [PATH] | rows [FMT] [PATH] | once FMT [PATH] [N])")
end
