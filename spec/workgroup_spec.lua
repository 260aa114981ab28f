-- workgroup_spec.lua — the workgroup primitives (kernels/workgroup.h's order) through their
-- test kernels workgroup_reduce and workgroup_scan, launched by the rows of routes.workgroup:
-- the CPU body against an oracle written here in Lua (the same tree, f32 rounded per step),
-- then every device present against the CPU with == (bits; NaN counted), at blocks 32 to
-- 1024, in a loop of trips, on values whose f32 sum depends on the order (mixed magnitudes,
-- cancellation) and whose integer sums wrap; outputs poisoned first; every lane's copy of a
-- reduce checked equal (the kernel counts the lanes that disagree); each row fires and does
-- not fire. A device that is absent is reported skipped with the reason.
local xpu = require "xpu"
local wg = require "xpu.workgroup"
local routes = require "routes.workgroup"
local fx = require "spec.support.fixtures"

local cpu = xpu.device "cpu:0"
local devices = fx.devices { "vulkan:0", "cuda:0" }

local BLOCKS = { 32, 64, 128, 256, 1024 }
local TRIPS = 3
local POISON = "\255"
local SIZE = { f32 = 4, i32 = 4, i64 = 8 }
local PACK = { f32 = "<f", i32 = "<i4", i64 = "<i8" }

-- ---- the oracle ---------------------------------------------------------------------------

local function f32(x) return (string.unpack("<f", string.pack("<f", x))) end
local function wrap32(x) return (x + 0x80000000) % 0x100000000 - 0x80000000 end

local IDENTITY = {
  f32 = { add = 0.0, max = -math.huge, min = math.huge },
  i32 = { add = 0, max = -0x80000000, min = 0x7fffffff },
  i64 = { add = 0, max = math.mininteger, min = math.maxinteger },
}

-- op(a, b), a first: f32 max / min return a NaN as it is, else b only where it wins strictly.
local function combine(op, dt, a, b)
  if op == "add" then
    if dt == "f32" then return f32(a + b) end
    return dt == "i32" and wrap32(a + b) or a + b
  end
  if a ~= a then return a end
  if b ~= b then return b end
  if op == "max" then return b > a and b or a end
  return b < a and b or a
end

local function tree_reduce(op, dt, v, first, block)
  local parts = {}
  for w = 0, block // 32 - 1 do
    local lane = {}
    for l = 0, 31 do lane[l] = v[first + w * 32 + l] end
    local off = 16
    while off >= 1 do
      local t = {}
      for l = 0, 31 do t[l] = combine(op, dt, lane[l & ~off], lane[l | off]) end
      lane, off = t, off // 2
    end
    parts[#parts + 1] = lane[0]
  end
  local r = parts[1]
  for w = 2, #parts do r = combine(op, dt, r, parts[w]) end
  return r
end

local function exclusive_scan(op, dt, v, first, block, out)
  local acc = IDENTITY[dt][op]
  for l = 0, block - 1 do
    out[first + l] = acc
    acc = combine(op, dt, acc, v[first + l])
  end
end

-- ---- fixtures -----------------------------------------------------------------------------

-- n values of dt, never all alike: f32 of magnitudes 2^-20 .. 2^40 with large pairs of
-- opposite sign spread over the waves (a sum that depends on the order), a NaN at item `nan`;
-- integers near the type's range, so sums wrap.
local function values(dt, n, seed, nan)
  local r, v = fx.lcg(seed), {}
  for i = 0, n - 1 do
    local sign = r() < 0.5 and -1 or 1
    if dt == "f32" then
      local scale = ({ 2.0 ^ -20, 1.0, 2.0 ^ 24, 2.0 ^ 40 })[1 + math.floor(r() * 4)]
      v[i] = f32(sign * (1 + r()) * scale)
    elseif dt == "i32" then
      v[i] = sign * math.floor(r() * 0x7fffffff)
    else
      v[i] = sign * ((math.floor(r() * 0x7fffffff) << 32) | math.floor(r() * 0xffffffff))
    end
  end
  if nan then v[nan] = 0 / 0 end
  return v
end

local function pack(dt, v, n)
  local parts = {}
  for i = 0, n - 1 do parts[#parts + 1] = string.pack(PACK[dt], v[i]) end
  return table.concat(parts)
end

local function unpack_all(dt, s)
  local v, size = {}, SIZE[dt]
  for i = 0, #s // size - 1 do v[i] = string.unpack(PACK[dt], s, 1 + i * size) end
  return v
end

-- ---- runs through the route table -----------------------------------------------------------

-- Binds and dispatches the row for (regime, dt, op, block) on d over the packed x; returns the
-- downloaded outputs (poisoned first), the row and the kernel's launches during the dispatch.
local function run(d, regime, dt, op, block, x, items)
  local q = wg.query(regime, dt, op, block, TRIPS)
  local groups = (items + block * TRIPS - 1) // (block * TRIPS)
  local size = SIZE[dt]
  local ops = { x = d:buffer(x) }
  if regime == "reduce" then
    ops.out = d:buffer(POISON:rep(groups * TRIPS * size))
    ops.agree = d:buffer(POISON:rep(groups * TRIPS * 4))
  else
    ops.out = d:buffer(POISON:rep(items * size))
  end
  local c = xpu.call { query = q, device = d, operands = ops }
  local row = routes:bind(c)
  local k = d:kernel(row.kernel)
  local before = k.launches
  row:dispatch(c)
  fx.sync(d)
  return ops.out:download(), ops.agree and ops.agree:download(), row, k.launches - before
end

-- == element by element: the same bytes, or NaN on both sides; returns the NaN count.
local function same(dt, want, got, what)
  assert.equal(#want, #got, what .. ": lengths differ")
  local size, nans = SIZE[dt], 0
  for i = 0, #want // size - 1 do
    local a, b = want:sub(1 + i * size, (i + 1) * size), got:sub(1 + i * size, (i + 1) * size)
    local isnan = dt == "f32" and string.unpack("<f", b) ~= string.unpack("<f", b)
    if isnan then nans = nans + 1 end
    local wnan = dt == "f32" and string.unpack("<f", a) ~= string.unpack("<f", a)
    if not (a == b or (isnan and wnan)) then
      error(("%s: element %d is %s, the CPU's %s"):format(what, i, tostring(string.unpack(PACK[dt], b)),
        tostring(string.unpack(PACK[dt], a))), 2)
    end
  end
  return nans
end

local function none_disagree(agree, what)
  for i = 1, #agree, 4 do
    assert.equal(0, string.unpack("<I4", agree, i), what .. ": lanes that disagree, trip " .. (i - 1) // 4)
  end
end

-- The case: two groups of TRIPS trips and a ragged end (items past n give the identity).
local function case(dt, block, nan)
  local items = 2 * block * TRIPS - 7
  return items, values(dt, items, block + #dt, nan and block + 3 or nil)
end

-- ---- the CPU against the oracle -------------------------------------------------------------

describe("workgroup primitives on cpu:0 == the Lua oracle", function()
  for _, dt in ipairs { "f32", "i32", "i64" } do
    for _, op in ipairs { "add", "max", "min" } do
      it(("reduce %s %s at every block, in a loop of %d trips, every lane agreeing"):format(op, dt, TRIPS), function()
        for _, block in ipairs(BLOCKS) do
          local items, v = case(dt, block, dt == "f32")
          local out, agree = run(cpu, "reduce", dt, op, block, pack(dt, v, items), items)
          local got = unpack_all(dt, out)
          local padded, nans = {}, 0
          for i = 0, 2 * block * TRIPS - 1 do padded[i] = i < items and v[i] or IDENTITY[dt][op] end
          for trip = 0, 2 * TRIPS - 1 do
            local want = tree_reduce(op, dt, padded, trip * block, block)
            if want ~= want then
              nans = nans + 1
              assert.is_true(got[trip] ~= got[trip], ("block %d trip %d: NaN"):format(block, trip))
            else
              assert.equal(string.pack(PACK[dt], want), string.pack(PACK[dt], got[trip]),
                ("%s %s block %d trip %d"):format(op, dt, block, trip))
            end
          end
          assert.equal(dt == "f32" and 1 or 0, nans, "NaN count")
          none_disagree(agree, ("%s %s block %d"):format(op, dt, block))
        end
      end)
    end
  end

  it("f32 add: the fixture's sums depend on the order (the tree differs from a running sum)", function()
    local differ = 0
    for _, block in ipairs(BLOCKS) do
      local items, v = case("f32", block)
      for trip = 0, (items // block) - 1 do
        local run_sum = 0.0
        for i = trip * block, trip * block + block - 1 do run_sum = f32(run_sum + v[i]) end
        if run_sum ~= tree_reduce("add", "f32", v, trip * block, block) then differ = differ + 1 end
      end
    end
    assert.is_true(differ > 0, "no fixture sum depends on the order")
  end)

  for _, dt in ipairs { "i32", "i64" } do
    for _, op in ipairs { "add", "max", "min" } do
      it(("scan %s %s at every block: each lane's exclusive prefix, exact"):format(op, dt), function()
        for _, block in ipairs(BLOCKS) do
          local items, v = case(dt, block)
          local out = run(cpu, "scan", dt, op, block, pack(dt, v, items), items)
          local want = {}
          for trip = 0, 2 * TRIPS - 1 do
            local padded = {}
            for i = 0, 2 * block * TRIPS - 1 do padded[i] = i < items and v[i] or IDENTITY[dt][op] end
            exclusive_scan(op, dt, padded, trip * block, block, want)
          end
          assert.equal(pack(dt, want, items), out, ("scan %s %s block %d"):format(op, dt, block))
        end
      end)
    end
  end
end)

-- ---- each device against the CPU ------------------------------------------------------------

for _, entry in ipairs(devices) do
  local function dev_it(name, fn)
    it(name, function()
      if not entry.dev then return pending(entry.skip) end
      fn(entry.dev)
    end)
  end

  describe("workgroup primitives on " .. entry.id .. " == cpu:0", function()
    for _, dt in ipairs { "f32", "i32", "i64" } do
      for _, op in ipairs { "add", "max", "min" } do
        dev_it(("reduce %s %s, bit for bit, at every block, NaN counted, every lane agreeing"):format(op, dt), function(d)
          for _, block in ipairs(BLOCKS) do
            local items, v = case(dt, block, dt == "f32")
            local x = pack(dt, v, items)
            local want, want_agree = run(cpu, "reduce", dt, op, block, x, items)
            local got, agree, row, launches = run(d, "reduce", dt, op, block, x, items)
            local what = ("%s %s %s block %d"):format(entry.id, op, dt, block)
            assert.equal(1, launches, what .. ": launches of " .. row.kernel)
            assert.equal(dt == "f32" and 1 or 0, same(dt, want, got, what), what .. ": NaN count")
            assert.equal(want_agree, agree, what .. ": agree")
            none_disagree(agree, what)
          end
        end)
      end
    end
    for _, dt in ipairs { "i32", "i64" } do
      for _, op in ipairs { "add", "max", "min" } do
        dev_it(("scan %s %s, exact, at every block"):format(op, dt), function(d)
          for _, block in ipairs(BLOCKS) do
            local items, v = case(dt, block)
            local x = pack(dt, v, items)
            local want = run(cpu, "scan", dt, op, block, x, items)
            local got = run(d, "scan", dt, op, block, x, items)
            same(dt, want, got, ("%s scan %s %s block %d"):format(entry.id, op, dt, block))
          end
        end)
      end
    end
  end)
end

-- ---- lavapipe at every subgroup width ----------------------------------------------------------

-- LP_NATIVE_VECTOR_WIDTH sets lavapipe's subgroup size (128 bits: 4 lanes .. 2048: 64); the
-- virtual 32-lane waves must give the CPU's bits at each. A child process per width.
local WIDTH_CHILD = [[
  local xpu = require "xpu"
  local wg = require "xpu.workgroup"
  local routes = require "routes.workgroup"
  local vk, cpu = assert(xpu.device "vulkan:0"), xpu.device "cpu:0"
  local function run(d, regime, dt, block, x, n, size)
    local ops = { x = d:buffer(x), out = d:buffer(("\255"):rep(n * size)), agree = d:buffer(("\255"):rep(4 * n)) }
    local c = xpu.call { query = wg.query(regime, dt, "add", block), device = d, operands = ops }
    routes:bind(c):dispatch(c)
    d:default_stream():sync()
    return ops.out:download() .. ops.agree:download()
  end
  local parts, wide = {}, {}
  for i = 1, 1024 do
    parts[i] = string.pack("<f", (i % 7 - 3) * 2.0 ^ (i % 5 * 9 - 18))
    wide[i] = string.pack("<i8", (i * 0x9E3779B97F4A7C15) ~ (i << 40))
  end
  local f, w = table.concat(parts), table.concat(wide)
  local same = 0
  for _, block in ipairs { 32, 256, 1024 } do
    same = same + (run(vk, "reduce", "f32", block, f, 1024, 4) == run(cpu, "reduce", "f32", block, f, 1024, 4) and 1 or 0)
    same = same + (run(vk, "scan", "i64", block, w, 1024, 8) == run(cpu, "scan", "i64", block, w, 1024, 8) and 1 or 0)
  end
  print(vk.name, vk.wave_size, same)
]]

describe("workgroup primitives on lavapipe at every subgroup width", function()
  local vk = devices[1] -- vulkan:0
  it("== cpu:0 at 4, 8, 16, 32 and 64 lanes a subgroup (LP_NATIVE_VECTOR_WIDTH 128 .. 2048)", function()
    if not vk.dev then return pending(vk.skip) end
    if not vk.dev.name:match "llvmpipe" then return pending("skipped: vulkan:0 is not lavapipe (" .. vk.dev.name .. ")") end
    for _, bits in ipairs { 128, 256, 512, 1024, 2048 } do
      local out = fx.child("LP_NATIVE_VECTOR_WIDTH=" .. bits, WIDTH_CHILD)
      local width, same = out:match "\t(%d+)\t(%d+)"
      assert.equal(tostring(bits // 32), width, "subgroup width at " .. bits .. ": " .. out)
      assert.equal("6", same, "cases == cpu:0 at " .. bits .. " bits: " .. out)
    end
  end)
end)

-- ---- the rows: each fires, and does not where it does not serve -------------------------------

describe("routes.workgroup", function()
  local ROWS = {
    { "workgroup-reduce-f32", "reduce", "f32" }, { "workgroup-reduce-i32", "reduce", "i32" },
    { "workgroup-reduce-i64", "reduce", "i64" }, { "workgroup-scan-i32", "scan", "i32" },
    { "workgroup-scan-i64", "scan", "i64" },
  }
  for _, r in ipairs(ROWS) do
    local name, regime, dt = r[1], r[2], r[3]
    it(name .. " fires for its dtype at every block and op", function()
      local queries = {}
      for _, block in ipairs(BLOCKS) do
        for _, op in ipairs { "add", "max", "min" } do queries[#queries + 1] = wg.query(regime, dt, op, block) end
      end
      assert.equal(#queries, routes:audit_row(name, queries))
      assert.equal(name, routes:pick(xpu.call { query = queries[1], device = cpu }).name)
    end)

    it(name .. " does not fire for another op, a block of part waves or past 1024, or another dtype", function()
      local function gate(q)
        local why = routes:why_not_admissible(q)
        assert.equal(name, why.row)
        return why.clause, why.gate
      end
      assert.same({ "Shape", "op 3 is not add (0), max (1) or min (2)" }, { gate(wg.query(regime, dt, 3, 64)) })
      assert.same({ "Shape", "block 48 is not whole 32-lane waves, 32 to 1024 threads" },
        { gate(wg.query(regime, dt, "add", 48)) })
      assert.same({ "Shape", "block 2048 is not whole 32-lane waves, 32 to 1024 threads" },
        { gate(wg.query(regime, dt, "max", 2048)) })
      local bad = { wg.query(regime, dt, 3, 64), wg.query(regime, dt, "min", 48), wg.query(regime, "f16", "add", 64) }
      assert.equal(0, routes:audit_row(name, bad))
    end)
  end

  it("serves no f32 scan: refused at Format, by the scan rows' dtype", function()
    local why = routes:why_not_admissible(wg.query("scan", "f32", "add", 64))
    assert.equal("Format", why.clause)
    assert.matches("serves i", why.gate)
  end)

  it("refuses an unknown op name, and a direct launch of a block of part waves, by name", function()
    local ok, err = pcall(wg.query, "reduce", "f32", "mean", 64)
    assert.is_false(ok)
    assert.matches("op 'mean' is not add, max, min", err)
    local k, b = cpu:kernel "workgroup_reduce", cpu:buffer(64)
    ok, err = pcall(k.launch, k, nil, { 1 }, { 48 }, b, b, b, 1, 1, 1, 0, 0)
    assert.is_false(ok)
    assert.matches("takes a 1%-D block of whole 32%-lane waves, 32 to 1024 threads, launched with {48,1,1}", err)
    ok, err = pcall(k.launch, k, nil, { 1 }, { 64 }, b, b, b, 1, 1, 1, 5, 0)
    assert.matches("argument 'op': 5 is not 0 %(add%)", err)
    local s = cpu:kernel "workgroup_scan"
    ok, err = pcall(s.launch, s, nil, { 1 }, { 64 }, b, b, 1, 1, 0, 0)
    assert.matches("argument 'dtype': 0 is not 1 %(i32%) or 2 %(i64%)", err)
  end)
end)
