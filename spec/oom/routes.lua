-- route registration: rows with shape and ready halves, needs and facts registered on a
-- table, then the table frozen; the result is the table's rows and what it picks.
local xpu = require "xpu"

local FACTS = { "in_dim", "out_dim" }
local n = 0

local function shape(qv) if qv.in_dim % 256 ~= 0 then return "in width not 256-aligned" end end
local function ready(c) return nil end

return {
  setup = function()
    n = n + 1
    return { t = xpu.new_routes("oom" .. n) }
  end,
  steps = {
    function(c) c.t:register { name = "wide", regime = "decode", format = "q4_0", priority = 2,
                               kernel = "copy_bytes", facts = FACTS, shape = shape, ready = ready } end,
    function(c) c.t:register { name = "plain", regime = "decode", format = "q4_0", priority = 1,
                               kernel = "copy_bytes", facts = FACTS, needs = { "f16" } } end,
    function(c) c.t:register { name = "pre", regime = "prefill", format = "q8_0",
                               kernel = "copy_bytes", facts = FACTS } end,
    function(c) c.t:freeze() end,
  },
  result = function(c)
    local names = {}
    for _, r in ipairs(c.t:rows()) do names[#names + 1] = r.name end
    table.sort(names)
    local q = xpu.query { format = "q4_0", regime = "decode", in_dim = 512, out_dim = 8 }
    return ("%d rows %s frozen=%s admissible=%d"):format(#c.t, table.concat(names, ","),
      tostring(c.t.frozen), #c.t:candidates(q))
  end,
}
