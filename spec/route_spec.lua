-- route_spec.lua — the route table of seed 000: clauses, the furthest-row rule, priority,
-- the audit, needs, ready, pins, records, bind, zero-allocation resolution, bad declarations.
local xpu = require "xpu"

local cpu = xpu.device "cpu:0"

-- A capability a device could report (wave<N>) but none has (no subgroup is 7 lanes wide),
-- so a row needing it is refused as Unsupported everywhere.
local MISSING = "wave7"

-- The facts these rows' halves read: declared, so queries may carry them.
local FACTS = { "in_dim", "out_dim" }

local function row(t, spec)
  spec.kernel = spec.kernel or "copy_bytes"
  spec.facts = spec.facts or FACTS
  return t:register(spec)
end

local function q(format, regime, facts)
  local spec = { format = format, regime = regime }
  for k, v in pairs(facts or {}) do spec[k] = v end
  return xpu.query(spec)
end

local function call(query, receiver)
  return xpu.call { query = query, device = cpu, receiver = receiver or {} }
end

local function aligned(q)
  if q.in_dim % 256 ~= 0 then return "in width not 256-aligned" end
  if q.out_dim % 32 ~= 0 then return "out width not 32-aligned" end
end

local function bound(c)
  if not c.receiver.bound then return "slab is not bound" end
  if not c.receiver.widened then return "slab is not widened" end
end

