-- shape_rows_spec.lua — every way a shape op runs is a route row of its own: each contract
-- makes a row per dtype and per variant its backend builds (src/ops/shape/variants.c), the
-- variant's geometry gate speaks in the shape half (so the audit sees it, with no device), its
-- operand gate in the ready half, and a contract launch is picked in the contract's own table
-- (c.routes), whose records and census name the row that ran. Which variant fires on which
-- shape, and the bytes it writes, are checked per backend in shape_ops_spec.lua.
local xpu = require "xpu"

local contracts = xpu.contracts.load("contracts/shape-ops.md")
local C = {}
for _, c in ipairs(contracts) do
  C[c.kernel .. "." .. c.backend] = c
  local _ = c.routes -- its rows declare the facts the queries below carry
end

local function names_of(rows)
  local t = {}
  for _, r in ipairs(rows) do t[#t + 1] = r.name end
  return t
end

-- The rows of a contract serving one dtype, in table order (best first).
local function rows_for(c, dtype)
  local t = {}
  for _, r in ipairs(c.routes:rows()) do
    if r.format == dtype then t[#t + 1] = r.name .. " -> " .. r.kernel end
  end
  return t
end

describe("shape variants as route rows", function()
  it("makes a row per variant the backend builds, best first, each naming its kernel", function()
    assert.same({ "pad.cuda.f32:pad_rows -> pad_rows", "pad.cuda.f32:pad_items -> pad_items", "pad.cuda.f32 -> pad" },
      rows_for(C["pad.cuda"], "f32"))
    assert.same({ "pad.vulkan.f32:pad_rows -> pad_rows", "pad.vulkan.f32 -> pad" }, rows_for(C["pad.vulkan"], "f32"))
    assert.same({ "pad.cpu.f32 -> pad" }, rows_for(C["pad.cpu"], "f32"))
    assert.same({ "contiguize.cuda.f16:contiguize_tiles_odd -> contiguize_tiles_odd",
                  "contiguize.cuda.f16:contiguize_tiles -> contiguize_tiles", "contiguize.cuda.f16 -> contiguize" },
      rows_for(C["contiguize.cuda"], "f16"))
    -- the copies that launch no kernel name none
    assert.same({ "write_slice.cpu.u8:driver_copy -> ", "write_slice.cpu.u8:stream_copy -> stream_copy",
                  "write_slice.cpu.u8:copy_bytes -> copy_bytes", "write_slice.cpu.u8 -> write_slice" },
      rows_for(C["write_slice.cpu"], "u8"))
    assert.same({ "copy.vulkan.i8:host_copy -> ", "copy.vulkan.i8:driver_copy -> ", "copy.vulkan.i8:stream_copy -> stream_copy",
                  "copy.vulkan.i8 -> copy_bytes" }, rows_for(C["copy.vulkan"], "i8"))
    assert.equal(C["pad.cuda"].routes, C["pad.cuda"].routes) -- made once
  end)

  -- Each geometry gate, fired and refused in the declared half (no device: the audit's).
  local q = function(format, facts)
    facts.format, facts.regime = format, "elementwise"
    return xpu.query(facts)
  end
  local gates = {
    { c = "pad.cuda", row = "pad.cuda.f32:pad_rows", gate = "output rows (the last axis) of 128 items up to 2^31",
      fires = q("f32", { rank = 2, dim0 = 3, dim1 = 256, ["padding0.0"] = 1, ["padding0.1"] = 0, ["padding1.0"] = 0, ["padding1.1"] = 0 }),
      refuses = q("f32", { rank = 2, dim0 = 3, dim1 = 100, ["padding0.0"] = 1, ["padding0.1"] = 0, ["padding1.0"] = 0, ["padding1.1"] = 0 }) },
    { c = "pad.vulkan", row = "pad.vulkan.f16:pad_rows", gate = "output rows of whole 16-byte chunks",
      fires = q("f16", { rank = 1, dim0 = 200, ["padding0.0"] = 4, ["padding0.1"] = 4 }),
      refuses = q("f16", { rank = 1, dim0 = 200, ["padding0.0"] = 3, ["padding0.1"] = 4 }) },
    { c = "cumsum.vulkan", row = "cumsum.vulkan.f32:cumsum_vec4", gate = "inner_count a multiple of 4",
      fires = q("f32", { rank = 2, dim0 = 5, dim1 = 8, axis = 0, outer_count = 1, dim_size = 5, inner_count = 8 }),
      refuses = q("f32", { rank = 2, dim0 = 5, dim1 = 7, axis = 0, outer_count = 1, dim_size = 5, inner_count = 7 }) },
    { c = "cumsum.cuda", row = "cumsum.cuda.f16:cumsum_vec4", gate = "f32",
      fires = nil, refuses = q("f16", { rank = 2, dim0 = 5, dim1 = 8, axis = 0, outer_count = 1, dim_size = 5, inner_count = 8 }) },
    { c = "write_slice.cpu", row = "write_slice.cpu.f32:stream_copy", gate = "a slab that is one contiguous run of dest",
      fires = q("f32", { rank = 2, dim0 = 2, dim1 = 8, ["dest.rank"] = 2, ["dest.dim0"] = 8, ["dest.dim1"] = 8,
                         ["ranges0.0"] = 3, ["ranges0.1"] = 5, ["ranges1.0"] = 0, ["ranges1.1"] = 8 }),
      refuses = q("f32", { rank = 2, dim0 = 2, dim1 = 4, ["dest.rank"] = 2, ["dest.dim0"] = 8, ["dest.dim1"] = 8,
                           ["ranges0.0"] = 3, ["ranges0.1"] = 5, ["ranges1.0"] = 0, ["ranges1.1"] = 4 }) },
    { c = "write_slice.vulkan", row = "write_slice.vulkan.f32:write_slice_rows",
      gate = "a slab of whole dest rows about its last partial axis",
      fires = q("f32", { rank = 3, dim0 = 2, dim1 = 2, dim2 = 8, ["dest.rank"] = 3, ["dest.dim0"] = 2, ["dest.dim1"] = 8,
                         ["dest.dim2"] = 8, ["ranges0.0"] = 0, ["ranges0.1"] = 2, ["ranges1.0"] = 3, ["ranges1.1"] = 5,
                         ["ranges2.0"] = 0, ["ranges2.1"] = 8 }),
      refuses = q("f32", { rank = 3, dim0 = 2, dim1 = 2, dim2 = 4, ["dest.rank"] = 3, ["dest.dim0"] = 2, ["dest.dim1"] = 8,
                           ["dest.dim2"] = 8, ["ranges0.0"] = 0, ["ranges0.1"] = 2, ["ranges1.0"] = 3, ["ranges1.1"] = 5,
                           ["ranges2.0"] = 0, ["ranges2.1"] = 4 }) },
    { c = "contiguize.vulkan", row = "contiguize.vulkan.f32:contiguize_tiles",
      gate = "a transpose (an axis of stride 1 before a strided last axis)",
      fires = q("f32", { rank = 2, dim0 = 64, dim1 = 64, stride0 = 1, stride1 = 64, offset = 0 }),
      refuses = q("f32", { rank = 2, dim0 = 64, dim1 = 64, stride0 = 128, stride1 = 1, offset = 0 }) },
    { c = "contiguize.cuda", row = "contiguize.cuda.f32:contiguize_tiles_odd", gate = "a transpose whose steps are off 16 bytes",
      fires = q("f32", { rank = 2, dim0 = 64, dim1 = 63, stride0 = 1, stride1 = 67, offset = 0 }),
      refuses = q("f32", { rank = 2, dim0 = 64, dim1 = 64, stride0 = 1, stride1 = 64, offset = 0 }) },
  }
  for _, g in ipairs(gates) do
    it(g.row .. ": fires and refuses in the shape half, by its gate", function()
      local t = C[g.c].routes
      local row
      for _, r in ipairs(t:rows()) do if r.name == g.row then row = r end end
      assert.truthy(row, g.row)
      local qs = { g.refuses, g.fires }
      local a = t:audit(qs)
      local ri
      for i = 1, a.nrows do if a:row_name(i) == g.row then ri = i end end
      local clause, gate = a:clause(1, ri)
      assert.equal("Shape", clause)
      assert.equal(g.gate, gate)
      if g.fires then assert.equal("Admitted", (a:clause(2, ri))) end
    end)
  end

  it("picks a contract launch in c.routes: the record and the census name the row, the result its kernel", function()
    local c, d = C["copy.cpu"], xpu.device "cpu:0"
    local src = d:buffer(("\1\2\3\4"):rep(64))
    local before = c.routes.picks
    local r = c:launch { inputs = { src = { dtype = "u8", shape = { 256 }, buffer = src } }, out = d:buffer(256) }
    assert.equal(before + 1, c.routes.picks)
    local want = d:copy_path() == "driver" and "driver_copy" or "stream_copy"
    assert.equal("copy.cpu.u8:" .. want, r.row)
    local recs = c.routes:records()
    assert.equal(r.row, recs[#recs].row)
    assert.matches("copy%.cpu%.u8:" .. want .. "%s+cpu:0", c.routes:census())
    -- 255 bytes are no 16-byte chunks: the byte kernel's row, which is the op's own
    if want == "stream_copy" then
      r = c:launch { inputs = { src = { dtype = "u8", shape = { 255 }, buffer = src } }, out = d:buffer(255) }
      assert.equal("copy.cpu.u8", r.row)
      assert.equal("copy_bytes", r.kernel)
    end
  end)

  it("refuses through a variant's gate when its kernel is launched by a route row of the caller's", function()
    local d = xpu.device "cpu:0"
    local t = xpu.new_routes "copies"
    C["copy.cpu"]:register(t)
    -- a call without operands picks the op's own row: the operand gates read bases it lacks
    local call = xpu.call { query = q("u8", { rank = 1, dim0 = 64 }), device = d }
    assert.equal("copy.cpu.u8", t:pick(call).name)
    local why = t:why_not_picked(xpu.call { query = q("u8", { rank = 1, dim0 = 64 }), device = d }, d)
    assert.truthy(why)
    -- with operands: stream_copy where the bases and the length are whole 16 bytes
    local src, dst = d:buffer(64), d:buffer(64)
    local full = xpu.call { query = q("u8", { rank = 1, dim0 = 64 }), device = d, operands = { src = src, dst = dst } }
    local row = t:pick(full).name
    assert.equal(d:copy_path() == "driver" and "copy.cpu.u8:driver_copy" or "copy.cpu.u8:stream_copy", row)
    -- the contract's operand checks run in the ready half too: a destination too short refuses
    local short = xpu.call { query = q("u8", { rank = 1, dim0 = 64 }), device = d, operands = { src = src, dst = d:buffer(32) } }
    assert.is_nil(t:pick(short))
    local ref = t:why_not_picked(short)
    assert.matches("dst: buffer too short %(32 bytes, the call needs 64%)", ref.gate)
  end)
end)
