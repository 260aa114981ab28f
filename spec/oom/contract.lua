-- contract load: contracts/shape-ops.md read, parsed (libyaml), checked and built into contracts.
local xpu = require "xpu"

return {
  setup = function() return { list = false } end,
  steps = {
    function(c) c.list = xpu.contracts.load("contracts/shape-ops.md") end,
  },
  result = function(c)
    local names = {}
    for i, k in ipairs(c.list) do names[i] = tostring(k.kernel or k.name or i) end
    return #c.list .. " contracts: " .. table.concat(names, ",")
  end,
}
