-- models.reference_load — the loader of models.reference: a GGUF's metadata read and checked
-- with llama.cpp's keys and defaults for llama and qwen3moe, then every tensor they imply
-- turned to f32 (f32 as stored, f16 and bf16 converted here, block formats by the
-- dequantize handed in). A missing key or tensor, a wrong shape, a type it cannot read and a
-- tensor it would not use are each refused by name. Uses xpu.gguf and xpu.quant.info.
local xpu = require "xpu"

local function fail(where, fmt, ...)
  error(("reference.load: %s: " .. fmt):format(where, ...), 0)
end

local function open(src)
  if type(src) == "string" then return xpu.gguf.open(src), true end
  local mt = type(src) == "userdata" and getmetatable(src)
  if type(mt) == "table" and mt.__name == "xpu.GGUF" then return src, false end
  error(("reference.load: expects a GGUF path or an xpu.GGUF object, not %s"):format(type(src)), 0)
end

-- ---- metadata -------------------------------------------------------------------------------

-- A positive integer key; a per-layer array (head_count_kv may be one) is served when uniform.
local function int_key(g, where, k, default)
  local v = g:meta(k)
  if v == nil then
    if default == nil then fail(where, "metadata key '%s' is missing", k) end
    return default
  end
  if type(v) == "table" then
    for i = 2, #v do
      if v[i] ~= v[1] then fail(where, "metadata key '%s' differs per layer; one value is served", k) end
    end
    v = v[1]
  end
  if math.type(v) ~= "integer" or v < 1 then
    fail(where, "metadata key '%s' is %s, not a positive integer", k, tostring(v))
  end
  return v
end

local function float_key(g, where, k, default)
  local v = g:meta(k)
  if v == nil then
    if default == nil then fail(where, "metadata key '%s' is missing", k) end
    return default
  end
  if type(v) ~= "number" or v ~= v or v < 0 or v == math.huge then
    fail(where, "metadata key '%s' is %s, not a finite number >= 0", k, tostring(v))
  end
  return v + 0.0
end

-- freq_scale as llama.cpp reads it: rope.scaling.type linear (its default) or none, the factor
-- from rope.scaling.factor (or the older rope.scale_linear), 1 / factor, 1 without one.
local function rope_scale(g, where, a)
  local k = a .. "rope.scaling.type"
  local t = g:meta(k)
  if t ~= nil and t ~= "none" and t ~= "linear" then
    fail(where, "metadata key '%s' is '%s'; the reference serves none and linear", k, tostring(t))
  end
  local f = g:meta(a .. "rope.scaling.factor") ~= nil and float_key(g, where, a .. "rope.scaling.factor")
    or float_key(g, where, a .. "rope.scale_linear", 0.0)
  return f == 0 and 1.0 or 1.0 / f
end

local function attention_keys(g, where, a, hp)
  hp.n_head = int_key(g, where, a .. "attention.head_count")
  hp.n_head_kv = int_key(g, where, a .. "attention.head_count_kv", hp.n_head)
  if hp.n_head % hp.n_head_kv ~= 0 then
    fail(where, "'%sattention.head_count' %d is not a multiple of '%sattention.head_count_kv' %d",
      a, hp.n_head, a, hp.n_head_kv)
  end
  local per_head = hp.n_embd % hp.n_head == 0 and hp.n_embd // hp.n_head or nil
  hp.head_dim = int_key(g, where, a .. "attention.key_length", per_head)
  hp.head_dim_v = int_key(g, where, a .. "attention.value_length", per_head)
  hp.n_rot = int_key(g, where, a .. "rope.dimension_count", hp.head_dim)
  if hp.n_rot % 2 ~= 0 or hp.n_rot > hp.head_dim then
    fail(where, "metadata key '%srope.dimension_count' %d is not even and at most the head's %d",
      a, hp.n_rot, hp.head_dim)
  end
  if hp.arch == "llama" and hp.n_rot ~= hp.head_dim then -- llama.cpp refuses it too
    fail(where, "metadata key '%srope.dimension_count' %d is not the head's %d", a, hp.n_rot, hp.head_dim)
  end
  hp.eps = float_key(g, where, a .. "attention.layer_norm_rms_epsilon")
  hp.rope_base = float_key(g, where, a .. "rope.freq_base", 10000.0)
  hp.rope_scale = rope_scale(g, where, a)
  hp.rope_neox = hp.arch == "qwen3moe" -- llama.cpp: LLAMA_ROPE_TYPE_NORM for llama, NEOX for qwen3moe
