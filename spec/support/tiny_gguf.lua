-- spec/support/tiny_gguf.lua — tiny llama and qwen3moe GGUFs written with xpu.gguf.write for
-- the reference forward's spec: seeded weights from a Lua LCG (f32 and q8_0 matrices, f32
-- norms), the values each tensor holds once dequantized, and switches to zero, drop, reshape
-- or retype one tensor or key. Files go to os.tmpname(); remove() deletes them.
local xpu = require "xpu"

local M = {}

M.DIMS = {
  llama = { n_embd = 64, n_layer = 2, n_head = 4, n_head_kv = 2, head_dim = 16, n_ff = 128,
    n_vocab = 96, n_ctx = 32, base = 10000.0, eps = 1e-5 },
  qwen3moe = { n_embd = 64, n_layer = 2, n_head = 4, n_head_kv = 2, head_dim = 32, n_ff = 96,
    n_vocab = 96, n_ctx = 32, base = 1000000.0, eps = 1e-6, n_expert = 8, n_expert_used = 2,
    n_ff_exp = 32 },
}

local function f32(x) return (string.unpack("<f", string.pack("<f", x))) end
M.f32 = f32

-- n values in [-scale, scale) + offset from an LCG (Numerical Recipes' constants), never all zero.
function M.lcg(n, seed, scale, offset)
  local s, out = seed & 0xffffffff, {}
  for i = 1, n do
    s = (1664525 * s + 1013904223) & 0xffffffff
    out[i] = (offset or 0) + scale * (s / 2147483648.0 - 1.0)
  end
  return out
end

local function pack(v)
  local parts = {}
  for i = 1, #v do parts[i] = string.pack("<f", v[i]) end
  return table.concat(parts)
end

local function unpack_f32(s)
  local out = {}
  for i = 1, #s // 4 do out[i] = (string.unpack("<f", s, 4 * i - 3)) end
  return out
end

-- The f16 bits of a value exact in f16 (the spec's are k / 256, |k| < 256).
local function f16_bits(v)
  if v == 0 then return 0 end
  local s, a = v < 0 and 0x8000 or 0, math.abs(v)
  local e = math.floor(math.log(a, 2))
  local m = (a / 2 ^ e - 1) * 1024
  assert(m == math.floor(m) and e >= -14 and e <= 15, "value not exact in f16")
  return s | ((e + 15) << 10) | math.tointeger(m)
end

local function encode(typ, v)
  if typ == "f32" then return pack(v) end
  if typ == "q8_0" then return xpu.quant.quantize("q8_0", pack(v)) end
  local parts = {}
  for i = 1, #v do
    local bits = typ == "f16" and f16_bits(v[i]) or (string.unpack("<I4", string.pack("<f", v[i])) >> 16)
    parts[i] = string.pack("<I2", bits)
  end
  return table.concat(parts)
end

local function decode(typ, data, v)
  if typ == "q8_0" then return unpack_f32(xpu.quant.dequantize("q8_0", data)) end
  if typ == "f32" then return unpack_f32(data) end
  return v -- f16 and bf16 hold the spec's values exactly
end

local function meta_list(arch, d, o)
  local a = arch .. "."
  local m = {
    { "general.architecture", "string", o.arch or arch },
    { a .. "context_length", "u32", d.n_ctx }, { a .. "embedding_length", "u32", d.n_embd },
    { a .. "block_count", "u32", d.n_layer }, { a .. "feed_forward_length", "u32", d.n_ff },
    { a .. "attention.head_count", "u32", d.n_head }, { a .. "attention.head_count_kv", "u32", d.n_head_kv },
    { a .. "rope.freq_base", "f32", d.base }, { a .. "attention.layer_norm_rms_epsilon", "f32", d.eps },
    { a .. "rope.dimension_count", "u32", d.head_dim }, { a .. "vocab_size", "u32", d.n_vocab },
  }
  if arch == "qwen3moe" then
    for _, kv in ipairs({ { "expert_count", d.n_expert }, { "expert_used_count", d.n_expert_used },
      { "expert_feed_forward_length", d.n_ff_exp }, { "attention.key_length", d.head_dim },
      { "attention.value_length", d.head_dim } }) do
      m[#m + 1] = { a .. kv[1], "u32", kv[2] }
    end
  end
  local out = {}
  for _, e in ipairs(m) do
    local v = o.meta and o.meta[e[1]]
    if v == nil then out[#out + 1] = e elseif v ~= false then out[#out + 1] = { e[1], e[2], v } end
  end
  for _, e in ipairs(o.extra_meta or {}) do out[#out + 1] = e end
  return out
end

-- The tensors of the model, in file order: {name, dims (ne order), kind, type}.
local function tensor_list(arch, d, o)
  local e, q, kv = d.n_embd, d.n_head * d.head_dim, d.n_head_kv * d.head_dim
  local t = { { "token_embd.weight", { e, d.n_vocab }, "embd", "f32" },
    { "output_norm.weight", { e }, "norm", "f32" } }
  if not o.tied then t[#t + 1] = { "output.weight", { e, d.n_vocab }, "mat", "q8_0" } end
  for l = 0, d.n_layer - 1 do
    local p = ("blk.%d."):format(l)
    local list = { { "attn_norm.weight", { e }, "norm", "f32" }, { "attn_q.weight", { e, q }, "mat", "q8_0" },
      { "attn_k.weight", { e, kv }, "mat", "f32" }, { "attn_v.weight", { e, kv }, "mat", "f32" },
      { "attn_output.weight", { q, e }, "mat", "f32" }, { "ffn_norm.weight", { e }, "norm", "f32" } }
    if arch == "llama" then
      for _, x in ipairs({ { "ffn_gate.weight", { e, d.n_ff }, "mat", "f32" }, { "ffn_up.weight", { e, d.n_ff }, "mat", "q8_0" },
        { "ffn_down.weight", { d.n_ff, e }, "mat", "f32" } }) do list[#list + 1] = x end
    else
      local f, n = d.n_ff_exp, d.n_expert
      for _, x in ipairs({ { "attn_q_norm.weight", { d.head_dim }, "norm", "f32" },
        { "attn_k_norm.weight", { d.head_dim }, "norm", "f32" }, { "ffn_gate_inp.weight", { e, n }, "router", "f32" },
        { "ffn_gate_exps.weight", { e, f, n }, "mat", "q8_0" }, { "ffn_up_exps.weight", { e, f, n }, "mat", "f32" },
        { "ffn_down_exps.weight", { f, e, n }, "mat", "f32" } }) do list[#list + 1] = x end
    end
    for _, x in ipairs(list) do t[#t + 1] = { p .. x[1], x[2], x[3], x[4] } end
  end
  return t
end

local SCALE = { embd = 1.0, router = 2.0 }

-- write(arch, opts) -> path, W (name -> dequantized values), dims. opts: seed, tied, arch
-- (the architecture string written), meta = {key = value | false (left out)}, extra_meta,
-- zero = {name suffix = true}, drop = name, dims = {name = dims}, types = {name = type},
-- mat_type = every matrix's type, extra = {tensor entries}, eighths = true (values k / 256:
-- exact in f16 and bf16).
function M.write(arch, o)
  o = o or {}
  local d = M.DIMS[arch]
  local tensors, W, seed = {}, {}, o.seed or 7
  for _, t in ipairs(tensor_list(arch, d, o)) do
    local name, kind = t[1], t[3]
    local dims = o.dims and o.dims[name] or t[2]
    local typ = o.types and o.types[name] or kind == "mat" and o.mat_type or t[4]
    local n = 1
    for _, x in ipairs(dims) do n = n * x end
    seed = seed + 101
    local v = kind == "norm" and M.lcg(n, seed, 0.25, 1.0) or M.lcg(n, seed, SCALE[kind] or 1.0 / math.sqrt(dims[1]))
    if o.eighths or typ == "f16" or typ == "bf16" then
      for i = 1, n do v[i] = math.floor(v[i] * 64 + 0.5) / 256 end
    end
    for suffix in pairs(o.zero or {}) do
      if name:sub(-#suffix) == suffix then for i = 1, n do v[i] = 0.0 end end
    end
    if name ~= o.drop then
      local data = encode(typ, v)
      W[name] = decode(typ, data, v)
      tensors[#tensors + 1] = { name = name, dims = dims, type = typ, data = data }
    end
  end
  for _, x in ipairs(o.extra or {}) do tensors[#tensors + 1] = x end
  local path = os.tmpname()
  xpu.gguf.write(path, { meta = meta_list(arch, d, o), tensors = tensors })
  M.made[#M.made + 1] = path
  return path, W, d
end

M.made = {}
function M.remove()
  for _, p in ipairs(M.made) do os.remove(p) end
  M.made = {}
end

M.pack, M.unpack_f32 = pack, unpack_f32
return M
