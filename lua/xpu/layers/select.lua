-- xpu.layers.select — the selection kernels as route rows: get_rows (embedding lookup from a
-- table in f32, f16 or a GGUF block format), argmax, top_k (MoE expert choice and weights),
-- compact (keep the positive elements; one launch or three) and expert_map (the per-expert
-- token lists a grouped GEMM reads). The codes and fixed blocks are kernels/select.h's;
-- docs/ARITHMETIC.md ("Selection kernels") is the arithmetic.
local xpu = require "xpu"
local fixture = xpu.fixture

local M = {}

M.KERNELS = { "get_rows", "argmax", "top_k", "compact", "expert_map" }
for _, k in ipairs(M.KERNELS) do xpu.regime(k) end

-- get_rows' table formats and their blocks (elements, bytes): GGUF's layouts.
M.TABLE_FORMATS = { "f32", "f16", "q8_0", "q4_0", "q4_K", "q6_K" }
M.BLOCK = { f32 = { 1, 4 }, f16 = { 1, 2 }, q8_0 = { 32, 34 }, q4_0 = { 32, 18 }, q4_K = { 256, 144 },
            q6_K = { 256, 210 } }
M.TOPK_MAX_EXPERTS, M.TOPK_MAX_K = 256, 8
M.COMPACT_ONE_MAX = 65536          -- the one-launch compact serves n up to this
M.COMPACT_PER_GROUP = 1024 * 4     -- items a group of the multi-group form takes
M.EXPERT_MAP_MAX_EXPERTS = 1024
M.NORM = { k = 1, all = 0 }        -- top_k: softmax over the k, or over all experts then taken
local I32_MAX, U32_MAX = 0x7fffffff, 0xffffffff

local function count(q, key, lo, hi)
  local v = q[key]
  if v == nil then return ("query has no %s"):format(key) end
  if v < lo or v > hi then return ("%s %d is not %d to %d"):format(key, v, lo, hi) end
end

local function first(...)
  for i = 1, select("#", ...) do
    local why = select(i, ...)
    if why then return why end
  end
end

-- The bytes of one table row of cols elements.
function M.row_bytes(format, cols)
  local b = M.BLOCK[format]
  return cols // b[1] * b[2]
end

-- The block formats, whose tables may also be resident rows (a tied embedding read from the
-- output matrix the mat-vec reads): each has a get_rows.<format>.resident row.
M.RESIDENT_FORMATS = { "q8_0", "q4_0", "q4_K", "q6_K" }

