-- routes/layer_select.lua — the selection kernels (get_rows, argmax, top_k, compact,
-- expert_map) as a route table (xpu.layers.select).
local xpu = require "xpu"
local select_rows = require "xpu.layers.select"

return select_rows.rows(xpu.new_routes "layer_select"):freeze()
