-- models.llama — the dense llama family (llama 3, mistral shapes: GQA, RoPE in normal
-- ordering, RMSNorm, SwiGLU, tied or untied output) as a models.decoder family: its FFN is
-- ffn_norm -> gate and up mat-vecs -> SwiGLU packed to q8_K -> down -> the residual add.
--   load(path | GGUF, device, opts) -> model (models.decoder's methods: session, ...)
local xpu = require "xpu"
local decoder = require "models.decoder"
local ew = require "xpu.layers.elementwise"
local norm = require "xpu.layers.norm"

local M = {}

local bound, run, L = decoder.bound, decoder.run, decoder.layer_tensor

local FAMILY = {
  arch = "llama", decode_routes = "routes.llama", rope_mode = "normal", qk_norm = false,
  mats = { "ffn_gate", "ffn_up", "ffn_down" }, norms = { "attn_norm", "ffn_norm" },
}

function FAMILY.activations(m, n)
  local ff, d = m.h.n_ff, m.dev
  return { gate = decoder.f32(d, n * ff), up = decoder.f32(d, n * ff), hq = decoder.q8k(d, n * ff) }
end

-- The FFN calls of layer i over the activations a of n tokens.
function FAMILY.ffn_calls(s, a, n, i)
  local m, h, d = s.m, s.m.h, s.m.dev
  return {
    norm = bound(m.rt.norm, d, norm.query("rms_norm_q8k", n, h.n_embd), { xq = a.xq, x = a.x, weight = m.w[L(i, "ffn_norm")], eps = h.eps }),
    gate = s:matmul(L(i, "ffn_gate"), a.gate, a.xq, n),
    up = s:matmul(L(i, "ffn_up"), a.up, a.xq, n),
    glu = bound(m.rt.ew, d, ew.glu("swiglu_q8k", "f32", n, h.n_ff), { xq = a.hq, g = a.gate, u = a.up }),
    down = s:matmul(L(i, "ffn_down"), a.t, a.hq, n),
    add = bound(m.rt.ew, d, ew.binary("add", "f32", n, h.n_embd), { out = a.x, a = a.x, b = a.t }),
  }
end

function FAMILY.ffn_run(_, c, sync)
  local t0 = xpu.now()
  run(c.norm); sync("norms", t0); t0 = xpu.now()
  run(c.gate); run(c.up); sync("matmul", t0); t0 = xpu.now()
  run(c.glu); sync("other", t0); t0 = xpu.now()
  run(c.down); sync("matmul", t0); t0 = xpu.now()
  run(c.add); sync("other", t0)
end

M.FAMILY = FAMILY

function M.load(path, dev, opts)
  local g = type(path) == "string" and xpu.gguf.open(path) or path
  return decoder.open(g, dev, FAMILY, opts)
end

return M
