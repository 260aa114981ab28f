-- xpu.layers.gemm — the prefill GEMMs over resident weights as route rows: gemm.<fmt>.t64 and
-- gemm.<fmt>.t128 (tokens x rows: every token's q8_K row against one weight matrix) and
-- gemm_id.<fmt>.t64 / .t128 (one launch over an expert bank, each expert's tokens gathered
-- through expert_map's lists), one set per format of xpu.formats(); their queries, the grid
-- they launch and whether it can fill a device, fixtures with a host reference (the decode
-- mat-vec's portable body per token) and bench_case for scripts/bench-prefill.lua.
-- docs/ARITHMETIC.md ("Prefill GEMM") is the arithmetic: each token's outputs are the decode
-- mat-vec's, bit for bit.
local xpu = require "xpu"
local decode = require "xpu.decode"

local M = {}

M.formats = decode.formats
M.TILES = { 64, 128 }          -- tokens a workgroup takes; each tile is its own row
M.ROWS_PER_GROUP = 8           -- kernels/gemm.h: one 32-lane wave per weight row
M.MIN_TOKENS, M.MAX_TOKENS = 2, 4096
local U32_MAX, I32_MAX = 0xffffffff, 0x7fffffff

-- The query facts the rows and launchers read. tile_k (the dp4a and grouped rows) and
-- mma_tile_k (the tensor-core rows): the K from which the 128-token tile runs, the partition
-- scripts/tune-gemm.lua measured and Autotune keeps (M.partition); absent, the padding rule
-- alone chooses.
local FACTS = { "in_dim", "out_dim", "tokens", "experts", "tile_k", "mma_tile_k" }
local ID_FACTS = { "in_dim", "out_dim", "tokens", "experts", "used", "per_slot", "tile_k", "mma_tile_k" }
M.NEVER = 1 << 32 -- a partition past every K: the 128-token tile is never faster

local function ceil_div(a, b) return (a + b - 1) // b end

-- The tokens a tile of `tile` pads `tokens` to, beyond them.
local function dead(tokens, tile) return ceil_div(tokens, tile) * tile - tokens end

local function common_shape(fmt, q)
  if not q.in_dim or not q.out_dim or not q.tokens then return "query has no in_dim / out_dim / tokens" end
  local block = math.max(256, xpu.quant.info(fmt).block_elems)
  if q.in_dim < 256 or q.in_dim % block ~= 0 or q.in_dim > U32_MAX then
    return ("in_dim %d is not a positive multiple of %d (%s's block and the q8_K blocks)"):format(q.in_dim, block, fmt)
  end
  if q.out_dim < 1 or q.out_dim > U32_MAX then return ("out_dim %d is not 1 to 2^32 - 1"):format(q.out_dim) end
  if q.tokens < M.MIN_TOKENS or q.tokens > M.MAX_TOKENS then
    return ("tokens %d is not %d to %d (one token is the decode mat-vec's)"):format(q.tokens, M.MIN_TOKENS,
      M.MAX_TOKENS)
  end
end

-- The 128-token tile serves `n` tokens (a batch, or an expert's expected share) when it
-- pads no more than the 64-token tile: ragged batches take the finest tile (seed §25.3), and
-- when K (in_dim) has reached the measured partition in the query's fact `part`, if it has one
-- (seed §25.3: pick the tile by K, a measured partition kept in Autotune, not a literal).
local function tile_refusal(tile, n, what, q, part)
  if tile ~= 128 then return nil end
  if n < 128 then return ("%s %d under the 128-token tile"):format(what, n) end
  local d128, d64 = dead(n, 128), dead(n, 64)
  if d128 > d64 then
    return ("%s %d pad %d dead tokens in 128-token tiles, %d in 64-token ones"):format(what, n, d128, d64)
  end
  local k = q[part]
  if k and k >= M.NEVER then
    return ("%s %d: the 128-token tile was not faster at any K measured here"):format(part, k)
  elseif k and q.in_dim < k then
    return ("in_dim %d is below %s %d, the K from which the 128-token tile was measured faster"):format(q.in_dim,
      part, k)
  end
end

local function gemm_shape(fmt, tile, part)
  return function(q)
    if q.experts then return "expert bank: served by the gemm_id rows" end
    local why = common_shape(fmt, q)
    if why then return why end
    if q.tokens * q.out_dim > U32_MAX then return ("tokens x out_dim is more than 2^32 - 1 outputs") end
    return tile_refusal(tile, q.tokens, "tokens", q, part)
  end
end

-- The tokens an expert gets on average: the counts live on the device, so the tile is chosen
-- by the expected share, tokens * used / experts.
function M.expert_share(q)
  return q.tokens * q.used // q.experts
end

local function gemm_id_shape(fmt, tile, part)
  return function(q)
    if not q.experts then return "not an expert bank (query has no experts)" end
    local why = common_shape(fmt, q)
    if why then return why end
    if not q.used or q.used < 1 or q.used > q.experts then return "used experts exceed the bank" end
    if q.per_slot and q.per_slot ~= 0 and q.per_slot ~= 1 then return ("per_slot %d is not 0 or 1"):format(q.per_slot) end
    if q.tokens * q.used > I32_MAX then return "tokens x used is more than 2^31 - 1 pairs" end
    if q.tokens * q.used * q.out_dim > U32_MAX then return "pairs x out_dim is more than 2^32 - 1 outputs" end
    return tile_refusal(tile, M.expert_share(q), "an expert's expected tokens", q, part)
  end
end

-- The kernel of a row: <fmt>_q8k_gemm_t<tile>, <fmt>_q8k_gemm_id_t<tile> (kind "id": grouped),
-- or the tensor-core forms <fmt>_q8k_gemm_mma_t<tile> (kind "mma"),
-- <fmt>_q8k_gemm_id_mma_t<tile> (kind "id_mma") and the staged <fmt>_q8k_gemm_mmas_t64 (kind "mmas").
local STEMS = { mma = "gemm_mma", id = "gemm_id", id_mma = "gemm_id_mma", mmas = "gemm_mmas" }
function M.kernel_name(fmt, tile, kind)
  return ("%s_q8k_%s_t%d"):format(fmt, kind and STEMS[kind] or "gemm", tile)
end

-- The formats with a tensor-core form (kernels/gemm.h's XPU_GEMM_MMA_FORMATS), read from the
-- kernel table, and the rows a group of it covers (XPU_GEMM_MMA_ROWS).
M.MMA_FORMATS, M.MMAS_FORMATS = {}, {}
do
  local have = {}
  for _, k in ipairs(xpu.kernels()) do have[k.name] = true end
  for _, f in ipairs(M.formats) do
    if have[M.kernel_name(f, 64, "mma")] then M.MMA_FORMATS[#M.MMA_FORMATS + 1] = f end
    if have[M.kernel_name(f, 64, "mmas")] then M.MMAS_FORMATS[#M.MMAS_FORMATS + 1] = f end
  end
end
M.MMAS_ROWS = 64 -- kernels/gemm.h's XPU_GEMM_MMAS_ROWS: a staged group's rows
function M.mma_rows_per_group(tile) return 2048 // tile end

-- The rows: for each format and tile, gemm.<fmt>.t<tile> and gemm_id.<fmt>.t<tile>, the
-- 128-token tile first where it admits (priority 20 over 10); where a format has a
-- tensor-core form, gemm.<fmt>.mma.t<tile> and gemm_id.<fmt>.mma.t<tile> ahead of them (40,
-- 30) on a device with mma_int8. The staged tensor-core row gemm.<fmt>.mmas.t64 (25) sits under
-- the tensor-core rows until a side-by-side run on the device says which is faster: until then
-- it is picked only when named (bench-prefill and layer_gemm_spec run every admitted row).
function M.rows(t)
  for _, f in ipairs(M.MMAS_FORMATS) do
    t:register { name = ("gemm.%s.mmas.t64"):format(f), regime = "prefill", format = f, priority = 25,
                 facts = FACTS, needs = { "mma_int8" }, kernel = M.kernel_name(f, 64, "mmas"),
                 shape = gemm_shape(f, 64, "mma_tile_k") }
  end
  for _, f in ipairs(M.MMA_FORMATS) do
    for _, tile in ipairs(M.TILES) do
      local pri = tile == 128 and 40 or 30
      t:register { name = ("gemm.%s.mma.t%d"):format(f, tile), regime = "prefill", format = f, priority = pri,
                   facts = FACTS, needs = { "mma_int8" }, kernel = M.kernel_name(f, tile, "mma"),
                   shape = gemm_shape(f, tile, "mma_tile_k") }
      t:register { name = ("gemm_id.%s.mma.t%d"):format(f, tile), regime = "prefill", format = f, priority = pri,
                   facts = ID_FACTS, needs = { "mma_int8" }, kernel = M.kernel_name(f, tile, "id_mma"),
                   shape = gemm_id_shape(f, tile, "mma_tile_k") }
    end
  end
  for _, f in ipairs(M.formats) do
    for _, tile in ipairs(M.TILES) do
      local pri = tile == 128 and 20 or 10
      t:register { name = ("gemm.%s.t%d"):format(f, tile), regime = "prefill", format = f, priority = pri,
                   facts = FACTS, kernel = M.kernel_name(f, tile), shape = gemm_shape(f, tile, "tile_k") }
      t:register { name = ("gemm_id.%s.t%d"):format(f, tile), regime = "prefill", format = f, priority = pri,
                   facts = ID_FACTS, kernel = M.kernel_name(f, tile, "id"), shape = gemm_id_shape(f, tile, "tile_k") }
    end
  end
  return t
end

-- ---- queries and grids ---------------------------------------------------------------------

-- part: the measured tile partition of the format (M.partition), or nil for the padding rule
-- alone.
function M.query(fmt, tokens, rows, cols, part)
  part = part or {}
  return xpu.query { regime = "prefill", format = fmt, tokens = tokens, out_dim = rows, in_dim = cols,
                     tile_k = part.tile_k, mma_tile_k = part.mma_tile_k }
end

-- per_slot: 1 when every (token, slot) pair has its own activation row (a down projection),
-- 0 (default) when a token's one row serves all its slots (gate / up).
function M.id_query(fmt, tokens, rows, cols, experts, used, per_slot, part)
  return xpu.query { regime = "prefill", format = fmt, tokens = tokens, out_dim = rows, in_dim = cols,
                     experts = experts, used = used, per_slot = per_slot or 0, tile_k = part and part.id_tile_k,
                     mma_tile_k = part and part.id_mma_tile_k }
end

-- ---- the tile partition, measured -----------------------------------------------------------

-- The Autotune keys of a format's four partitions (the dp4a rows, the tensor-core rows, the
-- grouped rows and the grouped tensor-core rows), each the K from which the 128-token tile runs,
-- or M.NEVER.
function M.partition_keys(fmt)
  return { tile_k = "gemm.tile_k." .. fmt, mma_tile_k = "gemm.mma.tile_k." .. fmt, id_tile_k = "gemm_id.tile_k." .. fmt,
           id_mma_tile_k = "gemm_id.mma.tile_k." .. fmt }
end

-- The partition of fmt on dev as scripts/tune-gemm.lua measured it and Autotune keeps it:
-- { tile_k =, mma_tile_k =, id_tile_k =, id_mma_tile_k = }, each nil where not measured (the padding rule alone
-- chooses there). Read once per device and format in a process.
local partitions = {}
function M.partition(dev, fmt)
  local key = dev:fingerprint() .. "\0" .. fmt
  local p = partitions[key]
  if not p then
    local autotune = require "xpu.autotune"
    p = {}
    for fact, k in pairs(M.partition_keys(fmt)) do
      local v = autotune.recall(dev, k)
      if math.type(v) == "integer" and v >= 0 then p[fact] = math.min(v, M.NEVER) end
    end
    partitions[key] = p
  end
  return p
end

-- Forgets what M.partition read (after a tuning run wrote the store).
function M.forget_partitions() partitions = {} end

-- The partition of one sweep: ks (ascending K) and, per K, the 64- and 128-token tiles'
-- seconds. The split that costs least, each K weighed by its faster tile's time (so every K
-- counts alike), with the 64-token tile below it and the 128-token tile from it on: returns
-- the first K of the 128-token side, 0 (the 128-token tile everywhere) or M.NEVER.
function M.best_split(ks, t64, t128)
  local best, best_cost = M.NEVER, math.huge
  for s = 0, #ks do -- s: the K values the 64-token tile keeps
    local cost = 0
    for i = 1, #ks do
      local t = i <= s and t64[i] or t128[i]
      cost = cost + t / math.min(t64[i], t128[i])
    end
    if cost < best_cost - 1e-9 then
      best, best_cost = s == #ks and M.NEVER or (s == 0 and 0 or ks[s + 1]), cost
    end
  end
  return best
end

-- The workgroups the launcher makes for a query at `tile` (kind "mma": a tensor-core form, "mmas"
-- the staged one;
-- src/ops/gemm/launch.c); for a
-- bank, the most any split of the pairs needs (the groups past the listed tiles end at once).
function M.groups(q, tile, kind)
  local per = kind == "mmas" and M.MMAS_ROWS or kind == "mma" and M.mma_rows_per_group(tile) or M.ROWS_PER_GROUP
  local row_tiles = ceil_div(q.out_dim, per)
  if not q.experts then return row_tiles * ceil_div(q.tokens, tile) end
  local pairs = q.tokens * q.used
  return row_tiles * (pairs // tile + math.min(pairs, q.experts))
end

-- Why a grid of `groups` workgroups cannot fill a device of `units` compute units (fewer
-- groups than units leaves some idle: seed §25.3.1's sixteen groups), or nil.
function M.fill_refusal(groups, units)
  if units and units > 0 and groups < units then
    return ("%d workgroups on %d compute units: the grid cannot fill the device"):format(groups, units)
  end
end

-- Multiply-adds x 2 of a query: 2 * tokens (x used) * rows * cols.
function M.flops(q)
  return 2 * q.tokens * (q.used or 1) * q.out_dim * q.in_dim
end

-- ---- fixtures -------------------------------------------------------------------------------

-- Resident weights of `rows` rows (rows 6 and 7 of every eight with subnormal scales: decode.floats)
-- and q8_K activations of `n` rows, each token's values scaled differently.
function M.weights(fmt, rows, cols, seed)
  local bpr = cols // xpu.quant.info(fmt).block_elems
  return xpu.quant.resident(fmt, xpu.quant.quantize(fmt, decode.floats(rows * cols, seed, cols)), bpr)
end

function M.activations(n, cols, seed)
  local parts = {}
  for t = 0, n - 1 do parts[t + 1] = xpu.quant.q8k_pack(decode.floats(cols, seed + 31 * t + 17)) end
  return table.concat(parts)
end

-- One activation row of cols values out of a packed string of them.
function M.x_row(x, i, cols)
  local bytes = cols // 256 * 320
  return x:sub(i * bytes + 1, (i + 1) * bytes)
end

-- The host reference: y[t * rows + r] = the decode mat-vec's portable body for token t.
function M.reference(fmt, w, x, tokens, rows, cols)
  local parts = {}
  for t = 0, tokens - 1 do
    parts[t + 1] = xpu.quant.matvec_host(fmt, w, M.x_row(x, t, cols), rows, cols, "portable")
  end
  return table.concat(parts)
end

-- Expert ids for `tokens` x `used` slots over `experts`: ragged counts, expert `empty` gets
-- no token, no token repeats an expert. Returns the i32 ids packed, and as a Lua list.
function M.expert_ids(tokens, used, experts, seed, empty)
  local ids, list, s = {}, {}, seed
  for t = 0, tokens - 1 do
    local taken = {}
    for k = 0, used - 1 do
      s = (s * 1103515245 + 12345) % 2147483648
      -- skewed towards the low experts, so the counts are ragged
      local e = (s >> 8) % experts
      if (s >> 4) % 3 == 0 then e = e // 2 end
      while taken[e] or e == empty do e = (e + 1) % experts end
      taken[e] = true
      list[#list + 1] = e
      ids[#ids + 1] = string.pack("<i4", e)
    end
  end
  return table.concat(ids), list
end

-- The grouped reference: y[(t * used + s) * rows + r] = expert ids[t * used + s]'s row r of the
-- slab . x row (per_slot ? pair : token), by the mat-vec's portable body.
function M.id_reference(fmt, slab, x, ids, tokens, used, rows, cols, per_slot)
  local rb = xpu.quant.row_bytes(fmt, cols // xpu.quant.info(fmt).block_elems)
  local parts = {}
  for p = 0, tokens * used - 1 do
    local e = ids[p + 1]
    local w = slab:sub(e * rows * rb + 1, (e + 1) * rows * rb)
    parts[p + 1] = xpu.quant.matvec_host(fmt, w, M.x_row(x, per_slot == 1 and p or p // used, cols), rows, cols,
      "portable")
  end
  return table.concat(parts)
end

-- ---- bench cases ----------------------------------------------------------------------------

-- The formats of a comma-separated list (nil: every format), or nil and what is wrong.
function M.parse_formats(text)
  local known, list = {}, {}
  for _, f in ipairs(M.formats) do known[f] = true end
  for f in (text or table.concat(M.formats, ",")):gmatch("[^,]+") do
    if not known[f] then return nil, ("'%s' is not a served format (%s)"):format(f, table.concat(M.formats, ",")) end
    list[#list + 1] = f
  end
  return list
end

-- A bench case's call on dev and stream s; for a bank, its expert map is built first.
function M.case_call(dev, case, s)
  if case.map then
    local routes = require "routes.layer_select"
    local mc = xpu.call { query = case.map.query, device = dev, stream = s, operands = case.map.operands }
    routes:bind(mc):dispatch(mc)
  end
  return xpu.call { query = case.query, device = dev, stream = s, operands = case.operands }
end

-- The bench's case on dev: { query =, operands = (allocated, seeded), bytes = read + written,
-- map = (for a bank: the expert_map call to run first, { query =, operands = }), note = }.
-- opts: format, tokens, rows, cols, experts, used (experts: a grouped case). The weights are
-- 256 distinct rows repeated (quantizing every row in Lua would take minutes).
local function bench_weights(fmt, rows, cols)
  local distinct = math.min(rows, 256)
  local rb = xpu.quant.row_bytes(fmt, cols // xpu.quant.info(fmt).block_elems)
  return M.weights(fmt, distinct, cols, 5):rep(ceil_div(rows, distinct)):sub(1, rows * rb)
end

function M.bench_case(dev, opts)
  local fmt, T, rows, cols = opts.format, opts.tokens, opts.rows, opts.cols
  local xrow = cols // 256 * 320
  if not opts.experts then
    local w = bench_weights(fmt, rows, cols)
    local x = M.activations(math.min(T, 64), cols, 9)
    x = x:rep(ceil_div(T, 64)):sub(1, T * xrow)
    return { query = M.query(fmt, T, rows, cols),
             operands = { y = dev:buffer(T * rows * 4), w = dev:buffer(w), x = dev:buffer(x) },
             bytes = #w + #x + T * rows * 4, note = ("%s %dx%d x %d tokens"):format(fmt, rows, cols, T) }
  end
  local E, K = opts.experts, opts.used
  local slab = bench_weights(fmt, rows, cols):rep(E)
  local x = M.activations(math.min(T, 64), cols, 9)
  x = x:rep(ceil_div(T, 64)):sub(1, T * xrow)
  local ids = M.expert_ids(T, K, E, 11, -1)
  local pairs = T * K
  local ops = { y = dev:buffer(pairs * rows * 4), slab = dev:buffer(slab), x = dev:buffer(x),
                counts = dev:buffer(E * 4), offsets = dev:buffer(E * 4), list_tokens = dev:buffer(pairs * 4),
                list_slots = dev:buffer(pairs * 4) }
  local map = { query = xpu.query { regime = "expert_map", format = "i32", tokens = T, k = K, n_expert = E },
                operands = { counts = ops.counts, offsets = ops.offsets, tokens = ops.list_tokens,
                             slots = ops.list_slots, ids = dev:buffer(ids) } }
  return { query = M.id_query(fmt, T, rows, cols, E, K, 0), operands = ops, map = map,
           bytes = #slab + #x + pairs * rows * 4 + pairs * 8 + E * 8,
           note = ("%s %d experts (%d used) of %dx%d x %d tokens"):format(fmt, E, K, rows, cols, T) }
end

return M
