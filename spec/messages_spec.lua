-- messages_spec.lua — what the route table says to a person: misspelt names answered with the
-- closest valid ones, refusals that name the op asked for with every gate hit (untruncated,
-- one table per op), one-line registration errors naming where, queries of any size, and
-- listings in a defined order.
local xpu = require "xpu"

local cpu = xpu.device "cpu:0"
local FILE = "contracts/shape-ops.md"

local function errmsg(f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(err)
end

-- One route table per op, as scripts/contracts.lua builds them.
local function op_tables(contracts)
  local tables = {}
  for _, c in ipairs(contracts) do
    tables[c.kernel] = tables[c.kernel] or xpu.new_routes(c.kernel)
    c:register(tables[c.kernel], c.kernel)
  end
  return tables
end

local contracts = xpu.contracts.load(FILE)
local by_op = op_tables(contracts)

describe("query size", function()
  it("holds every fact the caller gives: a rank-5 pad routes", function()
    local spec = { format = "f32", regime = "pad", rank = 5, mode_tag = 0 }
    for j = 0, 4 do
      spec["dim" .. j] = 2
      spec[("padding%d.0"):format(j)] = 1
      spec[("padding%d.1"):format(j)] = 1
    end
    local q = xpu.query(spec)
    assert.equal(5, q.rank)
    assert.equal(1, q["padding4.1"])
    local row = by_op.pad:admissible(q, cpu)
    assert.truthy(row, tostring(by_op.pad:why_not_admissible(q, cpu)))
    assert.equal("pad.cpu.f32", row.name)
    assert.equal("pad.cpu.f32", by_op.pad:pick(xpu.call { query = q, device = cpu }).name)
  end)

  it("holds a call's receiver of any size, read fresh at every pick", function()
    local t = xpu.new_routes "big-receiver"
    local flags = {}
    for i = 33, 40 do flags[#flags + 1] = "flag" .. i end
    t:register_c { name = "flagged", regime = "decode", format = "q4_0", kernel = "copy_bytes", ready_when = flags }
    local receiver, named = {}, { format = "q4_0", regime = "decode" }
    for i = 1, 39 do receiver["flag" .. i] = true; named["flag" .. i] = 1 end
    xpu.query(named) -- every flag is a known name, so each one takes a slot
    local c = xpu.call { query = xpu.query { format = "q4_0", regime = "decode" }, device = cpu, receiver = receiver }
    assert.is_nil(t:pick(c))
    assert.equal("receiver is not flag40", t:why_not_picked(c).gate)
    receiver.flag40 = true
    assert.equal("flagged", t:pick(c).name)
  end)

  it("keeps the facts of recorded picks after the query itself is gone", function()
    local t = xpu.new_routes "records-live"
    t:register { name = "any", regime = "decode", format = "q4_0", kernel = "copy_bytes" }
    do
      local spec = { format = "q4_0", regime = "decode" }
      for i = 1, 20 do spec["fact" .. i] = i end
      t:pick(xpu.call { query = xpu.query(spec), device = cpu })
    end
    collectgarbage("collect")
    collectgarbage("collect")
    local rec = t:records()[1]
    assert.equal("any", rec.row)
    assert.equal(20, rec.fact20)
  end)
end)
