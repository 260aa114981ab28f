-- routes/moe.lua — the mixture-of-experts decode table: the dense rows for attention and
-- shared weights, plus one grouped id row per format for the expert banks, the tail rows (the
-- down bank and the combine in one launch) and the tail-and-norm rows (and the next layer's
-- norm and pack too), and the f32 mat-vec for the router (ffn_gate_inp
-- stays f32 in the GGUF).
local xpu = require "xpu"
local common = require "routes.common"
local moe = require "xpu.layers.moe"

local t = xpu.new_routes "moe"
common.dense_rows(t)
common.id_rows(t)
common.tail_rows(t)
common.tail_norm_rows(t)
common.bind_rows(t)
moe.decode_rows(t)
return t:freeze()
