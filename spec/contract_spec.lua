-- contract_spec.lua — the FKC reader (good, malformed and hostile contracts), call validation
-- and costs, contracts as route rows with gates that name the contract field, the planner, and
-- xpu.compare (outputs against a reference within a contract's precision bound).
-- The kernels themselves against their contracts are in shape_ops_spec.lua.
local xpu = require "xpu"

local FILE = "contracts/shape-ops.md"
local FIX = "spec/fixtures/contracts/"

local function by_name(list)
  local t = {}
  for _, c in ipairs(list) do t[c.kernel .. "." .. c.backend] = c end
  return t
end

local contracts = xpu.contracts.load(FILE)
local C = by_name(contracts)

local function dense(dtype, shape) return { dtype = dtype, shape = shape } end

describe("the FKC reader", function()
  it("reads every block of contracts/shape-ops.md, one per kernel and backend", function()
    assert.equal(33, #contracts)
    for _, k in ipairs { "pad", "pad_backward", "flip", "roll", "cumsum", "triu", "tril", "write_slice",
                         "write_slice_rotating", "copy", "contiguize" } do
      for _, b in ipairs { "cpu", "cuda", "vulkan" } do
        local c = C[k .. "." .. b]
        assert.truthy(c, k .. " on " .. b)
        assert.equal(FILE, c.file)
        assert.is_true(c.line > 1)
        assert.truthy(xpu.device "cpu:0":kernel(c.entry_point), c.entry_point) -- raises when not a kernel
      end
    end
  end)

  it("keeps every section of a contract", function()
    local c = C["write_slice_rotating.cpu"]
    assert.equal("WriteSliceRotating", c.op_kind)
    assert.equal("write_slice_rotating", c.entry_point)
    assert.same({ "source", "position", "dest" }, { c.inputs[1].name, c.inputs[2].name, c.inputs[3].name })
    assert.same({ "u32" }, c.inputs[2].dtypes)
    assert.equal("0..=1", c.inputs[2].rank)
    assert.equal("required", c.inputs[1].layout.contiguous)
    assert.equal("rejected", c.inputs[1].layout.reverse_strides)
    assert.equal("in_place(dest)", c.outputs[1].aliasing)
    assert.equal("same_as(dest)", c.outputs[1].layout_guarantee)
    assert.is_true(c.in_place)
    assert.equal("requires_contiguous", c.awkward_layout_strategy)
    assert.equal("dtype_bytes", c.alignment_bytes)
    assert.equal("2 * source.n * dtype_bytes", c.bytes_moved)
    assert.equal("derived", c.provenance)
    assert.equal("bitwise", c.determinism)
    assert.equal(0, c.memory.device_bytes)
    local kinds = {}
    for _, f in ipairs(c.fields) do kinds[f.name] = f.kind end
    assert.same({ dest_shape = "Vec<usize>", axis = "usize", modulus = "usize", ranges = "Vec<(usize,usize)>",
                  position = "DynScalar" }, kinds)
    assert.equal("source.n == 0", c.fast_paths[1].when)
    assert.equal("code.host", c.code_capability)
    assert.equal("code.ptx", C["write_slice_rotating.cuda"].code_capability)
    assert.equal("1.01 * max(dim_size - 1, 0) * eps + 2 * eps_out", C["cumsum.cpu"].max_relative)
    assert.is_nil(C["cumsum.cpu"].max_ulp)
    assert.matches("contract pad %(cpu%) contracts/shape%-ops.md:%d+: Pad", tostring(C["pad.cpu"]))
  end)

  -- Each malformed fixture: the line and key of the defect, and words from the reason.
  local malformed = {
    { "bad-yaml.md", 17, "accept.inputs[0].dtypes[1]", "YAML: did not find expected" },
    { "missing-key.md", 9, "cost", "missing required key" },
    { "wrong-type.md", 29, "caps.in_place", "expected true or false, got a string" },
    { "unknown-dtype.md", 16, "accept.inputs[0].dtypes[1]", "unknown dtype 'F17'" },
    { "unknown-flag.md", 17, "accept.inputs[0].layout.contigous", "unknown layout flag" },
    { "bad-expression.md", 36, "cost.bytes_moved", "does not parse: unexpected end" },
    { "unknown-name.md", 36, "cost.bytes_moved", "unknown name 'elements'" },
    { "lua-escape.md", 36, "cost.bytes_moved", "does not parse" },
    { "unknown-key.md", 45, "determinsm", "unknown key" },
    { "bad-rank.md", 18, "accept.inputs[0].rank", "outside 0..=8" },
    { "overflow.md", 37, "cost.memory.device_bytes", "overflows a 64-bit integer" },
    { "alias.md", 16, "accept.inputs[0].dtypes", "anchor '&d' refused" },
    { "tag.md", 35, "cost.flops", "only the core schema's tags" },
    { "deep.md", 35, "cost.flops[0][0][0][0][0]", "nesting deeper than 8" },
    { "in-place-mismatch.md", 29, "caps.in_place", "no output aliases an input in place" },
    { "bad-output.md", 25, "return.outputs[0].dtype_rule", "'inptu' is not an operand" },
  }
  for _, m in ipairs(malformed) do
    local file, line, key, words = m[1], m[2], m[3], m[4]
    it("refuses " .. file .. " naming file, line, kernel and key", function()
      local path = FIX .. file
      local list, err = xpu.contracts.try_load(path)
      assert.is_nil(list)
      local prefix = ("%s:%d: kernel 'flip': %s: "):format(path, line, key)
      assert.equal(prefix, err:sub(1, #prefix), err)
      assert.truthy(err:find(words, 1, true), err)
      assert.has_error(function() xpu.contracts.load(path) end, err)
    end)
  end

  it("refuses files with no front matter, no blocks, another version or an unclosed block", function()
    local cases = {
      { "no-front-matter.md", "no-front-matter.md:1: (front matter): missing" },
      { "no-blocks.md", "no-blocks.md:6: (file): no ```fkc blocks" },
      { "bad-version.md", "bad-version.md:2: front matter: fkc_version: 2 outside 1..1" },
      { "unclosed.md", "unclosed.md:8: (file): the ```fkc block opened here is never closed" },
    }
    for _, c in ipairs(cases) do
      local _, err = xpu.contracts.try_load(FIX .. c[1])
      assert.truthy(err:find(c[2], 1, true), err)
    end
    local _, err = xpu.contracts.try_load(FIX .. "nonexistent.md")
    assert.matches("nonexistent.md: cannot open", err)
    assert.equal(1, #xpu.contracts.load(FIX .. "good.md"))
  end)

  it("refuses hostile YAML quickly and in bounded memory", function()
    local good = io.open(FIX .. "good.md"):read("a")
    local head = good:sub(1, good:find("```fkc\n", 1, true) + 6)
    local function block(yaml) return head .. yaml .. "\n```\n" end
    -- a billion laughs: nine levels of ten aliases each
    local laughs = { "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]" }
    for i = 1, 9 do
      local refs = {}
      for j = 1, 10 do refs[j] = "*a" .. (i - 1) end
      laughs[#laughs + 1] = ("a%d: &a%d [%s]"):format(i, i, table.concat(refs, ", "))
    end
    local hostile = {
      { block(table.concat(laughs, "\n")), "anchor '&a0' refused" },
      { block("kernel: x\nbomb: " .. ("["):rep(100000)), "nesting deeper than 8" },
      { block("kernel: x\nbomb: {" .. ("a: {"):rep(5000)), "nesting deeper than 8" },
      { block("kernel: !<tag:evil.com,2000:x> x"), "only the core schema's tags" },
      { block("kernel: !local x"), "only the core schema's tags" },
      { block("kernel: flip\n- x\n"), "YAML" },
      { head .. ("x"):rep(2 * 1024 * 1024), "more than the 1048576 a contract file may hold" },
      { block("kernel: flip\nblurb: \"" .. ("y"):rep(8000) .. "\""), "a scalar of 8000 bytes" },
      { head .. "kernel: a\0b\n```\n", "a NUL byte" },
    }
    for i, h in ipairs(hostile) do
      local t0 = xpu.now()
      local ok, err = pcall(xpu.contracts.parse, h[1], "hostile" .. i)
      local took = xpu.now() - t0
      assert.is_false(ok, "hostile " .. i)
      assert.truthy(err:find("hostile" .. i, 1, true), err)
      assert.truthy(err:find(h[2], 1, true), "hostile " .. i .. ": " .. err)
      assert.is_true(took < 0.5, ("hostile %d took %.3f s"):format(i, took))
    end
    local many = {}
    for i = 1, 30000 do many[i] = "- " .. i end
    local ok, err = pcall(xpu.contracts.parse, block("kernel: flip\nlist:\n" .. table.concat(many, "\n")), "many")
    assert.is_false(ok)
    assert.truthy(err:find("more than 20000 nodes", 1, true), err)
  end)

  it("fails cleanly at every allocation while loading, then loads", function()
    if not xpu.T or not xpu.T.fail_after then return pending("xpu.T (fault injection) is not in this build") end
    local n, list, err = 0, nil, nil
    while true do
      xpu.T.fail_after(n)
      list, err = xpu.contracts.try_load(FILE)
      xpu.T.fail_after(-1)
      if list then break end
      assert.is_string(err)
      n = n + 1
      assert.is_true(n < 20000, "never loaded")
    end
    assert.is_true(n > 10)
    assert.equal(33, #list)
  end)
end)

describe("a call against a contract", function()
  it("admits the call and gives the output dtype, shape and evaluated costs", function()
    local r = C["pad.cpu"]:call { inputs = { input = dense("bf16", { 2, 3 }) }, params = { padding = { { 1, 2 }, { 0, 3 } } } }
    assert.equal("bf16", r.dtype)
    assert.same({ 5, 6 }, r.shape)
    assert.equal(30, r.n)
    assert.equal((6 + 30) * 2, r.bytes_moved)
    assert.equal(0, r.flops)
    assert.equal(2, r.alignment)
    assert.same({ 2, 3 }, r.params.in_shape) -- defaults filled in
    assert.same({ 5, 6 }, r.params.out_shape)
    assert.equal(0, r.params.mode_tag)
    local s = C["cumsum.cpu"]:call { inputs = { dense("f32", { 4, 5, 6 }) }, params = { axis = 1 } }
    assert.same({ 4, 5, 6 }, { s.params.outer_count, s.params.dim_size, s.params.inner_count })
    assert.equal(4 * 6 * 4, s.flops)
    assert.equal(2 * 120 * 4, s.bytes_moved)
    local b = C["pad_backward.cpu"]:call { inputs = { dense("f16", { 8 }) }, params = { padding = { { 2, 2 } }, mode_tag = 1 } }
    assert.same({ 4 }, b.shape)
    assert.equal(4, b.flops)
    assert.equal((8 + 4) * 2, b.bytes_moved)
  end)

  it("refuses a dtype, a rank, a layout and a constraint, naming the contract field", function()
    local function refusal(c, spec)
      local r, why, verdict = c:call(spec)
      assert.is_nil(r)
      return why, verdict
    end
    assert.equal("accept.inputs[0].dtypes: I32 not accepted (F32, F64, F16, BF16)",
      refusal(C["cumsum.cpu"], { inputs = { dense("i32", { 4 }) }, params = { axis = 0 } }))
    assert.equal("accept.inputs[0].rank: rank 1 outside 2..=8", refusal(C["triu.cpu"], { inputs = { dense("f32", { 4 }) } }))
    local why, verdict = refusal(C["flip.cpu"], { inputs = { { dtype = "f32", shape = { 4, 2 }, strides = { 1, 4 } } }, params = { axis = 0 } })
    assert.equal("accept.inputs[0].layout.strided: rejected (input is strided)", why)
    assert.equal("layout", verdict)
    assert.equal("accept.inputs[0].layout.start_offset: rejected (input is offset from its base)",
      refusal(C["flip.cpu"], { inputs = { { dtype = "f32", shape = { 4 }, offset = 3 } }, params = { axis = 0 } }))
    assert.matches("^accept.inputs%[0%].layout.broadcast_stride0: rejected",
      refusal(C["flip.cpu"], { inputs = { { dtype = "f32", shape = { 4, 3 }, strides = { 0, 1 } } }, params = { axis = 0 } }))
    assert.matches("^accept.inputs%[0%].layout.reverse_strides: rejected",
      refusal(C["flip.cpu"], { inputs = { { dtype = "f32", shape = { 4 }, strides = { -1 }, offset = 3 } }, params = { axis = 0 } }))
    assert.equal("accept.op_params.fields.axis.constraint: axis < input.rank fails",
      refusal(C["roll.cpu"], { inputs = { dense("f32", { 4 }) }, params = { axis = 1, shift = 1 } }))
    assert.equal("accept.op_params.fields.shift: missing (the call gives none and the contract has no default)",
      refusal(C["roll.cpu"], { inputs = { dense("f32", { 4 }) }, params = { axis = 0 } }))
    assert.equal("accept.op_params.fields.mode_tag.constraint: mode_tag != 1 or (padding[i].0 < in_shape[i] and "
      .. "padding[i].1 < in_shape[i]) or padding[i].0 + padding[i].1 == 0 fails at i = 0",
      refusal(C["pad.cpu"], { inputs = { dense("f32", { 3 }) }, params = { padding = { { 3, 0 } }, mode_tag = 1 } }))
    assert.equal("accept.inputs[0].shape_constraint: dim[i] == ranges[i].1 - ranges[i].0 fails at i = 1",
      refusal(C["write_slice.cpu"], { inputs = { source = dense("f32", { 2, 3 }), dest = dense("f32", { 4, 4 }) },
                                      params = { ranges = { { 0, 2 }, { 0, 2 } } } }))
    assert.equal("accept.inputs[1].shape_constraint: dtype == source.dtype fails",
      refusal(C["write_slice.cpu"], { inputs = { source = dense("f32", { 2 }), dest = dense("i32", { 4 }) },
                                      params = { ranges = { { 0, 2 } } } }))
    assert.equal("accept.op_params.fields.mode_tag: 300 is not a u8 value",
      refusal(C["pad.cpu"], { inputs = { dense("f32", { 3 }) }, params = { padding = { { 0, 0 } }, mode_tag = 300 } }))
    assert.equal("accept.op_params.fields.in_shape: -1 is not a Vec<usize> value",
      refusal(C["pad_backward.cpu"], { inputs = { dense("f32", { 3 }) }, params = { padding = { { 2, 2 } } } }))
    assert.equal("accept.inputs[1].rank: rank 2 outside 0..=1",
      refusal(C["write_slice_rotating.cpu"], { inputs = { source = dense("f32", { 1 }), position = dense("u32", { 1, 1 }),
        dest = dense("f32", { 4 }) }, params = { axis = 0, modulus = 4, ranges = { { 0, 1 } } } }))
  end)

  it("raises on misuse: unknown operands, params and dtypes", function()
    local c = C["flip.cpu"]
    assert.has_error(function() c:call { inputs = { nope = dense("f32", { 2 }) } } end, "call: contract 'flip' has no operand nope")
    assert.has_error(function() c:call { inputs = { dense("f32", { 2 }) }, params = { axes = 1 } } end,
      "call: contract 'flip' has no op_params field 'axes'")
    assert.has_error(function() c:call { inputs = { dense("f99", { 2 }) } } end)
    assert.has_error(function() c:call { inputs = { dense("f32", { 2 }) }, extra = 1 } end, "call: unknown key 'extra'")
    assert.has_error(function()
      C["write_slice_rotating.cpu"]:call { inputs = {}, params = { position = 3 } }
    end, "param 'position' is read from an operand at run time, not given in a call")
  end)

  it("evaluates costs with overflow checks, never wrapping", function()
    local good = io.open(FIX .. "good.md"):read("a")
    local text = good:gsub('bytes_moved: "2 %* input.n %* dtype_bytes"',
      'bytes_moved: "input.n * 4294967296 * 4294967296"', 1)
    local c = xpu.contracts.parse(text, "overflowing")[1]
    local r, why = c:call { inputs = { dense("f32", { 2 }) }, params = { axis = 0 } }
    assert.is_nil(r)
    assert.equal("cost.bytes_moved: arithmetic overflows a 64-bit integer", why)
    text = good:gsub('flops: "0"', 'flops: "input.n / (axis - axis) + 1"', 1)
    c = xpu.contracts.parse(text, "dividing")[1]
    r, why = c:call { inputs = { dense("f32", { 2 }) }, params = { axis = 0 } }
    assert.equal("cost.flops: division by zero", why)
    text = good:gsub('flops: "0"', 'flops: "2 + 3 * 4 - (10 - 4) / 3 %% 2 + prod(input.dim, 1, 2) + min(7, 5)"', 1)
    c = xpu.contracts.parse(text, "precedence")[1]
    assert.equal(2 + 12 - 0 + 3 + 5, c:call { inputs = { dense("f32", { 2, 3 }) }, params = { axis = 0 } }.flops)
  end)

  it("states precision bounds as expressions over the call", function()
    local p = C["cumsum.cpu"]:precision { inputs = { dense("f16", { 101 }) }, params = { axis = 0 } }
    assert.near(1.01 * 100 * 2 ^ -24 + 2 * 2 ^ -11, p.max_relative, 1e-15)
    assert.is_nil(p.max_ulp)
    assert.equal(0, C["flip.cpu"]:precision { inputs = { dense("f32", { 3 }) }, params = { axis = 0 } }.max_ulp)
  end)
end)

-- xpu.compare: outputs against a reference, element by element, within a precision bound
-- (the bench's bit gate for cumsum and pad_backward, in C for outputs of 1 GiB).
describe("an f32 field (a kernel argument such as eps)", function()
  local good = io.open(FIX .. "good.md"):read("a")
  local function with_field(line)
    return (good:gsub('      axis: { kind: usize, constraint: "axis < input.rank" }\n', '%0' .. line .. "\n", 1))
  end
  local c = xpu.contracts.parse(with_field('      eps: { kind: f32, default: "1e-6", note: "added to the mean" }'), "f32.md")[1]

  it("reads its kind and its default, a number literal", function()
    local f = c.fields[2]
    assert.equal("eps", f.name)
    assert.equal("f32", f.kind)
    assert.equal(1e-6, f.default)
  end)

  it("takes a number in a call, and the default without one", function()
    local r = c:call { inputs = { input = dense("f32", { 4 }) }, params = { axis = 0, eps = 0.25 } }
    assert.equal(0.25, r.params.eps)
    assert.equal(1e-6, c:call { inputs = { input = dense("f32", { 4 }) }, params = { axis = 0 } }.params.eps)
  end)

  it("refuses NaN, infinity and a value past f32's range, naming the field", function()
    for _, v in ipairs { 0 / 0, math.huge, -math.huge, 1e39 } do
      local r, why = c:call { inputs = { input = dense("f32", { 4 }) }, params = { axis = 0, eps = v } }
      assert.is_nil(r)
      assert.truthy(why:find("accept.op_params.fields.eps: ", 1, true) and why:find("is not a finite f32 value", 1, true), why)
    end
    local ok, err = pcall(c.call, c, { inputs = { input = dense("f32", { 4 }) }, params = { axis = 0, eps = "small" } })
    assert.is_false(ok)
    assert.matches("param 'eps' must be a number, got string", err)
  end)

  it("refuses a constraint and a default that is not a finite number, by line and key", function()
    local cases = {
      { '      eps: { kind: f32, constraint: "eps > 0" }', "fields.eps.constraint: an f32 field takes no constraint" },
      { '      eps: { kind: f32, default: "tiny" }', "fields.eps.default: 'tiny' is not a finite f32 number" },
      { '      eps: { kind: f32, default: "1e39" }', "fields.eps.default: '1e39' is not a finite f32 number" },
      { '      eps: { kind: f32, default: "nan" }', "fields.eps.default: 'nan' is not a finite f32 number" },
    }
    for _, k in ipairs(cases) do
      local ok, err = pcall(xpu.contracts.parse, with_field(k[1]), "f32.md")
      assert.is_false(ok)
      assert.truthy(err:find("f32.md:23: ", 1, true) and err:find(k[2], 1, true), err)
    end
  end)
end)

describe("an integer field marked argument (an operand of the call, such as a position)", function()
  local good = io.open(FIX .. "good.md"):read("a")
  local function with_field(line)
    return (good:gsub('      axis: { kind: usize, constraint: "axis < input.rank" }\n', '%0' .. line .. "\n", 1))
  end
  local c = xpu.contracts.parse(with_field('      pos0: { kind: u32, default: "0", argument: true, constraint: "pos0 %% 2 == 0" }'),
                                "arg.md")[1]

  it("is checked as a field (its default, range and constraint) and marked an argument", function()
    assert.is_true(c.fields[2].argument)
    assert.is_false(c.fields[1].argument)
    assert.equal(6, c:call { inputs = { input = dense("f32", { 4 }) }, params = { axis = 0, pos0 = 6 } }.params.pos0)
    assert.equal(0, c:call { inputs = { input = dense("f32", { 4 }) }, params = { axis = 0 } }.params.pos0)
    local _, why = c:call { inputs = { input = dense("f32", { 4 }) }, params = { axis = 0, pos0 = 3 } }
    assert.equal("accept.op_params.fields.pos0.constraint: pos0 % 2 == 0 fails", why)
    _, why = c:call { inputs = { input = dense("f32", { 4 }) }, params = { axis = 0, pos0 = 1 << 32 } }
    assert.equal("accept.op_params.fields.pos0: 4294967296 is not a u32 value", why)
  end)

  it("is no fact of the query its rows see: a query carrying it is refused as unknown", function()
    local rows = c:register(xpu.new_routes "arg", "arg")
    assert.is_true(#rows > 0)
    local ok, err = pcall(xpu.query, { regime = "arg", format = "f32", rank = 1, dim0 = 4, axis = 0, pos0 = 2 })
    assert.is_false(ok)
    assert.matches("pos0", err)
  end)

  it("is refused on a list or an f32 field, by line and key", function()
    for _, k in ipairs {
      { '      pos0: { kind: "Vec<usize>", argument: true }', "fields.pos0.argument: only an integer field (usize, i64, u8, u32) is an argument; a list is a fact" },
      { '      pos0: { kind: f32, argument: true }', "fields.pos0.argument: only an integer field (usize, i64, u8, u32) is an argument; an f32 field always is one" },
      { '      pos0: { kind: u32, argument: "yes" }', "fields.pos0.argument: " },
    } do
      local ok, err = pcall(xpu.contracts.parse, with_field(k[1]), "arg.md")
      assert.is_false(ok)
      assert.truthy(err:find("arg.md:23: ", 1, true) and err:find(k[2], 1, true), err)
    end
  end)
end)

describe("several outputs, inputs of their own dtype, block dtypes", function()
  local text = io.open(FIX .. "outputs.md"):read("a")
  local list = xpu.contracts.parse(text, "outputs.md")
  local top_k, get_rows = list[1], list[2]

  it("reads each output's dtype rule and dims(...) shape rule", function()
    assert.equal(2, #top_k.outputs)
    assert.same({ "ids", "I32", "dims(rows, k)" }, { top_k.outputs[1].name, top_k.outputs[1].dtype_rule, top_k.outputs[1].shape_rule })
    assert.same({ "weights", "passthrough(x)", "dims(rows, k)" },
                { top_k.outputs[2].name, top_k.outputs[2].dtype_rule, top_k.outputs[2].shape_rule })
    assert.same({ "f32", "f16", "q8_0", "q4_0", "q4_K" }, get_rows.inputs[1].dtypes)
  end)

  it("gives every output its own dtype and shape, fields defaulted from the operands' dims", function()
    local r = top_k:call { inputs = { x = dense("f32", { 3, 16 }) }, params = { k = 2 } }
    assert.same({ dtype = "i32", shape = { 3, 2 }, n = 6 }, r.outputs.ids)
    assert.same({ dtype = "f32", shape = { 3, 2 }, n = 6 }, r.outputs.weights)
    assert.same({ 3, 16, 2, 1 }, { r.params.rows, r.params.n_expert, r.params.k, r.params.norm })
    assert.equal(3 * 16 * 4 + 8 * 6, r.bytes_moved)
    local bad, why = top_k:call { inputs = { x = dense("f32", { 3, 16 }) }, params = { k = 2, rows = 4 } }
    assert.is_nil(bad)
    assert.equal("accept.op_params.fields.rows.constraint: rows == x.dim[0] fails", why)
  end)

  it("checks each input against its own dtypes; the first input's dtype is the row's", function()
    local r = get_rows:call { inputs = { table = dense("q8_0", { 10, 64 }), ids = dense("i32", { 5 }) } }
    assert.same({ dtype = "f32", shape = { 5, 64 }, n = 320 }, r.outputs.out)
    -- a q8_0 row of 64 is 2 blocks of 34 bytes
    assert.equal(5 * 68 + 5 * 4 + 5 * 64 * 4, r.bytes_moved)
    local bad, why = get_rows:call { inputs = { table = dense("q8_0", { 10, 64 }), ids = dense("f32", { 5 }) } }
    assert.is_nil(bad)
    assert.equal("accept.inputs[1].dtypes: F32 not accepted (I32)", why)
    bad, why = get_rows:call { inputs = { table = dense("i32", { 10, 64 }), ids = dense("i32", { 5 }) } }
    assert.equal("accept.inputs[0].dtypes: I32 not accepted (F32, F16, Q8_0, Q4_0, Q4_K)", why)
    local t = xpu.new_routes "outputs"
    local rows = get_rows:register(t)
    local names = {}
    for i, row in ipairs(rows) do names[i] = row.name end
    assert.same({ "get_rows.cpu.f32", "get_rows.cpu.f16", "get_rows.cpu.q8_0", "get_rows.cpu.q4_0", "get_rows.cpu.q4_K" }, names)
  end)

  it("sizes block dtypes by the block, from the format list, and refuses rows that are not whole blocks", function()
    for _, f in ipairs { "q8_0", "q4_0", "q4_K" } do
      local fmt
      for _, q in ipairs(xpu.formats()) do if q.name == f then fmt = q end end
      local cols = fmt.block_elems * 3
      local r = get_rows:call { inputs = { table = dense(f, { 7, cols }), ids = dense("i32", { 1 }) } }
      assert.equal(3 * fmt.block_bytes + 4 + cols * 4, r.bytes_moved, f)
      local bad, why = get_rows:call { inputs = { table = dense(f, { 7, cols + 1 }), ids = dense("i32", { 1 }) } }
      assert.is_nil(bad)
      assert.equal(("accept.inputs[0].dtypes: table's rows of %d elements are not whole %s blocks (%d elements)")
                   :format(cols + 1, f:upper(), fmt.block_elems), why)
    end
  end)

  local function with(old, new)
    local s, n = text:gsub(old:gsub("[%(%)%.%[%]%*%-%+]", "%%%0"), new, 1)
    assert.equal(1, n, old)
    return s
  end
  it("refuses malformed outputs by file, line and key", function()
    local ids = '    - { name: ids, dtype_rule: I32, shape_rule: "dims(rows, k)", layout_guarantee: contiguous, aliasing: none }'
    local five = ids .. "\n" .. ids:gsub("ids", "a") .. "\n" .. ids:gsub("ids", "b") .. "\n" .. ids:gsub("ids", "c") .. "\n" .. ids:gsub("ids", "d")
    local cases = {
      { with(ids, five), 28, "return.outputs: 6 outputs, at most 4" },
      { with(ids, ids:gsub("name: ids", "name: weights")), 29, "return.outputs[1].name: output 'weights' named twice" },
      { with(ids, ids:gsub("name: ids", "name: x")), 28, "return.outputs[0].name: 'x' is already an operand of accept.inputs" },
      { with('"dims(rows, k)"', '"dims(rows, kk)"'), 28, "return.outputs[0].shape_rule: dim 1 'kk' does not parse" },
      { with('"dims(rows, k)"', '"dims()"'), 28, "return.outputs[0].shape_rule: dims() names no dim" },
      { with('"dims(rows, k)"', '"dims(rows, k"'), 28, "return.outputs[0].shape_rule: 'dims(rows, k' does not end in ')'" },
      { with('"dims(rows, k)"', '"dims(rows, x.dim[i])"'), 28, "return.outputs[0].shape_rule: dim 1 'x.dim[i]' names i" },
      { with("dtype_rule: I32", "dtype_rule: Q5_9"), 28, "return.outputs[0].dtype_rule: 'Q5_9' is neither passthrough(operand) nor a dtype" },
      { (with("aliasing: none }", "aliasing: in_place(x) }"):gsub("aliasing: none }", "aliasing: in_place(x) }", 1)
          :gsub("in_place: false", "in_place: true")), 29,
        "return.outputs[1].aliasing: in place on 'x', which output 'ids' already overwrites" },
      { with("dtypes: [F32, F16, Q8_0", "dtypes: [F32, F16, Q8_1"), 59,
        "accept.inputs[0].dtypes[2]: unknown dtype 'Q8_1' (known: F32, F64, F16, BF16, I8, I16, I32, I64, U8, U16, U32, U64; the blocks Q8_0, Q4_0, Q4_K, Q6_K)" },
    }
    for _, k in ipairs(cases) do
      local got, err = pcall(xpu.contracts.parse, k[1], "outputs.md")
      assert.is_false(got)
      local at = ("outputs.md:%d: kernel '%s': "):format(k[2], k[2] > 50 and "get_rows" or "top_k")
      assert.truthy(err:find(at, 1, true) and err:find(k[3], 1, true), err)
    end
  end)
end)

describe("xpu.compare against a precision bound", function()
  local function f32s(...) return string.pack("<" .. ("f"):rep(select("#", ...)), ...) end
  local NAN, INF = 0 / 0, math.huge

  it("finds every element within the bound: none out, the worst element the furthest off", function()
    local want = f32s(1, 2, 4, 8)
    local r = xpu.compare(f32s(1, 2 * (1 + 1e-6), 4, 8 * (1 - 3e-6)), want, "f32", { max_relative = 1e-5 })
    assert.equal(0, r.out_of_bound)
    assert.equal(0, r.nan_mismatches)
    assert.equal(3, r.worst.index) -- from 0
    assert.equal(8, r.worst.want)
    assert.near(3e-6, r.worst.relative, 1e-7)
    -- the same bytes: nothing differs, no worst element; an empty pair alike
    r = xpu.compare(want, want, "f32", { max_relative = 0 })
    assert.same({ out_of_bound = 0, nan_mismatches = 0 }, r)
    assert.same({ out_of_bound = 0, nan_mismatches = 0 }, xpu.compare("", "", "f32", {}))
  end)

  it("counts the elements out of bound and reports the worst of them", function()
    local want = f32s(1, 2, 4, 8, 16)
    local r = xpu.compare(f32s(1.01, 2, 4 * (1 + 1e-6), 8.4, -16), want, "f32", { max_relative = 1e-5 })
    assert.equal(3, r.out_of_bound)
    assert.equal(4, r.worst.index)
    assert.equal(-16, r.worst.got)
    assert.equal(16, r.worst.want)
    assert.equal(2, r.worst.relative)
  end)

  it("adds max_absolute to max_relative times |want|; an element out of bound is worse than any within", function()
    -- element 0: want 0, got 1e-9: relative error inf, but within max_absolute
    local want, got = f32s(0, 100, 100), f32s(1e-9, 100.0005, 100.002)
    local r = xpu.compare(got, want, "f32", { max_relative = 1e-5, max_absolute = 1e-8 })
    assert.equal(1, r.out_of_bound) -- 100.002: 2e-3 > 1e-8 + 1e-3; 100.0005 within
    assert.equal(2, r.worst.index)
    assert.near(2e-5, r.worst.relative, 1e-6)
    r = xpu.compare(got, want, "f32", { max_relative = 1e-5 }) -- no absolute part: element 0 is out
    assert.equal(2, r.out_of_bound)
    assert.equal(0, r.worst.index)
    assert.equal(INF, r.worst.relative)
  end)

  it("counts an element NaN on one side only, either side, apart from those out of bound; NaN on both is equal", function()
    local want = f32s(1, NAN, 3, NAN, 5)
    local r = xpu.compare(f32s(NAN, 2, 3, NAN, 6), want, "f32", { max_relative = 1e-5 })
    assert.equal(2, r.nan_mismatches)
    assert.equal(1, r.out_of_bound)
    assert.equal(4, r.worst.index)
    -- an infinity is equal to itself, out of bound against a finite value
    r = xpu.compare(f32s(INF, -INF, INF), f32s(INF, -INF, 1), "f32", { max_relative = 1 })
    assert.equal(1, r.out_of_bound)
    assert.equal(2, r.worst.index)
  end)

  it("counts units in the last place under max_ulp, -0 and +0 none apart", function()
    local one = string.unpack("<f", string.pack("<I4", 0x3f800000))
    local next1, next2 = string.unpack("<f", string.pack("<I4", 0x3f800001)), string.unpack("<f", string.pack("<I4", 0x3f800002))
    local r = xpu.compare(f32s(next1, next2, -0.0), f32s(one, one, 0.0), "f32", { max_ulp = 1 })
    assert.equal(1, r.out_of_bound)
    assert.equal(1, r.worst.index)
    -- the byte movers' bound (all 0): one ulp is out
    assert.equal(2, xpu.compare(f32s(next1, next2), f32s(one, one), "f32", { max_ulp = 0, max_relative = 0, max_absolute = 0 }).out_of_bound)
  end)

  it("reads f64, f16 and bf16 elements", function()
    local r = xpu.compare(string.pack("<dd", 1 + 1e-12, 2), string.pack("<dd", 1, 2), "f64", { max_relative = 1e-13 })
    assert.equal(1, r.out_of_bound)
    assert.near(1e-12, r.worst.relative, 1e-15)
    -- f16: 1.0 is 0x3c00, one ulp above 1 + 2^-10; bf16: 1.0 is 0x3f80, one ulp above 1 + 2^-7
    r = xpu.compare(string.pack("<I2I2", 0x3c01, 0x4000), string.pack("<I2I2", 0x3c00, 0x4000), "f16", { max_relative = 1e-4 })
    assert.equal(1, r.out_of_bound)
    assert.equal(1 + 2 ^ -10, r.worst.got)
    r = xpu.compare(string.pack("<I2", 0x3f81), string.pack("<I2", 0x3f80), "bf16", { max_relative = 2 ^ -7 })
    assert.equal(0, r.out_of_bound)
    assert.equal(1 + 2 ^ -7, r.worst.got)
    assert.equal(1, xpu.compare(string.pack("<I2", 0x7e00), string.pack("<I2", 0x3c00), "f16", {}).nan_mismatches)
  end)

  it("takes a contract's own bound, c:precision's table", function()
    local bound = C["cumsum.cpu"]:precision { inputs = { dense("f32", { 256, 4 }) }, params = { axis = 0 } }
    local want = f32s(1000, 2000)
    assert.equal(0, xpu.compare(f32s(1000 * (1 + 1e-6), 2000), want, "f32", bound).out_of_bound)
    assert.equal(1, xpu.compare(f32s(1000 * (1 + 1e-3), 2000), want, "f32", bound).out_of_bound)
  end)

  it("refuses bad arguments, naming the function and the argument", function()
    local four = f32s(1)
    local function refuses(pattern, ...)
      local ok, err = pcall(xpu.compare, ...)
      assert.is_false(ok)
      assert.matches("^compare: " .. pattern, err)
    end
    refuses("got is 4 bytes and want 8: they differ in length", four, four .. four, "f32", {})
    refuses("got and want are 6 bytes, not a whole number of 4%-byte f32 elements", "abcdef", "abcdef", "f32", {})
    refuses("got and want are 5 bytes, not a whole number of 8%-byte f64 elements", "abcde", "abcde", "f64", {})
    refuses("dtype 'i32' is none of f32, f64, f16, bf16", four, four, "i32", {})
    refuses("dtype must be a name", four, four, nil, {})
    refuses("got must be a string of bytes, not number", 1, four, "f32", {})
    refuses("want must be a string of bytes, not nil", four, nil, "f32", {})
    refuses("bound must be a table", four, four, "f32")
    refuses("bound has a field 'max_rel'", four, four, "f32", { max_rel = 1 })
    refuses("bound.max_relative must be a non%-negative number, not %-1", four, four, "f32", { max_relative = -1 })
    refuses("bound.max_ulp must be a non%-negative number, not %-?nan", four, four, "f32", { max_ulp = NAN })
    refuses("bound.max_absolute must be a non%-negative number, not x", four, four, "f32", { max_absolute = "x" })
  end)
end)

describe("contracts as route rows", function()
  local function q(format, facts)
    local spec = { format = format, regime = "elementwise" }
    for k, v in pairs(facts or {}) do spec[k] = v end
    return xpu.query(spec)
  end

  it("registers one row per dtype, format the dtype's name, in the elementwise regime", function()
    local t = xpu.new_routes "contract-rows"
    local rows = C["cumsum.cpu"]:register(t)
    local names = {}
    for _, r in ipairs(rows) do
      names[#names + 1] = r.name
      assert.equal("elementwise", r.regime)
      assert.same({ "code.host" }, r.needs)
      assert.equal("cumsum", r.kernel)
    end
    assert.same({ "cumsum.cpu.f32", "cumsum.cpu.f64", "cumsum.cpu.f16", "cumsum.cpu.bf16" }, names)
    assert.equal("f16", rows[3].format)
    assert.has_error(function() C["cumsum.cpu"]:register(t) end, "route table 'contract-rows' already has a row named 'cumsum.cpu.f32'")
    local before = #t
    t:freeze()
    assert.has_error(function() C["flip.cpu"]:register(t) end)
    assert.equal(before, #t)
    -- the copy: a row per way it runs, best first, at the priority given plus the variant's rank
    local rows2 = C["copy.cpu"]:register(xpu.new_routes "other", "bind", { priority = 7 })
    local u8 = {}
    for _, r in ipairs(rows2) do
      assert.equal("bind", r.regime)
      if r.format == "u8" then u8[#u8 + 1] = ("%s %d %s"):format(r.name, r.priority, r.kernel) end
    end
    assert.same({ "copy.cpu.u8:host_copy 12 ", "copy.cpu.u8:driver_copy 11 ", "copy.cpu.u8:stream_copy 10 stream_copy",
                  "copy.cpu.u8 7 copy_bytes" }, u8)
  end)

  it("gates shape in C from the query's facts, naming the contract field that refused", function()
    local cpu = xpu.device "cpu:0"
    local only = xpu.new_routes "only-triu"
    C["triu.cpu"]:register(only)
    local r = only:why_not_admissible(q("f32", { rank = 1, dim0 = 5 }), cpu)
    assert.equal("Shape", r.clause)
    assert.equal("accept.inputs[0].rank: rank 1 outside 2..=8", r.gate)
    r = only:why_not_admissible(q("f32", { rank = 2, dim0 = 3, dim1 = 4, batch_count = 2 }), cpu)
    assert.equal("accept.op_params.fields.cols.constraint: batch_count * rows * cols == input.n fails", r.gate)
    assert.equal("triu.cpu.f32", only:admissible(q("f32", { rank = 2, dim0 = 3, dim1 = 4 }), cpu).name)
    assert.equal("accept.inputs[0].layout.strided: rejected (input is strided)",
      only:why_not_admissible(q("f32", { rank = 2, dim0 = 3, dim1 = 4, strided = 1 }), false).gate)
    -- a strided operand (from its strides): the contiguous-only row refuses, contiguize serves it
    local t = xpu.new_routes "gates"
    C["triu.cpu"]:register(t)
    C["contiguize.cpu"]:register(t)
    local strided = q("f32", { rank = 2, dim0 = 3, dim1 = 4, stride0 = 1, stride1 = 3 })
    local names = {}
    for _, row in ipairs(t:candidates(strided, cpu)) do names[#names + 1] = row.name end
    assert.same({ "contiguize.cpu.f32" }, names)
    -- the audit walks the declared half: no device asked
    local a = t:audit { q("f32", { rank = 1 }), q("f32", { rank = 3, dim0 = 2, dim1 = 2, dim2 = 2 }), q("i8", { rank = 2 }) }
    assert.equal(0, a:unserved_count())
    assert.is_true(a:never_firing_count() > 0)
  end)

  it("resolves through the contract gates without allocating", function()
    if not xpu.T or not xpu.T.alloc_count then return pending("xpu.T.alloc_count is absent from this build") end
    local cpu = xpu.device "cpu:0"
    local t = xpu.new_routes "no-alloc"
    for _, c in ipairs(contracts) do c:register(t, c.kernel) end
    local hit = xpu.call { query = xpu.query { format = "f16", regime = "pad", rank = 2, dim0 = 30, dim1 = 40,
      ["padding0.0"] = 1, ["padding0.1"] = 2, ["padding1.0"] = 3, ["padding1.1"] = 4, mode_tag = 1 }, device = cpu }
    local miss = xpu.call { query = xpu.query { format = "f32", regime = "triu", rank = 1, dim0 = 9 }, device = cpu }
    for _ = 1, 10 do t:pick(hit); t:pick(miss) end -- warm
    collectgarbage("stop")
    local before = xpu.T.alloc_count()
    local picked
    for _ = 1, 500 do
      picked = t:pick(hit)
      t:pick(miss)
      t:admissible(hit.query, cpu)
    end
    local after = xpu.T.alloc_count()
    collectgarbage("restart")
    assert.equal("pad.cpu.f16", picked.name)
    assert.equal(0, after - before)
  end)

  it("refuses a CUDA contract's row on the CPU as Unsupported: its code is not there", function()
    local t = xpu.new_routes "cuda-rows"
    C["flip.cuda"]:register(t)
    local r = t:why_not_admissible(q("f32", { rank = 1, dim0 = 4, axis = 0 }), xpu.device "cpu:0")
    assert.equal("Unsupported", r.clause)
    assert.matches("code.ptx", r.gate, 1, true)
  end)

  it("dispatches a row through the kernel's launcher, reading the geometry from the query", function()
    local cpu = xpu.device "cpu:0"
    local t = xpu.new_routes "dispatch"
    C["roll.cpu"]:register(t)
    local src = cpu:buffer(string.pack("<i4<i4<i4<i4<i4<i4", 1, 2, 3, 4, 5, 6))
    local out = cpu:buffer(24)
    local query = q("i32", { rank = 2, dim0 = 2, dim1 = 3, axis = 1, outer_count = 2, dim_size = 3, inner_count = 1, shift = 1 })
    local call = xpu.call { query = query, device = cpu, operands = { out = out, input = src } }
    local row = t:bind(call)
    assert.equal("roll.cpu.i32", row.name)
    local k = cpu:kernel "roll"
    local before = k.launches
    row:dispatch(call)
    assert.equal(before + 1, k.launches)
    local got = { string.unpack("<i4<i4<i4<i4<i4<i4", out:download()) }
    got[7] = nil -- unpack's next position
    assert.same({ 3, 1, 2, 6, 4, 5 }, got)
  end)
end)

describe("the planner", function()
  it("runs a contiguous operand directly and prices the one step", function()
    local p = xpu.contracts.plan(contracts, { op = "flip", backend = "cpu", inputs = { dense("f32", { 6, 5 }) }, params = { axis = 0 } })
    assert.equal(1, #p.steps)
    assert.equal("flip", p.steps[1].op)
    assert.equal(2 * 30 * 4, p.bytes_moved)
    assert.same({ 6, 5 }, p.shape)
  end)

  it("puts a contiguize in front of a contiguous-only kernel given a view, priced from its own contract", function()
    local view = { dtype = "f16", shape = { 5, 6 }, strides = { 1, 5 } }
    local p = xpu.contracts.plan(contracts, { op = "cumsum", backend = "cpu", inputs = { view }, params = { axis = 1 } })
    assert.equal(2, #p.steps)
    assert.equal("contiguize", p.steps[1].op)
    assert.equal("input", p.steps[1].input)
    assert.equal(C["contiguize.cpu"]:call { inputs = { view } }.bytes_moved, p.steps[1].bytes_moved)
    assert.equal("cumsum", p.steps[2].op)
    assert.equal(2 * 30 * 2, p.steps[2].bytes_moved)
    assert.equal(p.steps[1].bytes_moved + p.steps[2].bytes_moved, p.bytes_moved)
    assert.equal(5 * 5, p.flops)
    assert.equal(tostring(C["contiguize.cpu"]), tostring(p.steps[1].contract))
  end)

  it("takes rows made from contracts, and says why when no candidate admits the call", function()
    local t = xpu.new_routes "plan-rows"
    local rows = C["triu.cpu"]:register(t)
    for _, r in ipairs(C["contiguize.cpu"]:register(t)) do rows[#rows + 1] = r end
    local p = xpu.contracts.plan(rows, { inputs = { { dtype = "f32", shape = { 3, 3 }, strides = { 3, 1 }, offset = 2 } } })
    assert.same({ "contiguize", "triu" }, { p.steps[1].op, p.steps[2].op })
    local none, why = xpu.contracts.plan(rows, { inputs = { dense("f32", { 3 }) } })
    assert.is_nil(none)
    assert.equal("triu (cpu): accept.inputs[0].rank: rank 1 outside 2..=8", why)
    local _, why2 = xpu.contracts.plan({ C["triu.cpu"] }, { inputs = { { dtype = "f32", shape = { 3, 3 }, strides = { 1, 3 } } } })
    assert.matches("and no contiguize contract for its backend", why2, 1, true)
    assert.has_error(function() xpu.contracts.plan({ xpu.new_routes "x" }, { inputs = {} }) end)
  end)
end)

describe("scripts/contracts.lua", function()
  local exe = arg and arg[-1] or "build/xpulua"
  local function run(args)
    local p = io.popen(exe .. " scripts/contracts.lua " .. args .. " 2>&1; echo \"exit=$?\"")
    local out = p:read("a")
    p:close()
    return out, tonumber(out:match("exit=(%d+)%s*$"))
  end

  it("prints each contract's rows and audits the query set against them", function()
    local out, code = run(FILE)
    assert.equal(0, code, out)
    assert.matches("contracts/shape%-ops.md: 33 contracts, %d+ rows", out)
    assert.matches("write_slice_rotating%s+cuda%s+write_slice_rotating", out)
    assert.matches("flip u8 strided%s+0%s+.-accept.inputs%[0%].layout.strided: rejected", out)
    assert.matches("triu f32 rank 1%s+0%s+.-accept.inputs%[0%].rank: rank 1 outside 2..=8", out)
    -- pad_items' gate reads the operands' bases (the ready half): the declared half admits it
    assert.matches("pad f32 3x4 reflect%s+4%s+pad.cuda.f32:pad_items, pad.cpu.f32, pad.cuda.f32, pad.vulkan.f32", out)
    assert.matches("pad%.cuda%.<[^>]+>%[:pad_rows|:pad_items%]", out)
    assert.matches("rows that never fire: %d+ of %d+", out)
  end)

  it("prints the reader's error for a malformed file and exits non-zero", function()
    local out, code = run(FIX .. "unknown-dtype.md")
    assert.equal(1, code)
    assert.matches("^contracts: spec/fixtures/contracts/unknown%-dtype.md:16: kernel 'flip': accept.inputs%[0%].dtypes%[1%]: unknown dtype 'F17'", out)
  end)
end)
