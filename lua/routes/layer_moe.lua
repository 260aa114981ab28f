-- routes/layer_moe.lua — the mixture-of-experts layer kernels (matvec_f32 for decode and
-- prefill, moe_combine) as a route table (xpu.layers.moe).
local xpu = require "xpu"
local moe = require "xpu.layers.moe"

return moe.rows(xpu.new_routes "layer_moe"):freeze()
