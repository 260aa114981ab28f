-- xpu.layers.norm — the row-normalisation kernels as route rows: rms_norm, add_rms_norm (the
-- residual add fused in), rms_norm_q8k (the q8_K activation pack fused in), add_rms_norm_q8k
-- (both: the residual add, then the norm packed to q8_K), add_rms_norm_q8k_f32 (that, and the
-- normed f32 row beside the pack: a router's input and the experts' in one launch), layer_norm and softmax, one row each for f32 (`<kernel>.f32`, regime = the kernel name; rms_norm also
-- `rms_norm.f16`, f16 x and out, the steps in f32), the queries that
-- pick them, and bench_case for scripts/bench-layer.lua. One workgroup of 256 lanes a row;
-- the arithmetic is docs/ARITHMETIC.md's "Row normalisation".
local xpu = require "xpu"

local M = {}

M.KERNELS = { "rms_norm", "add_rms_norm", "rms_norm_q8k", "add_rms_norm_q8k", "add_rms_norm_q8k_f32", "layer_norm",
              "softmax" }
M.BLOCK = 256
M.MAX_COLS = 1 << 24
for _, k in ipairs(M.KERNELS) do xpu.regime(k) end

-- The operands each kernel reads or writes, with the elements each holds (4 bytes each; the
-- q8_K blocks of rms_norm_q8k 320 bytes per 256 values), from the query's rows and cols.
local ROW, VEC = "row", "vec"
local OPERANDS = {
  rms_norm = { out = ROW, x = ROW, weight = VEC },
  add_rms_norm = { out = ROW, sum = ROW, x = ROW, residual = ROW, weight = VEC },
  rms_norm_q8k = { xq = "q8k", x = ROW, weight = VEC },
  add_rms_norm_q8k = { xq = "q8k", sum = ROW, x = ROW, residual = ROW, weight = VEC },
  add_rms_norm_q8k_f32 = { xq = "q8k", out = ROW, sum = ROW, x = ROW, residual = ROW, weight = VEC },
  layer_norm = { out = ROW, x = ROW, weight = VEC, bias = "bias" },
  softmax = { out = ROW, x = ROW },
}

-- The dtypes of x and out each kernel serves (the weight and bias stay f32), and their sizes.
local FORMATS = { rms_norm = { "f32", "f16" } }
local SIZE = { f32 = 4, f16 = 2 }

local FACTS = {
  rms_norm = { "rows", "cols" }, add_rms_norm = { "rows", "cols" }, rms_norm_q8k = { "rows", "cols" },
  add_rms_norm_q8k = { "rows", "cols" }, add_rms_norm_q8k_f32 = { "rows", "cols" },
  layer_norm = { "rows", "cols", "has_bias" }, softmax = { "rows", "cols", "causal" },
}

local function flag_refusal(q, key)
  local v = q[key] or 0
  if v ~= 0 and v ~= 1 then return ("%s %s is not 0 or 1"):format(key, tostring(v)) end
end

local function shape_of(kernel, fmt)
  return function(q)
    if not q.rows or not q.cols then return "query has no rows / cols" end
    if q.rows < 0 then return ("rows %d is below 0"):format(q.rows) end
    if q.cols < 1 or q.cols > M.MAX_COLS then
      return ("cols %d is not 1 .. %d"):format(q.cols, M.MAX_COLS)
    end
    if fmt == "f16" and q.cols % 2 ~= 0 then
      return ("cols %d is odd (f16 rows are whole 4-byte words)"):format(q.cols)
    end
    if kernel:find "_q8k" and q.cols % 256 ~= 0 then
      return ("cols %d is not a multiple of 256 (q8_K blocks)"):format(q.cols)
    end
    if kernel == "layer_norm" then return flag_refusal(q, "has_bias") end
    if kernel == "softmax" then return flag_refusal(q, "causal") end
  end
end

