-- tune-gemm.lua — measures where the prefill GEMM's 128-token tile beats the 64-token one, by
-- K, and keeps that partition in Autotune (seed §25.3: "pick the tile by K ... a measured
-- partition, kept in Autotune, not a literal"). For each format and each row kind the device
-- admits (the dp4a rows gemm.<fmt>.t64/.t128, the tensor-core rows gemm.<fmt>.mma.t64/.t128,
-- with --experts the grouped rows gemm_id.<fmt>.t64/.t128 and gemm_id.<fmt>.mma.t64/.t128) it
-- times both tiles at every K of
-- --ks, checks the two tiles' outputs are the same bytes (one arithmetic: docs/ARITHMETIC.md,
-- "Prefill GEMM"), and takes the split that costs least (xpu.layers.gemm.best_split): the
-- first K of the 128-token side, 0 (everywhere) or "never". The partition is stored under
-- gemm.tile_k.<fmt>, gemm.mma.tile_k.<fmt>, gemm_id.tile_k.<fmt> or gemm_id.mma.tile_k.<fmt>
-- (--no-store: printed only);
-- models and benches read it through xpu.layers.gemm.partition, and the 128-token rows refuse
-- a K below it by name. Each timing is kept too, as gemm.tile_us.<row>@tokens x rows x K.
--   xpulua scripts/tune-gemm.lua [--device cuda:0] [--format q4_0,q8_0] [--ks 1024,4096,14336]
--          [--tokens 512] [--rows 4096] [--experts 128 --used 8] [--reps 5] [--no-store]
--          [-o table|jsonl|csv]
local xpu = require "xpu"
local report = require "xpu.report"
local settle = require "xpu.settle"
local autotune = require "xpu.autotune"
local cli = require "xpu.cli"
local G = require "xpu.layers.gemm"
local decode = require "xpu.decode"
local routes = require "routes.prefill"

local NAME = "tune-gemm"
local opts = cli.parse(arg, {
  name = NAME,
  about = "Measures, by K, where the prefill GEMM's 128-token tile beats the 64-token tile, and keeps the partition in Autotune.",
  example = "xpulua scripts/tune-gemm.lua --device cpu:0 --format q4_0 --ks 256,512 --tokens 128 --rows 16 --reps 1 --no-store",
  options = {
    { "device", "string", "cpu:0", "the device to tune", value = "ID" },
    { "format", "string", nil, "the formats, comma-separated: " .. table.concat(G.formats, ","), value = "a,b",
      default_text = "every format" },
    { "ks", "string", "1024,2048,4096,8192,14336", "the K (columns) to measure, comma-separated", value = "K,K" },
    { "tokens", "int", nil, "tokens in the batch (a multiple of 128, so both tiles admit)", unit = "tokens",
      min = 128, max = G.MAX_TOKENS, default_text = "512, or 2048 with --experts" },
    { "rows", "int", nil, "output rows (per expert with --experts)", unit = "rows", min = 1,
      default_text = "4096, or 768 with --experts" },
    { "experts", "int", nil, "experts in the bank: tune the grouped rows", unit = "experts", min = 1,
      default_text = "the dense rows" },
    { "used", "int", 8, "experts each token uses (with --experts)", unit = "experts", min = 1 },
    { "reps", "int", 5, "timed launches per tile and K", unit = "repetitions", min = 1 },
    { "no-store", "flag", nil, "print the partition, keep nothing in Autotune", key = "no_store" },
  },
  output = true,
})

