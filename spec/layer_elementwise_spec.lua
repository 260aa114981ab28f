-- layer_elementwise_spec.lua — the elementwise layer kernels (add, mul, swiglu, geglu, rope,
-- swiglu_q8k) through the rows of routes.layer_elementwise: the CPU body against an oracle
-- written here in Lua (double, within the tolerance each case states; add and mul exactly), then
-- every device present against the CPU with == on the bits (NaN counted, outputs poisoned first,
-- odd shapes, views that start off 16 bytes), rope at positions to 32768 in both modes, the
-- fused swiglu_q8k byte for byte against swiglu then q8k_pack, each row firing and refused by
-- its gate words, and the kernels' own refusals by argument name. A device that is absent is
-- reported skipped with the reason.
local xpu = require "xpu"
local ew = require "xpu.layers.elementwise"
local routes = require "routes.layer_elementwise"
local fx = require "spec.support.fixtures"

local cpu = xpu.device "cpu:0"
local devices = fx.devices { "vulkan:0", "cuda:0" }

local POISON = "\255" -- 0xffff / 0xffffffff: a NaN in f16 and f32
local SIZE = { f32 = 4, f16 = 2 }
local ULP32 = 2.0 ^ -23

-- ---- values ---------------------------------------------------------------------------------

local function f32(x) return (string.unpack("<f", string.pack("<f", x))) end

-- The nearest f16 of x (ties to even), as a number.
local function f16(x)
  if x ~= x or x == 0 then return x end
  local a = math.abs(x)
  if a >= 65520 then return x > 0 and math.huge or -math.huge end
  local e = -14
  if a >= 2.0 ^ -14 then
    e = math.floor(math.log(a, 2))
    while 2.0 ^ (e + 1) <= a do e = e + 1 end
    while 2.0 ^ e > a do e = e - 1 end
  end
  local q = 2.0 ^ (e - 10)
  local m = a / q
  local r = math.floor(m)
  if m - r > 0.5 or (m - r == 0.5 and r % 2 == 1) then r = r + 1 end
  return (x < 0 and -1 or 1) * r * q
end

local ROUND = { f32 = f32, f16 = f16 }

-- n seeded f16 values as bits: sign, exponents 2^-6 .. 2^6, any mantissa.
local function f16_bits(n, seed)
  local r, t = fx.lcg(seed), {}
  for i = 1, n do
    local e = 9 + math.floor(r() * 13)
    t[i] = string.pack("<I2", (r() < 0.5 and 0x8000 or 0) | (e << 10) | math.floor(r() * 1024))
  end
  return table.concat(t)
end

-- n values of dtype as bytes; nan_at: a NaN at those 1-based indices.
local function data(dtype, n, seed, nan_at)
  local s = dtype == "f16" and f16_bits(n, seed) or fx.f32_values(n, seed)
  local es = SIZE[dtype]
  for _, i in ipairs(nan_at or {}) do
    if i <= n then
      s = s:sub(1, (i - 1) * es) .. (dtype == "f16" and "\0\126" or "\0\0\192\127") .. s:sub(i * es + 1)
    end
  end
  return s
end

local function decode(dtype, s) return xpu.fixture.decode(dtype, s) end

-- ---- runs through the route table ----------------------------------------------------------

