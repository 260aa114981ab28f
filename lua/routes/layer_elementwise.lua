-- routes/layer_elementwise.lua — the elementwise layer kernels as a route table (xpu.layers.elementwise).
local xpu = require "xpu"
local ew = require "xpu.layers.elementwise"

return ew.rows(xpu.new_routes "layer_elementwise"):freeze()
