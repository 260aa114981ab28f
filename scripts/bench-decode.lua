-- bench-decode.lua — decode mat-vec per format: bit gate first, then time at LLM shapes with
-- the weights rotated past the caches (and on one resident buffer, for comparison with tools
-- that time that way), GB/s of weight bytes against the device's measured read ceiling, and
-- the fit t = bytes / rate + b across formats.
--   xpulua scripts/bench-decode.lua [--device cpu:0 [--device ...]] [--format F] [--rows R --cols C]
--                                   [--n N] [--copies K] [--grid rows|resident|N] [--deferred] [--dot4] [-o table|jsonl|csv]
--                                   [--apart]
-- --dot4: time each format's packed-dot twin (<fmt>_q8k_wave_dot4, what the routes pick on a
-- device with dot4_i8, e.g. Vulkan) instead of the plain integer kernel.
-- --deferred: each batch is recorded once and replayed as one submission (a CUDA graph, a
-- re-submitted command buffer): the GPU's time per launch without the host's submit cost.
-- --grid: workgroups per launch (decode.groups): the launcher's choice (default), a wave per
-- row, or only what is resident at once with each wave streaming several rows. Each rotated row is also timed as
-- the plain streaming read of the same bytes ("read us"): the bound at that size.
-- --apart times each format, shape and weight mode in a process of its own (this script again,
-- with --cell). It was the default on Vulkan while later cells of one process read 2-5x slow
-- on NVIDIA's driver; that was the clock dropping between cells, which every timing now
-- settles (lua/xpu/settle.lua; docs/PERF.md, "Clocks between cells"). --one-process, the
-- default now, is still accepted.
-- Several --device (e.g. --device vulkan:0 --device cuda:0): each device's bench runs in a
-- process of its own (this script again, with the same options), its table passed through, then
-- one table puts the rotated cells side by side, each device's rate as a share of the last
-- device's. With --dot4 a device times the packed-dot twins where it has them, the plain
-- kernels where not (what each device's routes pick; a child gets --dot4-where-built).
local xpu = require "xpu"
local report = require "xpu.report"
local decode = require "xpu.decode"
local autotune = require "xpu.autotune"

local cli = require "xpu.cli"

local NAME = "bench-decode"
local opts = cli.parse(arg, {
  name = NAME,
  about = "Decode mat-vec per format: bit gate, then GB/s past the caches and on one buffer, against the read ceiling.",
  example = "xpulua scripts/bench-decode.lua --device cpu:0 --format q4_0 --rows 4096 --cols 4096 --n 5 -o jsonl",
  options = {
    { "device", "string", nil, "a device to time; several put their rotated cells side by side", key = "devices",
      value = "ID", repeatable = true, default_text = "cpu:0" },
    { "format", "choice", nil, "one format only", choices = decode.formats, default_text = "every format" },
    { "rows", "int", nil, "weight rows (with --cols)", unit = "rows", default_text = "14336x4096 and 4096x14336" },
    { "cols", "int", nil, "weight columns (with --rows), a multiple of 256 and of the format's block", unit = "columns" },
    { "n", "int", 20, "timed batches per cell", unit = "timed runs" },
    { "copies", "int", nil, "rotated weight copies", unit = "copies", default_text = "enough to pass the caches" },
    { "grid", "string", nil, "workgroups a launch: launcher, rows, resident or a count", value = "G",
      default_text = "launcher" },
    { "deferred", "flag", nil, "record each batch once and replay it as one submission" },
    { "dot4", "flag", nil, "time each format's packed-dot twin (<fmt>_q8k_wave_dot4)" },
    { "dot4-where-built", "flag", nil, "--dot4 where the device has every twin, else the plain kernels (a child's)" },
    { "apart", "flag", nil, "time each cell in a process of its own" },
    { "one-process", "flag", nil, "the default (older commands in docs/PERF.md pass it)" },
    { "tables-on-stdout", "flag", nil, "print the tables on stdout beside -o jsonl records (a child's, for its parent)" },
    { "cell", "choice", nil, "time one cell, print one line (a child's job; with --format, --rows, --cols)",
      choices = { "rotated", "resident" } },
  },
  output = true,
})
opts.jsonl = opts.output == "jsonl"
if opts.dot4 or opts.dot4_where_built then opts.variant = "dot4" end
if (opts.rows == nil) ~= (opts.cols == nil) then
  cli.fail(NAME, "%s without %s: give both (e.g. --rows 4096 --cols 4096) or neither",
    opts.rows and "--rows" or "--cols", opts.rows and "--cols" or "--rows")
end
if opts.grid and not (opts.grid == "launcher" or opts.grid == "rows" or opts.grid == "resident"
                      or (math.tointeger(tonumber(opts.grid)) or 0) >= 1) then
  cli.fail(NAME, "--grid '%s': not launcher, rows, resident or a whole number of workgroups", opts.grid)
end
local cols_refused = opts.cols and decode.cols_refusal(opts.cols, opts.format)
if cols_refused then cli.fail(NAME, "%s", cols_refused) end
if #opts.devices == 0 then opts.devices = { "cpu:0" } end
local w = report.writer(opts.output, nil, "decode", { "format", "kernel", "rows", "cols", "mode", "grid", "deferred" })
w.tables_on_stdout = opts.tables_on_stdout
opts.device = opts.devices[1] or "cpu:0"

-- One JSONL record's fields this script reads back (its own records: flat, no nesting).
local function record_fields(line)
  return report.decode_json(line) or {}
end

-- Device di's bench in a child process: its table passed through, its rotated cells kept in
-- cells[key][di] (keys in first-seen order), its records passed on with --jsonl.
local function bench_child(di, id, cells, order)
  local cmd = { arg[-1] or "xpulua", arg[0], "--device", id, "--n", opts.n, "-o", "jsonl", "--tables-on-stdout",
                opts.variant == "dot4" and "--dot4-where-built" or "", opts.deferred and "--deferred" or "",
                opts.apart and "--apart" or "" }
  for _, w in ipairs { "format", "rows", "cols", "copies", "grid" } do
    if opts[w] then cmd[#cmd + 1] = "--" .. w; cmd[#cmd + 1] = opts[w] end
  end
  report.log("bench-decode: %s (%d of %d)", id, di, #opts.devices)
  local p = assert(io.popen(report.command(cmd)))
  for line in p:lines() do
    if line:sub(1, 1) ~= "{" then
      w:print(line)
    else
      local r = record_fields(line)
      if opts.output ~= "table" and r.bench == "decode" then w:record(r) end
      if r.mode == "rotated" then
        local key = ("%s %dx%d"):format(r.format, r.rows, r.cols)
        if not cells[key] then cells[key] = {}; order[#order + 1] = key end
        cells[key][di] = r
      end
    end
  end
  if not p:close() then cli.die(NAME, "the bench on %s failed", id) end
  w:print("")
end

-- Several devices: a child per device, then the rotated cells side by side, each rate as a
-- share of the last device's (a decode-compare record a cell with --jsonl).
local function compare()
  local ids, cells, order = opts.devices, {}, {}
  for di, id in ipairs(ids) do bench_child(di, id, cells, order) end
  local last, header, rows = #ids, { "format", "rows x cols" }, {}
  for _, id in ipairs(ids) do
    for _, h in ipairs { " kernel", " us", " GB/s", " % read" } do header[#header + 1] = id .. h end
  end
  for di = 1, last - 1 do header[#header + 1] = ("%s / %s"):format(ids[di], ids[last]) end
  for _, key in ipairs(order) do
    local c, row, ratios = cells[key], { key:match("^(%S+) (%S+)$") }, {}
    for di = 1, last do
      local r = c[di] or {}
      row[#row + 1] = r.kernel or "-"
      row[#row + 1] = r.median_s and r.median_s * 1e6 or "-"
      row[#row + 1] = r.gbs or "-"
      row[#row + 1] = r.gbs and r.ceiling_gbs and 100 * r.gbs / r.ceiling_gbs or "-"
    end
    for di = 1, last - 1 do
      local a, b = c[di] and c[di].gbs, c[last] and c[last].gbs
      ratios[di] = a and b and 100 * a / b or 0 / 0 -- NaN: JSON null
      row[#row + 1] = ratios[di] == ratios[di] and ratios[di] or "-"
    end
    w:record { bench = "decode-compare", cell = key, devices = ids, of_last_pct = ratios }
    rows[#rows + 1] = row
  end
  w:table { title = ("decode mat-vec side by side, rotated weights, %s; %% read: of each device's read ceiling; the last columns: each rate as %% of %s's"):format(
    os.date("!%Y-%m-%d"), ids[last]), header = header, rows = rows }
end
if #opts.devices > 1 then
  if opts.cell then cli.fail(NAME, "--cell times one device, not %d", #opts.devices) end
  compare()
  os.exit(0)
end

local d, err = xpu.device(opts.device)
if not d then cli.die(NAME, "%s", err) end
w.facts = report.facts(d)
local formats = opts.format and { opts.format } or decode.formats
local shapes = (opts.rows and opts.cols) and { { opts.rows, opts.cols } } or { { 14336, 4096 }, { 4096, 14336 } }
local ceiling = autotune.recall(d, "bandwidth.read_gbs")
if opts.dot4_where_built then -- the packed-dot twins where the device has every one
  for _, fmt in ipairs(formats) do
    if not d:kernel_available(decode.kernel_name(fmt, "dot4")) then opts.variant = nil end
  end
end
local function kname(fmt) return decode.kernel_name(fmt, opts.variant) end
for _, fmt in ipairs(formats) do
  if not d:kernel_available(kname(fmt)) then
    cli.die(NAME, "%s has no kernel %s", d.id, kname(fmt))
  end
end
local cells_apart = opts.apart and not opts.cell

-- Each cell's rotated weights must fit the device's memory (with room for the read of the same
-- bytes): refused before the gate, naming the shape, the bytes and the memory.
local memory = d.memory_bytes or 0
for _, shape in ipairs(shapes) do
  for _, fmt in ipairs(formats) do
    local one = xpu.quant.row_bytes(fmt, shape[2] // xpu.quant.info(fmt).block_elems) * shape[1]
    local copies = opts.copies or math.max(2, math.ceil(report.past_caches(d) / one))
    if memory > 0 and one * copies > memory // 2 then
      cli.fail(NAME, "--rows %d --cols %d: %s weights of %d MiB x %d copies (%d MiB) do not fit half of %s's %d MiB; "
        .. "give fewer --rows, --cols or --copies", shape[1], shape[2], fmt, one >> 20, copies, (one * copies) >> 20, d.id,
        memory >> 20)
    end
  end
end

if not ceiling then report.log("bench-decode: no read ceiling for %s in Autotune: run scripts/bandwidth.lua --device %s first", d.id, d.id) end

-- 1. bit gate: nothing is timed that is not the same arithmetic as the CPU reference
for _, fmt in ipairs(formats) do
  -- the grid under test, and a grid of 2 groups so that each wave streams several rows
  for _, grid in ipairs { opts.grid or "launcher", 2 } do
    local ok, msg = decode.gate(d, fmt, 96, 4096, nil, grid, kname(fmt))
    if not opts.cell then report.log("gate: %s", msg) end
    if not ok then cli.die(NAME, "bit gate failed: %s", msg) end
  end
end

-- One cell's times in this process: the rotated working set (report.past_caches: >= 1 GiB on a
-- discrete device, 4x the last-level cache on the host) or one buffer, and for the rotated one the
-- plain read of the same bytes.
local function measure(fmt, shape, mode)
  local one = xpu.quant.row_bytes(fmt, shape[2] // xpu.quant.info(fmt).block_elems) * shape[1]
  local target = report.past_caches(d)
  local copies = mode == "resident" and 1 or (opts.copies or math.max(2, math.ceil(target / one)))
  local st, bytes = decode.time(d, fmt, shape[1], shape[2], { n = opts.n, copies = copies, grid = opts.grid,
                                                                     deferred = opts.deferred, kernel = kname(fmt) })
  local read = mode == "rotated" and decode.time_read(d, bytes, copies, { n = opts.n, deferred = opts.deferred }) or nil
  return { copies = copies, bytes = bytes, st = st, read = read and read.median, read_best = read and read.min }
end

local CELL_FIELDS = "cell\t(%d+)\t(%d+)\t(%d+)\t([^\t]+)\t([^\t]+)\t([^\t]+)\t([^\t]+)\t([^\t\n]+)"

-- The same cell timed by a child process (the gate runs there again, on its fresh state).
local function measure_apart(fmt, shape, mode)
  local cmd = { arg[-1] or "xpulua", arg[0], "--device", opts.device, "--format", fmt, "--rows", shape[1],
                "--cols", shape[2], "--n", opts.n, "--cell", mode }
  for _, w in ipairs { "copies", "grid" } do
    if opts[w] then cmd[#cmd + 1] = "--" .. w; cmd[#cmd + 1] = opts[w] end
  end
  if opts.deferred then cmd[#cmd + 1] = "--deferred" end
  if opts.variant == "dot4" then cmd[#cmd + 1] = "--dot4" end
  local p = assert(io.popen(report.command(cmd)))
  local out = p:read("a")
  local ok = p:close()
  local copies, bytes, n, median, min, max, read, read_best = out:match(CELL_FIELDS)
  if not ok or not copies then
    io.stderr:write(("bench-decode: the process timing %s %dx%d %s failed:\n%s\n"):format(fmt, shape[1], shape[2], mode, out))
    os.exit(1)
  end
  return { copies = tonumber(copies), bytes = tonumber(bytes), read = tonumber(read), read_best = tonumber(read_best),
           st = { n = tonumber(n), median = tonumber(median), min = tonumber(min), max = tonumber(max) } }
end

if opts.cell then
  if not (opts.format and opts.rows and opts.cols) or (opts.cell ~= "rotated" and opts.cell ~= "resident") then
    cli.fail(NAME, "--cell takes rotated or resident, with --format, --rows and --cols")
  end
  local c = measure(opts.format, shapes[1], opts.cell)
  print(("cell\t%d\t%d\t%d\t%.17g\t%.17g\t%.17g\t%s\t%s"):format(c.copies, c.bytes, c.st.n, c.st.median, c.st.min,
    c.st.max, c.read and ("%.17g"):format(c.read) or "-", c.read_best and ("%.17g"):format(c.read_best) or "-"))
  os.exit(0)
end

-- 2. the manifest before timing: spill is invisible to the clock
local mrows = {}
for _, fmt in ipairs(formats) do
  local m = d:kernel(kname(fmt)).manifest
  mrows[#mrows + 1] = { kname(fmt), m.registers, m.spill_bytes, m.lds_static_bytes, m.resident_groups_per_cu, m.note }
end
w:table { title = "manifest on " .. d.id, header = { "kernel", "regs", "spill", "lds", "groups/cu", "note" }, rows = mrows }
w:print("")

-- 3. time: rotated working set (report.past_caches) and one buffer
-- the table row by row as each cell is timed, so an interrupted run keeps what it measured
local table_row = w:stream {
  title = ("decode mat-vec (%s) on %s (%s), %s, grid %s%s%s; read ceiling %s"):format(kname("<fmt>"), d.id, d.name,
    os.date("!%Y-%m-%d"), opts.grid or "launcher's", opts.deferred and ", deferred" or "",
    cells_apart and ", a process per cell" or "", ceiling and ("%.1f GB/s"):format(ceiling) or "unmeasured")
    .. "; % ceiling: of the faster of it and the same bytes' read (rotated cells only)",
  header = { "format", "rows x cols", "weights", "copies", "bytes", "median us", "min us", "max us", "GB/s", "% ceiling",
             "read us", "% of read" },
  widths = { 6, 11, 8, 6, 9, 9, 7, 7, 5, 9, 7, 9 },
}
local rows, points, done, total = {}, {}, 0, #formats * #shapes * 2
local slow_notes = {}
for _, shape in ipairs(shapes) do
  for _, fmt in ipairs(formats) do
    for _, mode in ipairs { "rotated", "resident" } do
      local c = (cells_apart and measure_apart or measure)(fmt, shape, mode)
      local copies, bytes, st, read = c.copies, c.bytes, c.st, c.read
      local gbs = bytes / st.median / 1e9
      local slow, frac = decode.slow_read(bytes, read, ceiling)
      if slow then
        slow_notes[#slow_notes + 1] = ("%s %dx%d %s: the plain read of its weights ran at %.0f GB/s, %.0f %% of the read ceiling; the device (its clocks or memory), not the kernel, set this cell's pace"):format(
          fmt, shape[1], shape[2], mode, slow, 100 * frac)
      end
      -- the ceiling a rotated cell is quoted against: the stored read ceiling, or the plain read
      -- of the same bytes just now (its fastest pass) where that ran faster (a VM's bandwidth
      -- moves with its neighbours); a resident cell's one buffer may sit in the cache, which no
      -- streaming ceiling bounds: none
      local cell_ceiling = mode == "rotated" and ceiling or nil
      local best = c.read_best or read
      if mode == "rotated" and best and best > 0 then cell_ceiling = math.max(ceiling or 0, bytes / best / 1e9) end
      if cell_ceiling then
        report.check_ceiling(NAME, ("%s %dx%d rotated"):format(kname(fmt), shape[1], shape[2]), gbs, cell_ceiling)
      end
      rows[#rows + 1] = { fmt, ("%dx%d"):format(shape[1], shape[2]), mode, copies, bytes, st.median * 1e6,
                          st.min * 1e6, st.max * 1e6, gbs, cell_ceiling and 100 * gbs / cell_ceiling or "-",
                          read and read * 1e6 or "-", read and 100 * read / st.median or "-" }
      table_row(rows[#rows])
      if mode == "rotated" then
        points[#points + 1] = { bytes, st.median }
        autotune.remember_for(d, ("decode.%s.gbs"):format(kname(fmt)), shape, ("%.1f"):format(gbs))
        if ceiling then autotune.report_underperforming(d, kname(fmt), gbs, 0.9 * ceiling) end
      end
      w:record(report.with_stats({ format = fmt,
                     row = fmt .. (opts.variant == "dot4" and "-dot4-wave" or "-int-wave"), kernel = kname(fmt),
                     rows = shape[1], cols = shape[2],
                     mode = mode, copies = copies, bytes = bytes, median_s = st.median,
                     min_s = st.min, max_s = st.max, gbs = gbs, ceiling_gbs = cell_ceiling, stored_ceiling_gbs = ceiling, grid = opts.grid or "launcher", deferred = opts.deferred or false,
                     read_same_bytes_s = read, read_slow = slow ~= nil }, st))
      done = done + 1
      report.progress(done, total, ("%s %dx%d %s"):format(fmt, shape[1], shape[2], mode))
    end
  end
end
for _, note in ipairs(slow_notes) do w:print("slow read: " .. note) end
local floor = decode.time_floor(d, { n = opts.n, deferred = opts.deferred })
w:print(("\nlaunch floor: %.2f us per back-to-back launch of a kernel that does nothing (median of %d)"):format(
  floor.median * 1e6, floor.n))
local rate, fixed = decode.fit(points)
if rate then
  local over = ceiling and rate / 1e9 > ceiling and
    (" (above the read ceiling: the formats differ by more than their bytes, so the line is no bound)") or ""
  w:print(("\nfit over formats (rotated): t = bytes / %.1f GB/s + %.1f us%s"):format(rate / 1e9, fixed * 1e6, over))
else
  w:print(("\nfit over formats (rotated): none, %s"):format(fixed))
end
