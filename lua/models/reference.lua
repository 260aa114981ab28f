-- models.reference — the CPU reference forward of a llama or qwen3moe GGUF: every weight
-- dequantized to f32 (xpu.quant.dequantize), mat-vecs by xpu.quant.matvec_f32, the rest in
-- Lua, one token at a time over an f32 KV cache. llama.cpp's graph for LLM_ARCH_LLAMA and
-- LLM_ARCH_QWEN3MOE is the semantics; the oracle the fast paths are checked against.
-- Weights and every mat-vec's input and output are f32; the arithmetic between mat-vecs runs
-- in Lua's doubles, so the reference's own error is far below any kernel's.
local xpu = require "xpu"
local load_model = require "models.reference_load"

local M = {}

local matvec, dequantize = xpu.quant.matvec_f32, xpu.quant.dequantize
local exp, sqrt, cos, sin = math.exp, math.sqrt, math.cos, math.sin

-- ---- f32 strings and Lua lists ------------------------------------------------------------

local CHUNK = 1024
local FMT = "<" .. ("f"):rep(CHUNK)

-- n floats of the f32 string s from byte offset off (0-based), as a list.
function M.floats(s, off, n)
  off = off or 0
  n = n or (#s - off) // 4
  local out, k = {}, 0
  while k < n do
    local m = math.min(CHUNK, n - k)
    local fmt = m == CHUNK and FMT or "<" .. ("f"):rep(m)
    local vals = { string.unpack(fmt, s, off + 4 * k + 1) }
    for i = 1, m do out[k + i] = vals[i] end
    k = k + m
  end
  return out
end

-- A list of numbers as an f32 string (each value rounded to f32 once).
function M.pack(v)
  local parts, n = {}, #v
  for k = 0, n - 1, CHUNK do
    local m = math.min(CHUNK, n - k)
    local fmt = m == CHUNK and FMT or "<" .. ("f"):rep(m)
    parts[#parts + 1] = string.pack(fmt, table.unpack(v, k + 1, k + m))
  end
  return table.concat(parts)
end

local floats, pack = M.floats, M.pack

local function copy(v)
  return table.move(v, 1, #v, 1, {})
end

-- ---- the operations -------------------------------------------------------------------------

-- ggml's rms_norm then the weight: x_i * (1 / sqrt(mean(x^2) + eps)) * w_i, over
-- x[off + 1 .. off + n] (a head of a longer vector when off > 0), in place when `into` is x.
function M.rms_norm(x, w, eps, off, n, into)
  off, n, into = off or 0, n or #w, into or {}
  local s = 0.0
  for i = 1, n do s = s + x[off + i] * x[off + i] end
  local scale = 1.0 / sqrt(s / n + eps)
  for i = 1, n do into[off + i] = x[off + i] * scale * w[i] end
  return into
end

-- ggml's rope on heads of hd values, in place: pair i (0 .. n_rot/2 - 1) of a head rotated by
-- theta_i = freq_scale * pos * base^(-2i / n_rot) / factor_i; normal ordering pairs elements
-- (2i, 2i + 1), neox (i, i + n_rot/2); elements from n_rot on are left as they are.
function M.rope(x, heads, hd, r)
  local half = r.n_rot // 2
  for i = 0, half - 1 do
    local theta = r.freq_scale * r.pos * r.base ^ (-2 * i / r.n_rot)
    if r.factors then theta = theta / r.factors[i + 1] end
    local c, s = cos(theta), sin(theta)
    local a, b = 2 * i + 1, 2 * i + 2
    if r.neox then a, b = i + 1, i + half + 1 end
    for h = 0, heads - 1 do
      local o = h * hd
      local x0, x1 = x[o + a], x[o + b]
      x[o + a] = x0 * c - x1 * s
      x[o + b] = x0 * s + x1 * c
    end
  end
  return x
end

-- Causal GQA attention of one query token at position pos over cache positions 0 .. pos:
-- query head h reads KV head h // (n_head / n_kv); softmax(q . k * scale) weights the Vs.
function M.attend(q, kc, vc, pos, hp)
  local hd, hdv, group = hp.head_dim, hp.head_dim_v, hp.n_head // hp.n_head_kv
  local scale = 1.0 / sqrt(hd)
  local out = {}
  for h = 0, hp.n_head - 1 do
    local g = h // group
    local qo, ko, vo = h * hd, g * hd, g * hdv
    local s, m = {}, -math.huge
    for p = 0, pos do
      local k, d = kc[p], 0.0
      for i = 1, hd do d = d + q[qo + i] * k[ko + i] end
      s[p] = d * scale
      if s[p] > m then m = s[p] end
    end
    local sum = 0.0
    for p = 0, pos do s[p] = exp(s[p] - m); sum = sum + s[p] end
    for i = 1, hdv do out[h * hdv + i] = 0.0 end
    for p = 0, pos do
      local wgt, v = s[p] / sum, vc[p]
      for i = 1, hdv do out[h * hdv + i] = out[h * hdv + i] + wgt * v[vo + i] end
    end
  end
  return out
end

local function silu(x) return x / (1.0 + exp(-x)) end

-- down(silu(gate x) * up x) of one FFN (or one expert: rows from expert * n_ff on).
local function swiglu_ffn(gate, up, down, xs, n_ff, n_embd, expert)
  local e = expert or 0
  local g = floats(matvec(gate, xs, n_ff, n_embd, e * n_ff))
  local u = floats(matvec(up, xs, n_ff, n_embd, e * n_ff))
  for i = 1, n_ff do g[i] = silu(g[i]) * u[i] end
  return floats(matvec(down, pack(g), n_embd, n_ff, e * n_embd))
end

-- The router of build_moe_ffn (softmax gating, norm_w): probabilities = softmax(logits), the
-- k most probable (ties: the lower index), their probabilities over their sum (the sum held
-- at least 6.103515625e-5, as llama.cpp clamps it). A NaN logit makes every weight NaN.
function M.route(logits, k)
  local m = -math.huge
  for i = 1, #logits do if logits[i] > m then m = logits[i] end end
  local probs, sum = {}, 0.0
  for i = 1, #logits do probs[i] = exp(logits[i] - m); sum = sum + probs[i] end
  for i = 1, #logits do probs[i] = probs[i] / sum end
  local order = {}
  for i = 1, #probs do order[i] = i end
  table.sort(order, function(a, b) -- a total order: a NaN first (as the device top_k ranks it)
    local pa, pb = probs[a], probs[b]
    if (pa ~= pa) ~= (pb ~= pb) then return pa ~= pa end
    if pa == pa and pa ~= pb then return pa > pb end
    return a < b
  end)
  local ids, weights, wsum = {}, {}, 0.0
  for j = 1, k do
    ids[j] = order[j] - 1
    weights[j] = probs[order[j]]
    wsum = wsum + weights[j]
  end
  wsum = math.max(wsum, 6.103515625e-5)
  for j = 1, k do weights[j] = weights[j] / wsum end
  return ids, weights, probs
end

local function moe_ffn(L, hp, xs, tr)
  local logits = floats(matvec(L.ffn_gate_inp, xs, hp.n_expert, hp.n_embd))
  local ids, weights, probs = M.route(logits, hp.n_expert_used)
  local out = {}
  for i = 1, hp.n_embd do out[i] = 0.0 end
  for j, e in ipairs(ids) do
    local y = swiglu_ffn(L.ffn_gate_exps, L.ffn_up_exps, L.ffn_down_exps, xs, hp.n_ff_exp,
      hp.n_embd, e)
    for i = 1, hp.n_embd do out[i] = out[i] + weights[j] * y[i] end
  end
  if tr then tr.router = { logits = logits, probs = probs, ids = ids, weights = weights } end
  return out
end

-- ---- the model ------------------------------------------------------------------------------

-- load(path | xpu.GGUF) -> model: the metadata read and checked, every tensor the metadata
-- implies dequantized to f32 (a missing one, a wrong shape, an unknown key value refused by name).
function M.load(src)
  return load_model(src, dequantize, floats)
end

-- new_state(model [, ctx]) -> state: an empty f32 KV cache for positions 0 .. ctx - 1.
function M.new_state(model, ctx)
  ctx = ctx or model.hp.n_ctx
  if math.type(ctx) ~= "integer" or ctx < 1 then
    error(("reference.new_state: ctx must be a positive integer, not %s"):format(tostring(ctx)), 2)
  end
  local st = { model = model, ctx = ctx, len = 0, k = {}, v = {} }
  for l = 1, model.hp.n_layer do st.k[l], st.v[l] = {}, {} end
  return st
end

local function check_step(model, st, token, pos)
  local hp = model.hp
  if type(st) ~= "table" or st.model ~= model then
    error("reference.step: state was not made by new_state for this model", 3)
  end
  if math.type(token) ~= "integer" or token < 0 or token >= hp.n_vocab then
    error(("reference.step: token %s is outside the vocabulary 0 .. %d"):format(tostring(token),
      hp.n_vocab - 1), 3)
  end
  if math.type(pos) ~= "integer" or pos < 0 or pos >= st.ctx then
    error(("reference.step: pos %s is outside the cache's 0 .. %d"):format(tostring(pos), st.ctx - 1), 3)
  end
  if pos > st.len then
    error(("reference.step: pos %d leaves a gap: the cache holds positions 0 .. %d"):format(pos,
      st.len - 1), 3)
  end
end

local function attention(model, L, l, st, x, pos, tr)
  local hp = model.hp
  local h = M.rms_norm(x, L.attn_norm, hp.eps)
  local hs = pack(h)
  local q = floats(matvec(L.attn_q, hs, hp.n_head * hp.head_dim, hp.n_embd))
  local k = floats(matvec(L.attn_k, hs, hp.n_head_kv * hp.head_dim, hp.n_embd))
  local v = floats(matvec(L.attn_v, hs, hp.n_head_kv * hp.head_dim_v, hp.n_embd))
  if L.attn_q_norm then -- qwen3: RMSNorm over each head of Q and K before RoPE
    for hh = 0, hp.n_head - 1 do M.rms_norm(q, L.attn_q_norm, hp.eps, hh * hp.head_dim, hp.head_dim, q) end
    for hh = 0, hp.n_head_kv - 1 do M.rms_norm(k, L.attn_k_norm, hp.eps, hh * hp.head_dim, hp.head_dim, k) end
  end
  if tr then tr.attn_norm, tr.q_pre, tr.k_pre, tr.v = h, copy(q), copy(k), v end
  local r = { pos = pos, n_rot = hp.n_rot, base = hp.rope_base, freq_scale = hp.rope_scale,
    neox = hp.rope_neox, factors = model.rope_factors }
  M.rope(q, hp.n_head, hp.head_dim, r)
  M.rope(k, hp.n_head_kv, hp.head_dim, r)
  k = floats(pack(k)) -- the cache holds f32, as V (a mat-vec's output) already is
  st.k[l][pos], st.v[l][pos] = k, v
  local a = M.attend(q, st.k[l], st.v[l], pos, hp)
  local o = floats(matvec(L.attn_output, pack(a), hp.n_embd, hp.n_head * hp.head_dim_v))
  if tr then tr.q, tr.k, tr.attn, tr.attn_out = q, k, a, o end
  return o
end

local function ffn(model, L, x, tr)
  local hp = model.hp
  local h = M.rms_norm(x, L.ffn_norm, hp.eps)
  local hs = pack(h)
  local y
  if L.ffn_gate_inp then
    y = moe_ffn(L, hp, hs, tr)
  else
    y = swiglu_ffn(L.ffn_gate, L.ffn_up, L.ffn_down, hs, hp.n_ff, hp.n_embd)
  end
  if tr then tr.ffn_in, tr.ffn_out = h, y end
  return y
end

-- step(model, state, token, pos [, trace]) -> logits (an f32 string of n_vocab values): the
-- token at position pos (0 .. the cache's length: a position already held is overwritten and
-- the later ones dropped). A trace table gets trace.embd, trace.layers[l] (attn_norm, q_pre,
-- k_pre, v, q, k, attn, attn_out, ffn_in, ffn_out, router, out) and trace.norm.
function M.step(model, st, token, pos, trace)
  check_step(model, st, token, pos)
  local hp = model.hp
  for l = 1, hp.n_layer do
    for p = pos + 1, st.len - 1 do st.k[l][p], st.v[l][p] = nil, nil end
  end
  st.len = pos + 1
  local x = floats(model.token_embd, token * hp.n_embd * 4, hp.n_embd)
  if trace then trace.embd, trace.layers = copy(x), {} end
  for l = 1, hp.n_layer do
    local L, tr = model.layers[l], trace and {} or nil
    local o = attention(model, L, l, st, x, pos, tr)
    for i = 1, hp.n_embd do x[i] = x[i] + o[i] end
    local y = ffn(model, L, x, tr)
    for i = 1, hp.n_embd do x[i] = x[i] + y[i] end
    if tr then tr.out = copy(x); trace.layers[l] = tr end
  end
  local h = M.rms_norm(x, model.output_norm, hp.eps)
  if trace then trace.norm = h end
  return matvec(model.output, pack(h), hp.n_vocab, hp.n_embd)
end

-- prefill(model, state, ids) -> logits of the last id: the ids stepped from the cache's end.
function M.prefill(model, st, ids)
  if type(ids) ~= "table" or #ids == 0 then
    error("reference.prefill: ids must be a non-empty list of token ids", 2)
  end
  local logits
  for _, id in ipairs(ids) do logits = M.step(model, st, id, st.len) end
  return logits
end

-- argmax(logits) -> id: the first index of the largest value, a NaN above every number (the
-- order key of the device argmax, docs/ARITHMETIC.md).
function M.argmax(logits)
  local v = type(logits) == "string" and floats(logits) or logits
  local best = 1
  for i = 2, #v do
    local b, x = v[best], v[i]
    if b == b and (x ~= x or x > b) then best = i end
  end
  return best - 1
end

-- greedy(model, prompt_ids, n) -> ids: n tokens after the prompt, each the argmax of the last.
function M.greedy(model, prompt, n)
  if math.type(n) ~= "integer" or n < 0 then
    error(("reference.greedy: n must be an integer >= 0, not %s"):format(tostring(n)), 2)
  end
  local st = M.new_state(model, #prompt + n)
  local logits = M.prefill(model, st, prompt)
  local out = {}
  for i = 1, n do
    out[i] = M.argmax(logits)
    if i < n then logits = M.step(model, st, out[i], st.len) end
  end
  return out
end

return M
