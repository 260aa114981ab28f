-- models.qwen3moe — the qwen3 mixture-of-experts family (128 experts, 8 used, GQA with head
-- dim 128, RMSNorm over each head of Q and K, RoPE in neox ordering) as a models.decoder
-- family. Its FFN: ffn_norm -> the router (ffn_gate_inp, f32, over the normed f32 row) ->
-- top_k with the k weights softmax-normalised -> the gate and up expert banks through the
-- selection (decode: the grouped id mat-vec, one launch a bank; prefill: expert_map's lists and
-- the grouped GEMM) -> SwiGLU packed to q8_K -> the down bank per (token, expert) pair -> the
-- weighted sum of the used experts' rows added to the residual (moe_combine).
--   load(path | GGUF, device, opts) -> model (models.decoder's methods: session, ...)
local xpu = require "xpu"
local decoder = require "models.decoder"
local ew = require "xpu.layers.elementwise"
local norm = require "xpu.layers.norm"
local select = require "xpu.layers.select"
local gemm = require "xpu.layers.gemm"
local moe = require "xpu.layers.moe"
local common = require "routes.common"

local M = {}

local bound, push, L = decoder.bound, decoder.push, decoder.layer_tensor
local f32, q8k = decoder.f32, decoder.q8k

-- fused_tail: the FFN ends with the next layer's norm (fused: for one token in the tail's
-- own launch, for a batch after the combine).
local FAMILY = {
  arch = "qwen3moe", decode_routes = "routes.moe", rope_mode = "neox", qk_norm = true, fused_tail = true,
  mats = { "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps" },
  norms = { "attn_norm", "ffn_norm", "attn_q_norm", "attn_k_norm", "ffn_gate_inp" },
  routes = { moe = "routes.layer_moe" },
}

function FAMILY.activations(m, n, d)
  local h = m.h
  local pairs, ff = n * h.n_expert_used, h.n_ff_exp
  local a = {
    xn = f32(d, n * h.n_embd), router = f32(d, n * h.n_expert), sel = d:buffer(4 * pairs), sel_w = f32(d, pairs),
    gate = f32(d, pairs * ff), up = f32(d, pairs * ff), hq = q8k(d, pairs * ff), down = f32(d, pairs * h.n_embd),
  }
  if n > 1 then
    a.counts, a.offsets = d:buffer(4 * h.n_expert), d:buffer(4 * h.n_expert)
    a.list_tokens, a.list_slots = d:buffer(4 * pairs), d:buffer(4 * pairs)
  end
  return a
end

