-- bench-id.lua — grouped expert mat-vec: one launch over a bank's whole slab through the
-- selection buffer, activation pack included (q8k_pack + <fmt>_q8k_id), gated first against
-- the dense wave kernel per selected expert (==).
--   xpulua scripts/bench-id.lua [--device cuda:0] [--experts 128] [--used 8] [--rows 768]
--                               [--cols 2048] [--format F] [--n 50] [-o table|jsonl|csv]
local xpu = require "xpu"
local report = require "xpu.report"
local settle = require "xpu.settle"
local decode = require "xpu.decode"

local cli = require "xpu.cli"

local NAME = "bench-id"
local opts = cli.parse(arg, {
  name = NAME,
  about = "Grouped expert mat-vec over a bank's slab through the selection buffer, gated against the dense kernel.",
  example = "xpulua scripts/bench-id.lua --device cpu:0 --format q4_0 --experts 16 --used 4 --rows 64 --cols 512 --n 5",
  options = {
    { "device", "string", "cpu:0", "the device to time", value = "ID" },
    { "format", "choice", nil, "one format only", choices = decode.formats, default_text = "every format" },
    { "experts", "int", 128, "experts in the bank", unit = "experts" },
    { "used", "int", 8, "experts selected per token", unit = "experts" },
    { "rows", "int", 768, "rows per expert", unit = "rows" },
    { "cols", "int", 2048, "columns, a multiple of 256 and of the format's block", unit = "columns" },
    { "n", "int", 50, "timed batches per cell", unit = "timed runs" },
  },
  output = true,
})
if opts.used > opts.experts then
  cli.fail(NAME, "--used %d: more than the bank's %d --experts", opts.used, opts.experts)
end
local cols_refused = decode.cols_refusal(opts.cols, opts.format)
if cols_refused then cli.fail(NAME, "%s", cols_refused) end

local d, err = xpu.device(opts.device)
if not d then cli.die(NAME, "%s", err) end
local w = report.writer(opts.output, d, "id", { "format", "experts", "used", "rows", "cols", "sel", "launch" })
local formats = opts.format and { opts.format } or decode.formats
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
    cli.die(NAME, "%s gate failed: %d differ, %d NaN", fmt, diff, nan)
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
    w:record(report.with_stats({ format = fmt, kernel = fmt .. "_q8k_id", experts = E, used = used, rows = rows,
                                 cols = cols, sel = mode, launch = launch, bytes = bytes, median_s = st.median,
                                 min_s = st.min, max_s = st.max }, st))
    report.progress(#out, 4 * #formats, fmt .. " " .. mode .. " " .. launch)
  end
  deferred:release()
  slab:release()
end
w:table {
  title = ("grouped id mat-vec on %s (%s), q8k_pack + id per pass, batches of 16 passes, %s"):format(
    d.id, d.name, os.date("!%Y-%m-%d")),
  header = { "format", "bank", "selection", "launches", "weight bytes read", "median us", "min us", "max us", "GB/s" },
  rows = out }
