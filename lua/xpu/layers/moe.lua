-- xpu.layers.moe — the two kernels a mixture-of-experts step adds to the layer set, as route
-- rows: matvec_f32 (an f32 weight against f32 activations: the router's logits, ffn_gate_inp
-- kept f32 as the GGUF keeps it) served under the decode and prefill regimes as format f32, so
-- the model asks the table for that weight as it asks for every other; and moe_combine (the
-- weighted sum of each token's expert rows added to the residual). Their queries and bench
-- cases. Constants: kernels/moe.h; the arithmetic: docs/ARITHMETIC.md ("Mixture-of-experts
-- kernels").
local xpu = require "xpu"

local M = {}

M.KERNELS = { "matvec_f32", "moe_combine" }
M.MAX_USED = 8                 -- moe_combine: experts a token (top_k's k)
M.MIN_PREFILL = 2              -- one token is the decode row's
local LIMIT = 1 << 31          -- elements one launch indexes
xpu.regime "moe_combine"

local MV_FACTS = { "in_dim", "out_dim", "tokens", "experts" }
local COMBINE_FACTS = { "tokens", "used", "n" }

local function product_gate(what, a, b)
  if a * b >= LIMIT then return ("%s is %d elements, 2^31 or more: split the call"):format(what, a * b) end
end

local function first(...)
  for i = 1, select("#", ...) do
    local why = select(i, ...)
    if why then return why end
  end
end

-- The shape both matvec_f32 rows share; `tokens` is the count the regime serves.
local function mv_shape(q, tokens)
  if q.experts then return "expert bank: served by the id rows" end
  if not q.in_dim or not q.out_dim then return "query has no in_dim / out_dim" end
  if q.in_dim < 1 or q.out_dim < 1 then
    return ("in_dim %d, out_dim %d: both must be 1 or more"):format(q.in_dim, q.out_dim)
  end
  return first(product_gate("out_dim x in_dim", q.out_dim, q.in_dim), product_gate("tokens x in_dim", tokens, q.in_dim),
    product_gate("tokens x out_dim", tokens, q.out_dim))
end

local function mv_decode_shape(q)
  if q.tokens and q.tokens ~= 1 then return ("tokens %d: decode is one token"):format(q.tokens) end
  return mv_shape(q, 1)
end

local function mv_prefill_shape(q)
  if not q.tokens then return "query has no tokens" end
  if q.tokens < M.MIN_PREFILL then return ("tokens %d is under %d (one token is the decode row's)"):format(q.tokens,
    M.MIN_PREFILL) end
  return mv_shape(q, q.tokens)
end

local function combine_shape(q)
  if not q.tokens or not q.used or not q.n then return "query has no tokens / used / n" end
  if q.tokens < 0 then return ("tokens %d is negative"):format(q.tokens) end
  if q.used < 1 or q.used > M.MAX_USED then return ("used %d is not 1 to %d"):format(q.used, M.MAX_USED) end
  if q.n < 1 then return ("n %d is not 1 or more"):format(q.n) end
  return first(product_gate("tokens x n", q.tokens, q.n), product_gate("tokens x used x n", q.tokens * q.used, q.n))
end

local MV_DECODE = { name = "matvec_f32.decode", regime = "decode", format = "f32", priority = 10, facts = MV_FACTS,
                    kernel = "matvec_f32", shape = mv_decode_shape }
local MV_PREFILL = { name = "matvec_f32.prefill", regime = "prefill", format = "f32", priority = 10, facts = MV_FACTS,
                     kernel = "matvec_f32", shape = mv_prefill_shape }
local COMBINE = { name = "moe_combine.f32", regime = "moe_combine", format = "f32", priority = 10,
                  facts = COMBINE_FACTS, kernel = "moe_combine", shape = combine_shape }

-- The f32 mat-vec of a decode table (routes.moe): one token.
function M.decode_rows(t)
  t:register(MV_DECODE)
  return t
end

-- The f32 mat-vec of a prefill table (routes.prefill): a batch of tokens.
function M.prefill_rows(t)
  t:register(MV_PREFILL)
  return t
end

-- Every row: matvec_f32.decode, matvec_f32.prefill, moe_combine.f32 (routes.layer_moe).
function M.rows(t)
  M.decode_rows(t)
  M.prefill_rows(t)
  t:register(COMBINE)
  return t
end

-- The query of tokens f32 activation rows against an f32 weight of rows x cols: a decode query
-- for one token (as the model asks for every weight), a prefill query for more.
function M.matvec_query(tokens, rows, cols)
  if tokens ~= 1 then
    return xpu.query { regime = "prefill", format = "f32", out_dim = rows, in_dim = cols, tokens = tokens }
  end
  return xpu.query { regime = "decode", format = "f32", out_dim = rows, in_dim = cols }
end

-- The query of moe_combine over tokens x n, used experts a token.
function M.combine_query(tokens, used, n)
  return xpu.query { regime = "moe_combine", format = "f32", tokens = tokens, used = used, n = n }
end

-- ---- bench cases ----------------------------------------------------------------------------

-- tokens per size; the decode shapes of a 30B-A3B layer: router 128 experts x 2048, 8 used of 2048.
local SIZES = { decode = 1, prefill = 512 }
local EXPERTS, USED, HIDDEN = 128, 8, 2048

-- The case for kernel at size "decode" (one token) or "prefill" (512 tokens). Returns { query,
-- operands (on dev, seeded), bytes (read + written once), note }.
function M.bench_case(kernel, dev, size)
  local m = SIZES[size]
  if not m then error(("moe.bench_case: size '%s' is not decode or prefill"):format(tostring(size)), 2) end
  local fixture = xpu.fixture
  if kernel == "matvec_f32" then
    local w, x = EXPERTS * HIDDEN, m * HIDDEN
    return { query = M.matvec_query(m, EXPERTS, HIDDEN), bytes = 4 * (w + x + m * EXPERTS),
             operands = { y = dev:buffer(4 * m * EXPERTS), w = dev:buffer(fixture.normal(w, 1)),
                          x = dev:buffer(fixture.normal(x, 2)) },
             note = ("%d tokens x router %d x %d f32"):format(m, EXPERTS, HIDDEN) }
  end
  if kernel == "moe_combine" then
    local n = m * HIDDEN
    return { query = M.combine_query(m, USED, HIDDEN), bytes = 4 * (2 * n + m * USED + m * USED * HIDDEN),
             operands = { out = dev:buffer(4 * n), x = dev:buffer(fixture.normal(n, 3)),
                          w = dev:buffer(fixture.normal(m * USED, 4)), y = dev:buffer(fixture.normal(m * USED * HIDDEN, 5)) },
             note = ("%d tokens x %d used x %d f32"):format(m, USED, HIDDEN) }
  end
  error(("moe.bench_case: kernel '%s' is not one of %s"):format(tostring(kernel), table.concat(M.KERNELS, ", ")), 2)
end

return M
