-- routes/example.lua — a small route table in the style of the integer-wave row: one row
-- with two shape gates (read from the query) and two ready gates (read from the receiver),
-- and a C row whose gates are data. Returns the table, frozen.
local xpu = require "xpu"

local t = xpu.new_routes "example"

t:register {
  name = "q4_0-int-wave", regime = "decode", format = "q4_0", priority = 20,
  needs = { "dot4_i8" }, kernel = "q4_0_q8k_wave", facts = { "in_dim", "out_dim" },
  shape = function(q)
    if q.in_dim % 256 ~= 0 then return "in width not 256-aligned" end
    if q.out_dim % 32 ~= 0 then return "out width not 32-aligned" end
  end,
  ready = function(c)
    if not c.receiver.bound then return "slab is not bound" end
    if not c.receiver.resident then return "resident layout not done" end
  end,
}

t:register_c {
  name = "q8_0-int-wave", regime = "decode", format = "q8_0", priority = 20,
  needs = { "dot4_i8" }, kernel = "q8_0_q8k_wave",
  multiple = { in_dim = 256, out_dim = 32 }, ready_when = { "bound" },
}

return t:freeze()
