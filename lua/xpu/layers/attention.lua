-- xpu.layers.attention — attention over the KV cache as route rows: attention_decode (one
-- query token a sequence, flash-decoding: the context split over groups, then the partials of
-- each head combined in split order) and attention_prefill (causal key tiles, online softmax),
-- each with a row per head width: `<kernel>.hd64`, `<kernel>.hd128` (gated on head_dim) and
-- `<kernel>.generic` (any even head_dim up to 256); decode also `attention_decode_pos.<width>`,
-- the same arithmetic with the position read from an i32 buffer operand `pos` (the query fact
-- pos_buffer = 1), so a recorded step replays at the next position. K and V are f16 [n_kv_head, slots,
-- head_dim], what write_slice / write_slice_rotating write; position p is slot p % slots. The
-- queries that pick the rows, the decode scratch's size, and bench_case for
-- scripts/bench-attention.lua. The arithmetic is docs/ARITHMETIC.md's "Attention over the KV
-- cache"; the constants kernels/attention.h's.
local xpu = require "xpu"

local M = {}

M.KERNELS = { "attention_decode", "attention_prefill" }
M.BLOCK = 256
M.MAX_HD, M.MAX_GROUP, M.MAX_SLOTS = 256, 128, 1 << 18
M.SPLIT_MIN, M.SPLIT_MAX, M.SCORES, M.GROUPS_AIM, M.MAX_SPLITS = 32, 256, 4096, 512, 2048
M.TILE_Q, M.TILE_K = 16, 32
M.MAX_TOKENS = 1 << 20
-- The rows of each kernel: its suffix, the head width it is built for (nil: any), priority.
M.WIDTHS = { { "hd64", 64, 20 }, { "hd128", 128, 20 }, { "generic", nil, 10 } }
for _, k in ipairs(M.KERNELS) do xpu.regime(k) end

local FACTS = {
  attention_decode = { "n_head", "n_kv_head", "head_dim", "slots", "window", "pos_buffer" },
  attention_prefill = { "n_head", "n_kv_head", "head_dim", "slots", "window", "tokens" },
}

local function count(q, key, lo, hi)
  local v = q[key]
  if v == nil then return ("query has no %s"):format(key) end
  if v < lo or v > hi then return ("%s %d is not %d .. %d"):format(key, v, lo, hi) end
end

