-- bench-prefill.lua — the prefill GEMMs over resident weights (xpu.layers.gemm, routes.prefill):
-- a weight matrix x a batch of tokens, or with --experts one launch over an expert bank
-- through expert_map's lists (the map built once, untimed). Every row the device admits for
-- the shape (each token tile is its own row) is gated first against the host reference (the
-- decode mat-vec's portable body per token, ==) on a slice of the shape's rows, then timed:
-- us median / min / max per launch, TFLOPS (2 x tokens (x used) x rows x cols), GB/s of the
-- bytes read and written against the copy ceiling measured in the same run (xpu.report), and
-- the grid: workgroups, groups per compute unit, and a warning where the grid cannot fill the
-- device (seed §25.3.1).
--   xpulua scripts/bench-prefill.lua [--device cuda:0] [--tokens 512] [--format q4_0,q8_0]
--          [--rows 4096] [--cols 14336] [--experts 128 --used 8] [--reps N] [-o table|jsonl|csv]
local xpu = require "xpu"
local report = require "xpu.report"
local settle = require "xpu.settle"
local cli = require "xpu.cli"
local G = require "xpu.layers.gemm"
local decode = require "xpu.decode"
local routes = require "routes.prefill"
local select_routes = require "routes.layer_select"

local NAME = "bench-prefill"
local opts = cli.parse(arg, {
  name = NAME,
  about = "Prefill GEMM over quantized resident weights (dense, or grouped over an expert map), gated, timed per tile row.",
  example = "xpulua scripts/bench-prefill.lua --device cpu:0 --format q4_0 --tokens 64 --rows 256 --cols 1024 --reps 3",
  options = {
    { "device", "string", "cpu:0", "the device to time", value = "ID" },
    { "tokens", "int", 512, "tokens in the batch", unit = "tokens", min = G.MIN_TOKENS, max = G.MAX_TOKENS },
    { "format", "string", nil, "the formats, comma-separated: " .. table.concat(G.formats, ","), value = "a,b",
      default_text = "every format" },
    { "rows", "int", nil, "output rows (per expert with --experts)", unit = "rows", min = 1,
      default_text = "4096, or 768 with --experts" },
    { "cols", "int", nil, "columns, a multiple of 256 and of the format's block", unit = "columns", min = 256,
      default_text = "14336, or 2048 with --experts" },
    { "experts", "int", nil, "experts in the bank: time the grouped GEMM", unit = "experts", min = 1,
      default_text = "a dense weight" },
    { "used", "int", 8, "experts each token uses (with --experts)", unit = "experts", min = 1 },
    { "reps", "int", 10, "timed launches per row", unit = "repetitions", min = 1 },
  },
  output = true,
})

local formats, ferr = G.parse_formats(opts.format)
if not formats then cli.fail(NAME, "--format: %s", ferr) end
local E = opts.experts
local T, K = opts.tokens, opts.used
local rows, cols = opts.rows or (E and 768 or 4096), opts.cols or (E and 2048 or 14336)
if E and K > E then cli.fail(NAME, "--used %d: more than the bank's %d --experts", K, E) end
for _, f in ipairs(formats) do
  local why = decode.cols_refusal(cols, f)
  if why then cli.fail(NAME, "%s", why) end
end

local d, err = xpu.device(opts.device)
if not d then cli.die(NAME, "%s", err) end
local w = report.writer(opts.output, d, "prefill", { "format", "row", "tokens", "rows", "cols", "experts", "used" })
local units = d.simd_count or 0

-- The case's call on stream s; for a bank, the expert map is built first (untimed).
local function call_of(case, s) return G.case_call(d, case, s) end

-- The gate: `row` on a slice of the shape (at most 24 rows, so the host reference stays quick)
-- against the reference, ==, NaN counted. Returns "==" or the first difference.
local function gate(fmt, row)
  local gr, gc = math.min(rows, 24), math.min(cols, 4096)
  local ops, q, want, bytes = {}, nil, nil, nil
  local x = G.activations(T * (E and K or 1), gc, 21)
  if E then
    local slab = G.weights(fmt, gr * E, gc, 19)
    local idb, ids = G.expert_ids(T, K, E, 23, -1)
    local P = T * K
    ops = { slab = d:buffer(slab), x = d:buffer(x:sub(1, T * gc // 256 * 320)), counts = d:buffer(E * 4),
            offsets = d:buffer(E * 4), list_tokens = d:buffer(P * 4), list_slots = d:buffer(P * 4) }
    local mc = xpu.call { query = xpu.query { regime = "expert_map", format = "i32", tokens = T, k = K, n_expert = E },
                          device = d, operands = { counts = ops.counts, offsets = ops.offsets, tokens = ops.list_tokens,
                                                   slots = ops.list_slots, ids = d:buffer(idb) } }
    select_routes:bind(mc):dispatch(mc)
    q, bytes = G.id_query(fmt, T, gr, gc, E, K, 0), P * gr * 4
    want = G.id_reference(fmt, slab, x, ids, T, K, gr, gc, 0)
  else
    local wt = G.weights(fmt, gr, gc, 19)
    ops = { w = d:buffer(wt), x = d:buffer(x) }
    q, bytes = G.query(fmt, T, gr, gc), T * gr * 4
    want = G.reference(fmt, wt, x, T, gr, gc)
  end
  ops.y = d:buffer(("\255"):rep(bytes))
  local c = xpu.call { query = q, device = d, operands = ops }
  -- the slice admits the same tile rows as the shape (the tile gates read tokens, experts, used)
  local ok, e = pcall(row.dispatch, row, c)
  if not ok then return "FAIL: " .. tostring(e):match("^[^\n]*") end
  d:default_stream():sync()
  local got, nan = ops.y:download(), 0
  for i = 1, #got, 4 do
    local g = string.unpack("<f", got, i)
    if g ~= g then nan = nan + 1 end
    if got:sub(i, i + 3) ~= want:sub(i, i + 3) then
      return ("FAIL: output %d %.9g, reference %.9g (%d NaN)"):format((i - 1) // 4, g, (string.unpack("<f", want, i)), nan)
    end
  end
  for _, b in pairs(ops) do b:release() end
  return nan == 0 and "==" or ("FAIL: %d NaN"):format(nan)
end

-- Seconds per launch of `row` over the case, from the stream's timer.
local function time_row(row, case)
  local s = d:default_stream()
  local c = call_of(case, s)
  row:dispatch(c)
  s:sync()
  settle.ensure(d)
  local times = {}
  for r = 1, opts.reps + 2 do
    local m = s:timer_begin()
    row:dispatch(c)
    local sec = s:timer_end(m)
    if r > 2 then times[#times + 1] = sec end
  end
  settle.touch(d)
  return report.stats(times)
end

settle.ensure(d)
local ceiling, copy_now, copy_stored = report.copy_ceiling(d, opts.reps)
report.log("%s: %s: copy ceiling %.0f GB/s (now %.0f, stored %s)", NAME, d.id, ceiling, copy_now,
  copy_stored and ("%.0f"):format(copy_stored) or "none")

local out, done = {}, 0
for _, fmt in ipairs(formats) do
  local case = G.bench_case(d, { format = fmt, tokens = T, rows = rows, cols = cols, experts = E, used = K })
  local cands = routes:candidates(case.query, d)
  if #cands == 0 then
    local why = tostring(routes:why_not_admissible(case.query, d))
    out[#out + 1] = { fmt, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", why }
    w:record { format = fmt, tokens = T, rows = rows, cols = cols, experts = E, used = E and K or nil, skipped = why }
  end
  for _, row in ipairs(cands) do
    local verdict = gate(fmt, row)
    local tile = tonumber(row.kernel:match("_t(%d+)$"))
    local groups = G.groups(case.query, tile, row.kernel:find("_mmas_", 1, true) and "mmas"
      or row.kernel:find("_mma_", 1, true) and "mma")
    local warn = G.fill_refusal(groups, units)
    local st = time_row(row, case)
    local tflops = G.flops(case.query) / st.median / 1e12
    local gbs = case.bytes / st.median / 1e9
    local per_unit = units > 0 and groups / units or nil
    if warn then report.log("%s %s: %s", fmt, row.name, warn) end
    out[#out + 1] = { fmt, row.name, verdict, st.median * 1e6, st.min * 1e6, st.max * 1e6, tflops, gbs,
                      ("%.0f"):format(100 * gbs / ceiling), groups, per_unit and ("%.1f"):format(per_unit) or "?",
                      warn and "cannot fill the device" or "" }
    w:record(report.with_stats({ format = fmt, row = row.name, kernel = row.kernel, gate = verdict, tokens = T,
                                 rows = rows, cols = cols, experts = E, used = E and K or nil, shape = case.note,
                                 median_us = st.median * 1e6, tflops = tflops, gbs = gbs, bytes = case.bytes,
                                 copy_ceiling_gbs = ceiling, of_copy = gbs / ceiling,
                                 groups = groups, groups_per_unit = per_unit, fill_warning = warn }, st))
  end
  for _, b in pairs(case.operands) do b:release() end
  done = done + 1
  report.progress(done, #formats, fmt)
end
w:table {
  title = ("prefill GEMM on %s (%s): %s, %d tokens, %dx%d%s; gate: == the decode mat-vec per token on %d rows; "
    .. "copy ceiling %.0f GB/s measured in this run"):format(d.id, d.name, E and "grouped over an expert map" or "dense", T,
    rows, cols, E and (" per expert, %d experts, %d used"):format(E, K) or "", math.min(rows, 24), ceiling),
  header = { "format", "row", "gate", "median us", "min us", "max us", "TFLOPS", "GB/s", "% copy", "groups", "per unit",
             "grid" },
  rows = out }
