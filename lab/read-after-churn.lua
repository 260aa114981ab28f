-- read-after-churn.lua — does a device read slowly after memory has been allocated, filled and
-- freed in bulk, which memory, and for how long? On NVIDIA's Vulkan driver (H200, 580) the
-- benches saw reads at a third of the ceiling at full clocks after other cells' buffers were
-- freed, in the same process and in the processes that came next (docs/PERF.md, "Idle clocks,
-- distinct rows"). This script separates the candidates:
--   A  a buffer allocated and written before the churn, read whole (1 launch, MIB MiB);
--   B  a buffer allocated and written after the churn, read whole;
--   B8 the first eighth of B read eight times (the same bytes moved as B, an eighth of the
--      pages: a page-table or TLB cost shows as B8 fast and B slow; a bus-wide one slows all);
-- timed back to back (no idle gaps, so the clocks stay up) for --seconds after the churn, each
-- sample a replayed batch of four reads, and printed with its time since the churn ended.
-- --churn GIB: rounds of 1 GiB, each 32 buffers of 32 MiB made, written, read once, freed (0:
-- none, a baseline). Progress and the churn's timing go to stderr, the table to stdout.
--   xpulua lab/read-after-churn.lua [--device D] [--churn GIB] [--seconds S] [--mib M]
local xpu = require "xpu"
local report = require "xpu.report"
local settle = require "xpu.settle"

local cli = require "xpu.cli"

local NAME = "read-after-churn"
local opts = cli.parse(arg, {
  name = NAME, dir = "lab",
  about = "Reads buffers made before and after bulk allocate-fill-free churn, a row per half second.",
  example = "xpulua lab/read-after-churn.lua --device cpu:0 --churn 1 --seconds 2 --mib 64",
  options = {
    { "device", "string", "vulkan:0", "the device to time", value = "D" },
    { "churn", "int", 8, "rounds of 1 GiB churn (0: a baseline)", unit = "GiB", min = 0 },
    { "seconds", "number", 20, "time read after the churn", unit = "seconds", min = 0.001 },
    { "mib", "int", 1024, "each read buffer's size", unit = "MiB", min = 8 },
  },
  output = true,
})

local d, why = xpu.device(opts.device)
if not d then cli.die(NAME, "%s", tostring(why)) end
local read = settle.reader(d)
local w = report.writer(opts.output, d, "read-after-churn", { "t_s", "buffer" })
cli.fits(NAME, d, 2 * (opts.mib << 20) + (opts.churn > 0 and 1 << 30 or 0),
  ("--mib %d (buffers A and B, and a 1 GiB round of churn)"):format(opts.mib), "give a smaller --mib")

local function filled(bytes, tag)
  local unit = ("xpulua read-after-churn " .. tag .. " "):rep(2048)
  local chunk = unit:rep((16 << 20) // #unit + 1):sub(1, math.min(16 << 20, bytes))
  local b = d:buffer(bytes)
  for off = 0, bytes - 1, #chunk do b:upload(chunk:sub(1, math.min(#chunk, bytes - off)), off) end
  return b
end

-- GB/s of k reads of `view` (bytes each) in one replayed batch.
local function rate(view, bytes, k) return (read(view, bytes, k)) end

local bytes = opts.mib << 20
local a = filled(bytes, "A")
settle.settle(d)
report.log("read-after-churn: %s, A before the churn %.0f GB/s", d.id, rate(a, bytes, 4))

local t0 = xpu.now()
for r = 1, opts.churn do
  local bufs = {}
  for j = 1, 32 do bufs[j] = filled(32 << 20, "churn") end
  for j = 1, 32 do rate(bufs[j], 32 << 20, 1) end
  for j = 1, 32 do bufs[j]:release() end
  report.progress(r, opts.churn, "churn")
end
local b = filled(bytes, "B")
local b8 = b:slice(0, bytes // 8)
report.log("read-after-churn: churned %d GiB in %.1f s (B made and written after it)", opts.churn, xpu.now() - t0)

local t1, rows, samples = xpu.now(), {}, {}
settle.touch(d)
while xpu.now() - t1 < opts.seconds do
  local t = xpu.now() - t1
  local ra, rb, r8 = rate(a, bytes, 4), rate(b, bytes, 4), rate(b8, bytes // 8, 32)
  samples[#samples + 1] = { t, ra, rb, r8 }
end
-- one row per half second: the median of its samples
local bucket = {}
for _, x in ipairs(samples) do
  local k = math.floor(x[1] * 2)
  bucket[k] = bucket[k] or { {}, {}, {} }
  for c = 1, 3 do table.insert(bucket[k][c], x[c + 1]) end
end
for k = 0, math.floor(opts.seconds * 2) do
  local bk = bucket[k]
  if bk then
    local m = {}
    for c, name in ipairs { "A", "B", "B8" } do
      local st = report.stats(bk[c])
      m[c] = st.median
      w:record(report.with_stats({ t_s = k / 2, buffer = name, churn_gib = opts.churn, mib = opts.mib }, st, "GB/s"))
    end
    rows[#rows + 1] = { ("%.1f"):format(k / 2), #bk[1], ("%.0f"):format(m[1]), ("%.0f"):format(m[2]), ("%.0f"):format(m[3]) }
  end
end
w:table { title = ("streaming reads on %s (%s) after %d GiB of churn, %d MiB buffers; GB/s, median of each half second"):format(
  d.id, d.name, opts.churn, opts.mib), header = { "s after", "samples", "A (before)", "B (after)", "B8 (an eighth, 8x)" }, rows = rows }
