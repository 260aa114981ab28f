-- models.llama — the dense llama family (llama 3, mistral shapes: GQA, RoPE in normal
-- ordering, RMSNorm, SwiGLU, tied or untied output) as a models.decoder family: its FFN is
-- ffn_norm -> gate and up mat-vecs -> SwiGLU packed to q8_K -> down -> the residual add.
-- Fused (models.decoder's opts.fuse): add + ffn_norm and add + the next attn_norm are one
-- launch each, gate | up one mat-vec.
--   load(path | GGUF, device, opts) -> model (models.decoder's methods: session, ...)
local xpu = require "xpu"
local decoder = require "models.decoder"
local ew = require "xpu.layers.elementwise"
local norm = require "xpu.layers.norm"

local M = {}

local bound, push, L = decoder.bound, decoder.push, decoder.layer_tensor

-- fused_tail: the FFN ends in a plain residual add, which takes the next norm in (fused).
-- fuse_ffn: gate and up read the same activation: one matrix where they share the format.
local FAMILY = {
  arch = "llama", decode_routes = "routes.llama", rope_mode = "normal", qk_norm = false, fused_tail = true,
  mats = { "ffn_gate", "ffn_up", "ffn_down" }, norms = { "attn_norm", "ffn_norm" },
  fuse_ffn = { name = "ffn_gate_up", parts = { "ffn_gate", "ffn_up" } },
}

-- gate | up in one buffer: for one token the fused mat-vec's output.
function FAMILY.activations(m, n, d)
  local ff = m.h.n_ff
  local gu = decoder.f32(d, 2 * n * ff)
  return { gu = gu, gate = gu:slice(0, 4 * n * ff), up = gu:slice(4 * n * ff, 4 * n * ff), hq = decoder.q8k(d, n * ff) }
end

-- The FFN calls of layer i over the activations a of n tokens into list: the norm (fused: with
-- the attention's residual add), gate and up, SwiGLU packed to q8_K, down, the residual add
-- (fused: with the next norm, models.decoder's Session:add_norm).
function FAMILY.ffn_calls(s, list, a, n, i)
  local m, h, d = s.m, s.m.h, s.m.dev
  if m.fused then
    push(list, s:add_norm(a, n, m.w[L(i, "ffn_norm")]), "norms")
  else
    push(list, bound(m.rt.norm, d, norm.query("rms_norm_q8k", n, h.n_embd), { xq = a.xq, x = a.x, weight = m.w[L(i, "ffn_norm")], eps = h.eps }), "norms")
  end
  s:project(list, i, FAMILY.fuse_ffn, { a.gate, a.up }, a.gu, a.xq, n)
  push(list, bound(m.rt.ew, d, ew.glu("swiglu_q8k", "f32", n, h.n_ff), { xq = a.hq, g = a.gate, u = a.up }), "other")
  push(list, s:matmul(L(i, "ffn_down"), a.t, a.hq, n), "matmul")
  if m.fused then
    push(list, s:add_norm(a, n, s:next_norm(i)), "norms")
  else
    push(list, bound(m.rt.ew, d, ew.binary("add", "f32", n, h.n_embd), { out = a.x, a = a.x, b = a.t }), "other")
  end
end

function M.load(path, dev, opts)
  local g = type(path) == "string" and xpu.gguf.open(path) or path
  return decoder.open(g, dev, FAMILY, opts)
end

return M