end

local function ffn_keys(g, where, a, hp)
  if hp.arch == "llama" then
    local experts = g:meta(a .. "expert_count")
    if experts ~= nil and experts ~= 0 then
      fail(where, "metadata key '%sexpert_count' is %s: a mixture-of-experts llama is not served", a,
        tostring(experts))
    end
    hp.n_ff = int_key(g, where, a .. "feed_forward_length")
    return
  end
  hp.n_expert = int_key(g, where, a .. "expert_count")
  hp.n_expert_used = int_key(g, where, a .. "expert_used_count")
  if hp.n_expert_used > hp.n_expert then
    fail(where, "'%sexpert_used_count' %d exceeds '%sexpert_count' %d", a, hp.n_expert_used, a, hp.n_expert)
  end
  local n_ff = g:meta(a .. "feed_forward_length") ~= nil and int_key(g, where, a .. "feed_forward_length")
  hp.n_ff_exp = int_key(g, where, a .. "expert_feed_forward_length",
    n_ff and n_ff // hp.n_expert_used or nil)
end

local function hparams(g, where)
  local arch = g:meta("general.architecture")
  if arch ~= "llama" and arch ~= "qwen3moe" then
    fail(where, "metadata key 'general.architecture' is %s; the reference serves llama and qwen3moe",
      arch == nil and "missing" or ("'" .. tostring(arch) .. "'"))
  end
  local a = arch .. "."
  local hp = { arch = arch }
  hp.n_ctx = int_key(g, where, a .. "context_length")
  hp.n_embd = int_key(g, where, a .. "embedding_length")
  hp.n_layer = int_key(g, where, a .. "block_count")
  attention_keys(g, where, a, hp)
  ffn_keys(g, where, a, hp)
  local tokens = g:meta("tokenizer.ggml.tokens")
  local embd = g:tensor("token_embd.weight")
  hp.n_vocab = int_key(g, where, a .. "vocab_size", type(tokens) == "table" and #tokens > 0 and #tokens
    or embd and embd.dims[2] or nil)
  return hp
end

-- ---- tensors --------------------------------------------------------------------------------

-- f16 bits (as their two bytes) -> the f32's four bytes, exact: made once, on first use.
local F16
local function f16_table()
  if F16 then return F16 end
  F16 = {}
  for h = 0, 0xffff do
    local s, e, m = (h >> 15) << 31, (h >> 10) & 31, h & 0x3ff
    local bits
    if e == 31 then
      bits = s | 0x7f800000 | (m << 13)
    elseif e == 0 and m == 0 then
      bits = s
    else
      if e == 0 then -- subnormal: normalise the mantissa
        e = 1
        while m & 0x400 == 0 do m, e = m << 1, e - 1 end
        m = m & 0x3ff
      end
      bits = s | ((e - 15 + 127) << 23) | (m << 13)
    end
    F16[string.pack("<I2", h)] = string.pack("<I4", bits)
  end
  return F16
end

local function to_f32(t, data, where, dequantize)
  if t.type == "f32" then return data end
  if t.type == "f16" then return (data:gsub("..", f16_table())) end
  if t.type == "bf16" then return (data:gsub("..", "\0\0%0")) end -- the f32's high half
  if pcall(xpu.quant.info, t.type) then return dequantize(t.type, data) end
  local served = { "f32", "f16", "bf16" }
  for _, f in ipairs(xpu.quant.formats()) do served[#served + 1] = f.name end
  fail(where, "tensor '%s' is %s, which the reference does not read (%s)", t.name, t.type,
    table.concat(served, ", "))
end

local function dims_text(d)
  local s = {}
  for i, v in ipairs(d) do s[i] = tostring(v) end
  return "{" .. table.concat(s, ", ") .. "}"
end

-- Shapes compare as ggml's do: dims past the listed ones are 1.
local function same_dims(a, b)
  for i = 1, math.max(#a, #b) do
    if (a[i] or 1) ~= (b[i] or 1) then return false end
  end
  return true
end

local function reader(g, where, dequantize)
  local used = {}
  return function(name, dims, optional)
    local t = g:tensor(name)
    if not t then
      if optional then return nil end
      fail(where, "tensor '%s' is missing", name)
    end
    if not same_dims(t.dims, dims) then
      fail(where, "tensor '%s' has dims %s; the metadata implies %s", name, dims_text(t.dims),
        dims_text(dims))
    end
    used[name] = true
    return to_f32(t, g:data(name), where, dequantize)
  end, used
end

local function layer(get, hp, l, floats)
  local p = ("blk.%d."):format(l)
  local e, q = hp.n_embd, hp.n_head * hp.head_dim
  local kv, vv = hp.n_head_kv * hp.head_dim, hp.n_head_kv * hp.head_dim_v
  local L = {
    attn_norm = floats(get(p .. "attn_norm.weight", { e })),
    attn_q = get(p .. "attn_q.weight", { e, q }),
    attn_k = get(p .. "attn_k.weight", { e, kv }),
    attn_v = get(p .. "attn_v.weight", { e, vv }),
    attn_output = get(p .. "attn_output.weight", { hp.n_head * hp.head_dim_v, e }),
    ffn_norm = floats(get(p .. "ffn_norm.weight", { e })),
  }
  if hp.arch == "llama" then
    L.ffn_gate = get(p .. "ffn_gate.weight", { e, hp.n_ff })
    L.ffn_up = get(p .. "ffn_up.weight", { e, hp.n_ff })
    L.ffn_down = get(p .. "ffn_down.weight", { hp.n_ff, e })
    return L
  end
  local f, n = hp.n_ff_exp, hp.n_expert
  L.attn_q_norm = floats(get(p .. "attn_q_norm.weight", { hp.head_dim }))
  L.attn_k_norm = floats(get(p .. "attn_k_norm.weight", { hp.head_dim }))
  L.ffn_gate_inp = get(p .. "ffn_gate_inp.weight", { e, n })
  L.ffn_gate_exps = get(p .. "ffn_gate_exps.weight", { e, f, n })
  L.ffn_up_exps = get(p .. "ffn_up_exps.weight", { e, f, n })
  L.ffn_down_exps = get(p .. "ffn_down_exps.weight", { f, e, n })
  return L
end

-- load(src, dequantize, floats) -> model { arch, hp, path, token_embd, output, output_norm,
-- rope_factors, layers }: matrices as f32 strings, norm weights and rope factors as lists.
return function(src, dequantize, floats)
  local g, opened = open(src)
  local where = g.path
  local ok, model = pcall(function()
    local hp = hparams(g, where)
    local get, used = reader(g, where, dequantize)
    local m = { arch = hp.arch, hp = hp, path = where, layers = {} }
    m.token_embd = get("token_embd.weight", { hp.n_embd, hp.n_vocab })
    m.output_norm = floats(get("output_norm.weight", { hp.n_embd }))
    local output = get("output.weight", { hp.n_embd, hp.n_vocab }, true)
    m.output, m.tied = output or m.token_embd, output == nil
    if hp.arch == "llama" then -- llama3's frequency factors (one tensor for every layer)
      local rf = get("rope_freqs.weight", { hp.n_rot // 2 }, true)
      m.rope_factors = rf and floats(rf)
    end
    for l = 0, hp.n_layer - 1 do m.layers[l + 1] = layer(get, hp, l, floats) end
    for _, t in ipairs(g:tensors()) do
      if not used[t.name] then
        fail(where, "tensor '%s' is not read by the %s reference; refused rather than ignored", t.name,
          hp.arch)
      end
    end
    return m
  end)
  if opened then g:close() end
  if not ok then error(model, 0) end
  return model
end
