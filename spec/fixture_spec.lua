-- fixture_spec.lua — xpu.fixture, the specs' seeded data made in C: each generator against
-- the Lua loop it replaced (the same LCG step for step, so the same bytes), at sizes that
-- cross a 32-value scale block and a row; decode against string.unpack; bad arguments refused
-- by name.
local xpu = require "xpu"
local F = xpu.fixture

-- The specs' 31-bit LCG, in Lua: the state after one step.
local function step(s) return (s * 1103515245 + 12345) % 2147483648 end

-- spec/support/fixtures.lua's values() as it was written in Lua, for the comparison.
local function lua_normal(n, seed, cols)
  local s, t = seed, {}
  local function r() s = step(s) return s / 2147483648 end
  for i = 1, n do
    local g = math.sqrt(-2 * math.log(r() + 1e-12)) * math.cos(2 * math.pi * r())
    local v = g * (1 + ((i - 1) // 32 * 7) % 5)
    if cols then v = v * 10.0 ^ (((i - 1) // cols) % 9 - 5) end
    t[i] = string.pack("<f", v)
  end
  return table.concat(t)
end

local function half_bits(v) -- k/8 values only: exact halves
  if v == 0 then return 0 end
  local sign, a, e = v < 0 and 0x8000 or 0, math.abs(v), 0
  while a >= 2 do a, e = a / 2, e + 1 end
  while a < 1 do a, e = a * 2, e - 1 end
  return sign | ((e + 15) << 10) | math.floor((a - 1) * 1024 + 0.5)
end

local PACK = {
  f32 = function(v) return string.pack("<f", v) end,
  f64 = function(v) return string.pack("<d", v) end,
  f16 = function(v) return string.pack("<I2", half_bits(v)) end,
  bf16 = function(v) return string.pack("<f", v):sub(3, 4) end,
}

describe("xpu.fixture", function()
  it("normal: the Lua loop's Gaussians, byte for byte, scaled by block and (rows_of) by row", function()
    for _, seed in ipairs { 0, 41, 2147483647 } do
      for _, n in ipairs { 0, 1, 33, 1000 } do
        assert.equal(lua_normal(n, seed), F.normal(n, seed), ("n %d seed %d"):format(n, seed))
      end
      assert.equal(lua_normal(11 * 64, seed, 64), F.normal(11 * 64, seed, { rows_of = 64 }), "rows of 64")
    end
    local s = F.normal(64, 3)
    assert.are_not.equal(s:sub(1, 128), s:sub(129, 256)) -- never one value
  end)

  it("normal: a NaN at every nan_every-th value and nowhere else", function()
    local plain, with = F.decode("f32", F.normal(100, 9)), F.decode("f32", F.normal(100, 9, { nan_every = 7 }))
    for i = 1, 100 do
      if i % 7 == 0 then
        assert.is_true(with[i] ~= with[i], "value " .. i)
      else
        assert.equal(plain[i], with[i])
      end
    end
  end)

  it("bytes: the state mod 251 plus 1 a byte, and the state it stopped at", function()
    local s, want = 12345, {}
    for i = 1, 600 do s = step(s); want[i] = string.char(s % 251 + 1) end
    local got, after = F.bytes(600, 12345)
    assert.equal(table.concat(want), got)
    assert.equal(s, after)
    local again = F.bytes(300, select(2, F.bytes(300, 12345)))
    assert.equal(got:sub(301), again) -- two calls from the returned state: one sequence
  end)

  it("eighths: k/8 in every float dtype, f32 and f64 with a tail, and the state it stopped at", function()
    for dt, pack in pairs(PACK) do
      local s, want = 7, {}
      for i = 1, 500 do
        s = step(s)
        local v = (s % 129 - 64) / 8
        if dt == "f32" or dt == "f64" then s = step(s); v = v + (s % 1000 - 500) * 1e-4 end
        want[i] = pack(v)
      end
      local got, after = F.eighths(dt, 500, 7)
      assert.equal(table.concat(want), got, dt)
      assert.equal(s, after, dt)
    end
  end)

  it("decode: every element as a number, halves and bf16 exactly", function()
    local f32 = string.pack("<fff", 1.5, -0.0, 1 / 3)
    assert.same({ 1.5, -0.0, (string.unpack("<f", f32, 9)) }, F.decode("f32", f32))
    assert.same({ 0.1, -2 }, F.decode("f64", string.pack("<dd", 0.1, -2)))
    -- 1, the largest half, the smallest subnormal, -inf; bf16 1.0078125 and -2
    assert.same({ 1, 65504, 2 ^ -24, -math.huge }, F.decode("f16", string.pack("<I2I2I2I2", 0x3c00, 0x7bff, 1, 0xfc00)))
    assert.same({ 1.0078125, -2 }, F.decode("bf16", string.pack("<I2I2", 0x3f81, 0xc000)))
    local nan = F.decode("f16", string.pack("<I2", 0x7e00))[1]
    assert.is_true(nan ~= nan)
  end)

  it("refuses a bad dtype, count, seed or length by argument", function()
    assert.has_error(function() F.eighths("i32", 4, 1) end, "bad argument #1 to 'eighths' (invalid option 'i32')")
    assert.has_error(function() F.bytes(-1, 1) end, "bad argument #1 to 'bytes' (a count is an integer 0 .. 2^28)")
    assert.has_error(function() F.normal(4, 2 ^ 31 | 0) end, "bad argument #2 to 'normal' (a seed is an integer 0 .. 2^31 - 1)")
    assert.has_error(function() F.normal(4, 1, { nan_every = -1 }) end,
      "bad argument #3 to 'normal' (rows_of and nan_every are counts, 0 (none) or more)")
    assert.has_error(function() F.decode("f32", "abcdef") end, "bad argument #2 to 'decode' (not a whole number of elements)")
  end)
end)

describe("spec.support.fixtures' device list", function()
  it("opens the devices named, in order; one that does not open carries its reason and skip line", function()
    local fx = require "spec.support.fixtures"
    local list = fx.devices { "cpu:0", "cpu:1" }
    assert.equal(2, #list)
    assert.same({ "cpu:0", "cpu", true }, { list[1].id, list[1].backend, list[1].dev ~= nil })
    assert.is_nil(list[1].skip)
    assert.is_nil(list[2].dev)
    assert.equal("no such device (1 cpu device)", list[2].why)
    assert.equal("skipped: no cpu:1 (no such device (1 cpu device))", list[2].skip)
  end)
end)
