-- routes/attention.lua — attention over the KV cache (attention_decode, attention_prefill) as
-- a route table, a row per head width (xpu.layers.attention).
local xpu = require "xpu"
local attention = require "xpu.layers.attention"

return attention.rows(xpu.new_routes "attention"):freeze()
