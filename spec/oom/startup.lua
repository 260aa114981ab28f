-- startup: what xpulua does for an empty script, in a state of its own (made, the libraries
-- and xpu installed, the chunk run, closed), then the same with `require "xpu"` (the module's
-- process-wide set-up: names, kernels, quant formats).
local T = require("xpu").T

local function fresh(code)
  local ok, err = T.fresh_state(code)
  if not ok then error(err, 0) end
end

return {
  steps = {
    function() fresh("") end,
    function() fresh("local xpu = require 'xpu'; assert(xpu.device 'cpu:0')") end,
  },
  result = function() return "started" end,
}
