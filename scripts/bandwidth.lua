-- bandwidth.lua — the device's own streaming ceilings: a read (every byte loaded, summed so
-- nothing is dropped) and a copy (read + write) by our kernel and by the driver's own copy
-- (stream:copy), at a size far past the last-level cache; warm-up, then median / min / max of
-- timed passes. The read is also timed as the benches' kernels read (the working set as 32 MiB
-- slices rotated in timed batches, at every worker). Kept in Autotune as the ceilings that every
-- other rate is quoted against: the faster of the two reads (bandwidth.read_gbs), and the faster
-- of the two copies (bandwidth.copy_gbs; each copy's own figure beside it).
--   xpulua scripts/bandwidth.lua [--device cpu:0] [--mib N] [--reps N] [-o table|jsonl|csv]
local xpu = require "xpu"
local report = require "xpu.report"
local settle = require "xpu.settle"
local autotune = require "xpu.autotune"

local cli = require "xpu.cli"

local opts = cli.parse(arg, {
  name = "bandwidth",
  about = "The device's streaming read and copy ceilings, past every cache, kept in Autotune.",
  example = "xpulua scripts/bandwidth.lua --device cpu:0 --mib 256 --reps 9 -o jsonl",
  options = {
    { "device", "string", "cpu:0", "the device to measure", value = "ID" },
    { "mib", "int", nil, "working set", unit = "MiB", default_text = "past the caches (report.past_caches)" },
    { "reps", "int", 9, "timed passes per kernel and grid, after two warm-up passes", unit = "repetitions" },
  },
  output = true,
})

local d, err = xpu.device(opts.device)
if not d then cli.die("bandwidth", "%s", err) end

-- Past any cache: on a discrete device 64x the L2 and at least 1 GiB; on the host
-- report.past_caches (four times the last-level cache, at least 256 MiB).
local mib = opts.mib or (d.integrated and report.past_caches(d) >> 20 or math.max(1024, (d.l2_bytes * 64) >> 20))
local bytes = mib << 20
cli.fits("bandwidth", d, 2 * bytes, ("--mib %d (a source and a destination)"):format(mib), "give a smaller --mib")
-- Grids per kernel, the fastest kept: 8 groups per resident slot (long chunks) and one group
-- per 64 KiB (short chunks spread over every memory channel at once); the copy also one group
-- per 16 KiB, as the copy op launches it (src/ops/shape/launch.c: 3890 -> 4030 GB/s on the
-- H200 in lab/copy-ceiling-probe.cu). A grid of more than 32768 groups goes as rows of
-- 32768 (the kernels number groups across rows), under every driver's limit.
local resident8 = math.max(1, d:dispatch_blocks(8)) * 8
local grids = { resident8, math.max(resident8, bytes // 65536) }
local copy_grids = { grids[1], grids[2], math.max(resident8, bytes // 16384) }
report.log("bandwidth: %s (%s), %d MiB, grids of %d and %d groups of 256 (the copy also %d)", d.id, d.name, mib, grids[1],
  grids[2], copy_grids[3])
local function dims(groups)
  return groups <= 32768 and groups or { 32768, (groups + 32767) // 32768 }
end
local src = d:buffer(bytes)
local dst = d:buffer(bytes)
local out = d:buffer(grids[2] * 4)
local s = d:default_stream()
local chunk = ("xpulua bandwidth"):rep(1 << 22) -- 64 MiB, uploaded piece by piece
for off = 0, bytes - 1, #chunk do src:upload(chunk:sub(1, math.min(#chunk, bytes - off)), off) end

-- the kernel at each grid; the faster grid's stats (and its group count)
local function time_kernel(name, grids, make_args)
  local k = d:kernel(name)
  local best
  settle.ensure(d, { ceiling = false }) -- by steady windows: the stored ceiling is what is measured here
  for gi, groups in ipairs(grids) do
    local args = table.pack(make_args(groups))
    local t = {}
    for r = 1, opts.reps + 2 do
      local m = s:timer_begin()
      k:launch(s, dims(groups), 256, table.unpack(args, 1, args.n))
      local sec = s:timer_end(m)
      if r > 2 then t[#t + 1] = sec end -- two warm-up passes
      report.progress((gi - 1) * (opts.reps + 2) + r, #grids * (opts.reps + 2), name)
    end
    local st = report.stats(t)
    st.groups = groups
    if not best or st.median < best.median then best = st end
    settle.touch(d)
  end
  return best
end

-- The driver's own copy (stream:copy) on the same buffers: on the H200 it moves 4190-4250
-- GB/s where copy kernels reached 3890-4090 (lab/copy-ceiling-probe.cu; docs/PERF.md), so
-- the copy ceiling is the faster of the two.
local function time_driver_copy()
  settle.ensure(d, { ceiling = false })
  local t = {}
  for r = 1, opts.reps + 2 do
    local m = s:timer_begin()
    s:copy(dst, src)
    local sec = s:timer_end(m)
    if r > 2 then t[#t + 1] = sec end
    report.progress(r, opts.reps + 2, "driver copy")
  end
  settle.touch(d)
  return report.stats(t)
end

-- The read as the benches' kernels meet it (xpu.decode.time_read): the working set as copies of
-- a weight matrix's size (32 MiB slices of the source), rotated launch after launch in batches
-- between two timer marks, at a grid of every worker (dispatch_blocks), 8 groups a worker, and
-- one group per 64 KiB. On the host one buffer read whole was the slower way: 15 GB/s where the
-- decode kernels streamed their rotated weights at 39-58 on a 2-core VM, so a ceiling read one
-- way did not bound the rates read the other.
local function time_rotated_read()
  local one = math.min(bytes, 32 << 20)
  local copies = math.max(1, bytes // one)
  local views = {}
  for c = 1, copies do views[c] = src:slice((c - 1) * one, one) end
  local workers = math.max(1, d:dispatch_blocks(8))
  local k, best = d:kernel "stream_read", nil
  settle.ensure(d, { ceiling = false })
  for gi, groups in ipairs { workers, workers * 8, math.max(workers, one // 65536) } do
    local t = {}
    for r = 1, opts.reps + 2 do
      local m = s:timer_begin()
      for c = 1, copies do k:launch(s, dims(groups), 256, out, views[c], one, groups) end
      local sec = s:timer_end(m) / copies
      if r > 2 then t[#t + 1] = sec end
      report.progress((gi - 1) * (opts.reps + 2) + r, 3 * (opts.reps + 2), "stream_read, rotated")
    end
    local st = report.stats(t)
    st.groups = groups
    if not best or st.median < best.median then best = st end
  end
  settle.touch(d)
  for _, v in ipairs(views) do v:release() end
  return best, one
end

local results = {}
local read = time_kernel("stream_read", grids, function(g) return out, src, bytes, g end)
local copy = time_kernel("stream_copy", copy_grids, function() return dst, src, bytes end)
results[1] = { "read", bytes, read.groups, read.median, bytes / read.median / 1e9, bytes / read.max / 1e9,
               bytes / read.min / 1e9 }
results[2] = { "copy (r+w)", 2 * bytes, copy.groups, copy.median, 2 * bytes / copy.median / 1e9,
               2 * bytes / copy.max / 1e9, 2 * bytes / copy.min / 1e9 }
local rotated, slice = time_rotated_read()

local function copied(what)
  if dst:download(bytes - 64, 64) ~= src:download(bytes - 64, 64) then
    io.stderr:write("bandwidth: the ", what, " did not copy: the instrument is broken\n")
    os.exit(1)
  end
  dst:upload(("\0"):rep(64), bytes - 64) -- the next copy must write them again
end
copied("copy kernel")
local driver = time_driver_copy()
copied("driver's copy")
results[3] = { "copy (driver)", 2 * bytes, "-", driver.median, 2 * bytes / driver.median / 1e9,
               2 * bytes / driver.max / 1e9, 2 * bytes / driver.min / 1e9 }

results[4] = { "read (rotated)", slice, rotated.groups, rotated.median, slice / rotated.median / 1e9,
               slice / rotated.max / 1e9, slice / rotated.min / 1e9 }

-- the read ceiling: the faster of the two reads; the copy ceiling: the faster of the copy
-- kernel and the driver's copy
local read_ceiling = math.max(results[1][5], results[4][5])
local ceiling = math.max(results[2][5], results[3][5])
autotune.remember(d, "bandwidth.read_gbs", ("%.2f"):format(read_ceiling))
autotune.remember(d, "bandwidth.copy_gbs", ("%.2f"):format(ceiling))
autotune.remember(d, "bandwidth.copy_kernel_gbs", ("%.2f"):format(results[2][5]))
autotune.remember(d, "bandwidth.copy_driver_gbs", ("%.2f"):format(results[3][5]))
report.log("bandwidth: read ceiling %.1f GB/s (%s)", read_ceiling,
  read_ceiling == results[1][5] and "one buffer read whole" or "rotated slices")
report.log("bandwidth: copy ceiling %.0f GB/s (%s)", ceiling, ceiling == results[2][5] and "the copy kernel" or "the driver's copy")

local w = report.writer(opts.output, d, "bandwidth", { "kernel" })
w:table {
  title = ("%s — %s, %d MiB working set, %d reps, %s"):format(d.id, d.name, mib, opts.reps, os.date("!%Y-%m-%d")),
  header = { "kernel", "bytes moved", "groups", "median s", "GB/s median", "GB/s min", "GB/s max" },
  rows = results,
}
local stats = { read, copy, driver, rotated }
for k, r in ipairs(results) do
  w:record(report.with_stats({ kernel = r[1], bytes = r[2], groups = math.type(r[3]) and r[3] or nil, median_s = r[4],
                               gbs = r[5], gbs_min = r[6], gbs_max = r[7],
                               copy_ceiling = r[1]:find("^copy") and r[5] == ceiling or nil,
                               read_ceiling = r[1]:find("^read") and r[5] == read_ceiling or nil }, stats[k]))
end
