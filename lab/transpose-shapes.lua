-- transpose-shapes.lua — contiguize of a transposed f32 view at one size and several shapes:
-- the input A[R][C] read as its transpose (shape {C, R}, strides {1, C}), written dense as
-- C rows of R. A tile's 64 input rows lie C * 4 bytes apart and its 64 output rows R * 4 bytes
-- apart, so the shapes move the same bytes over different spans of pages: a rate that falls as
-- either stride grows points at page translation, one level across shapes at the kernel.
-- Each shape is timed beside a plain copy of the same bytes in the same process (settled,
-- 100 ms back to back, then --reps timed launches); GB/s of read + write bytes.
--   xpulua lab/transpose-shapes.lua [--device D] [--mib M] [--reps N] [--cols c1,c2,...]
local xpu = require "xpu"
local report = require "xpu.report"
local settle = require "xpu.settle"

local cli = require "xpu.cli"

local NAME = "transpose-shapes"
local opts = cli.parse(arg, {
  name = NAME, dir = "lab",
  about = "contiguize of a transposed f32 view at one size and several shapes, each beside a plain copy.",
  example = "xpulua lab/transpose-shapes.lua --device cpu:0 --mib 16 --reps 3 --cols 64,1024",
  options = {
    { "device", "string", "vulkan:0", "the device to time", value = "D" },
    { "mib", "int", 1024, "the input's size", unit = "MiB" },
    { "reps", "int", 7, "timed launches per shape", unit = "repetitions" },
    { "cols", "string", "64,256,1024,4096,16384,65536,262144", "the input rows' lengths, comma-separated",
      value = "c1,c2" },
  },
  output = true,
})
for c in (opts.cols .. ","):gmatch("([^,]*),") do
  local v = math.tointeger(tonumber(c))
  if not v or v < 1 then
    cli.fail(NAME, "--cols '%s': '%s' is not a whole number of columns (give e.g. 64,1024)", opts.cols, c)
  end
end

local d, why = xpu.device(opts.device)
if not d then cli.die(NAME, "%s", tostring(why)) end
local w = report.writer(opts.output, d, "transpose-shapes", { "op", "rows", "cols" })
local C = {}
for _, c in ipairs(cli.contracts(NAME, cli.repo_file "contracts/shape-ops.md")) do
  if d:supports(c.code_capability) then C[c.kernel] = c end
end
cli.fits(NAME, d, 2 * (opts.mib << 20), ("--mib %d (a source and a destination)"):format(opts.mib), "give a smaller --mib")
local n = (opts.mib << 20) // 4
local unit = ("xpulua transpose "):rep(64)
local src = d:buffer(unit:rep(n * 4 // #unit + 1):sub(1, n * 4))
local dst = d:buffer(n * 4)
local s = d:default_stream()

local function time(c, spec)
  spec.stream = s
  settle.ensure(d)
  local t0 = xpu.now()
  repeat c:launch(spec) until xpu.now() - t0 >= 0.1
  s:sync()
  local ts, ran = {}, "-"
  for _ = 1, opts.reps do
    local m = s:timer_begin()
    ran = c:launch(spec).kernel or ran
    ts[#ts + 1] = s:timer_end(m)
  end
  settle.touch(d)
  local st = report.stats(ts)
  return 2 * n * 4 / st.median / 1e9, ran, st
end

local rows, cols = {}, {}
for c in opts.cols:gmatch("%d+") do cols[#cols + 1] = math.tointeger(tonumber(c)) end
for k, c in ipairs(cols) do
  if c == 0 or n % c ~= 0 then
    report.log("transpose-shapes: %d columns do not divide %d elements; shape left out", c, n)
  else
    local r = n // c
    local t, ran, st = time(C.contiguize, { inputs = { input = { dtype = "f32", shape = { c, r }, strides = { 1, c }, buffer = src } },
                                          params = {}, out = dst })
    local cp, _, cst = time(C.copy, { inputs = { src = { dtype = "f32", shape = { n }, buffer = src } }, params = {}, out = dst })
    w:record(report.with_stats({ op = "contiguize", rows = r, cols = c, ran = ran, bytes_moved = 2 * n * 4, gbs = t }, st))
    w:record(report.with_stats({ op = "copy", rows = r, cols = c, bytes_moved = 2 * n * 4, gbs = cp }, cst))
    rows[#rows + 1] = { ("%dx%d"):format(r, c), c * 4, r * 4, ("%.0f"):format(t), ("%.0f"):format(cp), ("%.0f%%"):format(100 * t / cp), ran }
    report.progress(k, #cols, "shapes")
  end
end
w:table { title = ("contiguize of a transposed f32 view on %s (%s), %d MiB; GB/s of read + write bytes"):format(d.id, d.name, opts.mib),
                     header = { "A (rows x cols)", "input row bytes", "output row bytes", "GB/s", "copy GB/s", "of copy", "ran" }, rows = rows }
