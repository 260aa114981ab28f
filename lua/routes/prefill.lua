-- routes/prefill.lua — the prefill GEMMs over resident weights as a route table
-- (xpu.layers.gemm): gemm.<fmt>.t64 / .t128 for a weight matrix, gemm_id.<fmt>.t64 / .t128
-- for an expert bank read through expert_map's lists; matvec_f32.prefill for an f32 weight
-- (the router's ffn_gate_inp), a wave a (token, row) pair.
local xpu = require "xpu"
local gemm = require "xpu.layers.gemm"
local moe = require "xpu.layers.moe"

return moe.prefill_rows(gemm.rows(xpu.new_routes "prefill")):freeze()
