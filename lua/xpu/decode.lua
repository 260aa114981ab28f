-- xpu.decode — the decode mat-vec harness shared by the tour, bench-decode and the specs:
-- fixtures that are never all zero, a bit gate against the CPU reference (== per element,
-- NaN counted, outputs poisoned first), and timing on rotated weights.
local xpu = require "xpu"
local report = require "xpu.report"
local settle = require "xpu.settle"

local M = {}

-- The decode formats' names, in xpu.formats()'s order; M.STREAMS (below) from the same records.
M.formats = {}
M.STREAMS = {}
for i, f in ipairs(xpu.formats()) do
  M.formats[i] = f.name
  M.STREAMS[f.name] = f.streams or nil
end

-- Why `cols` cannot be a row width for format fmt (or any decode format): it must be a
-- multiple of the format's block and of the activations' 256; nil where it can.
function M.cols_refusal(cols, fmt)
  for _, f in ipairs(fmt and { fmt } or M.formats) do
    local block = math.max(256, xpu.quant.info(f).block_elems)
    if cols % block ~= 0 then
      return ("--cols %d: not a multiple of %d (%s's block and the activations' 256)"):format(cols, block, f)
    end
  end
end

-- n floats as a packed little-endian f32 string: a smooth wave plus a per-index wobble, so
-- every block has a different scale and no block is zero. With `row` (a row's length), rows
-- 6 and 7 of every eight are scaled by 1e-3 and 1e-4, so some f16 block scales of every
-- format are subnormal there and a bit gate covers their decode.
local TINY = { [6] = 1e-3, [7] = 1e-4 }

function M.floats(n, seed, row)
  seed = seed or 1
  local parts, chunk = {}, {}
  for i = 0, n - 1 do
    local v = math.sin(i * 0.0137 * seed + seed) * (1 + (i % 97) / 48) + ((i * 7919 + seed) % 61 - 30) / 97
    if row then v = v * (TINY[i // row % 8] or 1) end
    chunk[#chunk + 1] = v
    if #chunk == 200 then
      parts[#parts + 1] = string.pack("<" .. ("f"):rep(200), table.unpack(chunk))
      chunk = {}
    end
  end
  if #chunk > 0 then parts[#parts + 1] = string.pack("<" .. ("f"):rep(#chunk), table.unpack(chunk)) end
  return table.concat(parts)
end

function M.unpack_f32(s)
  local out = {}
  for i = 1, #s, 4 do out[#out + 1] = string.unpack("<f", s, i) end
  return out
end

-- Resident rows of a rows x cols weight and the q8_K activation for it.
function M.fixture(fmt, rows, cols, seed)
  local info = xpu.quant.info(fmt)
  local bpr = cols // info.block_elems
  local blocks = xpu.quant.quantize(fmt, M.floats(rows * cols, seed, cols))
  return {
    fmt = fmt, rows = rows, cols = cols, bpr = bpr,
    resident = xpu.quant.resident(fmt, blocks, bpr),
    row_bytes = xpu.quant.row_bytes(fmt, bpr),
    x = xpu.quant.q8k_pack(M.floats(cols, seed + 17)),
  }
end

M.NAN = string.pack("<I4", 0x7fc00001)

-- Workgroups of 256 (8 waves) for a rows-row launch of kernel k: "rows" gives every row its
-- own wave; "resident" only as many groups as the device keeps resident at once (the
-- manifest's groups per compute unit times the units), each wave then streaming several rows;
-- a number is taken as it is. Every form covers every row. A second result says where a
-- "resident" grid the caller asked for could not be had (the device or the kernel does not say
-- what stays resident) and the grid is a wave per row instead, for the caller to report.
-- Without a grid, the launcher's choice (src/ops/quant/launch.c): the resident grid for the
-- mat-vecs that stream (M.STREAMS: xpu.formats()'s `streams`), a wave per row for the others.

function M.groups(dev, k, rows, grid)
  local plain, asked = (rows + 7) // 8, grid
  if grid == nil or grid == "launcher" then grid = M.STREAMS[k.name:match "^(.-)_q8k"] and "resident" or "rows" end
  if grid == "rows" then return plain end
  if grid == "resident" then
    local per_cu = k.manifest.resident_groups_per_cu
    if not per_cu or per_cu <= 0 or (dev.simd_count or 0) <= 0 then
      if asked ~= "resident" then return plain end -- the launcher's choice, not the caller's: its own fallback
      return plain, ("%s on %s: no resident grid (%s), a wave per row instead"):format(k.name, dev.id,
        (not per_cu or per_cu <= 0) and "its manifest gives no resident groups per compute unit"
          or "the device reports no compute units")
    end
    return math.max(1, math.min(plain, per_cu * dev.simd_count))
  end
  return math.max(1, math.tointeger(grid) or error("decode: grid must be rows, resident or a count, not " .. tostring(grid)))
end

-- The dense decode kernel of a format: the plain integer form every backend builds, or with
-- variant "dot4" the packed-dot twin that the routes pick where the device has one.
function M.kernel_name(fmt, variant)
  return fmt .. "_q8k_wave" .. (variant == "dot4" and "_dot4" or "")
end

-- Launches the format's kernel (kname, default the plain one) on dev over the fixture.
function M.run(dev, fx, w_buf, x_buf, y_buf, stream, grid, kname)
  local k = dev:kernel(kname or M.kernel_name(fx.fmt))
  k:launch(stream, M.groups(dev, k, fx.rows, grid), 256, y_buf, w_buf, x_buf, fx.rows, fx.cols, 0)
end

-- The bit gate: dev's kernel == the CPU portable body, element by element; NaN counted;
-- something non-zero. Returns ok, message.
function M.gate(dev, fmt, rows, cols, seed, grid, kname)
  local fx = M.fixture(fmt, rows, cols, seed or 3)
  local w, x = dev:buffer(fx.resident), dev:buffer(fx.x)
  local y = dev:buffer(M.NAN:rep(rows))
  M.run(dev, fx, w, x, y, nil, grid, kname)
  dev:default_stream():sync()
  local got = M.unpack_f32(y:download())
  local want = M.unpack_f32(xpu.quant.matvec_host(fmt, fx.resident, fx.x, rows, cols, "portable"))
  local diff, nan, nonzero, first = 0, 0, false, nil
  for i = 1, rows do
    if got[i] ~= got[i] then nan = nan + 1 end
    if got[i] ~= want[i] then
      diff = diff + 1
      first = first or ("row %d: %s %.9g, reference %.9g"):format(i - 1, dev.id, got[i], want[i])
    end
    if got[i] == got[i] and got[i] ~= 0 then nonzero = true end
  end
  local ok = diff == 0 and nan == 0 and nonzero
  return ok, ("%s %s %dx%d%s: %d differ, %d NaN%s%s"):format(dev.id, kname or fmt, rows, cols,
    grid and grid ~= "launcher" and (" (grid " .. tostring(grid) .. ")") or "", diff, nan,
    nonzero and "" or ", all zero", first and "; first " .. first or "")
end

-- Times <fmt>_q8k_wave (opts.kernel: another kernel of its signature, e.g. the dot4 twin) at
-- rows x cols with `copies` weight buffers rotated so the working set
-- exceeds the caches. Each timed pass is a batch of back-to-back launches between two device
-- timer marks, so the host's submit latency overlaps the previous kernel instead of being
-- counted; a launch's time is the pass over the batch. Returns stats (seconds per launch)
-- and the weight bytes per launch.
function M.time(dev, fmt, rows, cols, opts)
  opts = opts or {}
  local distinct = math.min(rows, 256)
  local fx = M.fixture(fmt, distinct, cols, 5)
  local reps = (rows + distinct - 1) // distinct
  local resident = fx.resident:rep(reps):sub(1, rows * fx.row_bytes)
  local bytes = rows * fx.row_bytes
  local copies = opts.copies or 1
  local ws = {}
  for c = 1, copies do ws[c] = dev:buffer(resident) end
  local x = dev:buffer(fx.x)
  local y = dev:buffer(rows * 4)
  -- deferred: each batch recorded once, then replayed as one submission (same sequence)
  local s = opts.deferred and dev:stream() or dev:default_stream()
  if opts.deferred then s:set_deferred(true) end
  local k = dev:kernel(opts.kernel or M.kernel_name(fmt))
  local groups, grid_note = M.groups(dev, k, rows, opts.grid)
  if grid_note then io.stderr:write("decode: ", grid_note, "\n") end
  settle.ensure(dev) -- the host may have spent seconds on the fixture, the GPU idle
  local times = {}
  -- each batch walks the whole rotation, so every batch is the same sequence of launches
  local n, batch = opts.n or 20, math.max(opts.batch or 10, copies)
  for r = 1, n + (opts.warmup or 3) do
    local m = s:timer_begin()
    for b = 1, batch do
      k:launch(s, groups, 256, y, ws[(b - 1) % copies + 1], x, rows, cols, 0)
    end
    local sec = s:timer_end(m) / batch
    if r > (opts.warmup or 3) then times[#times + 1] = sec end
  end
  settle.touch(dev)
  for c = 1, copies do ws[c]:release() end
  if opts.deferred then s:release() end
  return report.stats(times), bytes
end

-- The streaming read kernel over the same bytes, rotated the same way and timed the same way
-- (batches of back-to-back launches): what a pass over that many weight bytes costs with no
-- arithmetic at all, launch and ramp included. The bound for a mat-vec of that size. Timed
-- at the resident grid and at 8x it; the faster is kept. The copies hold data: on the CPU a
-- buffer never written is pages the kernel maps to one zero page, read from the cache (33 MB
-- of them "read" in 0.2 ms, against 1.1 ms for the same bytes written).
function M.time_read(dev, bytes, copies, opts)
  opts = opts or {}
  local bufs = {}
  local data = ("xpulua read "):rep(bytes // 12 + 1):sub(1, bytes)
  for c = 1, copies do bufs[c] = dev:buffer(data) end
  local resident = math.max(1, dev:dispatch_blocks(8))
  local out = dev:buffer(resident * 8 * 4)
  local s = opts.deferred and dev:stream() or dev:default_stream()
  if opts.deferred then s:set_deferred(true) end
  local k = dev:kernel("stream_read")
  local best
  settle.ensure(dev)
  for _, groups in ipairs { resident, resident * 8 } do
    local times = {}
    local n, batch = opts.n or 20, math.max(opts.batch or 10, copies)
    for r = 1, n + (opts.warmup or 3) do
      local m = s:timer_begin()
      for b = 1, batch do
        k:launch(s, groups, 256, out, bufs[(b - 1) % copies + 1], bytes, groups)
      end
      local sec = s:timer_end(m) / batch
      if r > (opts.warmup or 3) then times[#times + 1] = sec end
    end
    local st = report.stats(times)
    st.groups = groups
    if not best or st.median < best.median then best = st end
  end
  -- the kernel's sums of what it read: all zero would mean it read no written bytes
  if out:download() == ("\0"):rep(resident * 8 * 4) then
    error(("decode.time_read: stream_read on %s summed to zero over %d written bytes"):format(dev.id, bytes))
  end
  settle.touch(dev)
  for c = 1, copies do bufs[c]:release() end
  out:release()
  if opts.deferred then s:release() end
  return best
end

-- A cell whose weights' plain read (time_read over the same copies) ran under half the read
-- ceiling (report.slow_share): the device, not the kernel, set its pace (on NVIDIA's Vulkan
-- driver, clocks that had dropped between cells, before settle.ensure looked every 20 ms;
-- docs/PERF.md). Returns that read's GB/s and its fraction of the ceiling, or nil.
function M.slow_read(bytes, read_s, ceiling_gbs)
  if not (read_s and read_s > 0) then return nil end
  local gbs = bytes / read_s / 1e9
  local share = report.slow_share(gbs, ceiling_gbs)
  if share then return gbs, share end
  return nil
end

-- Back-to-back launches of a kernel that does nothing (stream_read over 0 bytes, one group),
-- timed as the mat-vecs are: the per-launch floor under every figure above it.
function M.time_floor(dev, opts)
  opts = opts or {}
  local out = dev:buffer(4)
  local s = opts.deferred and dev:stream() or dev:default_stream()
  if opts.deferred then s:set_deferred(true) end
  local k = dev:kernel("stream_read")
  local times = {}
  settle.ensure(dev)
  for r = 1, (opts.n or 20) + 3 do
    local m = s:timer_begin()
    for _ = 1, 10 do k:launch(s, 1, 256, out, out, 0, 1) end
    local sec = s:timer_end(m) / 10
    if r > 3 then times[#times + 1] = sec end
  end
  settle.touch(dev)
  out:release()
  if opts.deferred then s:release() end
  return report.stats(times)
end

-- Least squares t = bytes / rate + b over a list of {bytes, seconds}: the rate (bytes/s) and
-- the fixed cost (s); or nil and why, where the points give no positive rate (fewer than two
-- sizes, or times that do not grow with the bytes: each format's own cost outweighs its size).
function M.fit(points)
  local n, sx, sy, sxx, sxy = #points, 0, 0, 0, 0
  for _, p in ipairs(points) do
    sx, sy, sxx, sxy = sx + p[1], sy + p[2], sxx + p[1] * p[1], sxy + p[1] * p[2]
  end
  local den = n * sxx - sx * sx
  if n < 2 or den == 0 then return nil, "fewer than two sizes of weights" end
  local slope = (n * sxy - sx * sy) / den
  if slope <= 0 then
    return nil, "the times do not grow with the bytes (each format's own cost outweighs its size)"
  end
  return 1 / slope, (sy - slope * sx) / n
end

-- A short gated run for the tour: two copies of the weights, so on most hosts they are read
-- from the cache (the title says so); scripts/bench-decode.lua rotates them past it.
function M.tour(dev)
  local rows = {}
  for _, fmt in ipairs(M.formats) do
    local ok, msg = M.gate(dev, fmt, 64, 4096)
    local st, bytes = M.time(dev, fmt, 4096, 4096, { n = 5, copies = 2 })
    rows[#rows + 1] = { fmt, ok and "==" or "FAIL", bytes, st.median * 1e6, bytes / st.median / 1e9 }
    if not ok then report.log("%s", msg) end
  end
  local most = 0
  for _, r in ipairs(rows) do most = math.max(most, r[3]) end
  local cached = 2 * most <= (dev.l2_bytes or 0) and ", weights in the last-level cache" or ""
  print(report.table { title = ("decode mat-vec on %s, 4096x4096, two weight copies%s, bit gate vs the portable CPU body; "
                                  .. "scripts/bench-decode.lua for rates past the caches"):format(dev.id, cached),
                       header = { "format", "gate", "weight bytes", "median us", "GB/s" }, rows = rows })
end

return M