-- The shape half: heads, the width this row serves, the cache, the window; for decode, where
-- the position comes from (pos_buffer 1: the _pos rows, else the scalar ones).
local function shape_of(kernel, width, pos_rows)
  return function(q)
    if kernel == "attention_decode" and ((q.pos_buffer or 0) == 1) ~= (pos_rows or false) then
      return pos_rows and "pos_buffer is not 1 (the position is a scalar)" or "pos_buffer is 1 (the position is a buffer)"
    end
    local why = count(q, "n_kv_head", 1, 65535) or count(q, "n_head", 1, 65535) or count(q, "slots", 1, M.MAX_SLOTS)
      or count(q, "head_dim", 1, 1 << 20)
    if why then return why end
    if q.n_head % q.n_kv_head ~= 0 then
      return ("n_head %d is not a multiple of n_kv_head %d"):format(q.n_head, q.n_kv_head)
    end
    if q.n_head // q.n_kv_head > M.MAX_GROUP then
      return ("%d query heads per KV head, more than %d"):format(q.n_head // q.n_kv_head, M.MAX_GROUP)
    end
    if width and q.head_dim ~= width then return ("head_dim %d is not %d"):format(q.head_dim, width) end
    if q.head_dim > M.MAX_HD then return ("head_dim %d is past %d"):format(q.head_dim, M.MAX_HD) end
    if q.head_dim % 2 ~= 0 then return ("head_dim %d is odd"):format(q.head_dim) end
    if (q.window or 0) < 0 then return ("window %d is below 0"):format(q.window) end
    if kernel == "attention_prefill" then return count(q, "tokens", 1, M.MAX_TOKENS) end
    local splits = M.max_splits(q)
    if splits > M.MAX_SPLITS then
      return ("slots %d take %d splits of %d positions, more than %d"):format(q.slots, splits, M.split(q), M.MAX_SPLITS)
    end
  end
end

-- src/ops/layer/attention.c's xpu_att_split: the default positions of a decode split.
function M.split(q)
  local w = q.window or 0
  local span = (w > 0 and w < q.slots) and w or q.slots
  local split, group = M.SPLIT_MIN, q.n_head // q.n_kv_head
  while split < M.SPLIT_MAX and q.n_kv_head * ((span + split - 1) // split) > M.GROUPS_AIM do split = split * 2 end
  while split > 1 and group * split > M.SCORES do split = split // 2 end
  return split
end

-- The most splits a decode query's head takes at any position (its span cut at multiples of
-- the split: one more than the span's own count, for a span that does not start on one).
function M.max_splits(q, split)
  local w = q.window or 0
  local span = (w > 0 and w < q.slots) and w or q.slots
  split = split or M.split(q)
  return (span + split - 1) // split + (span > 1 and 1 or 0)
end

-- The bytes of the decode scratch `part`: (max, sum, acc[head_dim]) f32 per head and split.
function M.partial_bytes(q, split)
  return q.n_head * M.max_splits(q, split) * (q.head_dim + 2) * 4
end

-- The operands each kernel reads or writes and the bytes each must hold.
local function need(kernel, q)
  local cache = q.n_kv_head * q.slots * q.head_dim * 2
  local rows = (kernel == "attention_prefill" and q.tokens or 1) * q.n_head * q.head_dim * 4
  local t = { out = rows, q = rows, k = cache, v = cache }
  if kernel == "attention_decode" then t.part = M.partial_bytes(q) end
  return t
end

local NAMES = { attention_decode = { "k", "out", "part", "q", "v" }, attention_prefill = { "k", "out", "q", "v" },
                attention_decode_pos = { "k", "out", "part", "pos", "q", "v" } }

-- The ready half: every operand is in the call and holds what the query needs.
local function ready_of(kernel, pos_rows)
  return function(c)
    local q, ops, want = c.query, c.operands or {}, need(kernel, c.query)
    want.pos = 4
    for _, name in ipairs(NAMES[pos_rows and "attention_decode_pos" or kernel]) do
      local b = ops[name]
      if type(b) ~= "userdata" then return ("operand '%s' is missing"):format(name) end
      if b.bytes < want[name] then
        return ("operand '%s' holds %d bytes; the query needs %d"):format(name, b.bytes, want[name])
      end
    end
  end
end

-- Kernel names: <kernel>_hd64, <kernel>_hd128, and <kernel> for the generic row.
function M.kernel_of(kernel, suffix)
  return suffix == "generic" and kernel or kernel .. "_" .. suffix
end

function M.rows(t)
  for _, k in ipairs(M.KERNELS) do
    for _, w in ipairs(M.WIDTHS) do
      t:register { name = k .. "." .. w[1], regime = k, format = "f16", priority = w[3], facts = FACTS[k],
                   kernel = M.kernel_of(k, w[1]), shape = shape_of(k, w[2]), ready = ready_of(k) }
    end
  end
  for _, w in ipairs(M.WIDTHS) do
    t:register { name = "attention_decode_pos." .. w[1], regime = "attention_decode", format = "f16", priority = w[3],
                 facts = FACTS.attention_decode, kernel = M.kernel_of("attention_decode_pos", w[1]),
                 shape = shape_of("attention_decode", w[2], true), ready = ready_of("attention_decode", true) }
  end
  return t
end

-- The query of `kernel` ("attention_decode" or "attention_prefill") for the shape s: n_head,
-- n_kv_head, head_dim, slots, window (0 or absent: none), tokens (prefill), pos_buffer
-- (decode: true or 1 when the operand pos is an i32 buffer, the _pos rows; default 0).
function M.query(kernel, s)
  if not FACTS[kernel] then
    error(("attention.query: kernel '%s' is not one of %s"):format(tostring(kernel), table.concat(M.KERNELS, ", ")), 2)
  end
  local q = { regime = kernel, format = "f16" }
  for _, f in ipairs(FACTS[kernel]) do q[f] = s[f] end
  q.window = s.window or 0
  if kernel == "attention_decode" then q.pos_buffer = (s.pos_buffer == true or s.pos_buffer == 1) and 1 or 0 end
  return xpu.query(q)
end

-- ---- fixtures and bench cases --------------------------------------------------------------

-- n f16 values as bytes: a seeded pool of 4099 finite halves (|x| below 2, a few subnormal),
-- repeated: 4099 is prime, so rows of any width see different values.
function M.f16_bytes(n, seed)
  local s, pool = seed, {}
  for i = 1, 4099 do
    s = (s * 1103515245 + 12345) % 2147483648
    local e = (s >> 8) % 16 + (i % 61 == 0 and 0 or 1)        -- exponent 1 .. 16 (0: subnormal)
    pool[i] = ((s >> 20) % 2) * 0x8000 | e << 10 | (s >> 4) % 1024
  end
  local chunk = string.pack("<" .. ("I2"):rep(#pool), table.unpack(pool))
  local reps = n // #pool + 1
  return (chunk:rep(reps)):sub(1, 2 * n)
end

-- n f32 values as bytes from a seeded LCG, -1 .. 1, never all zero.
function M.floats(n, seed)
  local s, parts, chunk = seed, {}, {}
  for i = 1, n do
    s = (s * 1103515245 + 12345) % 2147483648
    chunk[#chunk + 1] = s / 1073741824 - 1
    if #chunk == 256 or i == n then
      parts[#parts + 1] = string.pack("<" .. ("f"):rep(#chunk), table.unpack(chunk))
      chunk = {}
    end
  end
  return table.concat(parts)
end

-- The bench case of `kernel` on dev for shape s (M.query's fields, and pos: decode's position,
-- default slots - 1, an i32 buffer where s.pos_buffer; prefill's tokens end at the last slot): { query, operands (seeded, on
-- dev), bytes (K and V read: the positions seen, each KV head once), flops (2 per multiply-add
-- of q k and of e v), ctx (positions the last query sees), note }.
function M.bench_case(kernel, dev, s)
  local q = M.query(kernel, s)
  local want = need(kernel, q)
  local ops = {}
  for name, bytes in pairs(want) do
    if name == "k" or name == "v" then ops[name] = dev:buffer(M.f16_bytes(bytes // 2, #name))
    elseif name == "q" then ops[name] = dev:buffer(M.floats(bytes // 4, 3))
    else ops[name] = dev:buffer(bytes) end
  end
  local w, tokens = q.window, q.tokens or 1
  local last = s.pos or q.slots - 1
  local first = last - tokens + 1
  if kernel == "attention_prefill" then ops.pos0 = first
  elseif q.pos_buffer == 1 then ops.pos = dev:buffer(string.pack("<i4", last))
  else ops.pos = last end
  local function lo(p) return (w > 0 and p + 1 > w) and p + 1 - w or 0 end
  local pairs_seen = 0 -- query x key pairs over the tokens
  for p = first, last do pairs_seen = pairs_seen + p - lo(p) + 1 end
  local kv_seen = last - lo(first) + 1
  local seen_last = last - lo(last) + 1
  return { query = q, operands = ops, bytes = 2 * q.n_kv_head * kv_seen * q.head_dim * 2,
           flops = 4 * pairs_seen * q.n_head * q.head_dim, ctx = seen_last,
           note = ("%d/%d heads hd %d"):format(q.n_head, q.n_kv_head, q.head_dim) }
end

return M
