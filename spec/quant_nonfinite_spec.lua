-- quant_nonfinite_spec.lua — xpu.quant.quantize on values the formats cannot hold: a block
-- with a NaN or an infinity is the NaN block, its neighbours untouched; huge finite values
-- round-trip while the scale fits f16 and give no finite value once it does not
-- (docs/ARITHMETIC.md, "Non-finite and huge values").
local xpu = require "xpu"
local fx = require "spec.support.fixtures"
local q = xpu.quant

local FLT_MAX = string.unpack("<f", string.pack("<I4", 0x7f7fffff))
local NEG_NAN = string.pack("<I4", 0xffffffff) -- a negative NaN with a payload: 0xff bytes
local D_AT = { q6_K = 208 } -- where d sits; +0 in every other format

local function nan_count(s)
  local n = 0
  for _, v in ipairs(fx.unf32(s)) do if v ~= v then n = n + 1 end end
  return n
end

local function finite_count(s)
  local n = 0
  for _, v in ipairs(fx.unf32(s)) do
    if v == v and v ~= math.huge and v ~= -math.huge then n = n + 1 end
  end
  return n
end

local function nan_block(fmt)
  local f, at = q.info(fmt), D_AT[fmt] or 0
  return ("\0"):rep(at) .. "\0\126" .. ("\0"):rep(f.block_bytes - at - 2)
end

-- one block of ordinary values times scale, with values[i] = v for each i = v in `set`
local function block(fmt, seed, scale, set)
  local t = fx.values(q.info(fmt).block_elems, seed)
  for i = 1, #t do t[i] = t[i] * scale end
  for i, v in pairs(set or {}) do t[i] = v end
  return fx.f32s(t)
end

for _, fmt in ipairs(fx.formats) do
  describe(fmt .. " quantize", function()
    local f = q.info(fmt)
    local n, bb = f.block_elems, f.block_bytes

    it("writes the NaN block for a NaN, +inf, -inf or 0xff bytes, and leaves its neighbours", function()
      local plain = block(fmt, 3, 1)
      local bad = {
        block(fmt, 4, 1, { [1] = 0 / 0 }),
        block(fmt, 5, 1, { [n] = math.huge }),
        block(fmt, 6, 1, { [n // 2] = -math.huge }),
        block(fmt, 7, 1):sub(1, 4 * 9) .. NEG_NAN .. block(fmt, 7, 1):sub(4 * 10 + 1),
      }
      local x = plain .. table.concat(bad, plain) .. plain
      local got = q.quantize(fmt, x)
      local alone = q.quantize(fmt, plain)
      assert.equal(9 * bb, #got)
      for k = 0, 8 do
        local b = got:sub(k * bb + 1, (k + 1) * bb)
        if k % 2 == 0 then
          assert.equal(alone, b, "block " .. k)
        else
          assert.equal(nan_block(fmt), b, "block " .. k)
          assert.equal(n, nan_count(q.dequantize(fmt, b)), "block " .. k)
        end
      end
      assert.equal(4 * n, nan_count(q.dequantize(fmt, got)))
    end)

    it("turns 1 MB of 0xff bytes into NaN blocks only", function()
      local got = q.quantize(fmt, ("\255"):rep(1 << 20))
      local want = nan_block(fmt)
      assert.equal((1 << 18) // n * bb, #got)
      for k = 0, #got // bb - 1 do -- the first bad block alone, not 1 MB of bytes
        if got:sub(k * bb + 1, (k + 1) * bb) ~= want then
          assert.equal(want, got:sub(k * bb + 1, (k + 1) * bb), "block " .. k)
        end
      end
    end)

    it("round-trips huge values while its scale fits f16", function()
      -- amax about 1.2e5: every format's d (and dmin) stays below 65504
      local x = block(fmt, 8, 3e4)
      local y = fx.unf32(q.dequantize(fmt, q.quantize(fmt, x)))
      local xs = fx.unf32(x)
      local amax, err = 0, 0
      for i = 1, n do
        amax = math.max(amax, math.abs(xs[i]))
        err = math.max(err, math.abs(y[i] - xs[i]))
      end
      assert.is_true(amax > 6e4, "amax " .. amax)
      assert.is_true(err < 0.2 * amax, ("max error %g of amax %g"):format(err, amax))
    end)

    it("gives no finite value once its scale is past f16 (1e12, 1e20, 1e30, FLT_MAX)", function()
      for _, s in ipairs{ 1e12, 1e20, 1e30 } do
        local y = q.dequantize(fmt, q.quantize(fmt, block(fmt, 9, s)))
        assert.equal(0, finite_count(y), "scale " .. s)
      end
      for _, set in ipairs{ { [2] = FLT_MAX }, { [1] = -FLT_MAX, [n] = FLT_MAX } } do
        local y = q.dequantize(fmt, q.quantize(fmt, block(fmt, 10, 1, set)))
        assert.equal(0, finite_count(y))
      end
    end)
  end)
end
