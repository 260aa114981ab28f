-- pad-modes.lua — pad_backward in each border mode (constant, reflect, replicate), timed on one
-- device at a size past the caches: an f32 gradient [R, --cols] from an upstream padded
-- ((1, 1), (16, 16)), the bench's shape (--outer N pads the rows axis by N a side instead of
-- 1; 0 leaves no row with several upstream rows). The modes differ only in the border's
-- terms, so the constant row is the walk's own rate and the others show what their borders
-- cost (H200, reflect: 95 % of the copy ceiling at --outer 0, 85-87 % at 1; docs/PERF.md). GB/s of the
-- contract's bytes_moved, against the copy ceiling that bandwidth.lua stored. Median, min and
-- max of --reps timed launches after a warm-up; the kernel that ran in its own column. Each mode
-- is bit-gated first: the gradient, written over a poisoned buffer, against the CPU's bytes on
-- the same upstream ("bit gate": ok, DIFFERS or UNWRITTEN with the count of such elements; either
-- fails the run); --no-gate leaves it out.
--   xpulua lab/pad-modes.lua [--device D] [--mib N] [--cols N] [--outer N] [--reps N] [--no-gate] [-o table|jsonl|csv]
local xpu = require "xpu"
local report = require "xpu.report"
local settle = require "xpu.settle"
local autotune = require "xpu.autotune"

local cli = require "xpu.cli"

local NAME = "pad-modes"
local opts = cli.parse(arg, {
  name = NAME, dir = "lab",
  about = "pad_backward in each border mode, bit-gated, timed past the caches against the copy ceiling.",
  example = "xpulua lab/pad-modes.lua --device cpu:0 --mib 16 --cols 1024 --outer 1 --reps 3 -o jsonl",
  options = {
    { "device", "string", "cpu:0", "the device to time", value = "D" },
    { "mib", "int", nil, "the gradient's size", unit = "MiB", default_text = "past the caches" },
    { "cols", "int", 1024, "the gradient's rows' length, 17 or more (past the 16-column border)", unit = "columns" },
    { "outer", "int", 1, "upstream rows padded a side", unit = "rows", min = 0 },
    { "reps", "int", 7, "timed launches per mode", unit = "repetitions" },
    { "no-gate", "flag", nil, "leave the bit gate against the CPU out" },
  },
  output = true,
})
if opts.cols < 17 then -- reflect's border must be shorter than the axis
  cli.fail(NAME, "--cols %d: rows must be longer than the 16-column border (17 or more)", opts.cols)
end

local d, why = xpu.device(opts.device)
if not d then cli.die(NAME, "%s", tostring(why)) end
local w = report.writer(opts.output, d, "pad-modes", { "mode", "shape", "outer" })
local c, cpu_c
local cpu = xpu.device "cpu:0" or cli.die(NAME, "no cpu:0 for the bit gate")
for _, k in ipairs(cli.contracts(NAME, cli.repo_file "contracts/shape-ops.md")) do
  if k.kernel == "pad_backward" and d:supports(k.code_capability) then c = k end
  if k.kernel == "pad_backward" and k.backend == "cpu" then cpu_c = k end
end
if not c then cli.die(NAME, "no pad_backward contract for %s", d.id) end

local mib = opts.mib or report.past_caches(d) >> 20
cli.fits(NAME, d, 4 * (mib << 20), ("--mib %d (upstream and gradient, and the gate's CPU twins)"):format(mib),
  "give a smaller --mib")
