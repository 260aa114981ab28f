-- routes/workgroup.lua — the workgroup primitives' test kernels as a route table (xpu.workgroup).
local xpu = require "xpu"
local wg = require "xpu.workgroup"

return wg.rows(xpu.new_routes "workgroup"):freeze()
