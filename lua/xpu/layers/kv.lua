-- xpu.layers.kv — kv_write (src/ops/layer/kv_write.c) as a route row: a step's f32 K and V rows
-- [tokens, n_kv_head, head_dim] (K already roped) rounded to f16 and stored at positions
-- pos[0] .. pos[0] + tokens - 1 of the two caches attention reads (xpu.layers.attention:
-- f16 [n_kv_head, slots, head_dim], position p in slot p % slots). The position is an i32
-- buffer operand, read by the kernel, so a recorded step replays at a new position. One row
-- per cache dtype, kv_write.<dtype> (f16); the query; the operands' sizes. The rounding is
-- docs/ARITHMETIC.md's "KV cache write".
local xpu = require "xpu"
local attention = require "xpu.layers.attention"

local M = {}

M.KERNELS = { "kv_write" }
M.DTYPES = { "f16" }
M.BLOCK = 256
M.MAX_HD, M.MAX_SLOTS = attention.MAX_HD, attention.MAX_SLOTS
for _, k in ipairs(M.KERNELS) do xpu.regime(k) end

local FACTS = { "tokens", "n_kv_head", "head_dim", "slots" }
local OPERANDS = { "k", "kc", "pos", "v", "vc" }

local function count(q, key, lo, hi)
  local v = q[key]
  if v == nil then return ("query has no %s"):format(key) end
  if v < lo or v > hi then return ("%s %d is not %d .. %d"):format(key, v, lo, hi) end
end

-- The shape half: the cache's shape, and tokens that fit it at once (two tokens of one launch
-- in one slot would race for it).
local function shape(q)
  local why = count(q, "n_kv_head", 1, 65535) or count(q, "slots", 1, M.MAX_SLOTS)
    or count(q, "head_dim", 2, M.MAX_HD) or count(q, "tokens", 0, M.MAX_SLOTS)
  if why then return why end
  if q.head_dim % 2 ~= 0 then return ("head_dim %d is odd"):format(q.head_dim) end
  if q.n_kv_head * q.slots * q.head_dim >= 1 << 31 then
    return ("a cache of %d x %d x %d halves is 2^31 or more"):format(q.n_kv_head, q.slots, q.head_dim)
  end
  if q.tokens > q.slots then return ("tokens %d do not fit the cache's %d slots at once"):format(q.tokens, q.slots) end
end

-- The bytes each operand must hold for the query q: the caches, the rows, one position.
function M.need(q)
  local cache, rows = q.n_kv_head * q.slots * q.head_dim * 2, q.tokens * q.n_kv_head * q.head_dim * 4
  return { kc = cache, vc = cache, k = rows, v = rows, pos = 4 }
end

-- The ready half: every operand is a buffer of the call holding what the query needs.
local function ready(c)
  local ops, want = c.operands or {}, M.need(c.query)
  for _, name in ipairs(OPERANDS) do
    local b = ops[name]
    if type(b) ~= "userdata" then return ("operand '%s' is missing (a buffer)"):format(name) end
    if b.bytes < want[name] then
      return ("operand '%s' holds %d bytes; the query needs %d"):format(name, b.bytes, want[name])
    end
  end
end

function M.rows(t)
  for _, dt in ipairs(M.DTYPES) do
    t:register { name = "kv_write." .. dt, regime = "kv_write", format = dt, priority = 10, facts = FACTS,
                 kernel = "kv_write", shape = shape, ready = ready }
  end
  return t
end

-- The query of kv_write for the shape s: tokens (decode 1, prefill the batch), n_kv_head,
-- head_dim, slots; dtype the cache's (default f16).
function M.query(s, dtype)
  if type(s) ~= "table" then error(("kv.query: the shape is a table, not %s"):format(type(s)), 2) end
  local q = { regime = "kv_write", format = dtype or "f16" }
  for _, f in ipairs(FACTS) do q[f] = s[f] end
  return xpu.query(q)
end

-- The bench case of kv_write on dev for shape s (M.query's fields, and pos: the first position,
-- default slots - tokens): { query, operands (seeded rows and caches, on dev), bytes (rows read,
-- halves written), note }.
function M.bench_case(dev, s)
  local q = M.query(s)
  local want = M.need(q)
  local pos = s.pos or q.slots - q.tokens
  local ops = { kc = dev:buffer(attention.f16_bytes(want.kc // 2, 3)), vc = dev:buffer(attention.f16_bytes(want.vc // 2, 4)),
                k = dev:buffer(attention.floats(want.k // 4, 1)),
                v = dev:buffer(attention.floats(want.v // 4, 2)), pos = dev:buffer(string.pack("<i4", pos)) }
  return { query = q, operands = ops, bytes = want.k + want.v + want.k // 2 + want.v // 2,
           note = ("%d tokens x %d KV heads x %d at %d of %d"):format(q.tokens, q.n_kv_head, q.head_dim, pos, q.slots) }
end

return M
