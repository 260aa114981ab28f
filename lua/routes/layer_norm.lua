-- routes/layer_norm.lua — the row-normalisation kernels as a route table (xpu.layers.norm).
local xpu = require "xpu"
local norm = require "xpu.layers.norm"

return norm.rows(xpu.new_routes "layer_norm"):freeze()