local W = opts.cols
local R = math.max(1, (mib << 20) // 4 // W)
local ceiling = tonumber(autotune.recall(d, "bandwidth.copy_gbs"))
report.log("pad-modes: %s (%s), gradient f32 %dx%d, copy ceiling %s", d.id, d.name, R, W,
  ceiling and ("%.0f GB/s"):format(ceiling) or "unknown (run scripts/bandwidth.lua first)")

local unit = ("xpulua pad modes "):rep(64)
local P = opts.outer
if P >= R then cli.fail(NAME, "--outer %d: the rows axis (%d) must be longer; give a smaller --outer or a larger --mib", P, R) end
local up_bytes = (R + 2 * P) * (W + 32) * 4
local up_data = unit:rep(up_bytes // #unit + 1):sub(1, up_bytes)
local up = d:buffer(up_data)
local POISON = ("\165\90\165\90"):rep(1024)
local poison = POISON:rep(R * W * 4 // #POISON + 1):sub(1, R * W * 4)
local out = d:buffer(poison)
local up_cpu = not opts.no_gate and d.id ~= "cpu:0" and cpu:buffer(up_data) or nil

-- Elements (4 bytes) where got and want differ, and of those where got still holds the poison;
-- counted to the first 1000 that differ.
local function differing(got, want)
  local n, left = 0, 0
  for i = 1, #got, 4 do
    if n == 1000 then break end
    local g = got:sub(i, i + 3)
    if g ~= want:sub(i, i + 3) then
      n = n + 1
      if g == poison:sub(i, i + 3) then left = left + 1 end
    end
  end
  return n, left
end

-- The mode's gradient on d (over the poison) against the CPU's, byte for byte: pad_backward's
-- sums are in the reference's order on every backend (determinism: bitwise).
local function gate(spec)
  if opts.no_gate then return "not run" end
  if d.id == "cpu:0" then return "-" end
  out:upload(poison)
  c:launch(spec)
  spec.stream:sync()
  local want_buf = cpu:buffer(poison)
  cpu_c:launch { inputs = { upstream = { dtype = "f32", shape = spec.inputs.upstream.shape, buffer = up_cpu } },
                 params = spec.params, out = want_buf }
  local got, want = out:download(), want_buf:download()
  want_buf:release()
  if got == want then return "ok" end
  local n, left = differing(got, want)
  local more = n == 1000 and "+" or ""
  return left > 0 and ("UNWRITTEN %d%s"):format(left, more) or ("DIFFERS %d%s"):format(n, more)
end
local s = d:default_stream()
local rows, records, failed = {}, {}, false
for k, mode in ipairs { "constant", "reflect", "replicate" } do
  local spec = { inputs = { upstream = { dtype = "f32", shape = { R + 2 * P, W + 32 }, buffer = up } },
                 params = { padding = { { P, P }, { 16, 16 } }, mode_tag = k - 1 }, out = out, stream = s }
  local g = gate(spec)
  failed = failed or g:find("^DIFFERS") ~= nil or g:find("^UNWRITTEN") ~= nil
  settle.ensure(d)
  for _ = 1, 2 do c:launch(spec) end
  s:sync()
  local ts, res = {}, nil
  for r = 1, opts.reps do
    local m = s:timer_begin()
    res = c:launch(spec)
    ts[#ts + 1] = s:timer_end(m)
    report.progress((k - 1) * opts.reps + r, 3 * opts.reps, mode)
  end
  settle.touch(d)
  local st = report.stats(ts)
  local gbs = res.bytes_moved / st.median / 1e9
  rows[#rows + 1] = { mode, res.kernel or "-", ("%.3f"):format(st.median * 1e3), ("%.3f"):format(st.min * 1e3),
                      ("%.3f"):format(st.max * 1e3), ("%.0f"):format(gbs),
                      ceiling and ("%.0f%%"):format(100 * gbs / ceiling) or "-", g }
  w:record(report.with_stats({ mode = mode, ran = res.kernel, shape = { R, W }, outer = P, bytes_moved = res.bytes_moved,
                               median_s = st.median, min_s = st.min, max_s = st.max, gbs = gbs, ceiling_gbs = ceiling,
                               bit_gate = g }, st))
  if (mib << 20) >= report.past_caches(d) then report.check_ceiling(NAME, "pad_backward " .. mode, gbs, ceiling) end
end
w:table {
  title = ("pad_backward by border mode on %s (%s), f32 gradient %dx%d, padding ((%d, %d), (16, 16)), %d reps"):format(
    d.id, d.name, R, W, P, P, opts.reps),
  header = { "mode", "ran", "median ms", "min ms", "max ms", "GB/s", "of copy", "bit gate" },
  rows = rows,
}
if failed then cli.die(NAME, "a mode's gradient differs from the CPU's (the bit gate column)") end
