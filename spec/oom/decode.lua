-- decode: a q4_0 mat-vec on cpu:0 through routes.llama: the call made, bound, dispatched,
-- waited for and its output read back, a stream of its own made and waited for; the result
-- is the output's bytes.
local xpu = require "xpu"
local fx = require "spec.support.fixtures"
local llama = require "routes.llama"

local d = assert(xpu.device "cpu:0")
local ROWS, COLS = 8, 256
local W, X = fx.weights("q4_0", ROWS, COLS, 31), fx.activation(COLS, 37)

return {
  setup = function() return { y = false, c = false, row = false, got = false, st = false } end,
  steps = {
    function(s) s.st = d:stream() end,
    function(s) s.y = d:buffer(4 * ROWS) end,
    function(s)
      s.c = xpu.call { query = xpu.query { format = "q4_0", regime = "decode", in_dim = COLS, out_dim = ROWS },
                       device = d, receiver = { bound = true, resident = true },
                       operands = { y = s.y, w = d:buffer(W), x = d:buffer(X) } }
    end,
    function(s) s.row = llama:bind(s.c) end,
    function(s) s.row:dispatch(s.c) end,
    function() fx.sync(d) end,
    function(s) s.got = s.y:download() end,
    function(s) s.st:sync(); s.st = false end,
  },
  result = function(s) return s.got end,
}