-- The bytes of one resident table row (xpu.quant.resident's layout) of cols elements.
function M.resident_row_bytes(format, cols)
  return xpu.quant.row_bytes(format, cols // M.BLOCK[format][1])
end

local function get_rows_shape(format, resident)
  local elems = M.BLOCK[format][1]
  return function(q)
    local why = first(count(q, "n", 0, U32_MAX), count(q, "n_rows", 1, U32_MAX), count(q, "cols", 1, U32_MAX))
    if why then return why end
    local r = q.resident or 0
    if r ~= 0 and r ~= 1 then return ("resident %d is not 0 or 1"):format(r) end
    if resident and r == 0 then return "the table is GGUF rows: served by get_rows." .. format end
    if not resident and r == 1 then
      if elems == 1 then return ("resident rows: %s tables have no resident layout"):format(format) end
      return ("the table is resident rows: served by get_rows.%s.resident"):format(format)
    end
    if q.cols % elems ~= 0 then return ("cols %d is not a multiple of %s's block of %d"):format(q.cols, format, elems) end
    if q.n * q.cols > U32_MAX then return ("n %d x cols %d is more than 2^32 - 1 elements"):format(q.n, q.cols) end
  end
end

local function argmax_shape(q)
  local why = first(count(q, "rows", 0, U32_MAX), count(q, "cols", 1, U32_MAX))
  if why then return why end
  if q.rows * q.cols > U32_MAX then return ("rows %d x cols %d is more than 2^32 - 1 elements"):format(q.rows, q.cols) end
end

local function top_k_shape(q)
  local why = first(count(q, "rows", 0, U32_MAX // M.TOPK_MAX_EXPERTS), count(q, "n_expert", 1, M.TOPK_MAX_EXPERTS),
    count(q, "k", 1, M.TOPK_MAX_K), count(q, "norm", 0, 1))
  if why then return why end
  if q.k > q.n_expert then return ("k %d is more than n_expert %d"):format(q.k, q.n_expert) end
end

local function compact_one_shape(q)
  return count(q, "n", 0, M.COMPACT_ONE_MAX)
end

local function compact_groups_shape(q)
  return count(q, "n", 0, I32_MAX)
end

local function expert_map_shape(q)
  local why = first(count(q, "tokens", 0, U32_MAX), count(q, "k", 1, U32_MAX),
    count(q, "n_expert", 1, M.EXPERT_MAP_MAX_EXPERTS))
  if why then return why end
  if q.tokens * q.k > I32_MAX then return ("tokens %d x k %d is more than 2^31 - 1 pairs"):format(q.tokens, q.k) end
end

-- The rows: get_rows.<format> for each table format, argmax.f32, top_k.f32, compact.f32 (one
-- launch, first where it fits), compact_groups.f32 (three launches, any n), expert_map.i32.
function M.rows(t)
  for _, f in ipairs(M.TABLE_FORMATS) do
    t:register { name = "get_rows." .. f, regime = "get_rows", format = f, priority = 10,
                 facts = { "n", "n_rows", "cols", "resident" }, kernel = "get_rows", shape = get_rows_shape(f) }
  end
  for _, f in ipairs(M.RESIDENT_FORMATS) do
    t:register { name = ("get_rows.%s.resident"):format(f), regime = "get_rows", format = f, priority = 10,
                 facts = { "n", "n_rows", "cols", "resident" }, kernel = "get_rows", shape = get_rows_shape(f, true) }
  end
  t:register { name = "argmax.f32", regime = "argmax", format = "f32", priority = 10,
               facts = { "rows", "cols" }, kernel = "argmax", shape = argmax_shape }
  t:register { name = "top_k.f32", regime = "top_k", format = "f32", priority = 10,
               facts = { "rows", "n_expert", "k", "norm" }, kernel = "top_k", shape = top_k_shape }
  t:register { name = "compact.f32", regime = "compact", format = "f32", priority = 20,
               facts = { "n" }, kernel = "compact", shape = compact_one_shape }
  t:register { name = "compact_groups.f32", regime = "compact", format = "f32", priority = 10,
               facts = { "n" }, kernel = "compact_count", shape = compact_groups_shape }
  t:register { name = "expert_map.i32", regime = "expert_map", format = "i32", priority = 10,
               facts = { "tokens", "k", "n_expert" }, kernel = "expert_map", shape = expert_map_shape }
  return t
end

-- ---- queries ------------------------------------------------------------------------------

-- resident: true when the table is resident rows (get_rows.<format>.resident).
function M.get_rows_query(format, n, n_rows, cols, resident)
  return xpu.query { regime = "get_rows", format = format, n = n, n_rows = n_rows, cols = cols,
                     resident = resident and 1 or nil }
end

function M.argmax_query(rows, cols)
  return xpu.query { regime = "argmax", format = "f32", rows = rows, cols = cols }
end

-- norm: "k" (softmax over the k selected, qwen3moe) or "all" (over every expert, then taken).
function M.top_k_query(rows, n_expert, k, norm)
  local code = M.NORM[norm or "k"]
  if not code then
    error(("select.top_k_query: norm '%s' is not \"k\" or \"all\""):format(tostring(norm)), 2)
  end
  return xpu.query { regime = "top_k", format = "f32", rows = rows, n_expert = n_expert, k = k, norm = code }
end

function M.compact_query(n)
  return xpu.query { regime = "compact", format = "f32", n = n }
end

function M.expert_map_query(tokens, k, n_expert)
  return xpu.query { regime = "expert_map", format = "i32", tokens = tokens, k = k, n_expert = n_expert }
end

-- The multi-group compact's scratch: one i32 per group.
function M.compact_scratch_bytes(n)
  return math.max(4, (n + M.COMPACT_PER_GROUP - 1) // M.COMPACT_PER_GROUP * 4)
end

-- ---- bench cases ----------------------------------------------------------------------------

local SIZES = { decode = true, prefill = true }

local function ids_bytes(n, range, seed)
  local s, parts = seed, {}
  for i = 1, n do
    s = (s * 1103515245 + 12345) % 2147483648
    parts[i] = string.pack("<i4", s % range)
  end
  return table.concat(parts)
end

local function table_bytes(format, n_rows, cols, seed)
  local x = fixture.normal(n_rows * cols, seed)
  if format == "f32" then return x end
  if format == "f16" then return (fixture.eighths("f16", n_rows * cols, seed)) end
  return xpu.quant.quantize(format, x)
end

local function case_get_rows(dev, size, format)
  local n, cols, n_rows = size == "decode" and 1 or 512, 4096, 4096
  local rb = M.row_bytes(format, cols)
  return { query = M.get_rows_query(format, n, n_rows, cols),
           operands = { out = dev:buffer(n * cols * 4), table = dev:buffer(table_bytes(format, n_rows, cols, 7)),
                        ids = dev:buffer(ids_bytes(n, n_rows, 11)) },
           bytes = n * (rb + cols * 4 + 4), note = ("%dx%d %s from %d rows"):format(n, cols, format, n_rows) }
end

local function case_argmax(dev, size)
  local rows, cols = size == "decode" and 1 or 512, 128256
  return { query = M.argmax_query(rows, cols),
           operands = { out = dev:buffer(rows * 4), x = dev:buffer(fixture.normal(rows * cols, 13)) },
           bytes = rows * (cols * 4 + 4), note = ("%dx%d f32"):format(rows, cols) }
end

local function case_top_k(dev, size)
  local rows, n_expert, k = size == "decode" and 1 or 512, 128, 8
  return { query = M.top_k_query(rows, n_expert, k, "k"),
           operands = { ids = dev:buffer(rows * k * 4), weights = dev:buffer(rows * k * 4),
                        x = dev:buffer(fixture.normal(rows * n_expert, 17)) },
           bytes = rows * (n_expert * 4 + k * 8), note = ("%dx%d f32, k %d"):format(rows, n_expert, k) }
end

local function case_compact(dev, size)
  local n = size == "decode" and 4096 or 512 * 4096
  local ops = { values = dev:buffer(n * 4), indices = dev:buffer(n * 4), count = dev:buffer(4),
                x = dev:buffer(fixture.normal(n, 19)) }
  if n > M.COMPACT_ONE_MAX then ops.scratch = dev:buffer(M.compact_scratch_bytes(n)) end
  -- about half the elements are kept
  return { query = M.compact_query(n), operands = ops, bytes = n * 4 + n * 4 + 4, note = ("%d f32"):format(n) }
end

local function case_expert_map(dev, size)
  local tokens, k, n_expert = size == "decode" and 1 or 512, 8, 128
  local pairs = tokens * k
  return { query = M.expert_map_query(tokens, k, n_expert),
           operands = { counts = dev:buffer(n_expert * 4), offsets = dev:buffer(n_expert * 4),
                        tokens = dev:buffer(pairs * 4), slots = dev:buffer(pairs * 4),
                        ids = dev:buffer(ids_bytes(pairs, n_expert, 23)) },
           bytes = pairs * 12 + n_expert * 8, note = ("%dx%d ids over %d experts"):format(tokens, k, n_expert) }
end

local CASES = { argmax = case_argmax, top_k = case_top_k, compact = case_compact, expert_map = case_expert_map }

-- The bench's case for kernel ("get_rows" (an f16 table), "get_rows.<format>", "argmax",
-- "top_k", "compact", "expert_map") at size "decode" (one token) or "prefill" (512 tokens):
-- { query =, operands = (allocated on dev, seeded), bytes = read + written, note = }.
function M.bench_case(kernel, dev, size)
  if not SIZES[size] then
    error(("select.bench_case: size '%s' is not \"decode\" or \"prefill\""):format(tostring(size)), 2)
  end
  local stem, format = tostring(kernel):match("^([%w_]+)%.?([%w_]*)$")
  if stem == "get_rows" then
    format = format ~= "" and format or "f16"
    if not M.BLOCK[format] then
      error(("select.bench_case: get_rows format '%s' is not one of %s"):format(format,
        table.concat(M.TABLE_FORMATS, ", ")), 2)
    end
    return case_get_rows(dev, size, format)
  end
  local f = CASES[stem or ""]
  if not f or format ~= "" then
    error(("select.bench_case: kernel '%s' is not get_rows[.format], argmax, top_k, compact or expert_map"):format(
      tostring(kernel)), 2)
  end
  return f(dev, size)
end

return M