-- The expert bank `name` of layer i over x into y: the grouped id mat-vec (one token) or the
-- grouped GEMM over expert_map's lists (a batch); per_slot: x holds a row per (token, expert).
local function bank(s, a, n, i, name, y, x, per_slot)
  local m, h = s.m, s.m.h
  local w = m.fmt[L(i, name)]
  if n == 1 then
    local q = xpu.query { regime = "decode", format = w.format, in_dim = w.cols, out_dim = w.rows, experts = w.experts,
                          used = h.n_expert_used, x_row_blocks = per_slot and w.cols // 256 or nil }
    return bound(m.rt.decode, m.dev, q, { y = y, slab = m.w[w.name], x = x, sel = a.sel })
  end
  return bound(m.rt.prefill, m.dev, gemm.id_query(w.format, n, w.rows, w.cols, w.experts, h.n_expert_used, per_slot and 1 or 0,
    gemm.partition(m.dev, w.format)),
    { y = y, slab = m.w[w.name], x = x, counts = a.counts, offsets = a.offsets, list_tokens = a.list_tokens,
      list_slots = a.list_slots })
end

-- The FFN calls of layer i over the activations a of n tokens into list. Fused (models.decoder's
-- opts.fuse): the attention's residual add, ffn_norm's q8_K pack and the router's f32 normed row
-- are one launch (add_rms_norm_q8k_f32); for one token the down bank, the combine and the next
-- layer's norm and pack (its attn_norm, or the output norm) are one (routes.common's
-- tail-and-norm rows), which adds into the residual itself; for a batch the next norm follows
-- the combine.
function FAMILY.ffn_calls(s, list, a, n, i)
  local m, h, d = s.m, s.m.h, s.m.dev
  local k = h.n_expert_used
  if m.fused then
    push(list, s:add_norm(a, n, m.w[L(i, "ffn_norm")], a.xn), "norms")
  else
    push(list, bound(m.rt.norm, d, norm.query("rms_norm_q8k", n, h.n_embd), { xq = a.xq, x = a.x, weight = m.w[L(i, "ffn_norm")], eps = h.eps }), "norms")
    push(list, bound(m.rt.norm, d, norm.query("rms_norm", n, h.n_embd), { out = a.xn, x = a.x, weight = m.w[L(i, "ffn_norm")], eps = h.eps }), "norms")
  end
  push(list, bound(m.rt.moe, d, moe.matvec_query(n, h.n_expert, h.n_embd), { y = a.router, w = m.w[L(i, "ffn_gate_inp")], x = a.xn }), "matmul")
  push(list, bound(m.rt.select, d, select.top_k_query(n, h.n_expert, k, "k"), { ids = a.sel, weights = a.sel_w, x = a.router }), "other")
  if n > 1 then
    push(list, bound(m.rt.select, d, select.expert_map_query(n, k, h.n_expert),
      { counts = a.counts, offsets = a.offsets, tokens = a.list_tokens, slots = a.list_slots, ids = a.sel }), "other")
  end
  push(list, bank(s, a, n, i, "ffn_gate_exps", a.gate, a.xq, false), "matmul")
  push(list, bank(s, a, n, i, "ffn_up_exps", a.up, a.xq, false), "matmul")
  push(list, bound(m.rt.ew, d, ew.glu("swiglu_q8k", "f32", n * k, h.n_ff_exp), { xq = a.hq, g = a.gate, u = a.up }), "other")
  if m.fused and n == 1 then
    local down = L(i, "ffn_down_exps")
    -- the tail's count of finished groups, 0 between launches: the session's, one for every layer
    s.tail_count = s.tail_count or d:buffer(string.pack("<I4", 0))
    return push(list, bound(m.rt.decode, d, common.tail_norm_query(m.fmt[down], k),
      { y = a.x, slab = m.w[down], x = a.hq, sel = a.sel, w = a.sel_w, xq = a.xq, weight = s:next_norm(i),
        count = s.tail_count, eps = h.eps }), "matmul")
  end
  push(list, bank(s, a, n, i, "ffn_down_exps", a.down, a.hq, true), "matmul")
  push(list, bound(m.rt.moe, d, moe.combine_query(n, k, h.n_embd), { out = a.x, x = a.x, y = a.down, w = a.sel_w }), "other")
  if m.fused then
    push(list, bound(m.rt.norm, d, norm.query("rms_norm_q8k", n, h.n_embd),
      { xq = a.xq, x = a.x, weight = s:next_norm(i), eps = h.eps }), "norms")
  end
end

-- The router of every layer: an f32 [n_expert x n_embd] matrix, served by routes.layer_moe's
-- matvec_f32 rows at one token and at a batch; a router no row serves is an error naming it.
-- Fused, each down bank's tail-and-norm row too.
function FAMILY.audit(m)
  local h = m.h
  for i = 0, h.n_layer - 1 do
    local down = m.fmt[L(i, "ffn_down_exps")]
    if m.fused then
      local c = xpu.call { query = common.tail_norm_query(down, h.n_expert_used), device = m.dev,
                           receiver = { bound = true, resident = true } }
      if not m.rt.decode:pick(c) then
        error(("%s: tensor '%s' (%s): no moe_tail_norm row serves it on %s: %s"):format(m.g.path, down.name,
          down.format, m.dev.id, tostring(m.rt.decode:why_not_picked(c))), 3)
      end
    end
    local t = decoder.tensor_or_error(m.g, L(i, "ffn_gate_inp"))
    if t.type ~= "f32" or t.dims[1] ~= h.n_embd or t.dims[2] ~= h.n_expert then
      error(("%s: tensor '%s' is %s [%s], not f32 [%d, %d]"):format(m.g.path, t.name, t.type, table.concat(t.dims, ", "),
        h.n_embd, h.n_expert), 3)
    end
    for _, n in ipairs { 1, 64 } do
      local c = xpu.call { query = moe.matvec_query(n, h.n_expert, h.n_embd), device = m.dev }
      if not m.rt.moe:pick(c) then
        error(("%s: tensor '%s' (f32): no router row serves it on %s: %s"):format(m.g.path, t.name, m.dev.id,
          tostring(m.rt.moe:why_not_picked(c))), 3)
      end
    end
  end
end


function M.load(path, dev, opts)
  local g = type(path) == "string" and xpu.gguf.open(path) or path
  return decoder.open(g, dev, FAMILY, opts)
end

return M
