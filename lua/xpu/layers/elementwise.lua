-- xpu.layers.elementwise — the elementwise layer kernels (add, mul, swiglu, geglu, rope and the
-- fused swiglu_q8k: src/ops/layer/elementwise.c) as route rows, one per kernel and dtype named
-- <kernel>.<dtype>, regime the kernel's name; the queries that pick them; bench cases.
local xpu = require "xpu"

local M = {}

M.KERNELS = { "add", "mul", "swiglu", "geglu", "rope", "swiglu_q8k" }
M.MODES = { normal = 0, neox = 1 }
for _, k in ipairs(M.KERNELS) do xpu.regime(k) end

local LIMIT = 1 << 31 -- elements a launch takes (every index stays below 2^31)

local function count_gate(what, n)
  if n >= LIMIT then return ("%s is %d elements, 2^31 or more: split the call"):format(what, n) end
end

local function rows_cols(q)
  if not q.rows or not q.cols then return "query has no rows / cols" end
  if q.rows < 0 or q.cols < 0 then return ("rows %d x cols %d: counts are not negative"):format(q.rows, q.cols) end
  return count_gate("rows x cols", q.rows * q.cols)
end

-- add, mul: b is rows x cols (broadcast 0, the default) or one row for every row (broadcast 1).
local function shape_binary(q)
  local bcast = q.broadcast or 0
  if bcast ~= 0 and bcast ~= 1 then
    return ("broadcast %d is not 0 (b is rows x cols) or 1 (b is one row)"):format(bcast)
  end
  return rows_cols(q)
end

local function shape_rope(q)
  if not q.tokens or not q.heads or not q.head_dim then return "query has no tokens / heads / head_dim" end
  if q.tokens < 0 or q.heads < 1 then return ("tokens %d, heads %d: heads must be 1 or more"):format(q.tokens, q.heads) end
  if q.head_dim < 2 or q.head_dim % 2 ~= 0 then
    return ("head_dim %d is not even and 2 or more: rope turns pairs"):format(q.head_dim)
  end
  local nd = q.n_dims or q.head_dim
  if nd < 2 or nd % 2 ~= 0 or nd > q.head_dim then
    return ("n_dims %d is not even from 2 to head_dim %d"):format(nd, q.head_dim)
  end
  local mode = q.mode or 0
  if mode ~= 0 and mode ~= 1 then return ("mode %d is not 0 (normal) or 1 (neox)"):format(mode) end
  return count_gate("tokens x heads x head_dim", q.tokens * q.heads * q.head_dim)
end

local function shape_q8k(q)
  local why = rows_cols(q)
  if why then return why end
  if q.cols % 256 ~= 0 then return ("cols %d is not a multiple of 256 (q8_K blocks)"):format(q.cols) end
end

local ROWS = {
  add = { facts = { "rows", "cols", "broadcast" }, shape = shape_binary, dtypes = { "f32", "f16" } },
  mul = { facts = { "rows", "cols", "broadcast" }, shape = shape_binary, dtypes = { "f32", "f16" } },
  swiglu = { facts = { "rows", "cols" }, shape = rows_cols, dtypes = { "f32", "f16" } },
  geglu = { facts = { "rows", "cols" }, shape = rows_cols, dtypes = { "f32", "f16" } },
  rope = { facts = { "tokens", "heads", "head_dim", "n_dims", "mode" }, shape = shape_rope, dtypes = { "f32", "f16" } },
  swiglu_q8k = { facts = { "rows", "cols" }, shape = shape_q8k, dtypes = { "f32" } },
}

-- Every row: <kernel>.<dtype>, regime and kernel the kernel's name.
function M.rows(t)
  for _, k in ipairs(M.KERNELS) do
    local r = ROWS[k]
    for _, dt in ipairs(r.dtypes) do
      t:register { name = k .. "." .. dt, regime = k, format = dt, priority = 10, facts = r.facts, kernel = k,
                   shape = r.shape }
    end
  end
  return t
end

local function kernel_of(kernel, allowed, fn)
  for _, k in ipairs(allowed) do if k == kernel then return end end
  error(("elementwise.%s: kernel '%s' is not one of %s"):format(fn, tostring(kernel), table.concat(allowed, ", ")), 3)
end

