-- routes/prefill.lua — the prefill GEMMs over resident weights as a route table
-- (xpu.layers.gemm): gemm.<fmt>.t64 / .t128 for a weight matrix, gemm_id.<fmt>.t64 / .t128
-- for an expert bank read through expert_map's lists.
local xpu = require "xpu"
local gemm = require "xpu.layers.gemm"

return gemm.rows(xpu.new_routes "prefill"):freeze()
