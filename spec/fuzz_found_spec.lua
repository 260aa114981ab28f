-- fuzz_found_spec.lua — what the fuzz targets (spec/fuzz/, `make fuzz`) and the review of
-- their areas found, each kept as a spec: the minimized inputs live in spec/fixtures/fuzz/
-- (named <target>-<what>), and each is fed back through the same code path the target drove.
local xpu = require "xpu"

local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read "a"
  f:close()
  return s
end

-- A row whose shape half asks its own table again; `how` is the call it makes.
local function reentrant(how)
  local t = xpu.new_routes "reenter"
  local cpu = xpu.device "cpu:0"
  local inner
  local q
  t:register { name = "self", kernel = "copy_bytes", regime = "decode", format = "q4_0", facts = { "in_dim" },
               shape = function()
                 local ok, err = pcall(how, t, q, cpu)
                 inner = inner or (ok and "no error" or tostring(err))
               end }
  q = xpu.query { format = "q4_0", regime = "decode", in_dim = 256 }
  return t, q, cpu, function() return inner end
end

describe("route tables refuse re-entry from a row's own half", function()
  local call = function(q, cpu) return xpu.call { query = q, device = cpu, receiver = {} } end
  local cases = {
    { "pick", function(t, q, cpu) return t:pick(call(q, cpu)) end },
    { "why_not_picked", function(t, q, cpu) return t:why_not_picked(call(q, cpu)) end },
    { "audit", function(t, q) return t:audit { q } end },
    { "admissible", function(t, q, cpu) return t:admissible(q, cpu) end },
    { "register", function(t) return t:register { name = "late", kernel = "copy_bytes", regime = "decode", format = "q4_0" } end },
  }
  for _, outer in ipairs { "pick", "why_not_picked", "audit" } do
    for _, c in ipairs(cases) do
      it(("t:%s inside t:%s is refused by name, once, and the outer call completes"):format(c[1], outer), function()
        local t, q, cpu, inner = reentrant(c[2])
        if outer == "pick" then t:pick(call(q, cpu))
        elseif outer == "why_not_picked" then tostring(t:why_not_picked(call(q, cpu)))
        else t:audit { q } end
        local err = inner()
        assert.truthy(err:find(("route table 'reenter': t:%s called from inside its own t:%s"):format(c[1], outer), 1, true), err)
        -- the table works again once the outer call has returned
        assert.equal("self", t:admissible(q, cpu).name)
        assert.equal(1, #t:rows())
      end)
    end
  end

  it("the script fuzz_route made that hung in t:audit now ends at once, every re-entry refused", function()
    local env = setmetatable({}, { __index = _G })
    local chunk = assert(loadfile("spec/fixtures/fuzz/route-reenter-audit.lua", "t", env))
    local t0 = os.clock()
    chunk()
    assert.is_true(os.clock() - t0 < 2, "the script took " .. (os.clock() - t0) .. " s")
    -- its table is whole afterwards: the rows it registered outside any half are there
    assert.is_true(#env.T:rows() >= 2)
  end)
end)
