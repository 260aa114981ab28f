-- routes/llama.lua — the dense llama-style decode table: one integer-wave row per format.
local xpu = require "xpu"
local common = require "routes.common"

local t = xpu.new_routes "llama"
common.dense_rows(t)
common.bind_rows(t)
return t:freeze()
