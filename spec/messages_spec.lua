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

  it("resolves a 17-fact query and a 40-flag receiver without allocating", function()
    if not xpu.T or not xpu.T.alloc_count then return pending("xpu.T.alloc_count is absent from this build") end
    local spec = { format = "f32", regime = "pad", rank = 5, mode_tag = 0 }
    for j = 0, 4 do
      spec["dim" .. j] = 2
      spec[("padding%d.0"):format(j)] = 1
      spec[("padding%d.1"):format(j)] = 1
    end
    local receiver = {}
    for i = 1, 40 do receiver["flag" .. i] = true end
    local c = xpu.call { query = xpu.query(spec), device = cpu, receiver = receiver }
    for _ = 1, 10 do by_op.pad:pick(c); by_op.pad:admissible(c.query, cpu) end -- warm
    collectgarbage("collect")
    collectgarbage("stop")
    local before = xpu.T.alloc_count()
    for _ = 1, 500 do by_op.pad:pick(c); by_op.pad:admissible(c.query, cpu) end
    local allocs = xpu.T.alloc_count() - before
    collectgarbage("restart")
    assert.equal(0, allocs)
  end)

  it("holds a call's receiver of any size, read fresh at every pick", function()
    local t = xpu.new_routes "big-receiver"
    t:register_c { name = "names-flags", regime = "prefill", format = "q4_0", kernel = "copy_bytes", facts = { "flag#" } }
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
    t:register { name = "any", regime = "decode", format = "q4_0", kernel = "copy_bytes", facts = { "fact#" } }
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

describe("refusals", function()
  local long = ("the slab's layout is not the one this kernel walks; "):rep(7)

  local function two_row_table()
    local t = xpu.new_routes "two"
    t:register { name = "wave", regime = "decode", format = "q4_0", priority = 20, kernel = "copy_bytes",
                 facts = { "in_dim", "out_dim" }, shape = function(q) if q.in_dim % 256 ~= 0 then return long end end }
    t:register { name = "tile", regime = "decode", format = "q4_0", priority = 10, kernel = "copy_bytes",
                 facts = { "in_dim", "out_dim" }, shape = function(q) if q.out_dim % 32 ~= 0 then return "out width not 32-aligned" end end }
    return t
  end

  it("names the op asked for and every gate hit, untruncated", function()
    local t = two_row_table()
    local r = t:why_not_admissible(xpu.query { format = "q4_0", regime = "decode", in_dim = 100, out_dim = 33 }, cpu)
    local text = tostring(r)
    assert.equal(long, r.gate)
    assert.is_true(#text > 2 * #long, text)
    assert.truthy(text:find("no row admits q4_0 decode on cpu:0; row 'wave' got furthest, refused at Shape: " .. long, 1, true), text)
    assert.truthy(text:find("gates hit: 'wave' at Shape: " .. long .. "; 'tile' at Shape: out width not 32-aligned", 1, true), text)
    assert.truthy(text:find("facts {in_dim=100, out_dim=33}", 1, true), text)
    local ok, err = pcall(t.bind, t, xpu.call { query = xpu.query { format = "q4_0", regime = "decode", in_dim = 100, out_dim = 33 }, device = cpu })
    assert.is_false(ok)
    assert.truthy(tostring(err):find(long .. "; 'tile' at Shape: out width not 32-aligned", 1, true), err)
  end)

  it("says which row serves a query that is served", function()
    local t = two_row_table()
    local r = t:why_not_admissible(xpu.query { format = "q4_0", regime = "decode", in_dim = 256, out_dim = 33 }, cpu)
    assert.equal("Admitted", r.clause)
    assert.equal("wave", r.row)
    assert.matches("q4_0 decode on cpu:0 is served by row 'wave'", tostring(r))
    assert.is_nil(tostring(r):find("refused", 1, true))
  end)

  it("never names a row of another op as the one that got furthest", function()
    local t = xpu.new_routes "mixed"
    t:register { name = "q4_0-wave", regime = "decode", format = "q4_0", kernel = "copy_bytes" }
    t:register { name = "q8_0-split", regime = "bind", format = "q8_0", kernel = "copy_bytes" }
    local r = t:why_not_admissible(xpu.query { format = "q4_0", regime = "bind" }, false)
    assert.equal("q8_0-split", r.row)
    assert.equal("Format", r.clause)
    -- a table with no row of the op asked still says what its rows serve
    local p = t:why_not_admissible(xpu.query { format = "q4_0", regime = "prefill" }, false)
    assert.equal("Regime", p.clause)
    assert.equal("serves decode", p.gate)
  end)

  it("scripts/contracts.lua keeps one table per op: a refusal speaks of that op's rows only", function()
    local p = io.popen((arg and arg[-1] or "build/xpulua") .. " scripts/contracts.lua " .. FILE .. " 2>&1")
    local out = p:read("a")
    p:close()
    local line = out:match("pad_backward i32 8[^\n]*")
    assert.truthy(line, out)
    assert.matches("route table 'pad_backward': no row admits i32 pad_backward; row 'pad_backward%.cuda%.f32:pad_backward_rows' got furthest", line)
    assert.matches("refused at Format: serves f32; formats served: bf16, f16, f32, f64;", line)
    local flip = out:match("flip u8 strided[^\n]*")
    assert.matches("'flip%.cuda%.u8:flip_items', 'flip%.cpu%.u8', 'flip%.cuda%.u8', 'flip%.vulkan%.u8' at Shape", flip)
  end)
end)

describe("did you mean", function()
  local t = xpu.new_routes "spelling"
  t:register { name = "wave", regime = "decode", format = "q4_K", kernel = "copy_bytes",
               facts = { "in_dim", "out_dim" }, shape = function(q) if q.in_dim % 256 ~= 0 then return "in width" end end }
  local function reg(spec)
    spec.name = spec.name or "misspelt"
    spec.regime = spec.regime or "decode"
    spec.format = spec.format or "q4_K"
    spec.kernel = spec.kernel or "copy_bytes"
    return errmsg(t.register, t, spec)
  end

  it("a misspelt format, at registration and in a query, names the closest formats", function()
    assert.matches("row 'misspelt': key 'format': unknown format 'q4_k' %(did you mean 'q4_K'%?%)", reg { format = "q4_k" })
    assert.matches("query: key 'format': unknown format 'q4_k' %(did you mean 'q4_K'%?%)",
      errmsg(xpu.query, { format = "q4_k", regime = "decode" }))
    assert.matches("did you mean 'f16'", errmsg(xpu.query, { format = "F16", regime = "pad" }))
  end)

  it("a misspelt regime names the closest regimes", function()
    assert.matches("key 'regime': unknown regime 'decoding' %(did you mean 'decode'%?%)", reg { regime = "decoding" })
    assert.matches("query: key 'regime': unknown regime 'decoding' %(did you mean 'decode'%?%)",
      errmsg(xpu.query, { format = "q4_K", regime = "decoding" }))
    local c = errmsg(xpu.call, { query = xpu.query { format = "q4_K", regime = "decode" }, device = cpu, recevier = {} })
    assert.matches("call: unknown key 'recevier' %(did you mean 'receiver'%?%)", c)
  end)

  it("a capability no device can report is refused, naming the ones that exist", function()
    assert.matches("needs%[1%]: unknown capability 'tensor_cores' %(known: 'bf16', .*'dot4_i8'", reg { needs = { "tensor_cores" } })
    assert.matches("needs%[1%]: unknown capability 'dot4_18' %(did you mean 'dot4_i8'%?%)", reg { needs = { "dot4_18" } })
    -- any wave size is a capability a device may report
    assert.equal("wave7", t:register { name = "odd-wave", regime = "decode", format = "q4_K", kernel = "copy_bytes",
                                       needs = { "wave7" } }.needs[1])
  end)

  it("every capability a device here reports is one a row may need", function()
    local seen = 0
    for _, id in ipairs { "cpu:0", "vulkan:0", "cuda:0", "hip:0" } do
      local d = xpu.device(id)
      for i, cap in ipairs(d and d.capabilities or {}) do
        local r = t:register { name = ("%s-%d"):format(id, i), regime = "decode", format = "q4_K", kernel = "copy_bytes",
                               needs = { cap } }
        assert.equal(cap, r.needs[1])
        seen = seen + 1
      end
    end
    assert.is_true(seen > 0)
  end)

  it("a misspelt query fact names the facts registered rows read", function()
    -- 'in_dim' first; rows other spec files registered may add more ('n_dims' of rope)
    assert.matches("query: fact 'in_dims': unknown query fact 'in_dims' %(did you mean 'in_dim'[^)]*%?%)",
      errmsg(xpu.query, { format = "q4_K", regime = "decode", in_dims = 4096, out_dim = 8 }))
    -- a contract row's facts: its operands' shape facts and its fields, digits and all
    assert.matches("did you mean 'padding<n>.0'", errmsg(xpu.query, { format = "f32", regime = "pad", ["paddng0.0"] = 1 }))
    assert.truthy(xpu.query { format = "f32", regime = "pad", ["padding7.1"] = 1, dim12 = 3, mode_tag = 0 })
  end)

  it("a misspelt row field names the closest field", function()
    assert.matches("unknown key 'priorty' %(did you mean 'priority'%?%)", reg { priorty = 3 })
    assert.matches("unknown key 'mutliple' %(did you mean 'multiple'%?%)",
      errmsg(t.register_c, t, { name = "c", regime = "decode", format = "q4_K", kernel = "copy_bytes", mutliple = {} }))
    assert.matches("kernel 'copy_byte' is not in the kernel table %(did you mean 'copy_bytes'%?%)", reg { kernel = "copy_byte" })
  end)
end)

describe("registration errors", function()
  it("are one line naming the file:line of the register call, the table, the row and the key", function()
    local t = xpu.new_routes "where"
    local function helper(spec) return t:register(spec) end -- a helper's call is still the call
    local line = debug.getinfo(1, "l").currentline - 1
    local err = errmsg(helper, { name = "r", regime = "decode", format = "q4_0", kernel = "copy_bytes", priority = "high" })
    assert.equal(("spec/messages_spec.lua:%d: route table 'where': row 'r': key 'priority' must be an integer, got string"):format(line), err)
    assert.is_nil(err:find("\n"))
    assert.is_nil(err:find("traceback", 1, true))
  end)

  it("scripts/contracts.lua prints a registration error as one line and exits 1", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert.is_true(os.execute("mkdir -p " .. dir))
    local src = assert(io.open(FILE)):read("a")
    -- the flip contract for cpu launches a kernel no build has
    local bad = src:gsub("(entry_point:%s*)flip\n", "%1flip_nowhere\n", 1)
    assert.are_not.equal(src, bad)
    local f = assert(io.open(dir .. "/bad.md", "w"))
    f:write(bad)
    f:close()
    local p = io.popen((arg and arg[-1] or "build/xpulua") .. " scripts/contracts.lua " .. dir .. "/bad.md 2>&1; echo \"exit=$?\"")
    local out = p:read("a")
    p:close()
    os.execute("rm -rf " .. dir)
    assert.equal("1", out:match("exit=(%d+)"), out)
    local first = out:match("^[^\n]*")
    assert.matches("^contracts: .*bad%.md:%d+: kernel 'flip': row 'flip%.cpu%.f32': entry_point: 'flip_nowhere' is not in the kernel table$", first)
    assert.equal(2, select(2, out:gsub("\n", "\n")), out) -- the line and the exit status, no traceback
  end)
end)

describe("order", function()
  it("prints a query's facts sorted by name, whatever order they were given in", function()
    local spec = { format = "f32", regime = "pad", rank = 2, dim1 = 4, dim0 = 3, mode_tag = 1 }
    spec["padding1.1"], spec["padding0.0"] = 0, 1
    assert.equal("query f32 pad {dim0=3, dim1=4, mode_tag=1, padding0.0=1, padding1.1=0, rank=2}", tostring(xpu.query(spec)))
  end)

  it("lists audit rows by priority, then name, across formats", function()
    local t = xpu.new_routes "order"
    for _, r in ipairs { { "b", "q8_0", 10 }, { "a", "q4_0", 10 }, { "c", "q4_0", 30 }, { "d", "q6_K", 20 } } do
      t:register { name = r[1], regime = "decode", format = r[2], priority = r[3], kernel = "copy_bytes" }
    end
    local a = t:audit { xpu.query { format = "q4_0", regime = "decode" } }
    local names = {}
    for i = 1, a.nrows do names[i] = a:row_name(i) end
    assert.same({ "c", "d", "a", "b" }, names)
  end)
end)

-- What the command prints for an error a script did not catch: a bad declaration (a route row,
-- a contract file) is one line that says where, like a syntax error; any other error keeps
-- its traceback, as lua's does.
describe("uncaught declaration errors", function()
  local exe = arg and arg[-1] or "build/xpulua"

  local function run_script(body)
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write(body)
    f:close()
    local p = io.popen(exe .. " " .. script .. " 2>&1 >/dev/null")
    local out = p:read("a")
    local ok, _, code = p:close()
    os.remove(script)
    return out, code, script
  end

  it("a misspelt row key is one line naming the script's line, the table, the row and the key", function()
    local out, code, script = run_script('local t = require("xpu").new_routes "mine"\n' ..
      't:register { name = "r", regime = "decoding", format = "q4_0", kernel = "copy_bytes" }\n')
    assert.equal(1, code)
    assert.equal(exe .. ": " .. script .. ":2: route table 'mine': row 'r': key 'regime': unknown regime " ..
      "'decoding' (did you mean 'decode'?)\n", out)
  end)

  it("a second row of the same name is one line", function()
    local row = 't:register { name = "r", regime = "decode", format = "q4_0", kernel = "copy_bytes" }\n'
    local out, code, script = run_script('local t = require("xpu").new_routes "m"\n' .. row .. row)
    assert.equal(1, code)
    assert.equal(exe .. ": " .. script .. ":3: route table 'm' already has a row named 'r'\n", out)
  end)

  it("a malformed contract file is one line naming the file", function()
    local out, code = run_script('require("xpu").contracts.load "spec/fixtures/contracts/bad-yaml.md"\n')
    assert.equal(1, code)
    assert.matches("^[^\n]*spec/fixtures/contracts/bad%-yaml%.md[^\n]*\n$", out)
  end)

  it("any other error keeps its traceback", function()
    local out, code = run_script('error("plain")\n')
    assert.equal(1, code)
    assert.matches("plain\nstack traceback:\n", out, 1, true)
  end)
end)