describe("route table", function()
  it("answers Empty for a table with no rows", function()
    local t = xpu.new_routes "empty"
    local r = t:why_not_admissible(q("q4_0", "decode"))
    assert.equal("Empty", r.clause)
    assert.is_nil(r.row)
    assert.matches("has no rows", tostring(r))
  end)

  it("refuses at Format, Regime, Shape, Unsupported and Ready, each with the row's own words", function()
    local t = xpu.new_routes "clauses"
    row(t, { name = "wave", regime = "decode", format = "q4_0", shape = aligned, ready = bound })
    local function clause(query, receiver)
      local r = t:why_not_picked(call(query, receiver))
      return r.clause, r.gate, r.row
    end
    assert.same({ "Format", "serves q4_0", "wave" }, { clause(q("q8_0", "decode", { in_dim = 256, out_dim = 32 })) })
    assert.same({ "Regime", "serves decode", "wave" }, { clause(q("q4_0", "prefill", { in_dim = 256, out_dim = 32 })) })
    assert.same({ "Shape", "in width not 256-aligned", "wave" }, { clause(q("q4_0", "decode", { in_dim = 100, out_dim = 32 })) })
    assert.same({ "Shape", "out width not 32-aligned", "wave" }, { clause(q("q4_0", "decode", { in_dim = 256, out_dim = 33 })) })
    assert.same({ "Ready", "slab is not bound", "wave" }, { clause(q("q4_0", "decode", { in_dim = 256, out_dim = 32 })) })
    assert.same({ "Ready", "slab is not widened", "wave" },
      { clause(q("q4_0", "decode", { in_dim = 256, out_dim = 32 }), { bound = true }) })
    local ok = q("q4_0", "decode", { in_dim = 256, out_dim = 32 })
    assert.equal("wave", t:pick(call(ok, { bound = true, widened = true })).name)
    assert.is_nil(t:pick(call(ok, { bound = true })))
    -- admissible is the static half: the slab state does not reach it
    assert.equal("wave", t:admissible(ok, cpu).name)
  end)

  it("refuses a row whose capability the device lacks as Unsupported, naming it and its index", function()
    local t = xpu.new_routes "needs"
    row(t, { name = "needy", regime = "decode", format = "q4_0", needs = { "code.host", MISSING } })
    local query = q("q4_0", "decode")
    assert.is_nil(t:admissible(query, cpu))
    local r = t:why_not_admissible(query, cpu)
    assert.equal("Unsupported", r.clause)
    assert.equal(2, r.need_index)
    assert.matches(MISSING, r.gate, 1, true)
    assert.matches("needs%[2%]", tostring(r))
  end)

  it("names the row that got furthest under every registration order", function()
    local specs = {
      { name = "a-format", regime = "decode", format = "q8_0" },
      { name = "b-regime", regime = "prefill", format = "q4_0" },
      { name = "c-shape", regime = "decode", format = "q4_0", shape = function() return "never fits" end },
      { name = "d-needs", regime = "decode", format = "q4_0", needs = { MISSING } },
    }
    local function permutations(list, n, out)
      n = n or #list
      out = out or {}
      if n <= 1 then out[#out + 1] = { table.unpack(list) } return out end
      for i = 1, n do
        list[i], list[n] = list[n], list[i]
        permutations(list, n - 1, out)
        list[i], list[n] = list[n], list[i]
      end
      return out
    end
    local orders = permutations { 1, 2, 3, 4 }
    assert.equal(24, #orders)
    for _, order in ipairs(orders) do
      local t = xpu.new_routes "furthest"
      for _, i in ipairs(order) do
        local s = {}
        for k, v in pairs(specs[i]) do s[k] = v end
        row(t, s)
      end
      local r = t:why_not_picked(call(q("q4_0", "decode")))
      assert.equal("d-needs", r.row, "order " .. table.concat(order, ","))
      assert.equal("Unsupported", r.clause)
      assert.equal("d-needs", t:why_not_admissible(q("q4_0", "decode"), cpu).row)
    end
  end)

  it("orders candidates by priority, ties by name, never by registration order", function()
    for _, order in ipairs { { "zeta", "alpha", "mid" }, { "mid", "zeta", "alpha" } } do
      local t = xpu.new_routes "prio"
      local prio = { zeta = 10, alpha = 10, mid = 20 }
      for _, name in ipairs(order) do
        row(t, { name = name, regime = "decode", format = "q4_0", priority = prio[name] })
      end
      local names = {}
      for _, r in ipairs(t:candidates(q("q4_0", "decode"), cpu)) do names[#names + 1] = r.name end
      assert.same({ "mid", "alpha", "zeta" }, names)
      assert.equal("mid", t:pick(call(q("q4_0", "decode"))).name)
    end
  end)

  it("falls to the next row when the best one is not ready, and says which refused when none is", function()
    local t = xpu.new_routes "next"
    row(t, { name = "fast", regime = "decode", format = "q4_0", priority = 20, ready = bound })
    row(t, { name = "plain", regime = "decode", format = "q4_0", priority = 10,
             ready = function(c) if not c.receiver.bound then return "slab is not bound" end end })
    assert.equal("plain", t:pick(call(q("q4_0", "decode"), { bound = true })).name)
    local r = t:why_not_picked(call(q("q4_0", "decode"), {}))
    assert.equal("Ready", r.clause)
    assert.equal("fast", r.row) -- same clause: the earlier row in table order
  end)

  it("audits the declared half: unserved, never firing, shadowed, needs reported not ruled", function()
    local t = xpu.new_routes "audit"
    row(t, { name = "q4-wave", regime = "decode", format = "q4_0", priority = 20, shape = aligned,
             needs = { MISSING } })
    row(t, { name = "q4-plain", regime = "decode", format = "q4_0", priority = 10 })
    row(t, { name = "q6-wave", regime = "decode", format = "q6_K", shape = aligned })
    row(t, { name = "orphan", regime = "prefill", format = "iq4_nl" })
    local qs = {
      q("q4_0", "decode", { in_dim = 4096, out_dim = 4096 }), -- served by both q4 rows: shadowed
      q("q4_0", "decode", { in_dim = 100, out_dim = 4096 }),  -- only the plain row
      q("q6_K", "decode", { in_dim = 4096, out_dim = 4096 }),
      q("q5_K", "decode", { in_dim = 4096, out_dim = 4096 }), -- no row serves q5_K
    }
    local a = t:audit(qs)
    assert.equal(1, a:unserved_count())
    assert.equal(1, a:never_firing_count())
    assert.is_true(a:shadowed(1))
    assert.is_false(a:shadowed(2))
    assert.equal(2, a:served(1))
    assert.equal(0, a:served(4))
    -- the row needing a missing capability still serves its format in the audit
    local ri
    for i = 1, a.nrows do if a:row_name(i) == "q4-wave" then ri = i end end
    assert.equal(1, a:needs_count(ri))
    assert.equal(MISSING, a:need_at(ri, 1))
    assert.equal(1, a:fires(ri))
    local clause, gate = a:clause(2, ri)
    assert.equal("Shape", clause)
    assert.equal("in width not 256-aligned", gate)
    -- and the live device refuses it at pick
    assert.equal("q4-plain", t:pick(call(qs[1])).name)
  end)

  it("audit_row gives the fire / no-fire pair for one row", function()
    local t = xpu.new_routes "auditrow"
    row(t, { name = "wave", regime = "decode", format = "q4_0", shape = aligned })
    local qs = {
      q("q4_0", "decode", { in_dim = 4096, out_dim = 4096 }),
      q("q4_0", "decode", { in_dim = 4000, out_dim = 4096 }),
      q("q4_0", "decode", { in_dim = 4096, out_dim = 4001 }),
    }
    local fires, refuses = t:audit_row("wave", qs)
    assert.equal(1, fires)
    assert.equal(2, refuses)
  end)

  it("hands the shape half a read-only query that cannot reach the call", function()
    local t = xpu.new_routes "readonly"
    local kept, wrote, saw_receiver
    row(t, { name = "peek", regime = "decode", format = "q4_0", shape = function(query)
      kept = query
      wrote = pcall(function() query.in_dim = 1 end)
      saw_receiver = query.receiver
      return nil
    end })
    assert.truthy(t:pick(call(q("q4_0", "decode", { in_dim = 256 }), { bound = true })))
    assert.is_false(wrote)
    assert.is_nil(saw_receiver)
    local ok, err = pcall(function() return kept.in_dim end)
    assert.is_false(ok)
    assert.matches("after its shape call returned", err)
  end)

  it("turns a half that raises or answers a boolean into an error naming the row", function()
    local t = xpu.new_routes "bad-halves"
    row(t, { name = "raises", regime = "decode", format = "q4_0", shape = function() error("boom") end })
    local ok, err = pcall(t.pick, t, call(q("q4_0", "decode")))
    assert.is_false(ok)
    assert.matches("shape half of row 'raises' raised: .*boom", err)
    local t2 = xpu.new_routes "bool-half"
    row(t2, { name = "boolean", regime = "decode", format = "q4_0", ready = function() return false end })
    ok, err = pcall(t2.pick, t2, call(q("q4_0", "decode")))
    assert.is_false(ok)
    assert.matches("ready half of row 'boolean' returned a boolean", err)
  end)

  it("binds or fails with the refusal line: no silent fallback", function()
    local t = xpu.new_routes "bind"
    row(t, { name = "wave", regime = "decode", format = "q4_0", shape = aligned })
    local ok, err = pcall(t.bind, t, call(q("q4_0", "decode", { in_dim = 100, out_dim = 32 })))
    assert.is_false(ok)
    assert.matches("route table 'bind': no row admits q4_0 decode on cpu:0; row 'wave' got furthest, refused at Shape: in width not 256%-aligned; facts {in_dim=100, out_dim=32}", err)
  end)

  it("records every pick: which row, for which query, on which device", function()
    local t = xpu.new_routes "records"
    row(t, { name = "wave", regime = "decode", format = "q4_0" })
    local c = call(q("q4_0", "decode", { in_dim = 512 }))
    for _ = 1, 3 do t:pick(c) end
    local recs = t:records()
    assert.equal(3, #recs)
    assert.same({ row = "wave", device = "cpu:0", format = "q4_0", regime = "decode", in_dim = 512 }, recs[3])
    assert.equal(3, t:row("wave").picks)
  end)

  it("pins a row for a query pattern, and refuses with the pinned row's own words", function()
    local t = xpu.new_routes "pins"
    row(t, { name = "best", regime = "decode", format = "q4_0", priority = 20 })
    row(t, { name = "other", regime = "decode", format = "q4_0", priority = 10, ready = bound })
    local c = call(q("q4_0", "decode", { in_dim = 256 }), { bound = true, widened = true })
    assert.equal("best", t:pick(c).name)
    t:pin("other", { format = "q4_0", in_dim = 256 })
    assert.equal("other", t:pick(c).name)
    -- the pattern does not match another width: normal choice
    assert.equal("best", t:pick(call(q("q4_0", "decode", { in_dim = 512 }))).name)
    -- a pinned row that is not ready: no fallback to 'best'
    local c2 = call(q("q4_0", "decode", { in_dim = 256 }), { bound = true })
    assert.is_nil(t:pick(c2))
    local r = t:why_not_picked(c2)
    assert.is_true(r.pinned)
    assert.equal("other", r.row)
    assert.equal("slab is not widened", r.gate)
    t:unpin("other")
    assert.equal("best", t:pick(c2).name)
    local ok, err = pcall(t.pin, t, "best", { format = "q8_0" })
    assert.is_false(ok)
    assert.matches("refused at Format", err)
    ok, err = pcall(t.pin, t, "nobody")
    assert.matches("no row named 'nobody'", err)
  end)

  it("dispatches a stored row as the launch of its one kernel", function()
    local t = xpu.new_routes "dispatch"
    local r = row(t, { name = "copy", regime = "bind", format = "i8", kernel = "copy_bytes" })
    local src = cpu:buffer(string.rep("xpulua!", 100))
    local dst = cpu:buffer(#src)
    dst:upload(string.rep("\0", #src))
    local c = xpu.call { query = q("i8", "bind"), device = cpu, operands = { dst = dst, src = src } }
    local before = cpu:kernel("copy_bytes").launches
    assert.equal(r, t:bind(c))
    r:dispatch(c)
    cpu:default_stream():sync()
    assert.equal(src:download(), dst:download())
    assert.equal(before + 1, cpu:kernel("copy_bytes").launches)
    assert.equal(1, r.dispatches)
    local bad = xpu.call { query = q("i8", "bind"), device = cpu, operands = { dst = dst } }
    local ok, err = pcall(r.dispatch, r, bad)
    assert.is_false(ok)
    assert.matches("route 'copy' %(cpu:0%): kernel 'copy_bytes' needs a buffer operand 'src'", err)
  end)
end)

describe("row declarations", function()
  local function refused(spec, pattern)
    local t = xpu.new_routes "decl"
    local ok, err = pcall(t.register, t, spec)
    assert.is_false(ok, "accepted: " .. pattern)
    assert.matches(pattern, err)
    assert.equal(0, #t)
  end

  it("refuses unknown keys and wrong types by name", function()
    refused({ name = "r", regime = "decode", format = "q4_0", kernel = "copy_bytes", speed = 1 },
      "row 'r': unknown key 'speed'")
    refused({ name = "r", regime = "decode", format = "q4_0", kernel = "copy_bytes", priority = "high" },
      "row 'r': key 'priority' must be an integer, got string")
    refused({ name = "r", regime = "decode", format = "q4_0", kernel = "copy_bytes", shape = "x" },
      "row 'r': key 'shape' must be a function, got string")
    refused({ name = "r", regime = "decode", format = "q4_0", kernel = "copy_bytes", needs = { 7 } },
      "row 'r': needs%[1%] must be a capability name")
    refused({ name = "r", regime = "decode", format = "q4_0", kernel = "no_such_kernel" },
      "row 'r': kernel 'no_such_kernel' is not in the kernel table")
    refused({ regime = "decode", format = "q4_0", kernel = "copy_bytes" }, "key 'name' must be a string")
    refused({ name = "r", format = "q4_0", kernel = "copy_bytes" }, "row 'r': key 'regime' must be a name")
  end)

  it("refuses a duplicate name and anything after freeze", function()
    local t = xpu.new_routes "frozen"
    row(t, { name = "r", regime = "decode", format = "q4_0" })
    local ok, err = pcall(row, t, { name = "r", regime = "decode", format = "q4_0" })
    assert.matches("already has a row named 'r'", err)
    t:freeze()
    assert.is_true(t.frozen)
    ok, err = pcall(row, t, { name = "s", regime = "decode", format = "q4_0" })
    assert.is_false(ok)
    assert.matches("frozen", err)
    assert.equal(1, #t)
  end)

  it("leaves the table as it was when an allocation fails during registration", function()
    local t = xpu.new_routes "faults"
    local failures, successes = 0, 0
    for n = 0, 6 do
      local before = #t
      xpu.T.fail_after(n)
      local ok, err = pcall(row, t, { name = "r" .. n, regime = "decode", format = "q4_0",
                                      shape = function() end, ready = function() end })
      xpu.T.fail_after(-1)
      if ok then
        successes = successes + 1
        assert.equal(before + 1, #t)
      else
        failures = failures + 1
        assert.matches("injected fault", err)
        assert.equal(before, #t)
        assert.is_nil(t:row("r" .. n))
      end
    end
    assert.is_true(failures > 0, "no injected fault reached the registration path")
    assert.is_true(successes > 0)
  end)

  it("refuses a bad query or call by key", function()
    local ok, err = pcall(xpu.query, { format = "q4_0", regime = "decode", in_dim = 1.5 })
    assert.matches("fact 'in_dim' must be an integer or a boolean, got number", err)
    ok, err = pcall(xpu.query, { regime = "decode" })
    assert.matches("'format' is required", err)
    ok, err = pcall(xpu.call, { query = q("q4_0", "decode"), recever = {} })
    assert.matches("unknown key 'recever'", err)
  end)

  it("C rows gate on query multiples and receiver flags with their own words", function()
    local t = xpu.new_routes "crows"
    t:register_c { name = "c-wave", regime = "decode", format = "q4_0", kernel = "copy_bytes",
                   multiple = { in_dim = 256 }, ready_when = { "bound" } }
    local r = t:why_not_picked(call(q("q4_0", "decode", { in_dim = 100 })))
    assert.equal("in_dim not a multiple of 256", r.gate)
    r = t:why_not_picked(call(q("q4_0", "decode", { in_dim = 512 }), { bound = false }))
    assert.equal("receiver is not bound", r.gate)
    assert.equal("c-wave", t:pick(call(q("q4_0", "decode", { in_dim = 512 }), { bound = true })).name)
    local ok, err = pcall(t.register_c, t, { name = "x", regime = "decode", format = "q4_0",
      kernel = "copy_bytes", multiple = { in_dim = 0 } })
    assert.matches("row 'x': key 'multiple' must map fact names to positive integers", err)
  end)
end)

describe("resolution allocates nothing", function()
  local function table_of(n, c_rows)
    local t = xpu.new_routes "alloc"
    local formats = { "q4_0", "q8_0", "q4_K", "q6_K", "iq4_nl", "q5_K", "q2_K", "q3_K" }
    for i = 1, n do
      local spec = { name = ("row%03d"):format(i), regime = "decode",
                     format = formats[(i - 1) % #formats + 1], priority = i % 7, kernel = "copy_bytes" }
      if c_rows then
        spec.multiple = { in_dim = 256 }
        spec.ready_when = { "bound" }
        t:register_c(spec)
      else
        spec.shape = aligned
        spec.ready = function(c) if not c.receiver.bound then return "slab is not bound" end end
        t:register(spec)
      end
    end
    return t
  end

  for _, kind in ipairs { "C", "Lua" } do
    it("in pick over a 64-row table of " .. kind .. " rows", function()
      local t = table_of(64, kind == "C")
      local c = call(q("q6_K", "decode", { in_dim = 4096, out_dim = 4096 }), { bound = true })
      local miss = call(q("q6_K", "decode", { in_dim = 4000, out_dim = 4096 }), { bound = true })
      for _ = 1, 100 do t:pick(c); t:pick(miss); t:admissible(c.query, cpu) end -- warm
      collectgarbage("stop")
      local before = xpu.T.alloc_count()
      local picked
      for _ = 1, 1000 do
        picked = t:pick(c)
        t:pick(miss)
        t:admissible(c.query, cpu)
      end
      local after = xpu.T.alloc_count()
      collectgarbage("restart")
      assert.equal("q6_K", picked.format)
      assert.equal(0, after - before)
    end)
  end

  it("and the counter does count (the instrument is live)", function()
    local before = xpu.T.alloc_count()
    local t = {}
    for i = 1, 10 do t[i] = { i } end
    xpu.new_routes "counted"
    assert.is_true(xpu.T.alloc_count() - before >= 11)
  end)
end)
