-- layer_f16_spec.lua — the f16 activation rows: rms_norm.f16 (routes.layer_norm) and add, mul,
-- swiglu, geglu, rope .f16 (routes.layer_elementwise). docs/ARITHMETIC.md states their arithmetic:
-- each f16 input converted exactly to f32, every step the f32 row's, the result rounded once to
-- nearest even. So on cpu:0 each f16 row's bits are the f32 row's output (over the same values)
-- rounded by an f16 encoder written here in Lua, NaN counted; rms_norm.f16 and add / mul also
-- against a Lua oracle in double; then vulkan:0 and cuda:0 == cpu:0 bit for bit, every element
-- written (two poisons give the same bytes); each row fires (its census and dispatch counters)
-- and does not where it does not serve. A device that is absent is reported skipped with the reason.
local xpu = require "xpu"
local ew = require "xpu.layers.elementwise"
local norm = require "xpu.layers.norm"
local fx = require "spec.support.fixtures"

local ROUTES = { norm = require "routes.layer_norm", elementwise = require "routes.layer_elementwise" }
local cpu = xpu.device "cpu:0"
local devices = fx.devices { "vulkan:0", "cuda:0" }

local POISONS = { "\255", "\123" } -- 0xffff (an f16 NaN), 0x7b7b (61280, finite)

-- ---- f16 in Lua -----------------------------------------------------------------------------

-- The exponent e with 2^e <= a < 2^(e + 1), a > 0.
local function exponent(a)
  local e = math.floor(math.log(a, 2))
  while 2.0 ^ (e + 1) <= a do e = e + 1 end
  while 2.0 ^ e > a do e = e - 1 end
  return e
end

-- The f16 bits of x (a double holding an f32 value), rounded to nearest, ties to even; a NaN
-- is 0x7e00 (payloads are not compared).
local function f16_bits(x)
  if x ~= x then return 0x7e00 end
  local sign = (x < 0 or (x == 0 and 1 / x < 0)) and 0x8000 or 0
  local a = math.abs(x)
  if a == 0 then return sign end
  if a == math.huge then return sign | 0x7c00 end
  local q = 2.0 ^ (math.max(exponent(a), -14) - 10) -- the f16 quantum at a
  local m = a / q
  local r = math.floor(m)
  if m - r > 0.5 or (m - r == 0.5 and r % 2 == 1) then r = r + 1 end
  local v = r * q
  if v >= 65536 then return sign | 0x7c00 end
  if v < 2.0 ^ -14 then return sign | math.tointeger(v / 2.0 ^ -24) end -- 1024 there is 2^-14: continuous
  local e = exponent(v)
  return sign | ((e + 15) << 10) | math.tointeger(v / 2.0 ^ (e - 10) - 1024)
end

local function is_nan16(h) return h & 0x7c00 == 0x7c00 and h & 0x3ff ~= 0 end

