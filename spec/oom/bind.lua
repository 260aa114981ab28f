-- bind: routes.llama binds a q4_0 decode call on cpu:0: the query and the call made (their
-- operands the weights and activations, already on the device), then the row that serves it
-- bound. Resolution itself allocates nothing (route_spec proves it); what fails here is the
-- making of the query and call, and their use right after.
local xpu = require "xpu"
local fx = require "spec.support.fixtures"
local llama = require "routes.llama"

local d = assert(xpu.device "cpu:0")
local ROWS, COLS = 8, 256
local W, X = fx.weights("q4_0", ROWS, COLS, 31), fx.activation(COLS, 37)
local y, w, x = d:buffer(4 * ROWS), d:buffer(W), d:buffer(X)

return {
  setup = function() return { q = false, c = false, row = false } end,
  steps = {
    function(s) s.q = xpu.query { format = "q4_0", regime = "decode", in_dim = COLS, out_dim = ROWS } end,
    function(s) s.c = xpu.call { query = s.q, device = d, receiver = { bound = true, resident = true },
                                 operands = { y = y, w = w, x = x } } end,
    function(s) s.row = llama:bind(s.c) end,
  },
  result = function(s) return tostring(s.row.name) .. " " .. tostring(s.row.kernel) end,
}