-- add / mul over rows x cols of dtype; broadcast true (or 1): b is one row.
function M.binary(kernel, dtype, rows, cols, broadcast)
  kernel_of(kernel, { "add", "mul" }, "binary")
  local b = (broadcast == true or broadcast == 1) and 1 or (broadcast and broadcast ~= false and broadcast or 0)
  return xpu.query { regime = kernel, format = dtype, rows = rows, cols = cols, broadcast = b }
end

-- swiglu / geglu / swiglu_q8k over rows x cols of dtype.
function M.glu(kernel, dtype, rows, cols)
  kernel_of(kernel, { "swiglu", "geglu", "swiglu_q8k" }, "glu")
  return xpu.query { regime = kernel, format = dtype, rows = rows, cols = cols }
end

-- rope over tokens x heads x head_dim of dtype; opts.n_dims (default head_dim), opts.mode
-- ("normal", the default, "neox", or a code).
function M.rope(dtype, tokens, heads, head_dim, opts)
  opts = opts or {}
  local mode = M.MODES[opts.mode or "normal"] or opts.mode
  if math.type(mode) ~= "integer" then
    error(("elementwise.rope: mode '%s' is not normal, neox or an integer code"):format(tostring(opts.mode)), 2)
  end
  return xpu.query { regime = "rope", format = dtype, tokens = tokens, heads = heads, head_dim = head_dim,
                     n_dims = opts.n_dims or head_dim, mode = mode }
end

-- ---- bench cases ----------------------------------------------------------------------------

local SIZES = { decode = 1, prefill = 512 }

-- n seeded values of dtype: f32 Gaussians, or f16 eighths (exact), made in C.
local function values(dtype, n, seed)
  if dtype == "f16" then return (xpu.fixture.eighths("f16", n, seed)) end
  return xpu.fixture.normal(n, seed)
end

local function positions(tokens, seed)
  local p = {}
  for t = 1, tokens do p[t] = string.pack("<i4", (seed * 131 + t * 7) % 32768) end
  return table.concat(p)
end

-- The case for kernel at size "decode" (one token) or "prefill" (512 tokens), dtype f32 by
-- default: rows of 4096 for add and mul, 14336 for swiglu, geglu and swiglu_q8k; rope 32 heads
-- of 128. Returns { query, operands (on dev, seeded), bytes (read + written), note }.
function M.bench_case(kernel, dev, size, dtype)
  dtype = dtype or "f32"
  local m = SIZES[size]
  if not m then error(("elementwise.bench_case: size '%s' is not decode or prefill"):format(tostring(size)), 2) end
  local es = dtype == "f16" and 2 or 4
  local note = ("%s %s"):format(kernel, size)
  if kernel == "rope" then
    local n = m * 32 * 128
    return { query = M.rope(dtype, m, 32, 128, { mode = "neox" }), bytes = 2 * n * es + 4 * m,
             operands = { out = dev:buffer(n * es), x = dev:buffer(values(dtype, n, 5)),
                          pos = dev:buffer(positions(m, 3)) },
             note = ("%d tokens x 32 heads x 128 %s (neox)"):format(m, dtype) }
  end
  local cols = (kernel == "add" or kernel == "mul") and 4096 or 14336
  local n = m * cols
  if kernel == "add" or kernel == "mul" then
    return { query = M.binary(kernel, dtype, m, cols), bytes = 3 * n * es,
             operands = { out = dev:buffer(n * es), a = dev:buffer(values(dtype, n, 1)),
                          b = dev:buffer(values(dtype, n, 2)) },
             note = ("%dx%d %s"):format(m, cols, dtype) }
  end
  if kernel == "swiglu" or kernel == "geglu" or kernel == "swiglu_q8k" then
    local q8k = kernel == "swiglu_q8k"
    local out_bytes = q8k and n // 256 * 320 or n * es
    return { query = M.glu(kernel, dtype, m, cols), bytes = 2 * n * es + out_bytes,
             operands = { [q8k and "xq" or "out"] = dev:buffer(out_bytes), g = dev:buffer(values(dtype, n, 3)),
                          u = dev:buffer(values(dtype, n, 4)) },
             note = ("%dx%d %s%s"):format(m, cols, dtype, q8k and " -> q8_K" or "") }
  end
  error(("elementwise.bench_case: kernel '%s' is not one of %s"):format(tostring(kernel), table.concat(M.KERNELS, ", ")), 2)
end

return M
