-- bench-id.lua — grouped expert mat-vec: one launch over a bank's whole slab through the
-- selection buffer, activation pack included (q8k_pack + <fmt>_q8k_id), gated first against
-- the dense wave kernel per selected expert (==).
--   xpulua scripts/bench-id.lua [--device cuda:0] [--experts 128] [--used 8] [--rows 768]
--                               [--cols 2048] [--format F] [--n 50] [--jsonl]
local xpu = require "xpu"
local report = require "xpu.report"
local settle = require "xpu.settle"
local decode = require "xpu.decode"

local opts = { device = "cpu:0", experts = 128, used = 8, rows = 768, cols = 2048, n = 50 }
report.require_values("bench-id", arg, { "--device", "--format", "--experts", "--used", "--rows", "--cols", "--n" })
local COUNTS = { experts = "experts", used = "experts", rows = "rows", cols = "columns", n = "timed runs" }
local i = 1
while i <= #arg do
  local a, v = arg[i], arg[i + 1]
  if a == "--jsonl" then opts.jsonl = true; i = i - 1
  elseif a == "--format" or a == "--device" then opts[a:sub(3)] = v
  elseif COUNTS[a:sub(3)] then opts[a:sub(3)] = report.whole("bench-id", a, v, COUNTS[a:sub(3)])
  else io.stderr:write("bench-id: unknown argument '", a, "'\n"); os.exit(2) end
  i = i + 2
end

local d, err = xpu.device(opts.device)
if not d then io.stderr:write("bench-id: ", err, "\n"); os.exit(1) end
local formats = opts.format and { opts.format } or { "q4_0", "q8_0", "q4_K", "q6_K", "iq4_nl" }
local E, used, rows, cols = opts.experts, opts.used, opts.rows, opts.cols
local s = d:default_stream()

local out = {}
for _, fmt in ipairs(formats) do
  -- 16 distinct experts' rows, tiled over the bank: bandwidth does not care, the gate does
  local distinct = math.min(E, 16)
  local fx = decode.fixture(fmt, rows * distinct, cols, 7)
  local expert_bytes = rows * fx.row_bytes
  local slab_bytes = fx.resident:rep(E // distinct + 1):sub(1, E * expert_bytes)
  local slab = d:buffer(slab_bytes)
  local xf = d:buffer(decode.floats(cols, 11))
  local xq = d:buffer(cols // 256 * 320)
  local y = d:buffer(used * rows * 4)
  local pack, id, wave = d:kernel "q8k_pack", d:kernel(fmt .. "_q8k_id"), d:kernel(fmt .. "_q8k_wave")
  local sel_ids = {}
  for u = 1, used do sel_ids[u] = (u * 37 + 5) % E end
  local sel = d:buffer(string.pack("<" .. ("i4"):rep(used), table.unpack(sel_ids)))

  -- gate: id == the wave kernel over each selected expert's slice
  pack:launch(s, cols // 256, 256, xq, xf, cols)
  y:upload(decode.NAN:rep(used * rows))
  id:launch(s, (used * rows + 7) // 8, 256, y, slab, xq, sel, E, used, rows, cols, 0, 0)
  local yw = d:buffer(decode.NAN:rep(used * rows))
  for u = 1, used do
    wave:launch(s, (rows + 7) // 8, 256, yw, slab:slice(sel_ids[u] * expert_bytes, expert_bytes), xq, rows, cols, (u - 1) * rows)
  end
  s:sync()
  local a, b = decode.unpack_f32(y:download()), decode.unpack_f32(yw:download())
  local diff, nan = 0, 0
  for j = 1, #a do
    if a[j] ~= b[j] then diff = diff + 1 end
    if a[j] ~= a[j] then nan = nan + 1 end
  end
  if diff > 0 or nan > 0 then
    io.stderr:write(("bench-id: %s gate failed: %d differ, %d NaN\n"):format(fmt, diff, nan))
    os.exit(1)
  end

  -- "fixed": the same selection every pass (its experts stay in cache, as a repeated
  -- single-op timing has them); "rotated": a new selection each pass, over the whole bank
  local sels = { fixed = { sel } , rotated = {} }
  for p = 1, 16 do
    local ids = {}
    for u = 1, used do ids[u] = ((p * used + u) * 53) % E end
    sels.rotated[p] = d:buffer(string.pack("<" .. ("i4"):rep(used), table.unpack(ids)))
  end
  -- eager: each launch submitted as it is made; deferred: a batch is recorded once and then
  -- replayed as one submission (a CUDA graph, a re-submitted command buffer), which takes
  -- the host's cost per launch out of the figure
  local deferred = d:stream()
  deferred:set_deferred(true)
  for _, m in ipairs { { "rotated", s }, { "fixed", s }, { "rotated", deferred }, { "fixed", deferred } } do
    local mode, st_ = m[1], m[2]
    -- batches of back-to-back passes between two timer marks, one pass per selection of the
    -- rotation, so every batch is the same sequence of launches
    local t, batch = {}, #sels.rotated
    settle.ensure(d)
    for r = 1, opts.n + 5 do
      local mark = st_:timer_begin()
      for p = 1, batch do
        local sb = sels[mode][(p - 1) % #sels[mode] + 1]
        pack:launch(st_, cols // 256, 256, xq, xf, cols)
        id:launch(st_, (used * rows + 7) // 8, 256, y, slab, xq, sb, E, used, rows, cols, 0, 0)
      end
      local sec = st_:timer_end(mark) / batch
      if r > 5 then t[#t + 1] = sec end
    end
    settle.touch(d)
    local st = report.stats(t)
    local bytes = used * expert_bytes
    local launch = st_ == s and "eager" or "deferred"
    out[#out + 1] = { fmt, ("%dx%dx%d, %d used"):format(E, rows, cols, used), mode, launch, bytes, st.median * 1e6,
                      st.min * 1e6, st.max * 1e6, bytes / st.median / 1e9 }
    if opts.jsonl then
      report.jsonl { bench = "id", device = d:fingerprint(), commit = report.commit(), format = fmt,
                     kernel = fmt .. "_q8k_id", experts = E, used = used, rows = rows, cols = cols, sel = mode,
                     launch = launch, bytes = bytes, median_s = st.median, min_s = st.min, max_s = st.max }
    end
  end
  deferred:release()
  slab:release()
end
print(report.table {
  title = ("grouped id mat-vec on %s (%s), q8k_pack + id per pass, batches of 16 passes, %s"):format(
    d.id, d.name, os.date("!%Y-%m-%d")),
  header = { "format", "bank", "selection", "launches", "weight bytes read", "median us", "min us", "max us", "GB/s" },
  rows = out })