-- Binds and dispatches the row for q on d. inputs: name -> bytes (or { bytes, at = offset }:
-- a view that starts `at` bytes into its allocation); out: { name, bytes } poisoned first;
-- scalars: extra operands. Returns the output bytes, the row and the kernel's launches.
local function run(d, q, inputs, out, scalars)
  local ops = {}
  for k, v in pairs(inputs) do
    if type(v) == "table" then
      local b = d:buffer(v.at + #v[1])
      b:upload(v[1], v.at)
      ops[k] = b:slice(v.at, #v[1])
    else
      ops[k] = d:buffer(v)
    end
  end
  local at = out.at or 0
  local ob = d:buffer(POISON:rep(at + out[2]))
  ops[out[1]] = at > 0 and ob:slice(at, out[2]) or ob
  for k, v in pairs(scalars or {}) do ops[k] = v end
  local c = xpu.call { query = q, device = d, operands = ops }
  local row = routes:bind(c)
  local k = d:kernel(row.kernel)
  local before = k.launches
  row:dispatch(c)
  fx.sync(d)
  return ops[out[1]]:download(), row, k.launches - before
end

-- == element by element (NaN on both sides counts as equal); returns the NaN count.
local function same(dtype, want, got, what)
  assert.equal(#want, #got, what .. ": lengths differ")
  local w, g, nans = decode(dtype, want), decode(dtype, got), 0
  local es = SIZE[dtype]
  for i = 1, #g do
    local gn, wn = g[i] ~= g[i], w[i] ~= w[i]
    if gn then nans = nans + 1 end
    if not ((gn and wn) or want:sub((i - 1) * es + 1, i * es) == got:sub((i - 1) * es + 1, i * es)) then
      error(("%s: element %d is %s, the CPU's %s"):format(what, i - 1, tostring(g[i]), tostring(w[i])), 2)
    end
  end
  return nans
end

local function nan_count(dtype, s)
  local n = 0
  for _, v in ipairs(decode(dtype, s)) do if v ~= v then n = n + 1 end end
  return n
end

-- ---- the cases ------------------------------------------------------------------------------

-- add / mul: { rows, cols, broadcast, at } (at: the views start 4 bytes in: no 16-byte vectors)
local BINARY_SHAPES = { { 1, 4096, 0 }, { 7, 35, 0 }, { 7, 35, 1 }, { 5, 8, 1 }, { 3, 1, 1 }, { 2, 4097, 0, 4 },
                        { 4, 64, 1, 4 } }
local GLU_SHAPES = { { 1, 4096 }, { 9, 37 }, { 3, 1 }, { 2, 515, 4 } }
-- rope: { tokens, heads, head_dim, n_dims, mode, at }
local ROPE_SHAPES = { { 1, 4, 128, 128, "neox" }, { 3, 5, 10, 6, "normal" }, { 3, 5, 10, 6, "neox" },
                      { 7, 2, 64, 32, "normal", 4 }, { 2, 3, 6, 2, "neox" } }

local function binary_case(kernel, dtype, s, seed)
  local rows, cols, bcast, at = s[1], s[2], s[3], s[4]
  local n = rows * cols
  local inputs = { a = data(dtype, n, seed, { 3 }), b = data(dtype, bcast == 1 and cols or n, seed + 1) }
  if at then inputs.a, inputs.b = { inputs.a, at = at }, { inputs.b, at = at } end
  return ew.binary(kernel, dtype, rows, cols, bcast), inputs, { "out", n * SIZE[dtype], at = at }, nil, n
end

local function glu_case(kernel, dtype, s, seed)
  local rows, cols, at = s[1], s[2], s[3]
  local n = rows * cols
  local inputs = { g = data(dtype, n, seed, { 2 }), u = data(dtype, n, seed + 1) }
  if at then inputs.g, inputs.u = { inputs.g, at = at }, { inputs.u, at = at } end
  return ew.glu(kernel, dtype, rows, cols), inputs, { "out", n * SIZE[dtype], at = at }, nil, n
end

local function positions(tokens, seed)
  local r, p = fx.lcg(seed), {}
  for t = 1, tokens do p[t] = t == 1 and 32768 or math.floor(r() * 32769) end
  return p
end

local function rope_case(dtype, s, seed)
  local tokens, heads, hd, nd, mode, at = table.unpack(s)
  local n = tokens * heads * hd
  local p = positions(tokens, seed)
  local packed = {}
  for i, v in ipairs(p) do packed[i] = string.pack("<i4", v) end
  local inputs = { x = data(dtype, n, seed, { 5 }), pos = table.concat(packed) }
  if at then inputs.x = { inputs.x, at = at } end
  return ew.rope(dtype, tokens, heads, hd, { n_dims = nd, mode = mode }), inputs, { "out", n * SIZE[dtype], at = at },
    { freq_base = 10000.0, freq_scale = 1.0 }, n, p
end

-- ---- the CPU against the oracle -------------------------------------------------------------

local function within(dtype, got, want, tol, what)
  if want ~= want then
    assert.is_true(got ~= got, what .. ": NaN expected")
    return
  end
  if dtype == "f16" then -- then rounded to f16: half its ulp, taken as two ulps (log2 near a power of 2)
    local a = math.abs(want)
    tol = tol + (a < 2.0 ^ -14 and 2.0 ^ -24 or 2.0 ^ (math.floor(math.log(a, 2)) - 10) * 2)
  end
  if not (math.abs(got - want) <= tol) then
    error(("%s: %.9g, the oracle %.9g, off by %.3g, tolerance %.3g"):format(what, got, want, math.abs(got - want), tol), 2)
  end
end

describe("elementwise kernels on cpu:0 == the Lua oracle", function()
  for _, dtype in ipairs { "f32", "f16" } do
    for _, kernel in ipairs { "add", "mul" } do
      it(("%s.%s: exactly the correctly rounded result (b broadcast or not), one NaN"):format(kernel, dtype), function()
        for si, s in ipairs(BINARY_SHAPES) do
          local q, inputs, out, _, n = binary_case(kernel, dtype, s, 10 + si)
          local got = decode(dtype, (run(cpu, q, inputs, out)))
          local a = decode(dtype, type(inputs.a) == "table" and inputs.a[1] or inputs.a)
          local b = decode(dtype, type(inputs.b) == "table" and inputs.b[1] or inputs.b)
          local nans = 0
          for i = 1, n do
            local bi = s[3] == 1 and (i - 1) % s[2] + 1 or i
            local want = ROUND[dtype](f32(kernel == "add" and a[i] + b[bi] or a[i] * b[bi]))
            if want ~= want then
              nans = nans + 1
              assert.is_true(got[i] ~= got[i], "NaN expected")
            else
              assert.equal(want, got[i], ("%s %dx%d element %d"):format(kernel, s[1], s[2], i - 1))
            end
          end
          assert.equal(1, nans, "NaN count")
        end
      end)
    end

    -- swiglu: e^-g (under 1 ulp), three roundings: 4 ulp of the result. geglu: tanh is 1.2e-7
    -- off (absolute), so 0.5 |g u| 3e-7 more.
    for _, kernel in ipairs { "swiglu", "geglu" } do
      it(("%s.%s within its stated tolerance of the double oracle, one NaN"):format(kernel, dtype), function()
        for si, s in ipairs(GLU_SHAPES) do
          local q, inputs, out, _, n = glu_case(kernel, dtype, s, 20 + si)
          local got = decode(dtype, (run(cpu, q, inputs, out)))
          local g = decode(dtype, type(inputs.g) == "table" and inputs.g[1] or inputs.g)
          local u = decode(dtype, type(inputs.u) == "table" and inputs.u[1] or inputs.u)
          for i = 1, n do
            local x, want, tol = g[i]
            if kernel == "swiglu" then
              want = x / (1 + math.exp(-x)) * u[i]
              tol = 4 * ULP32 * math.abs(want) + 1e-30
            else
              local t = math.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ^ 3))
              want = 0.5 * x * (1 + t) * u[i]
              tol = 4 * ULP32 * math.abs(want) + 0.5 * math.abs(x * u[i]) * 3e-7
            end
            within(dtype, got[i], want, tol, ("%s %dx%d element %d (g %.9g)"):format(kernel, s[1], s[2], i - 1, x))
          end
          assert.equal(1, nan_count(dtype, (run(cpu, q, inputs, out))), "NaN count")
        end
      end)
    end

    -- rope: theta as the kernel rounds it (pos * freq_scale, then times e^(p lnb), both in
    -- f32) from the oracle's double e^(p lnb); the kernel's e^x is under 1 ulp off and its
    -- sin / cos 7.8e-8: (|x| + |y|) (3e-7 theta + 4e-7) covers both and the products.
    it(("rope.%s, both modes, n_dims below head_dim copied, positions to 32768, one NaN"):format(dtype), function()
      for si, s in ipairs(ROPE_SHAPES) do
        local q, inputs, out, scalars, n, p = rope_case(dtype, s, 30 + si)
        local raw = run(cpu, q, inputs, out, scalars)
        local got = decode(dtype, raw)
        local x = decode(dtype, type(inputs.x) == "table" and inputs.x[1] or inputs.x)
        local heads, hd, nd, mode = s[2], s[3], s[4], s[5]
        local lnb = f32(-2 * math.log(10000) / nd)
        for i = 0, n - 1 do
          local j, want, tol = i % hd, x[i + 1], 0
          if j < nd then
            local first, pi, partner
            if mode == "neox" then
              first = j < nd // 2
              pi, partner = first and j or j - nd // 2, first and i + nd // 2 or i - nd // 2
            else
              first, pi, partner = j % 2 == 0, j // 2, j % 2 == 0 and i + 1 or i - 1
            end
            local y = x[partner + 1]
            local theta = f32(f32(p[i // (heads * hd) + 1] * 1.0) * f32(math.exp(pi * lnb)))
            local c, sn = math.cos(theta), math.sin(theta)
            want = first and x[i + 1] * c - y * sn or y * sn + x[i + 1] * c
            tol = (math.abs(x[i + 1]) + math.abs(y)) * (3e-7 * theta + 4e-7)
          end
          within(dtype, got[i + 1], want, tol, ("rope %s %s element %d"):format(mode, table.concat(s, "x", 1, 4), i))
        end
        assert.is_true(nan_count(dtype, raw) >= 1, "the NaN input gives a NaN output")
      end
    end)
  end

  it("rope's sin and cos (a head of 2 turning (1, 0)): within 1e-7 of libm's over theta to 1e5", function()
    local tokens, worst = 2048, 0
    for _, scale in ipairs { 1.0, 3.0517578125 } do
      local pos, x = {}, {}
      for t = 1, tokens do
        pos[t] = string.pack("<i4", (t * 16) % 32769)
        x[t] = string.pack("<ff", 1.0, 0.0)
      end
      local q = ew.rope("f32", tokens, 1, 2, { mode = "normal" })
      local out = decode("f32", (run(cpu, q, { x = table.concat(x), pos = table.concat(pos) }, { "out", 8 * tokens },
        { freq_scale = scale })))
      for t = 1, tokens do
        local theta = f32(((t * 16) % 32769) * scale)
        worst = math.max(worst, math.abs(out[2 * t - 1] - math.cos(theta)), math.abs(out[2 * t] - math.sin(theta)))
      end
    end
    assert.is_true(worst <= 1e-7, ("worst error %.3g"):format(worst))
    assert.is_true(worst > 0, "the sweep never differs from libm: the check is not looking")
  end)

  it("swiglu_q8k.f32 == swiglu.f32 then q8k_pack, byte for byte, with a zero block and a NaN", function()
    for _, rows in ipairs { 1, 3 } do
      local n = rows * 512
      local g = data("f32", n, 40 + rows, { 7 })
      g = ("\0"):rep(4 * 256) .. g:sub(4 * 256 + 1) -- block 0: silu(0) = 0 everywhere
      local inputs = { g = g, u = data("f32", n, 50 + rows) }
      local s = run(cpu, ew.glu("swiglu", "f32", rows, 512), inputs, { "out", 4 * n })
      local got, row = run(cpu, ew.glu("swiglu_q8k", "f32", rows, 512), inputs, { "xq", n // 256 * 320 })
      assert.equal("swiglu_q8k.f32", row.name)
      assert.equal(xpu.quant.q8k_pack(s), got)
      assert.equal(("\0"):rep(320), got:sub(1, 320), "the zero block")
    end
  end)
end)

-- ---- each device against the CPU ------------------------------------------------------------

local function compare(d, q, inputs, out, scalars, dtype, what)
  local want = run(cpu, q, inputs, out, scalars)
  local got, row, launches = run(d, q, inputs, out, scalars)
  assert.equal(1, launches, what .. ": launches of " .. row.kernel)
  local nans = same(dtype, want, got, what)
  assert.equal(nan_count(dtype, want), nans, what .. ": NaN count")
  assert.is_true(nans >= 1, what .. ": the NaN input made no NaN")
end

for _, entry in ipairs(devices) do
  local function dev_it(name, fn)
    it(name, function()
      if not entry.dev then return pending(entry.skip) end
      fn(entry.dev)
    end)
  end

  describe("elementwise kernels on " .. entry.id .. " == cpu:0", function()
    for _, dtype in ipairs { "f32", "f16" } do
      for _, kernel in ipairs { "add", "mul" } do
        dev_it(("%s.%s bit for bit at every shape, broadcast or not, NaN counted"):format(kernel, dtype), function(d)
          for si, s in ipairs(BINARY_SHAPES) do
            local q, inputs, out = binary_case(kernel, dtype, s, 60 + si)
            compare(d, q, inputs, out, nil, dtype, ("%s %s.%s %s"):format(entry.id, kernel, dtype, table.concat(s, "x")))
          end
        end)
      end
      for _, kernel in ipairs { "swiglu", "geglu" } do
        dev_it(("%s.%s bit for bit at every shape, NaN counted"):format(kernel, dtype), function(d)
          for si, s in ipairs(GLU_SHAPES) do
            local q, inputs, out = glu_case(kernel, dtype, s, 70 + si)
            compare(d, q, inputs, out, nil, dtype, ("%s %s.%s %s"):format(entry.id, kernel, dtype, table.concat(s, "x")))
          end
        end)
      end
      dev_it(("rope.%s bit for bit, both modes, positions to 32768, NaN counted"):format(dtype), function(d)
        for si, s in ipairs(ROPE_SHAPES) do
          local q, inputs, out, scalars = rope_case(dtype, s, 80 + si)
          scalars.freq_base, scalars.freq_scale = 500000.0, 0.25
          compare(d, q, inputs, out, scalars, dtype, ("%s rope.%s %s"):format(entry.id, dtype, table.concat(s, "x", 1, 4)))
        end
      end)
    end

    dev_it("swiglu_q8k.f32 == cpu:0 byte for byte, with a zero block and a NaN", function(d)
      for _, rows in ipairs { 1, 5 } do
        local n = rows * 768
        local g = ("\0"):rep(4 * 256) .. data("f32", n, 90 + rows, { 300 }):sub(4 * 256 + 1)
        local inputs, out = { g = g, u = data("f32", n, 95 + rows) }, { "xq", n // 256 * 320 }
        local q = ew.glu("swiglu_q8k", "f32", rows, 768)
        local want = run(cpu, q, inputs, out)
        local got, row, launches = run(d, q, inputs, out)
        assert.equal(1, launches, "launches of " .. row.kernel)
        assert.equal(want, got, ("%s swiglu_q8k %dx768"):format(entry.id, rows))
      end
    end)
  end)
end

-- ---- the rows: each fires, and does not where it does not serve ------------------------------

describe("routes.layer_elementwise", function()
  local function gate(q, name)
    local why = routes:why_not_admissible(q)
    assert.equal(name, why.row)
    return why.clause, why.gate
  end

  local ROWS = {}
  for _, k in ipairs { "add", "mul", "swiglu", "geglu", "rope" } do
    for _, dt in ipairs { "f32", "f16" } do ROWS[#ROWS + 1] = { k, dt } end
  end
  ROWS[#ROWS + 1] = { "swiglu_q8k", "f32" }

  local function good(k, dt)
    if k == "rope" then return { ew.rope(dt, 1, 32, 128), ew.rope(dt, 512, 8, 64, { n_dims = 32, mode = "neox" }) } end
    if k == "add" or k == "mul" then return { ew.binary(k, dt, 1, 4096), ew.binary(k, dt, 512, 4096, true) } end
    return { ew.glu(k, dt, 1, 14336), ew.glu(k, dt, 512, 4096) }
  end

  local function bad(k, dt)
    if k == "rope" then
      return {
        { ew.rope(dt, 1, 32, 127), "head_dim 127 is not even and 2 or more: rope turns pairs" },
        { ew.rope(dt, 1, 32, 128, { n_dims = 130 }), "n_dims 130 is not even from 2 to head_dim 128" },
        { ew.rope(dt, 1, 32, 128, { mode = 2 }), "mode 2 is not 0 (normal) or 1 (neox)" },
      }
    end
    if k == "add" or k == "mul" then
      return { { ew.binary(k, dt, 4, 8, 2), "broadcast 2 is not 0 (b is rows x cols) or 1 (b is one row)" },
               { ew.binary(k, dt, 65536, 32768), "rows x cols is 2147483648 elements, 2^31 or more: split the call" } }
    end
    local list = { { ew.glu(k, dt, -1, 8), "rows -1 x cols 8: counts are not negative" } }
    if k == "swiglu_q8k" then list[2] = { ew.glu(k, dt, 2, 300), "cols 300 is not a multiple of 256 (q8_K blocks)" } end
    return list
  end

  for _, r in ipairs(ROWS) do
    local k, dt = r[1], r[2]
    local name = k .. "." .. dt
    it(name .. " fires for its kernel and dtype", function()
      local qs = good(k, dt)
      assert.equal(#qs, routes:audit_row(name, qs))
      assert.equal(name, routes:pick(xpu.call { query = qs[1], device = cpu }).name)
    end)
    it(name .. " does not fire for a shape it does not serve, or another dtype", function()
      local qs = {}
      for _, b in ipairs(bad(k, dt)) do
        assert.same({ "Shape", b[2] }, { gate(b[1], name) })
        qs[#qs + 1] = b[1]
      end
      qs[#qs + 1] = k == "rope" and ew.rope("bf16", 1, 32, 128) or
        (k == "add" or k == "mul") and ew.binary(k, "bf16", 1, 8) or ew.glu(k, "bf16", 1, 256)
      assert.equal(0, routes:audit_row(name, qs))
    end)
  end

  it("serves no f16 swiglu_q8k: refused at Format", function()
    local why = routes:why_not_admissible(ew.glu("swiglu_q8k", "f16", 1, 256))
    assert.equal("Format", why.clause)
  end)

  it("refuses an unknown kernel or mode name in the query builders, by name", function()
    local ok, err = pcall(ew.binary, "sub", "f32", 1, 8)
    assert.is_false(ok)
    assert.matches("kernel 'sub' is not one of add, mul", err)
    ok, err = pcall(ew.rope, "f32", 1, 1, 2, { mode = "gptj" })
    assert.is_false(ok)
    assert.matches("mode 'gptj' is not normal, neox or an integer code", err)
  end)
end)

-- ---- the kernels' own refusals --------------------------------------------------------------

describe("elementwise kernels refuse bad arguments by name", function()
  local b = cpu:buffer(64)
  local function refuses(kernel, pattern, ...)
    local k = cpu:kernel(kernel)
    local ok, err = pcall(k.launch, k, nil, { 1 }, { k.name == "swiglu_q8k" and 64 or 256 }, ...)
    assert.is_false(ok, kernel .. " launched")
    assert.matches(pattern, err)
  end

  it("a buffer too short for the scalars, by the argument's name", function()
    refuses("add", "argument 3 'b': buffer too short", b, b, cpu:buffer(60), 4, 4, 0, 0)
    refuses("add", "argument 1 'out': buffer too short", cpu:buffer(30), b, b, 4, 4, 0, 1)
    refuses("swiglu", "argument 3 'u': buffer too short", b, b, cpu:buffer(8), 16, 0)
    refuses("rope", "argument 3 'pos': buffer too short", b, b, cpu:buffer(4), 2, 1, 8, 8, 0, 0, -1.0, 1.0)
    refuses("swiglu_q8k", "argument 1 'xq': buffer too short", cpu:buffer(319), cpu:buffer(1024), cpu:buffer(1024), 256)
  end)

  it("inconsistent scalars, by the argument's name and what it takes", function()
    refuses("add", "argument 'bcast': 2 is not 0", b, b, b, 2, 2, 2, 0)
    refuses("mul", "argument 'dtype': 2 is not 0 %(f32%) or 1 %(f16%)", b, b, b, 2, 2, 0, 2)
    refuses("rope", "argument 'head_dim': 7 is not even", b, b, b, 1, 1, 7, 6, 0, 0, -1.0, 1.0)
    refuses("rope", "argument 'n_dims': 3 is not an even count from 2 to head_dim 8", b, b, b, 1, 1, 8, 3, 0, 0, -1.0, 1.0)
    refuses("rope", "argument 'mode': 2 is not 0 %(normal%) or 1 %(neox%)", b, b, b, 1, 1, 8, 8, 2, 0, -1.0, 1.0)
    refuses("rope", "argument 'lnb' is NaN", b, b, b, 1, 1, 8, 8, 0, 0, 0 / 0, 1.0)
    refuses("swiglu_q8k", "argument 'n': 100 is not a multiple of 256", b, b, b, 100)
  end)

  it("a call's rope operands: freq_base not positive, freq_scale not finite", function()
    local q = ew.rope("f32", 1, 1, 8)
    local function call(extra)
      local ops = { out = cpu:buffer(32), x = cpu:buffer(32), pos = cpu:buffer(4) }
      for k, v in pairs(extra) do ops[k] = v end
      local c = xpu.call { query = q, device = cpu, operands = ops }
      return pcall(routes:bind(c).dispatch, routes:bind(c), c)
    end
    local ok, err = call { freq_base = -5.0 }
    assert.is_false(ok)
    assert.matches("operand 'freq_base' is %-5; it takes a positive number", err)
    ok, err = call { freq_scale = math.huge }
    assert.is_false(ok)
    assert.matches("operand 'freq_scale' is inf; it takes a finite number", err)
  end)
end)

-- ---- bench cases ----------------------------------------------------------------------------

describe("xpu.layers.elementwise.bench_case", function()
  it("decode cases run on cpu:0 and count their bytes; a bad size or kernel is refused", function()
    for _, k in ipairs(ew.KERNELS) do
      local case = ew.bench_case(k, cpu, "decode")
      local c = xpu.call { query = case.query, device = cpu, operands = case.operands }
      routes:bind(c):dispatch(c)
      fx.sync(cpu)
      assert.is_true(case.bytes > 0 and #case.note > 0, k)
    end
    assert.equal(3 * 4096 * 4, ew.bench_case("add", cpu, "decode").bytes)
    assert.equal(2 * 14336 * 4 + 56 * 320, ew.bench_case("swiglu_q8k", cpu, "decode").bytes)
    local ok, err = pcall(ew.bench_case, "add", cpu, "huge")
    assert.is_false(ok)
    assert.matches("size 'huge' is not decode or prefill", err)
  end)
end)
