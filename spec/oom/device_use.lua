-- device use under driver faults: on an opened device (XPU_FAULT_DEVICE, vulkan:0 by default)
-- a buffer made and uploaded, copy_bytes launched on it, a q4_0 decode through routes.llama
-- bound and dispatched, everything waited for and read back, the buffers released.
local xpu = require "xpu"
local fx = require "spec.support.fixtures"
local llama = require "routes.llama"

local ID = os.getenv("XPU_FAULT_DEVICE") or "vulkan:0"
local d, why = xpu.device(ID)
if not d then error("skipped: no " .. ID .. " (" .. tostring(why) .. ")", 0) end
local N = 4096
local SRC = fx.pattern(N, 7)
local ROWS, COLS = 8, 256
local W, X = fx.weights("q4_0", ROWS, COLS, 31), fx.activation(COLS, 37)

return {
  setup = function() return { src = false, dst = false, y = false, c = false, got = false, y_got = false } end,
  steps = {
    function(s) s.src = d:buffer(N) end,
    function(s) s.src:upload(SRC) end,
    function(s) s.dst = d:buffer(N) end,
    function(s) d:kernel("copy_bytes"):launch(nil, (N + 255) // 256, 256, s.dst, s.src, N) end,
    function() fx.sync(d) end,
    function(s) s.got = s.dst:download() end,
    function(s)
      s.y = d:buffer(4 * ROWS)
      s.c = xpu.call { query = xpu.query { format = "q4_0", regime = "decode", in_dim = COLS, out_dim = ROWS },
                       device = d, receiver = { bound = true, resident = true },
                       operands = { y = s.y, w = d:buffer(W), x = d:buffer(X) } }
    end,
    function(s) llama:bind(s.c):dispatch(s.c) end,
    function() fx.sync(d) end,
    function(s) s.y_got = s.y:download() end,
    function(s) s.src, s.dst, s.y, s.c = nil, nil, nil, nil; collectgarbage(); collectgarbage() end,
  },
  result = function(s)
    assert(s.got == SRC, "copy_bytes moved the wrong bytes")
    return s.y_got
  end,
}
