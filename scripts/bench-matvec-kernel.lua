-- bench-matvec-kernel.lua — one decode mat-vec kernel by name, e.g. a Vulkan `_dot4` twin
-- (what the routes pick where the device has the packed dot; bench-decode times the plain
-- `<fmt>_q8k_wave`): bit gate against the CPU first (a wave per row, and 2 groups so each wave
-- walks several rows, at two widths), then deferred batches on weights rotated past the
-- caches, as xpu.decode.time does. Prints the manifest's note (on Vulkan: which module the
-- pipeline is, and the tuning XPULUA_VULKAN_MATVEC_SPEC set).
--   xpulua scripts/bench-matvec-kernel.lua --device vulkan:0 [--kernel K ...] [--shape RxC ...]
--          [--n N] [--distinct R] [--grid rows|resident|N] [--outputs one|each] [--tsv] [--apart]
--          [--fixtures DIR] [--idle S] [--busy S] [--no-settle] [--copies K]
-- Without --kernel: every <fmt>_q8k_wave and <fmt>_q8k_wave_dot4 the device has; without
-- --shape: 14336x4096 and 4096x14336. The weights are rotated over enough copies to leave the
-- caches behind (report.past_caches), or over K with --copies (a small K times them from the
-- cache: for checking the script, not for figures). The timed weights repeat R different rows (256; fewer
-- makes the fixture faster to build, the bytes read are the same). --grid times on that grid
-- (xpu.decode.groups: a wave per row, the default; the groups the device keeps resident; or N
-- groups). --outputs one (the default): every launch of a batch writes the same output, so
-- each waits for the one before and the figure is one kernel's time; --outputs each: each
-- weight copy has its own output, the launches are independent (a decode step's q, k and v
-- projections), and the GPU backends, which record no wait between independent launches,
-- overlap them; the note then says how many launches of a batch waited. --tsv prints one line
-- per kernel and shape instead of the table: kernel, shape,
-- median us, min us, GB/s, registers, spill bytes, note ("-" where the driver does not say); a
-- kernel that fails its gate prints "GATE FAILED" in the median's place, the others still run,
-- and the exit status is 1. --fixtures DIR keeps each fixture (resident rows and activation)
-- in DIR, built the first time and read back after, so a process can time weights whose rows
-- are all distinct without first spending half a minute of host time building them. --idle S:
-- the host sleeps S seconds between building a kernel's weights and timing them (a pause such
-- as a fixture's build, the device idle); --busy S: the host spins S seconds instead (a build's
-- own host work); --no-settle: no xpu.settle before timing, so what
-- an idle device's clocks do to the figure shows (on NVIDIA's Vulkan driver: 4.5x slow).
local xpu = require "xpu"
local report = require "xpu.report"
local settle = require "xpu.settle"
local decode = require "xpu.decode"

local cli = require "xpu.cli"