local formats, ferr = G.parse_formats(opts.format)
if not formats then cli.fail(NAME, "--format: %s", ferr) end
local ks = {}
for v in opts.ks:gmatch("[^,]+") do
  local k = math.tointeger(tonumber(v))
  if not k or k < 256 then cli.fail(NAME, "--ks: '%s' is not a K of 256 or more", v) end
  ks[#ks + 1] = k
end
table.sort(ks)
if #ks == 0 then cli.fail(NAME, "--ks: no K given") end
local E, K = opts.experts, opts.used
local T = opts.tokens or (E and 2048 or 512)
local rows = opts.rows or (E and 768 or 4096)
if T % 128 ~= 0 then cli.fail(NAME, "--tokens %d: not a multiple of 128 (the 128-token tile would pad)", T) end
if E and K > E then cli.fail(NAME, "--used %d: more than the bank's %d --experts", K, E) end
if E and (T * K // E) % 128 ~= 0 then
  cli.fail(NAME, "--tokens %d x --used %d / --experts %d: an expert's share is not a multiple of 128", T, K, E)
end
for _, f in ipairs(formats) do
  for _, k in ipairs(ks) do
    local why = decode.cols_refusal(k, f)
    if why then cli.fail(NAME, "--ks %d, %s: %s", k, f, why) end
  end
end

local d, err = xpu.device(opts.device)
if not d then cli.die(NAME, "%s", err) end
local w = report.writer(opts.output, d, "tune-gemm", { "format", "kind", "k" })

-- The row kinds of a case: { kind, the Autotune fact, the 64- and 128-token rows } for each
-- pair the device admits.
local function pairs_of(fmt, query)
  local by_name = {}
  for _, row in ipairs(routes:candidates(query, d)) do by_name[row.name] = row end
  local out = {}
  local kinds = E and { { "grouped", "id_tile_k", "gemm_id.%s.t%d" },
                        { "grouped_mma", "id_mma_tile_k", "gemm_id.%s.mma.t%d" } }
      or { { "dp4a", "tile_k", "gemm.%s.t%d" }, { "mma", "mma_tile_k", "gemm.%s.mma.t%d" } }
  for _, k in ipairs(kinds) do
    local r64, r128 = by_name[k[3]:format(fmt, 64)], by_name[k[3]:format(fmt, 128)]
    if r64 and r128 then out[#out + 1] = { kind = k[1], fact = k[2], r64 = r64, r128 = r128 } end
  end
  return out
end

local function call_of(case, s) return G.case_call(d, case, s) end

-- The median seconds of `row` over the case, and its output's bytes.
local function time_row(row, case)
  local s = d:default_stream()
  local c = call_of(case, s)
  case.operands.y:upload(("\255"):rep(case.operands.y.bytes))
  row:dispatch(c)
  s:sync()
  local out = case.operands.y:download()
  settle.ensure(d)
  local times = {}
  for r = 1, opts.reps + 1 do
    local m = s:timer_begin()
    row:dispatch(c)
    local sec = s:timer_end(m)
    if r > 1 then times[#times + 1] = sec end
  end
  settle.touch(d)
  return report.stats(times).median, out
end

local function keep(key, value)
  if opts.no_store then return end
  local ok, werr = autotune.remember(d, key, value)
  if not ok then report.log("%s", tostring(werr)) end
end

local out, results, done = {}, {}, 0
for _, fmt in ipairs(formats) do
  local sweeps = {} -- kind -> { fact =, t64 = {}, t128 = {} }
  for i, k in ipairs(ks) do
    local case = G.bench_case(d, { format = fmt, tokens = T, rows = rows, cols = k, experts = E, used = K })
    for _, p in ipairs(pairs_of(fmt, case.query)) do
      local sw = sweeps[p.kind] or { fact = p.fact, t64 = {}, t128 = {} }
      sweeps[p.kind] = sw
      local t64, y64 = time_row(p.r64, case)
      local t128, y128 = time_row(p.r128, case)
      local same = y64 == y128 and "==" or "DIFFER"
      if same ~= "==" then report.log("%s %s K %d: the two tiles' outputs differ", fmt, p.kind, k) end
      sw.t64[i], sw.t128[i] = t64, t128
      local shape = { T, rows, k }
      if not opts.no_store then
        autotune.remember_for(d, "gemm.tile_us." .. p.r64.name, shape, ("%.6g"):format(t64 * 1e6))
        autotune.remember_for(d, "gemm.tile_us." .. p.r128.name, shape, ("%.6g"):format(t128 * 1e6))
      end
      out[#out + 1] = { fmt, p.kind, k, t64 * 1e6, t128 * 1e6, t128 < t64 and "t128" or "t64", same }
      sw.records = sw.records or {}
      sw.records[#sw.records + 1] = { format = fmt, kind = p.kind, k = k, tokens = T, rows = rows, experts = E,
        used = E and K or nil, t64_us = t64 * 1e6, t128_us = t128 * 1e6, faster = t128 < t64 and 128 or 64,
        outputs = same }
    end
    for _, b in pairs(case.operands) do b:release() end
  end
  for kind, sw in pairs(sweeps) do
    if #sw.t64 == #ks then
      local split = G.best_split(ks, sw.t64, sw.t128)
      local key = G.partition_keys(fmt)[sw.fact]
      keep(key, tostring(split))
      local shown = split >= G.NEVER and "never" or split
      results[#results + 1] = { fmt, kind, tostring(shown), key, opts.no_store and "not stored" or "stored" }
      -- every K's record carries its sweep's partition: one record shape for jsonl and csv
      for _, r in ipairs(sw.records) do
        r.partition, r.partition_key, r.stored = shown, key, not opts.no_store
        w:record(r)
      end
    else
      report.log("%s %s: admitted at only some K; no partition kept", fmt, kind)
    end
  end
  if not next(sweeps) then report.log("%s: no pair of tile rows admits on %s", fmt, d.id) end
  done = done + 1
  report.progress(done, #formats, fmt)
end
G.forget_partitions()
w:table {
  title = ("prefill GEMM tiles by K on %s (%s): %d tokens, %d rows%s"):format(d.id, d.name, T, rows,
    E and (", %d experts, %d used"):format(E, K) or ""),
  header = { "format", "kind", "K", "t64 us", "t128 us", "faster", "outputs" }, rows = out }
w:table { title = "partition: the 128-token tile from K on", header = { "format", "kind", "from K", "key", "autotune" },
          rows = results }
