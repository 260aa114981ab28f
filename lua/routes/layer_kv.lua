-- routes/layer_kv.lua — the KV cache write (kv_write) as a route table (xpu.layers.kv).
local xpu = require "xpu"
local kv = require "xpu.layers.kv"

return kv.rows(xpu.new_routes "layer_kv"):freeze()
