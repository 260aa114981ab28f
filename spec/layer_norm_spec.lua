-- layer_norm_spec.lua — the row-normalisation kernels (rms_norm, add_rms_norm, rms_norm_q8k,
-- add_rms_norm_q8k, layer_norm, softmax) through the rows of routes.layer_norm: the CPU body against an oracle
-- written here in Lua (rms_norm and layer_norm also against an f32 simulation of the stated
-- order, bit for bit; every kernel against doubles within a stated tolerance), then every
-- device present against the CPU with == (bits; NaN counted) at widths 1 .. 5000 and several
-- row counts, on values whose sums depend on the order, outputs poisoned first; the fused
-- kernels against the unfused chain on the same device; the correctly rounded steps
-- (norm_steps) on many values; refusals by their words. A device that is absent is reported
-- skipped with the reason.
local xpu = require "xpu"
local norm = require "xpu.layers.norm"
local routes = require "routes.layer_norm"
local fx = require "spec.support.fixtures"

local cpu = xpu.device "cpu:0"
local devices = fx.devices { "vulkan:0", "cuda:0" }

local WIDTHS = { 1, 31, 256, 257, 4096, 5000 }
local ROWS = { 1, 3 }
local POISON = "\255\255\255\255" -- a NaN: every element a kernel must write starts as one
local B = norm.BLOCK

-- ---- values -------------------------------------------------------------------------------

local function f32(x) return (string.unpack("<f", string.pack("<f", x))) end

local function pack(v)
  local parts = {}
  for i = 1, #v do parts[i] = string.pack("<f", v[i]) end
  return table.concat(parts)
end

local function unpack_all(s)
  local v = {}
  for i = 1, #s // 4 do v[i] = string.unpack("<f", s, 4 * i - 3) end
  return v
end

-- n values of magnitudes 2^-12 .. 2^12, sign mixed, a large pair of opposite sign now and then:
-- f32 sums of them depend on the order. With `nan`, element nan is a NaN.
local function values(n, seed, nan)
  local r, v = fx.lcg(seed), {}
  for i = 1, n do
    local sign = r() < 0.5 and -1 or 1
    v[i] = f32(sign * (1 + r()) * 2.0 ^ math.floor(r() * 25 - 12))
  end
  if nan then v[nan] = 0 / 0 end
  return v
end

local function weights(n, seed)
  local r, v = fx.lcg(seed), {}
  for i = 1, n do v[i] = f32(0.25 + r() * 1.5) end
  return v
end

-- ---- runs through the route table ---------------------------------------------------------

-- Binds and dispatches the row for `kernel` on d; inputs maps operand names to value lists (or
-- strings of bytes), outs to poisoned output sizes in bytes. Returns the downloads, the row,
-- and the kernel's launches during the dispatch.
local function run(d, kernel, rows, cols, inputs, outs, scalars, opts)
  local ops = {}
  for name, v in pairs(inputs) do ops[name] = d:buffer(type(v) == "string" and v or pack(v)) end
  for name, bytes in pairs(outs) do ops[name] = d:buffer(("\255"):rep(bytes)) end
  for name, v in pairs(scalars or {}) do ops[name] = v end
  local c = xpu.call { query = norm.query(kernel, rows, cols, opts), device = d, operands = ops }
  local row = routes:bind(c)
  local k = d:kernel(row.kernel)
  local before = k.launches
  row:dispatch(c)
  fx.sync(d)
  local got = {}
  for name in pairs(outs) do got[name] = ops[name]:download() end
  return got, row, k.launches - before
end

local function rms(d, rows, cols, x, w, eps)
  return run(d, "rms_norm", rows, cols, { x = x, weight = w }, { out = rows * cols * 4 }, { eps = eps }).out
end