local NAME = "bench-matvec-kernel"
local opts = cli.parse(arg, {
  name = NAME,
  about = "One decode mat-vec kernel by name: bit gate against the CPU, then deferred batches on rotated weights.",
  example = "xpulua scripts/bench-matvec-kernel.lua --device cpu:0 --kernel q4_0_q8k_wave --shape 64x512 --n 2 --copies 4",
  options = {
    { "device", "string", "cpu:0", "the device to time", value = "ID" },
    { "kernel", "string", nil, "a kernel to time", key = "kernels", repeatable = true, value = "K",
      default_text = "every <fmt>_q8k_wave and _dot4 the device has" },
    { "shape", "string", nil, "a weight shape ROWSxCOLS", key = "shape_words", repeatable = true, value = "RxC",
      default_text = "14336x4096 and 4096x14336" },
    { "n", "int", 20, "timed batches per cell", unit = "timed runs" },
    { "distinct", "int", 256, "different rows the timed weights repeat", unit = "rows" },
    { "copies", "int", nil, "rotated weight copies", unit = "copies", default_text = "enough to pass the caches" },
    { "grid", "string", nil, "workgroups a launch: rows, resident or a count", value = "G", default_text = "rows" },
    { "outputs", "choice", "one", "one output for every launch of a batch, or one each", choices = { "one", "each" } },
    { "tsv", "flag", nil, "one tab-separated line per kernel and shape instead of the table" },
    { "apart", "flag", nil, "time each kernel and shape in a process of its own" },
    { "one-process", "flag", nil, "the default (older commands in docs/PERF.md pass it)" },
    { "fixtures", "string", nil, "keep each fixture in this directory and read it back", value = "DIR" },
    { "idle", "number", nil, "host sleep between building the weights and timing them", unit = "seconds", min = 0 },
    { "busy", "number", nil, "host spin between building the weights and timing them", unit = "seconds", min = 0 },
    { "no-settle", "flag", nil, "no xpu.settle before timing" },
  },
  output = true,
})
if opts.no_settle then settle.disabled = true end
opts.shapes = {}
for _, v in ipairs(opts.shape_words) do
  local r, c = v:match "^(%d+)x(%d+)$"
  if not r or tonumber(r) < 1 or tonumber(c) % 256 ~= 0 then
    cli.fail(NAME, "--shape '%s': not ROWSxCOLS with COLS a multiple of 256 (e.g. 4096x14336)", v)
  end
  opts.shapes[#opts.shapes + 1] = { math.tointeger(tonumber(r)), math.tointeger(tonumber(c)) }
end
if opts.grid and not (opts.grid == "rows" or opts.grid == "resident" or (math.tointeger(tonumber(opts.grid)) or 0) >= 1) then
  cli.fail(NAME, "--grid '%s': not rows, resident or a whole number of workgroups", opts.grid)
end
if #opts.shapes == 0 then opts.shapes = { { 14336, 4096 }, { 4096, 14336 } } end

local d, derr = xpu.device(opts.device)
if not d then cli.die(NAME, "%s", tostring(derr)) end
local w = report.writer(opts.output, d, "matvec-kernel", { "kernel", "rows", "cols", "grid", "outputs" })
for _, name in ipairs(opts.kernels) do
  if not d:kernel_available(name) then
    cli.fail(NAME, "--kernel '%s': %s has no such kernel (e.g. q4_0_q8k_wave)", name, d.id)
  end
end
if #opts.kernels == 0 then
  for _, fmt in ipairs(decode.formats) do
    for _, suffix in ipairs { "", "_dot4" } do
      local name = fmt .. "_q8k_wave" .. suffix
      if d:kernel_available(name) then opts.kernels[#opts.kernels + 1] = name end
    end
  end
end

-- == the CPU's portable body, element by element, at `groups` groups of 256
local function gate(k, fmt, rows, cols, groups)
  local fx = decode.fixture(fmt, rows, cols, 3)
  local y = d:buffer(decode.NAN:rep(rows))
  k:launch(nil, groups, 256, y, d:buffer(fx.resident), d:buffer(fx.x), rows, cols, 0)
  d:default_stream():sync()
  return y:download() == xpu.quant.matvec_host(fmt, fx.resident, fx.x, rows, cols, "portable")
end

-- The rotated weight copies of one format and shape, kept for the next kernel of the same
-- format (a plain kernel and its packed-dot twin time the same bytes); another format's
-- release them first.
local held = {}

-- decode.fixture's rows and activation, from opts.fixtures when kept there (or built and kept).
local function fixture(fmt, rows, cols)
  if not opts.fixtures then return decode.fixture(fmt, rows, cols, 5) end
  local path = ("%s/%s-%dx%d.bin"):format(opts.fixtures, fmt, rows, cols)
  local f = io.open(path, "rb")
  if f then
    local data = f:read("a")
    f:close()
    local n = string.unpack("<I8", data)
    local fx = { fmt = fmt, rows = rows, cols = cols, row_bytes = xpu.quant.row_bytes(fmt, cols // xpu.quant.info(fmt).block_elems),
                 resident = data:sub(9, 8 + n), x = data:sub(9 + n) }
    if #fx.resident ~= rows * fx.row_bytes or #fx.x ~= cols // 256 * 320 then
      error(("%s: not a fixture of %s %dx%d (%d + %d bytes)"):format(path, fmt, rows, cols, #fx.resident, #fx.x))
    end
    return fx
  end
  local fx = decode.fixture(fmt, rows, cols, 5)
  os.execute("mkdir -p '" .. opts.fixtures:gsub("'", "'\\''") .. "'") -- made on first use
  f = assert(io.open(path .. ".tmp", "wb"))
  assert(f:write(string.pack("<I8", #fx.resident), fx.resident, fx.x))
  assert(f:close())
  assert(os.rename(path .. ".tmp", path))
  return fx
end

local function weights(fmt, rows, cols)
  local key = fmt .. " " .. rows .. "x" .. cols
  if held[key] then return held[key] end
  if held.fmt ~= fmt then
    for k, v in pairs(held) do
      if type(v) == "table" then for _, b in ipairs(v.ws) do b:release() end; held[k] = nil end
    end
    held.fmt = fmt
  end
  local distinct = math.min(rows, opts.distinct)
  local fx = fixture(fmt, distinct, cols)
  local resident = fx.resident:rep((rows + distinct - 1) // distinct):sub(1, rows * fx.row_bytes)
  local bytes = rows * fx.row_bytes
  local copies = opts.copies or math.max(2, math.ceil(report.past_caches(d) / bytes))
  local ws = {}
  for c = 1, copies do ws[c] = d:buffer(resident) end
  held[key] = { ws = ws, x = d:buffer(fx.x), bytes = bytes }
  return held[key]
end

-- Returns the stats, the weight bytes a launch reads, and the launches of one batch that
-- waited for the ones before (nil where the backend does not say).
local function time(k, fmt, rows, cols)
  local wt = weights(fmt, rows, cols)
  local s, ys = d:stream(), {}
  for b = 1, opts.outputs == "each" and #wt.ws or 1 do ys[b] = d:buffer(rows * 4) end
  s:set_deferred(true)
  local times, batch = {}, #wt.ws
  local groups, grid_note = decode.groups(d, k, rows, opts.grid or "rows")
  if grid_note then io.stderr:write("bench-matvec-kernel: ", grid_note, "\n") end
  local waits
  if opts.idle then os.execute(("sleep %g"):format(opts.idle)) end -- a host pause, the device idle
  if opts.busy then local t0 = xpu.now(); repeat until xpu.now() - t0 >= opts.busy end -- host work, the device idle
  settle.ensure(d) -- after the fixture's host time
  for r = 1, opts.n + 3 do
    local m = s:timer_begin()
    local before = s:counts().waits
    for b = 1, batch do k:launch(s, groups, 256, ys[b] or ys[1], wt.ws[b], wt.x, rows, cols, 0) end
    local sec = s:timer_end(m) / batch
    waits = before and s:counts().waits - before
    if r > 3 then times[#times + 1] = sec end
  end
  settle.touch(d)
  s:release()
  for _, y in ipairs(ys) do y:release() end
  return report.stats(times), wt.bytes, waits and ("%d of %d launches waited"):format(waits, batch)
end

local rows, failed = {}, false
local function emit(cols)
  rows[#rows + 1] = cols
  if opts.tsv then
    local out = {}
    for j, c in ipairs(cols) do out[j] = type(c) == "number" and ("%.1f"):format(c) or tostring(c) end
    print(table.concat(out, "\t"))
    io.stdout:flush()
  end
end

-- --apart: each kernel timed in a process of its own (this script again, one --kernel). It was
-- the default on Vulkan while a kernel timed after others in one process ran up to 4x slow on
-- NVIDIA's driver: the clock, dropped while the host built the next fixture, which every
-- timing now settles (lua/xpu/settle.lua; docs/PERF.md, "Clocks between cells").
if opts.apart and #opts.kernels > 1 then
  local exe, script = arg[-1] or "xpulua", arg[0]
  for _, name in ipairs(opts.kernels) do
    local cmd = { exe, script, "--device", opts.device, "--n", opts.n, "--distinct", opts.distinct, "--tsv", "-o", "jsonl",
                  "--outputs", opts.outputs, "--kernel", name }
    for _, w in ipairs { "fixtures", "grid", "idle", "busy", "copies" } do
      if opts[w] then cmd[#cmd + 1] = "--" .. w; cmd[#cmd + 1] = opts[w] end
    end
    if settle.disabled then cmd[#cmd + 1] = "--no-settle" end
    for _, sh in ipairs(opts.shapes) do cmd[#cmd + 1] = "--shape"; cmd[#cmd + 1] = sh[1] .. "x" .. sh[2] end
    local p = assert(io.popen(report.command(cmd)))
    for line in p:lines() do
      if line:sub(1, 1) == "{" then
        w:record(report.decode_json(line) or { unreadable = line })
        goto next_line
      end
      local cols = {}
      for f in (line .. "\t"):gmatch("([^\t]*)\t") do cols[#cols + 1] = tonumber(f) or f end
      failed = failed or cols[3] == "GATE FAILED"
      emit(cols)
      ::next_line::
    end
    if not p:close() then failed = true end
  end
  opts.kernels = {}
end

for _, name in ipairs(opts.kernels) do
  local k, fmt = d:kernel(name), name:match "^(.-)_q8k"
  local run, ok = pcall(function()
    return gate(k, fmt, 96, 4096, 12) and gate(k, fmt, 96, 4096, 2) and gate(k, fmt, 40, 2304, 5)
  end)
  if not run then io.stderr:write("bench-matvec-kernel: ", name, ": ", tostring(ok), "\n"); ok = false end
  local m = k.manifest or {}
  local regs, spill = m.registers or "-", m.spill_bytes or "-"
  if not ok then
    io.stderr:write("bench-matvec-kernel: bit gate failed for ", name, "\n")
    failed = true
    emit { name, "-", "GATE FAILED", "-", "-", regs, spill, m.note or "" }
  else
    for _, shape in ipairs(opts.shapes) do
      local st, bytes, waited = time(k, fmt, shape[1], shape[2])
      local note = m.note or ""
      if opts.outputs == "each" then note = (note ~= "" and note .. "; " or "") .. (waited or "waits not counted") end
      emit { name, ("%dx%d"):format(shape[1], shape[2]), st.median * 1e6, st.min * 1e6,
             bytes / st.median / 1e9, regs, spill, note }
      w:record(report.with_stats({ kernel = name, rows = shape[1], cols = shape[2], grid = opts.grid or "rows",
                                   outputs = opts.outputs, bytes = bytes, gbs = bytes / st.median / 1e9,
                                   registers = m.registers, spill_bytes = m.spill_bytes, note = note }, st))
    end
  end
end
if not opts.tsv then
  w:table { title = ("mat-vec kernels on %s (%s), deferred, rotated, %s"):format(d.id, d.name,
              opts.outputs == "each" and "an output per launch" or "one output"),
            header = { "kernel", "rows x cols", "median us", "min us", "GB/s", "registers", "spill", "note" }, rows = rows }
end
if failed then cli.die(NAME, "a kernel failed its bit gate (GATE FAILED above)") end