local function halves(s) return { string.unpack("<" .. ("I2"):rep(#s // 2), s) } end

-- n seeded f16 values as bytes: both signs, exponents 2^-6 .. 2^6, any mantissa; NaN at nan_at.
local function f16_data(n, seed, nan_at)
  local r, t = fx.lcg(seed), {}
  for i = 1, n do
    local e = 9 + math.floor(r() * 13)
    t[i] = string.pack("<I2", i == nan_at and 0x7e01 or (r() < 0.5 and 0x8000 or 0) | (e << 10) | math.floor(r() * 1024))
  end
  return table.concat(t)
end

-- f16 bytes as f32 bytes: every f16 is an f32 exactly (xpu.fixture.decode reads them).
local function widen(s) return fx.f32s(xpu.fixture.decode("f16", s)) end

-- ---- the cases ------------------------------------------------------------------------------

-- Each case: the family, its f16 and f32 queries, f16 inputs (name -> bytes; f32 inputs such
-- as rms_norm's weight keep their bytes in both), the output's name and its element count.
local function rope_case(mode, seed)
  local pos = string.pack("<i4i4i4", 0, 4097, 32768)
  return { fam = "elementwise", out = "out", n = 3 * 5 * 12,
           query = function(dt) return ew.rope(dt, 3, 5, 12, { n_dims = 8, mode = mode }) end,
           half = { x = f16_data(180, seed, 17) }, keep = { pos = pos },
           scalars = { freq_base = 500000.0, freq_scale = 0.5 } }
end

local CASES = {
  { name = "rms_norm.f16 3x300", fam = "norm", out = "out", n = 900, nan_rows = 1,
    query = function(dt) return norm.query("rms_norm", 3, 300, { dtype = dt }) end,
    half = { x = f16_data(900, 1, 450) }, keep = { weight = fx.f32_values(300, 2) }, scalars = { eps = 1e-5 } },
  { name = "rms_norm.f16 2x4096", fam = "norm", out = "out", n = 8192, nan_rows = 1,
    query = function(dt) return norm.query("rms_norm", 2, 4096, { dtype = dt }) end,
    half = { x = f16_data(8192, 3, 4000) }, keep = { weight = fx.f32_values(4096, 4) } },
  { name = "add.f16 7x35", fam = "elementwise", out = "out", n = 245,
    query = function(dt) return ew.binary("add", dt, 7, 35) end,
    half = { a = f16_data(245, 5, 3), b = f16_data(245, 6) } },
  { name = "add.f16 4x64 broadcast", fam = "elementwise", out = "out", n = 256,
    query = function(dt) return ew.binary("add", dt, 4, 64, true) end,
    half = { a = f16_data(256, 7, 100), b = f16_data(64, 8) } },
  { name = "mul.f16 3x4097", fam = "elementwise", out = "out", n = 3 * 4097,
    query = function(dt) return ew.binary("mul", dt, 3, 4097) end,
    half = { a = f16_data(3 * 4097, 9, 5000), b = f16_data(3 * 4097, 10) } },
  { name = "mul.f16 5x8 broadcast", fam = "elementwise", out = "out", n = 40,
    query = function(dt) return ew.binary("mul", dt, 5, 8, 1) end,
    half = { a = f16_data(40, 11, 9), b = f16_data(8, 12) } },
  { name = "swiglu.f16 9x37", fam = "elementwise", out = "out", n = 333,
    query = function(dt) return ew.glu("swiglu", dt, 9, 37) end,
    half = { g = f16_data(333, 13, 2), u = f16_data(333, 14) } },
  { name = "geglu.f16 2x515", fam = "elementwise", out = "out", n = 1030,
    query = function(dt) return ew.glu("geglu", dt, 2, 515) end,
    half = { g = f16_data(1030, 15, 600), u = f16_data(1030, 16) } },
}
CASES[#CASES + 1] = rope_case("normal", 17)
CASES[#CASES + 1] = rope_case("neox", 18)
CASES[#CASES].name, CASES[#CASES - 1].name = "rope.f16 neox 3x5x12", "rope.f16 normal 3x5x12"

-- Binds and dispatches case's row for dtype on d, its output poisoned with `poison`. Returns
-- the output bytes, the row, and how many launches of its kernel the dispatch made.
local function run(d, case, dtype, poison)
  local q, ops = case.query(dtype), {}
  for k, v in pairs(case.half) do ops[k] = d:buffer(dtype == "f16" and v or widen(v)) end
  for k, v in pairs(case.keep or {}) do ops[k] = d:buffer(v) end
  for k, v in pairs(case.scalars or {}) do ops[k] = v end
  ops[case.out] = d:buffer((poison or POISONS[1]):rep(case.n * (dtype == "f16" and 2 or 4)))
  local c = xpu.call { query = q, device = d, operands = ops }
  local row = ROUTES[case.fam]:bind(c)
  local k = d:kernel(row.kernel)
  local before = k.launches
  row:dispatch(c)
  fx.sync(d)
  return ops[case.out]:download(), row, k.launches - before
end

local function nan_count(s)
  local n = 0
  for _, h in ipairs(halves(s)) do if is_nan16(h) then n = n + 1 end end
  return n
end

-- want and got as f16 bytes: equal bit for bit, a NaN matching any NaN; returns the NaN count.
local function same16(want, got, what)
  assert.equal(#want, #got, what .. ": lengths differ")
  local w, g, nans = halves(want), halves(got), 0
  for i = 1, #w do
    if is_nan16(w[i]) then
      assert.is_true(is_nan16(g[i]), ("%s: element %d is 0x%04x, not a NaN"):format(what, i - 1, g[i]))
      nans = nans + 1
    elseif w[i] ~= g[i] then
      error(("%s: element %d is 0x%04x, wanted 0x%04x"):format(what, i - 1, g[i], w[i]), 2)
    end
  end
  return nans
end

-- ---- cpu:0: the f32 row's result, rounded once --------------------------------------------

describe("f16 rows on cpu:0 == the f32 row's result rounded once to f16 (Lua encoder)", function()
  for _, case in ipairs(CASES) do
    it(case.name .. ", NaN counted", function()
      local got, row = run(cpu, case, "f16")
      local f32 = run(cpu, case, "f32")
      assert.equal(case.query("f16").format, row.format)
      local want = {}
      for i, v in ipairs(fx.unf32(f32)) do want[i] = string.pack("<I2", f16_bits(v)) end
      local nans = same16(table.concat(want), got, case.name)
      assert.is_true(nans >= 1, case.name .. ": the NaN input made no NaN")
      if case.nan_rows then
        local cols = case.n // (case.name:match "(%d+)x" + 0)
        assert.equal(case.nan_rows * cols, nans, case.name .. ": a NaN row is NaN throughout, no other")
      end
      assert.is_true(nans < case.n, case.name .. ": every element NaN")
    end)
  end
end)

describe("f16 rows on cpu:0 against a Lua oracle in double", function()
  local function within(got_h, want, tol, what)
    local got = xpu.fixture.decode("f16", string.pack("<I2", got_h))[1]
    local a = math.abs(want)
    -- the f16 rounding: half an f16 ulp (taken as one, log2 near a power of 2)
    tol = tol + (a < 2.0 ^ -14 and 2.0 ^ -25 or 2.0 ^ (exponent(a) - 11) * 2)
    if not (math.abs(got - want) <= tol) then
      error(("%s: %.9g, the oracle %.9g, tolerance %.3g"):format(what, got, want, tol), 2)
    end
  end

  it("rms_norm.f16: (x * 1 / sqrt(mean(x^2) + eps)) * w within 8 f32 ulps then the f16 rounding", function()
    local case = CASES[1]
    local got = halves((run(cpu, case, "f16")))
    local x, w = xpu.fixture.decode("f16", case.half.x), fx.unf32(case.keep.weight)
    for r = 0, 2 do
      local s, nan = 0, false
      for c = 1, 300 do
        local v = x[r * 300 + c]
        nan = nan or v ~= v
        s = s + v * v
      end
      local rinv = 1 / math.sqrt(s / 300 + 1e-5)
      for c = 1, 300 do
        local i = r * 300 + c
        if nan then
          assert.is_true(is_nan16(got[i]), "row " .. r .. ": NaN expected")
        else
          local want = x[i] * rinv * w[c]
          within(got[i], want, 8 * 2.0 ^ -24 * math.abs(want), ("rms_norm.f16 row %d col %d"):format(r, c - 1))
        end
      end
    end
  end)

  it("add.f16 and mul.f16: exactly f16(f32(a op b)), broadcast or not", function()
    for _, case in ipairs(CASES) do
      local k = case.name:match "^(%a+)%.f16"
      if k == "add" or k == "mul" then
        local got = halves((run(cpu, case, "f16")))
        local a, b = xpu.fixture.decode("f16", case.half.a), xpu.fixture.decode("f16", case.half.b)
        for i = 1, case.n do
          local bi = #b < #a and (i - 1) % #b + 1 or i
          local v = k == "add" and a[i] + b[bi] or a[i] * b[bi]
          local want = f16_bits((string.unpack("<f", string.pack("<f", v))))
          if is_nan16(want) then
            assert.is_true(is_nan16(got[i]), case.name .. ": NaN expected")
          else
            assert.equal(want, got[i], ("%s element %d"):format(case.name, i - 1))
          end
        end
      end
    end
  end)

  it("the Lua encoder: ties to even, subnormals, overflow to inf, against known bits", function()
    local known = { { 1.0, 0x3c00 }, { -2.0, 0xc000 }, { 65504, 0x7bff }, { 65520, 0x7c00 }, { 65519.99, 0x7bff },
                    { 2.0 ^ -24, 0x0001 }, { 2.0 ^ -25, 0x0000 }, { 3 * 2.0 ^ -25, 0x0002 }, { 2.0 ^ -14, 0x0400 },
                    { 1 + 2.0 ^ -11, 0x3c00 }, { 1 + 3 * 2.0 ^ -11, 0x3c02 }, { -0.0, 0x8000 }, { 1 / 0, 0x7c00 } }
    for _, k in ipairs(known) do
      assert.equal(k[2], f16_bits(k[1]), ("%.9g"):format(k[1]))
    end
  end)
end)

-- ---- each device against cpu:0 ----------------------------------------------------------------

for _, entry in ipairs(devices) do
  describe("f16 rows on " .. entry.id .. " == cpu:0", function()
    for _, case in ipairs(CASES) do
      it(case.name .. " bit for bit, every element written, NaN counted", function()
        if not entry.dev then return pending(entry.skip) end
        local want = run(cpu, case, "f16")
        local got, row, launches = run(entry.dev, case, "f16", POISONS[1])
        local again = run(entry.dev, case, "f16", POISONS[2])
        assert.equal(1, launches, case.name .. ": launches of " .. row.kernel)
        assert.is_true(got == again, case.name .. ": an element kept its poison")
        local nans = same16(want, got, entry.id .. " " .. case.name)
        assert.equal(nan_count(want), nans, case.name .. ": NaN count")
        assert.is_true(nans >= 1, case.name .. ": the NaN input made no NaN")
      end)
    end
  end)
end

-- ---- the rows: each fires, and does not where it does not serve ------------------------------

describe("the f16 rows fire and refuse", function()
  local ROWS = {
    { "rms_norm.f16", "norm", norm.query("rms_norm", 2, 300, { dtype = "f16" }),
      { norm.query("rms_norm", 2, 301, { dtype = "f16" }), "cols 301 is odd (f16 rows are whole 4-byte words)" } },
    { "add.f16", "elementwise", ew.binary("add", "f16", 3, 8),
      { ew.binary("add", "f16", 3, 8, 2), "broadcast 2 is not 0 (b is rows x cols) or 1 (b is one row)" } },
    { "mul.f16", "elementwise", ew.binary("mul", "f16", 3, 8, true),
      { ew.binary("mul", "f16", 65536, 32768), "rows x cols is 2147483648 elements, 2^31 or more: split the call" } },
    { "swiglu.f16", "elementwise", ew.glu("swiglu", "f16", 2, 64), { ew.glu("swiglu", "f16", -1, 8), "rows -1 x cols 8: counts are not negative" } },
    { "geglu.f16", "elementwise", ew.glu("geglu", "f16", 2, 64), { ew.glu("geglu", "f16", -1, 8), "rows -1 x cols 8: counts are not negative" } },
    { "rope.f16", "elementwise", ew.rope("f16", 2, 4, 64, { mode = "neox" }),
      { ew.rope("f16", 2, 4, 63), "head_dim 63 is not even and 2 or more: rope turns pairs" } },
  }
  for _, r in ipairs(ROWS) do
    local name, routes, good, bad = r[1], ROUTES[r[2]], r[3], r[4]
    local kernel = name:match "^(.-)%.f16$"
    it(name .. " fires for an f16 query (the census and its dispatches count it)", function()
      local row
      for _, each in ipairs(routes:rows()) do if each.name == name then row = each end end
      assert.is_not_nil(row, name)
      local before = row.dispatches
      local case
      for _, c in ipairs(CASES) do if c.name:find(name, 1, true) == 1 then case = c end end
      local _, ran, launches = run(cpu, case, "f16")
      assert.equal(name, ran.name)
      assert.equal(1, launches)
      assert.equal(before + 1, row.dispatches)
      assert.equal(1, routes:audit_row(name, { good }))
    end)
    it(name .. " does not fire for f32, bf16, or a shape it does not serve (its gate words)", function()
      local f32 = name:gsub("%.f16$", ".f32")
      local q32 = kernel == "rope" and ew.rope("f32", 2, 4, 64) or
        kernel == "rms_norm" and norm.query("rms_norm", 2, 300) or
        (kernel == "add" or kernel == "mul") and ew.binary(kernel, "f32", 3, 8) or ew.glu(kernel, "f32", 2, 64)
      assert.equal(1, routes:audit_row(f32, { q32 }), f32 .. " serves the f32 query")
      local qb = xpu.query { regime = kernel, format = "bf16", rows = 2, cols = 64 }
      assert.equal(0, routes:audit_row(name, { q32, qb, bad[1] }))
      local why = routes:why_not_admissible(bad[1])
      assert.same({ name, "Shape", bad[2] }, { why.row, why.clause, why.gate })
    end)
  end
end)
