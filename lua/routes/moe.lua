-- routes/moe.lua — the mixture-of-experts decode table: the dense rows for attention and
-- shared weights, plus one grouped id row per format for the expert banks.
local xpu = require "xpu"
local common = require "routes.common"

local t = xpu.new_routes "moe"
common.dense_rows(t)
common.id_rows(t)
common.bind_rows(t)
return t:freeze()