-- Bytes operand `role` must hold for the query (rows of elem-byte elements).
local function need_bytes(role, q, elem)
  if role == ROW then return q.rows * q.cols * (elem or 4) end
  if role == VEC then return q.cols * 4 end
  if role == "q8k" then return q.rows * (q.cols // 256) * 320 end
  return (q.has_bias or 0) == 1 and q.cols * 4 or 0
end

-- The ready half: every operand the kernel reads or writes is in the call and holds what the
-- query's rows and cols need (a fused row so admits only a call whose inputs match it).
local function ready_of(kernel, fmt)
  local names = {}
  for name in pairs(OPERANDS[kernel]) do names[#names + 1] = name end
  table.sort(names)
  return function(c)
    local q, ops = c.query, c.operands or {}
    for _, name in ipairs(names) do
      local need = need_bytes(OPERANDS[kernel][name], q, SIZE[fmt])
      if need > 0 then
        local b = ops[name]
        if type(b) ~= "userdata" then return ("operand '%s' is missing"):format(name) end
        if b.bytes < need then
          return ("operand '%s' holds %d bytes; rows %d x cols %d need %d"):format(name, b.bytes, q.rows, q.cols, need)
        end
      end
    end
  end
end

-- One row per kernel and dtype.
function M.rows(t)
  for _, k in ipairs(M.KERNELS) do
    for _, f in ipairs(FORMATS[k] or { "f32" }) do
      t:register { name = k .. "." .. f, regime = k, format = f, priority = 10, facts = FACTS[k], kernel = k,
                   shape = shape_of(k, f), ready = ready_of(k, f) }
    end
  end
  return t
end

-- The query for `kernel` over rows x cols; opts: dtype ("f32", the default, or "f16" for
-- rms_norm), bias (layer_norm: true / false, the fact has_bias), causal (softmax: true / false).
function M.query(kernel, rows, cols, opts)
  if not FACTS[kernel] then
    error(("norm.query: kernel '%s' is not one of %s"):format(tostring(kernel), table.concat(M.KERNELS, ", ")), 2)
  end
  opts = opts or {}
  local q = { regime = kernel, format = opts.dtype or "f32", rows = rows, cols = cols }
  if kernel == "layer_norm" then q.has_bias = opts.bias and 1 or 0 end
  if kernel == "softmax" then q.causal = opts.causal and 1 or 0 end
  return xpu.query(q)
end

-- ---- bench cases --------------------------------------------------------------------------

-- n f32 values from a seeded LCG, magnitudes mixed over a few octaves, never all zero.
function M.floats(n, seed)
  local s, parts, chunk = seed, {}, {}
  for i = 1, n do
    s = (s * 1103515245 + 12345) % 2147483648
    chunk[#chunk + 1] = (s / 1073741824 - 1) * 2.0 ^ (i % 7 - 3)
    if #chunk == 256 or i == n then
      parts[#parts + 1] = string.pack("<" .. ("f"):rep(#chunk), table.unpack(chunk))
      chunk = {}
    end
  end
  return table.concat(parts)
end

local SIZES = { decode = 1, prefill = 512 }

-- The bench case for `kernel` on dev at size "decode" (1 x 4096) or "prefill" (512 x 4096):
-- { query, operands (on dev, seeded), bytes (each operand read or written once), note }.
-- layer_norm has a bias, softmax no mask.
function M.bench_case(kernel, dev, size)
  local rows = SIZES[size]
  if not rows then error(("norm.bench_case: size '%s' is not decode or prefill"):format(tostring(size)), 2) end
  local cols = 4096
  local q = M.query(kernel, rows, cols, { bias = true })
  local ops, bytes = {}, 0
  for name, role in pairs(OPERANDS[kernel]) do
    local n = need_bytes(role, q)
    local written = name == "out" or name == "sum" or name == "xq"
    ops[name] = dev:buffer(written and n or M.floats(n // 4, #name * 7 + rows))
    bytes = bytes + n
  end
  return { query = q, operands = ops, bytes = bytes, note = ("%dx%d f32"):format(rows, cols) }
end

return M