-- == element by element (or NaN on both sides); returns the NaN count.
local function same(want, got, what)
  assert.equal(#want, #got, what .. ": lengths differ")
  local nans = 0
  for i = 1, #want // 4 do
    local a, b = want:sub(4 * i - 3, 4 * i), got:sub(4 * i - 3, 4 * i)
    local fa, fb = string.unpack("<f", a), string.unpack("<f", b)
    if fb ~= fb then nans = nans + 1 end
    if not (a == b or (fa ~= fa and fb ~= fb)) then
      error(("%s: element %d is %.9g (%s), the CPU's %.9g"):format(what, i - 1, fb, ("%08x"):format(
        string.unpack("<I4", b)), fa), 2)
    end
  end
  return nans
end

-- ---- the oracles ----------------------------------------------------------------------------

-- The stated order in f32 (each step rounded once: a double step then rounding to f32 is the
-- correctly rounded f32 step for + - * / sqrt): lanes, each wave's halving tree, the waves.
local function lane_reduce(terms, n, op)
  local lane = {}
  for t = 0, B - 1 do lane[t] = op == "max" and -math.huge or 0.0 end
  for i = 0, n - 1 do
    local t = i % B
    lane[t] = op == "max" and math.max(lane[t], terms[i + 1]) or f32(lane[t] + terms[i + 1])
  end
  local r
  for w = 0, B // 32 - 1 do
    local v = {}
    for l = 0, 31 do v[l] = lane[w * 32 + l] end
    local off = 16
    while off >= 1 do
      for l = 0, off - 1 do v[l] = op == "max" and math.max(v[l], v[l + off]) or f32(v[l] + v[l + off]) end
      off = off // 2
    end
    r = r == nil and v[0] or (op == "max" and math.max(r, v[0]) or f32(r + v[0]))
  end
  return r
end

local function f32_inv_root(sum, n, eps)
  return f32(1 / f32(math.sqrt(f32(f32(sum / n) + eps))))
end

local function f32_rms(x, w, rows, cols, eps)
  local out = {}
  for r = 0, rows - 1 do
    local sq = {}
    for i = 1, cols do sq[i] = f32(x[r * cols + i] ^ 2) end
    local rinv = f32_inv_root(lane_reduce(sq, cols), cols, eps)
    for i = 1, cols do out[r * cols + i] = f32(f32(x[r * cols + i] * rinv) * w[i]) end
  end
  return pack(out)
end

local function f32_layer(x, w, b, rows, cols, eps)
  local out = {}
  for r = 0, rows - 1 do
    local xs, d = {}, {}
    for i = 1, cols do xs[i] = x[r * cols + i] end
    local mean = f32(lane_reduce(xs, cols) / cols)
    for i = 1, cols do d[i] = f32(f32(xs[i] - mean) ^ 2) end
    local rinv = f32_inv_root(lane_reduce(d, cols), cols, eps)
    for i = 1, cols do
      local y = f32(f32(f32(xs[i] - mean) * rinv) * w[i])
      out[r * cols + i] = b and f32(y + b[i]) or y
    end
  end
  return pack(out)
end

-- |got - want| <= tol * scale_i for every element, the doubles' answer and scale given per row.
local function within(got_s, want, scale, tol, what)
  local got = unpack_all(got_s)
  for i = 1, #want do
    local err = math.abs(got[i] - want[i])
    if not (err <= tol * scale[i]) then
      error(("%s: element %d is %.9g, the doubles' %.9g (error %.3g, allowed %.3g)"):format(what, i - 1, got[i],
        want[i], err, tol * scale[i]), 2)
    end
  end
end

-- add_rms_norm_q8k on d against cpu:0 and against the unfused chain on d (the f32 add through
-- routes.layer_elementwise, then rms_norm_q8k), outputs poisoned, sum written over x as the
-- decoder writes it; a zero block, a NaN row and a tiny row among the values. Returns nothing;
-- raises on the first difference.
local ew_routes, ew = require "routes.layer_elementwise", require "xpu.layers.elementwise"
local function same_fused_chain(d, id)
  for _, cols in ipairs { 256, 512, 4096, 5120 } do
    local rows = 4
    local x, res, w = values(rows * cols, cols + 31), values(rows * cols, cols + 32), weights(cols, 10)
    for i = 1, 256 do x[cols + i], res[cols + i] = 0.0, 0.0 end  -- row 1's first block: all zero
    res[2 * cols + 7] = 0 / 0                                       -- row 2: NaN everywhere
    for i = 1, cols do
      x[3 * cols + i], res[3 * cols + i] = f32(x[3 * cols + i] * 2.0 ^ -120), f32(res[3 * cols + i] * 2.0 ^ -121)
    end
    local what = ("%s add_rms_norm_q8k %d x %d"):format(id, rows, cols)
    local blocks = rows * cols // 256
    local function fused(dev)
      local ops = { x = dev:buffer(pack(x)), residual = dev:buffer(pack(res)), weight = dev:buffer(pack(w)),
                    xq = dev:buffer(("\255"):rep(blocks * 320)) }
      ops.sum = ops.x
      local c = xpu.call { query = norm.query("add_rms_norm_q8k", rows, cols), device = dev, operands = ops }
      local row = routes:bind(c)
      local k = dev:kernel "add_rms_norm_q8k"
      local before = k.launches
      row:dispatch(c)
      fx.sync(dev)
      assert.equal(before + 1, k.launches, what .. ": one launch")
      return ops.xq:download(), ops.x:download()
    end
    local want_q, want_sum = fused(cpu)
    local got_q, got_sum = fused(d)
    assert.equal(1, same(want_sum, got_sum, what .. " sum"), what .. ": NaN count of the sum")
    assert.equal(want_q, got_q, what .. ": xq == cpu:0")
    -- the unfused chain on d: add into a poisoned buffer, then rms_norm_q8k of it
    local sum = d:buffer(POISON:rep(rows * cols))
    local ops = { out = sum, a = d:buffer(pack(x)), b = d:buffer(pack(res)) }
    local c = xpu.call { query = ew.binary("add", "f32", rows, cols), device = d, operands = ops }
    ew_routes:bind(c):dispatch(c)
    fx.sync(d)
    assert.equal(sum:download(), got_sum, what .. ": sum == the add")
    local chain = run(d, "rms_norm_q8k", rows, cols, { x = sum:download(), weight = w }, { xq = blocks * 320 }).xq
    assert.equal(chain, got_q, what .. ": xq == rms_norm_q8k of the add")
    assert.is_false(got_q == ("\0"):rep(#got_q), what .. ": all zeros")
    assert.is_false(got_q:find(("\255"):rep(320), 1, true) ~= nil, what .. ": a poisoned block is left")
  end
end

-- ---- the CPU against the oracles ------------------------------------------------------------

-- add_rms_norm_q8k_f32 on d: its xq and sum == add_rms_norm_q8k's on d, its out == rms_norm (f32)
-- of that sum on d, and all three == cpu:0's; one launch, outputs poisoned, sum in place.
local function same_fused_f32(d, id)
  for _, cols in ipairs { 256, 2048, 4096, 5120 } do
    local rows = 3
    local x, res, w = values(rows * cols, cols + 41), values(rows * cols, cols + 42), weights(cols, 11)
    res[cols + 9] = 0 / 0 -- row 1: NaN everywhere
    local what = ("%s add_rms_norm_q8k_f32 %d x %d"):format(id, rows, cols)
    local blocks = rows * cols // 256
    local function fused(dev)
      local ops = { x = dev:buffer(pack(x)), residual = dev:buffer(pack(res)), weight = dev:buffer(pack(w)),
                    xq = dev:buffer(("\255"):rep(blocks * 320)), out = dev:buffer(POISON:rep(rows * cols)) }
      ops.sum = ops.x
      local c = xpu.call { query = norm.query("add_rms_norm_q8k_f32", rows, cols), device = dev, operands = ops }
      local row = routes:bind(c)
      assert.equal("add_rms_norm_q8k_f32.f32", row.name)
      local k = dev:kernel "add_rms_norm_q8k_f32"
      local before = k.launches
      row:dispatch(c)
      fx.sync(dev)
      assert.equal(before + 1, k.launches, what .. ": one launch")
      return ops.xq:download(), ops.out:download(), ops.x:download()
    end
    local want_q, want_out, want_sum = fused(cpu)
    local got_q, got_out, got_sum = fused(d)
    assert.equal(1, same(want_sum, got_sum, what .. " sum"), what .. ": NaN count of the sum")
    assert.equal(cols, same(want_out, got_out, what .. " out"), what .. ": NaN count of out")
    assert.equal(want_q, got_q, what .. ": xq == cpu:0")
    -- the kernels it stands for, on d: add_rms_norm_q8k (xq, sum), rms_norm of the sum (out)
    local ops = { x = d:buffer(pack(x)), residual = d:buffer(pack(res)), weight = d:buffer(pack(w)),
                  xq = d:buffer(("\255"):rep(blocks * 320)) }
    ops.sum = ops.x
    local c = xpu.call { query = norm.query("add_rms_norm_q8k", rows, cols), device = d, operands = ops }
    routes:bind(c):dispatch(c)
    fx.sync(d)
    assert.equal(ops.xq:download(), got_q, what .. ": xq == add_rms_norm_q8k's")
    assert.equal(ops.x:download(), got_sum, what .. ": sum == add_rms_norm_q8k's")
    local sum = unpack_all(got_sum)
    assert.equal(cols, same(rms(d, rows, cols, sum, w), got_out, what .. ": out == rms_norm of the sum"))
  end
end

describe("layer norm kernels on cpu:0 == the Lua oracles", function()
  it("rms_norm: bit for bit the f32 steps in the stated order; within 2^-18 of the doubles' x / rms * w", function()
    for _, cols in ipairs(WIDTHS) do
      for _, rows in ipairs(ROWS) do
        local x, w = values(rows * cols, cols + rows), weights(cols, 5)
        local got = rms(cpu, rows, cols, x, w, 1e-6)
        local what = ("rms_norm %d x %d"):format(rows, cols)
        assert.equal(f32_rms(x, w, rows, cols, f32(1e-6)), got, what)
        local want, scale = {}, {}
        for r = 0, rows - 1 do
          local ss = 0
          for i = 1, cols do ss = ss + x[r * cols + i] ^ 2 end
          local rinv = 1 / math.sqrt(ss / cols + 1e-6)
          for i = 1, cols do
            want[r * cols + i] = x[r * cols + i] * rinv * w[i]
            scale[r * cols + i] = math.abs(want[r * cols + i])
          end
        end
        within(got, want, scale, 2 ^ -18, what)
      end
    end
  end)

  it("the fixtures' sums depend on the order (the lanes' tree differs from a running sum)", function()
    local differ = 0
    for _, cols in ipairs { 4096, 5000 } do
      local x = values(cols, cols + 1)
      local run_sum, sq = 0.0, {}
      for i = 1, cols do
        sq[i] = f32(x[i] ^ 2)
        run_sum = f32(run_sum + sq[i])
      end
      if run_sum ~= lane_reduce(sq, cols) then differ = differ + 1 end
    end
    assert.equal(2, differ, "a fixture whose sum of squares does not depend on the order")
  end)

  it("layer_norm, with and without bias: bit for bit the stated f32 steps; within 2^-16 of the doubles", function()
    for _, cols in ipairs(WIDTHS) do
      for _, rows in ipairs(ROWS) do
        local x, w, b = values(rows * cols, cols * 3 + rows), weights(cols, 6), values(cols, 7)
        for _, has_bias in ipairs { true, false } do
          local what = ("layer_norm %d x %d bias %s"):format(rows, cols, tostring(has_bias))
          local got = run(cpu, "layer_norm", rows, cols, { x = x, weight = w, bias = has_bias and b or nil },
            { out = rows * cols * 4 }, { eps = 1e-5 }, { bias = has_bias }).out
          assert.equal(f32_layer(x, w, has_bias and b, rows, cols, f32(1e-5)), got, what)
          local want, scale = {}, {}
          for r = 0, rows - 1 do
            local s, v = 0, 0
            for i = 1, cols do s = s + x[r * cols + i] end
            local mean = s / cols
            for i = 1, cols do v = v + (x[r * cols + i] - mean) ^ 2 end
            local rinv = 1 / math.sqrt(v / cols + 1e-5)
            for i = 1, cols do
              local xhat = (x[r * cols + i] - mean) * rinv
              want[r * cols + i] = xhat * w[i] + (has_bias and b[i] or 0)
              -- the error scales with the row's spread, as (x - mean) does
              scale[r * cols + i] = w[i] * (1 + math.abs(xhat) + math.abs(mean) * rinv) + math.abs(has_bias and b[i] or 0)
            end
          end
          within(got, want, scale, 2 ^ -16, what)
        end
      end
    end
  end)

  it("softmax, scale 1 and 0.125, with and without the causal mask: within 2^-15 of the doubles; masked exactly 0",
    function()
    for _, cols in ipairs(WIDTHS) do
      local rows = 3
      local x = values(rows * cols, cols * 5 + 1)
      for i = 1, #x do x[i] = f32(x[i] / 64) end -- e^x stays finite
      for _, case in ipairs { { 1.0, false, 0 }, { 0.125, true, 0 }, { 1.0, true, 2 } } do
        local scale, causal, pos0 = case[1], case[2], case[3]
        local what = ("softmax %d x %d scale %g causal %s pos0 %d"):format(rows, cols, scale, tostring(causal), pos0)
        local got = run(cpu, "softmax", rows, cols, { x = x }, { out = rows * cols * 4 }, { scale = scale, pos0 = pos0 },
          { causal = causal }).out
        local want, tol = {}, {}
        for r = 0, rows - 1 do
          local seen = causal and math.min(cols, pos0 + r + 1) or cols
          local m, s = -math.huge, 0
          for i = 1, seen do m = math.max(m, f32(scale * x[r * cols + i])) end
          for i = 1, seen do s = s + math.exp(f32(scale * x[r * cols + i]) - m) end
          for i = 1, cols do
            want[r * cols + i] = i <= seen and math.exp(f32(scale * x[r * cols + i]) - m) / s or 0
            tol[r * cols + i] = want[r * cols + i] + 1e-30 -- e^x under 2^-126 is 0
          end
        end
        within(got, want, tol, 2 ^ -15, what)
        local v = unpack_all(got)
        for r = 0, rows - 1 do
          local seen = causal and math.min(cols, pos0 + r + 1) or cols
          for i = seen + 1, cols do
            assert.equal(string.pack("<f", 0.0), string.pack("<f", v[r * cols + i]), what .. ": masked element")
          end
        end
      end
    end
  end)

  it("add_rms_norm: sum is the f32 sum exactly, out the f32 rms_norm of it", function()
    for _, cols in ipairs { 1, 31, 5000 } do
      local rows = 2
      local x, res, w = values(rows * cols, cols + 11), values(rows * cols, cols + 12), weights(cols, 8)
      local got = run(cpu, "add_rms_norm", rows, cols, { x = x, residual = res, weight = w },
        { out = rows * cols * 4, sum = rows * cols * 4 })
      local h = {}
      for i = 1, #x do h[i] = f32(x[i] + res[i]) end
      assert.equal(pack(h), got.sum, "sum " .. cols)
      assert.equal(f32_rms(h, w, rows, cols, f32(1e-6)), got.out, "out " .. cols)
    end
  end)

  it("rms_norm_q8k: the host q8_K pack of rms_norm's output, byte for byte", function()
    for _, cols in ipairs { 256, 4096 } do
      local rows = 3
      local x, w = values(rows * cols, cols + 21), weights(cols, 9)
      local got = run(cpu, "rms_norm_q8k", rows, cols, { x = x, weight = w }, { xq = rows * cols // 256 * 320 }).xq
      assert.equal(xpu.quant.q8k_pack(rms(cpu, rows, cols, x, w)), got, "rms_norm_q8k " .. cols)
    end
  end)

  it("add_rms_norm_q8k: == the f32 add then rms_norm_q8k, sum written over x", function()
    same_fused_chain(cpu, "cpu:0")
  end)

  it("add_rms_norm_q8k_f32 == add_rms_norm_q8k and rms_norm of its sum, NaN counted", function()
    same_fused_f32(cpu, "cpu:0")
  end)

  it("norm_steps: sqrt, 1 / x and x / d equal the doubles' rounded to f32", function()
    local v = { 0.0, -0.0, 1.0, 2.0, 3.0, 0.5, 1e-45, 1e-40, 3.4e38, 1 / 0, -1 / 0, -2.0 }
    local r = fx.lcg(77)
    for _ = 1, 2000 do v[#v + 1] = r() * 2.0 ^ math.floor(r() * 200 - 100) end
    for i = 1, #v do v[i] = f32(v[i]) end
    local n = #v
    local out = cpu:buffer(POISON:rep(3 * n))
    cpu:kernel("norm_steps"):launch(nil, (n + 255) // 256, 256, out, cpu:buffer(pack(v)), n, 3.0)
    local got = unpack_all(out:download())
    for i = 1, n do
      local want = { v[i] >= 0 and f32(math.sqrt(v[i])) or 0 / 0, f32(1 / v[i]), f32(v[i] / 3) }
      for k = 1, 3 do
        local g = got[3 * (i - 1) + k]
        assert.is_true(g == want[k] or (g ~= g and want[k] ~= want[k]),
          ("norm_steps item %d (%.9g) result %d: %.9g, want %.9g"):format(i - 1, v[i], k, g, want[k]))
      end
    end
  end)
end)

-- ---- each device against the CPU ------------------------------------------------------------

-- The correctly rounded steps on many values: random bit patterns (every exponent, subnormals,
-- NaN, infinities), squares' neighbours, divisors.
local function step_values()
  local r, v = fx.lcg(4242), {}
  for _ = 1, 60000 do v[#v + 1] = string.pack("<I4", math.floor(r() * 2 ^ 32)) end
  for i = 1, 4000 do
    local s = f32(i * i * 1.0)
    v[#v + 1] = string.pack("<f", s)
    v[#v + 1] = string.pack("<I4", string.unpack("<I4", string.pack("<f", s)) + 1)
  end
  for _, bits in ipairs { 0, 0x80000000, 1, 0x007fffff, 0x00800000, 0x7f7fffff, 0x7f800000, 0xff800000, 0x7fc00000 } do
    v[#v + 1] = string.pack("<I4", bits)
  end
  return table.concat(v)
end

for _, entry in ipairs(devices) do
  local function dev_it(name, fn)
    it(name, function()
      if not entry.dev then return pending(entry.skip) end
      fn(entry.dev)
    end)
  end

  describe("layer norm kernels on " .. entry.id .. " == cpu:0", function()
    dev_it("norm_steps: sqrt, 1 / x and x / d bit for bit on 68000 values (NaN as NaN)", function(d)
      local x = step_values()
      local n = #x // 4
      for _, div in ipairs { 3.0, 1e-30, 7e30 } do
        local outs = {}
        for _, dev in ipairs { cpu, d } do
          local out = dev:buffer(POISON:rep(3 * n))
          dev:kernel("norm_steps"):launch(nil, (n + 255) // 256, 256, out, dev:buffer(x), n, div)
          fx.sync(dev)
          outs[#outs + 1] = out:download()
        end
        same(outs[1], outs[2], ("%s norm_steps d %g"):format(entry.id, div))
      end
    end)

    local ROWS_DEV = { 1, 3, 40 }
    dev_it("rms_norm at every width and row count, bit for bit, one launch, NaN counted", function(d)
      for _, cols in ipairs(WIDTHS) do
        for _, rows in ipairs(ROWS_DEV) do
          if rows * cols <= 40000 or rows < 40 then
            local x, w = values(rows * cols, cols + rows, rows > 1 and cols + 2 or nil), weights(cols, 5)
            local what = ("%s rms_norm %d x %d"):format(entry.id, rows, cols)
            local want = rms(cpu, rows, cols, x, w)
            local got, row, launches = run(d, "rms_norm", rows, cols, { x = x, weight = w }, { out = rows * cols * 4 })
            assert.equal(1, launches, what .. ": launches of " .. row.kernel)
            assert.equal(rows > 1 and cols or 0, same(want, got.out, what), what .. ": NaN count (a row with a NaN)")
          end
        end
      end
    end)

    dev_it("rms_norm over 33000 rows: past one grid row of 32768 groups, every row written", function(d)
      local rows, cols = 33000, 3
      local x, w = values(rows * cols, 31), weights(cols, 4)
      assert.equal(0, same(rms(cpu, rows, cols, x, w), rms(d, rows, cols, x, w), entry.id .. " rms_norm 33000 rows"))
    end)

    dev_it("rms_norm at eps 0, 1e-6 and 0.5 and subnormal rows", function(d)
      local cols = 300
      local x = values(2 * cols, 99)
      for i = cols + 1, 2 * cols do x[i] = f32(x[i] * 2.0 ^ -126) end -- row 1 subnormal-ish
      for _, eps in ipairs { 0.0, 1e-6, 0.5 } do
        same(rms(cpu, 2, cols, x, weights(cols, 3), eps), rms(d, 2, cols, x, weights(cols, 3), eps),
          ("%s rms_norm eps %g"):format(entry.id, eps))
      end
    end)

    dev_it("layer_norm with and without bias at every width, bit for bit", function(d)
      for _, cols in ipairs(WIDTHS) do
        for _, rows in ipairs { 1, 3 } do
          local x, w, b = values(rows * cols, cols * 3 + rows, rows > 1 and 2 or nil), weights(cols, 6), values(cols, 7)
          for _, has_bias in ipairs { true, false } do
            local what = ("%s layer_norm %d x %d bias %s"):format(entry.id, rows, cols, tostring(has_bias))
            local function go(dev)
              return run(dev, "layer_norm", rows, cols, { x = x, weight = w, bias = has_bias and b or nil },
                { out = rows * cols * 4 }, nil, { bias = has_bias }).out
            end
            assert.equal(rows > 1 and cols or 0, same(go(cpu), go(d), what), what .. ": NaN count")
          end
        end
      end
    end)

    dev_it("softmax at every width, scales, causal masks, bit for bit, NaN counted", function(d)
      for _, cols in ipairs(WIDTHS) do
        local rows = 3
        local x = values(rows * cols, cols * 5 + 1, cols > 1 and 2 * cols + 1 or nil)
        for _, case in ipairs { { 1.0, false, 0 }, { 0.125, true, 0 }, { 3.0, true, 1 }, { 1.0, true, 9999 } } do
          local what = ("%s softmax %d x %d scale %g causal %s pos0 %d"):format(entry.id, rows, cols, case[1],
            tostring(case[2]), case[3])
          local function go(dev)
            return run(dev, "softmax", rows, cols, { x = x }, { out = rows * cols * 4 }, { scale = case[1], pos0 = case[3] },
              { causal = case[2] }).out
          end
          local nans = same(go(cpu), go(d), what)
          -- the NaN sits in row 2's first column, which every mask shows: row 2 is NaN where seen
          local seen = case[2] and math.min(cols, case[3] + 3) or cols
          assert.equal(cols > 1 and seen or 0, nans, what .. ": NaN count")
        end
      end
    end)

    dev_it("add_rms_norm == cpu:0, and == the unfused chain (the f32 add, then rms_norm) on the device", function(d)
      for _, cols in ipairs { 1, 31, 256, 5000 } do
        local rows = 3
        local x, res, w = values(rows * cols, cols + 11), values(rows * cols, cols + 12), weights(cols, 8)
        local what = ("%s add_rms_norm %d x %d"):format(entry.id, rows, cols)
        local function go(dev)
          return run(dev, "add_rms_norm", rows, cols, { x = x, residual = res, weight = w },
            { out = rows * cols * 4, sum = rows * cols * 4 })
        end
        local want, got = go(cpu), go(d)
        same(want.sum, got.sum, what .. " sum")
        same(want.out, got.out, what .. " out")
        local h = {}
        for i = 1, #x do h[i] = f32(x[i] + res[i]) end
        assert.equal(pack(h), got.sum, what .. ": sum is not the f32 add")
        assert.equal(rms(d, rows, cols, h, w), got.out, what .. ": out is not rms_norm of the sum")
      end
    end)

    dev_it("rms_norm_q8k == cpu:0 and == rms_norm then q8k_pack on the device, byte for byte", function(d)
      for _, cols in ipairs { 256, 512, 4096 } do
        local rows = 4
        local x, w = values(rows * cols, cols + 21), weights(cols, 9)
        for i = 1, 256 do x[cols + i] = 0.0 end                  -- row 1's first block: all zero
        x[2 * cols + 5] = 0 / 0                                  -- row 2: NaN everywhere
        for i = 1, cols do x[3 * cols + i] = f32(x[3 * cols + i] * 2.0 ^ -120) end
        local what = ("%s rms_norm_q8k %d x %d"):format(entry.id, rows, cols)
        local blocks = rows * cols // 256
        local function go(dev)
          return run(dev, "rms_norm_q8k", rows, cols, { x = x, weight = w }, { xq = blocks * 320 }).xq
        end
        local want, got = go(cpu), go(d)
        assert.equal(want, got, what .. ": == cpu:0")
        local y = d:buffer(rms(d, rows, cols, x, w))
        local xq = d:buffer(("\255"):rep(blocks * 320))
        d:kernel("q8k_pack"):launch(nil, blocks, 256, xq, y, rows * cols)
        fx.sync(d)
        assert.equal(xq:download(), got, what .. ": == rms_norm then q8k_pack")
      end
    end)

    dev_it("add_rms_norm_q8k == cpu:0 and == add then rms_norm_q8k on the device, sum in place", function(d)
      same_fused_chain(d, entry.id)
    end)

    dev_it("add_rms_norm_q8k_f32 == cpu:0 and == add_rms_norm_q8k and rms_norm on the device", function(d)
      same_fused_f32(d, entry.id)
    end)
  end)
end

-- ---- the rows: each fires, and does not where it does not serve -------------------------------

describe("routes.layer_norm", function()
  for _, k in ipairs(norm.KERNELS) do
    local name = k .. ".f32"
    it(name .. " fires at every width and row count", function()
      local queries = {}
      for _, cols in ipairs { 256, 4096, 5120 } do
        for _, rows in ipairs { 0, 1, 512 } do queries[#queries + 1] = norm.query(k, rows, cols) end
      end
      assert.equal(#queries, routes:audit_row(name, queries))
      local case = norm.bench_case(k, cpu, "decode")
      local c = xpu.call { query = case.query, device = cpu, operands = case.operands }
      local row = routes:pick(c)
      assert.equal(name, row.name)
      local kern = cpu:kernel(k)
      local before = kern.launches
      row:dispatch(c)
      assert.equal(before + 1, kern.launches, name .. ": its kernel did not run")
    end)

    it(name .. " does not fire for cols 0 or past 2^24, or another format", function()
      local function gate(q)
        local why = routes:why_not_admissible(q)
        assert.equal(name, why.row)
        return why.clause, why.gate
      end
      assert.same({ "Shape", "cols 0 is not 1 .. 16777216" }, { gate(norm.query(k, 1, 0)) })
      assert.same({ "Shape", "cols 16777217 is not 1 .. 16777216" }, { gate(norm.query(k, 1, (1 << 24) + 1)) })
      local f16 = xpu.query { regime = k, format = "bf16", rows = 1, cols = 256 }
      assert.equal("Format", routes:why_not_admissible(f16).clause)
      assert.equal(0, routes:audit_row(name, { norm.query(k, 1, 0), f16 }))
    end)
  end

  it("rms_norm_q8k.f32 does not fire for cols that are not whole q8_K blocks", function()
    local why = routes:why_not_admissible(norm.query("rms_norm_q8k", 2, 5000))
    assert.same({ "rms_norm_q8k.f32", "Shape", "cols 5000 is not a multiple of 256 (q8_K blocks)" },
      { why.row, why.clause, why.gate })
  end)

  it("add_rms_norm_q8k.f32 does not fire for cols that are not whole q8_K blocks", function()
    local why = routes:why_not_admissible(norm.query("add_rms_norm_q8k", 2, 4100))
    assert.same({ "add_rms_norm_q8k.f32", "Shape", "cols 4100 is not a multiple of 256 (q8_K blocks)" },
      { why.row, why.clause, why.gate })
  end)

  it("add_rms_norm_q8k.f32's ready half names a missing or short operand", function()
    local q = norm.query("add_rms_norm_q8k", 2, 256)
    local row, vec, xq = cpu:buffer(2 * 256 * 4), cpu:buffer(256 * 4), cpu:buffer(2 * 320)
    local c = xpu.call { query = q, device = cpu, operands = { xq = xq, x = row, residual = row, weight = vec } }
    assert.same({ "add_rms_norm_q8k.f32", "Ready", "operand 'sum' is missing" },
      { routes:why_not_picked(c).row, routes:why_not_picked(c).clause, routes:why_not_picked(c).gate })
    c = xpu.call { query = q, device = cpu, operands = { xq = cpu:buffer(320), sum = row, x = row, residual = row, weight = vec } }
    assert.equal("operand 'xq' holds 320 bytes; rows 2 x cols 256 need 640", routes:why_not_picked(c).gate)
    c = xpu.call { query = q, device = cpu, operands = { xq = xq, sum = row, x = row, residual = row, weight = vec } }
    assert.equal("add_rms_norm_q8k.f32", routes:pick(c).name)
  end)

  it("layer_norm.f32 and softmax.f32 refuse a flag that is not 0 or 1", function()
    local q = xpu.query { regime = "layer_norm", format = "f32", rows = 1, cols = 8, has_bias = 2 }
    assert.equal("has_bias 2 is not 0 or 1", routes:why_not_admissible(q).gate)
    q = xpu.query { regime = "softmax", format = "f32", rows = 1, cols = 8, causal = 3 }
    assert.equal("causal 3 is not 0 or 1", routes:why_not_admissible(q).gate)
  end)

  it("the ready half refuses a call whose operands do not match the query, by name", function()
    local q = norm.query("add_rms_norm", 2, 64)
    local full, short = cpu:buffer(2 * 64 * 4), cpu:buffer(64 * 4)
    local c = xpu.call { query = q, device = cpu, operands = { out = full, sum = full, x = full, weight = short } }
    local why = routes:why_not_picked(c)
    assert.same({ "add_rms_norm.f32", "Ready", "operand 'residual' is missing" }, { why.row, why.clause, why.gate })
    c = xpu.call { query = q, device = cpu, operands = { out = full, sum = full, x = full, residual = short, weight = short } }
    assert.equal("operand 'residual' holds 256 bytes; rows 2 x cols 64 need 512", routes:why_not_picked(c).gate)
    local lq = norm.query("layer_norm", 2, 64, { bias = true })
    c = xpu.call { query = lq, device = cpu, operands = { out = full, x = full, weight = short } }
    assert.equal("operand 'bias' is missing", routes:why_not_picked(c).gate)
    lq = norm.query("layer_norm", 2, 64)
    c = xpu.call { query = lq, device = cpu, operands = { out = full, x = full, weight = short } }
    assert.equal("layer_norm.f32", routes:pick(c).name)
  end)

  it("a direct launch refuses a short buffer and inconsistent scalars by argument name", function()
    local k, b, s = cpu:kernel "rms_norm", cpu:buffer(4 * 64), cpu:buffer(4 * 8)
    local function refused(kernel, pattern, ...)
      local kk = cpu:kernel(kernel)
      local ok, err = pcall(kk.launch, kk, nil, { 1 }, { 256 }, ...)
      assert.is_false(ok, kernel .. " launched")
      assert.matches(pattern, err)
    end
    refused("rms_norm", "argument 3 'weight'", b, b, s, 1, 64, 1e-6, 0)
    refused("rms_norm", "argument 'cols': 0 is not 1 .. 16777216", b, b, b, 1, 0, 1e-6, 0)
    refused("rms_norm", "argument 'eps': %-1 is not a finite number >= 0", b, b, b, 1, 64, -1.0, 0)
    refused("rms_norm_q8k", "argument 'cols': 64 is not a multiple of 256 %(q8_K blocks%)", b, b, b, 1, 64, 1e-6)
    refused("layer_norm", "argument 'has_bias': 2 is not 0 or 1", b, b, b, b, 1, 64, 2, 1e-6)
    refused("softmax", "argument 'causal': 5 is not 0 or 1", b, b, 1, 64, 5, 0, 1.0)
    refused("softmax", "argument 'scale': inf is not a finite number", b, b, 1, 64, 0, 0, 1 / 0)
    refused("add_rms_norm", "argument 4 'residual'", b, b, b, s, s, 1, 64, 1e-6)
    refused("add_rms_norm_q8k", "argument 'cols': 64 is not a multiple of 256 %(q8_K blocks%)", b, b, b, b, b, 1, 64, 1e-6)
    local ok, err = pcall(k.launch, k, nil, { 1 }, { 128 }, b, b, b, 1, 64, 1e-6, 0)
    assert.is_false(ok)
    assert.matches("built for a block of 256 threads, launched with 128", err)
  end)

  it("a routed call refuses an eps or pos0 operand out of range by name", function()
    local b = cpu:buffer(4 * 64)
    local c = xpu.call { query = norm.query("rms_norm", 1, 64), device = cpu,
                         operands = { out = b, x = b, weight = b, eps = 1 / 0 } }
    local ok, err = pcall(function() routes:bind(c):dispatch(c) end)
    assert.is_false(ok)
    assert.matches("operand 'eps' is inf; it takes a finite number", err)
    c = xpu.call { query = norm.query("softmax", 1, 64, { causal = true }), device = cpu,
                   operands = { out = b, x = b, pos0 = -1 } }
    ok, err = pcall(function() routes:bind(c):dispatch(c) end)
    assert.is_false(ok)
    assert.matches("operand 'pos0' is %-1, not in 0 .. 4294967295", err)
  end)

  it("bench_case: decode and prefill cases that run and count their bytes", function()
    for _, k in ipairs(norm.KERNELS) do
      for _, size in ipairs { "decode", "prefill" } do
        local case = norm.bench_case(k, cpu, size)
        local rows = size == "decode" and 1 or 512
        assert.equal(rows, case.query.rows)
        assert.equal(4096, case.query.cols)
        local row, vec = rows * 4096 * 4, 4096 * 4
        local want = ({ rms_norm = 2 * row + vec, add_rms_norm = 4 * row + vec, layer_norm = 2 * row + 2 * vec,
                        rms_norm_q8k = row + vec + rows * 16 * 320, add_rms_norm_q8k = 3 * row + vec + rows * 16 * 320,
                        add_rms_norm_q8k_f32 = 4 * row + vec + rows * 16 * 320,
                        softmax = 2 * row })[k]
        assert.equal(want, case.bytes, k .. " " .. size)
        assert.equal(("%dx4096 f32"):format(rows), case.note)
        local c = xpu.call { query = case.query, device = cpu, operands = case.operands }
        routes:bind(c):dispatch(c)
      end
    end
    local ok, err = pcall(norm.bench_case, "rms_norm", cpu, "huge")
    assert.is_false(ok)
    assert.matches("size 'huge' is not decode or prefill", err)
  end)
end)

-- ---- lavapipe at every subgroup width ----------------------------------------------------------

-- LP_NATIVE_VECTOR_WIDTH sets lavapipe's subgroup size (128 bits: 4 lanes .. 2048: 64); the
-- workgroup reduce's virtual 32-lane waves must give the CPU's bits at each. A child per width.
local WIDTH_CHILD = [[
  local xpu = require "xpu"
  local norm = require "xpu.layers.norm"
  local routes = require "routes.layer_norm"
  local vk, cpu = assert(xpu.device "vulkan:0"), xpu.device "cpu:0"
  local function run(d, kernel)
    local case = norm.bench_case(kernel, d, "decode")
    local c = xpu.call { query = case.query, device = d, operands = case.operands }
    routes:bind(c):dispatch(c)
    d:default_stream():sync()
    return (case.operands.out or case.operands.xq):download()
  end
  local same = 0
  for _, k in ipairs(norm.KERNELS) do same = same + (run(vk, k) == run(cpu, k) and 1 or 0) end
  print(vk.name, vk.wave_size, same)
]]

describe("layer norm kernels on lavapipe at every subgroup width", function()
  local vk = devices[1] -- vulkan:0
  it("== cpu:0 at 4, 8, 16, 32 and 64 lanes a subgroup (LP_NATIVE_VECTOR_WIDTH 128 .. 2048)", function()
    if not vk.dev then return pending(vk.skip) end
    if not vk.dev.name:match "llvmpipe" then return pending("skipped: vulkan:0 is not lavapipe (" .. vk.dev.name .. ")") end
    for _, bits in ipairs { 128, 256, 512, 1024, 2048 } do
      local out = fx.child("LP_NATIVE_VECTOR_WIDTH=" .. bits, WIDTH_CHILD)
      local width, same = out:match "\t(%d+)\t(%d+)"
      assert.equal(tostring(bits // 32), width, "subgroup width at " .. bits .. ": " .. out)
      assert.equal(tostring(#norm.KERNELS), same, "kernels == cpu:0 at " .. bits .. " bits: " .. out)
    end
  end)
end)
