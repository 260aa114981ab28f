-- quant_spec.lua — xpu.quant: the served formats, reference quantize / dequantize (ggml's
-- values bit for bit), the q8_K pack field by field, the resident split, and the CPU mat-vec
-- bodies (every SIMD path == the portable one, and near the float reference); then the
-- kernels themselves on cpu:0 against the host.
local xpu = require "xpu"
local q = xpu.quant

-- ---- fixtures ----------------------------------------------------------------------------

local function lcg(seed)
  local s = seed
  return function()
    s = (s * 1103515245 + 12345) % 2147483648
    return s / 2147483648
  end
end

-- Bell-shaped values (a sum of four uniforms: cheap, unit variance) whose scale changes from
-- block to block, never all zero.
local function gaussians(n, seed, spread)
  local r, t = lcg(seed), {}
  for i = 1, n do
    local g = (r() + r() + r() + r() - 2) * 1.7320508
    t[i] = g * (1 + ((i - 1) // 32 * 7) % (spread or 5))
  end
  return t
end

-- packed 256 at a time: one string per value is slow to make and to collect
local function f32s(t)
  local p, fmt = {}, "<" .. ("f"):rep(256)
  for i = 1, #t, 256 do
    local n = math.min(256, #t - i + 1)
    p[#p + 1] = n == 256 and string.pack(fmt, table.unpack(t, i, i + 255))
      or string.pack("<" .. ("f"):rep(n), table.unpack(t, i, i + n - 1))
  end
  return table.concat(p)
end

local function unf32(s)
  local t = {}
  for i = 1, #s // 4 do t[i] = string.unpack("<f", s, 4 * i - 3) end
  return t
end

-- Lua numbers are doubles: rounding each product or quotient of floats to a float is
-- exactly the float operation.
local function fr(x) return (string.unpack("<f", string.pack("<f", x))) end

local function bytes(...) return string.char(...) end
local function u16(v) return string.pack("<I2", v) end

local function count(t, pred)
  local n = 0
  for i = 1, #t do if pred(t[i]) then n = n + 1 end end
  return n
end

local function isnan(v) return v ~= v end

local formats = {} -- the served formats' names, in xpu.formats()'s order
for i, f in ipairs(xpu.formats()) do formats[i] = f.name end

-- ---- the registry ------------------------------------------------------------------------

describe("quant formats", function()
  it("lists the seven served formats with ARITHMETIC.md's layouts", function()
    local want = {
      q4_0 = { 2, 32, 18, 2, 0, 16 }, q8_0 = { 8, 32, 34, 2, 0, 32 },
      q4_K = { 12, 256, 144, 0, 0, 144 }, q6_K = { 14, 256, 210, 2, 208, 208 },
      iq4_nl = { 20, 32, 18, 2, 0, 16 }, q5_0 = { 6, 32, 22, 2, 0, 20 },
      q5_K = { 13, 256, 176, 0, 0, 176 },
    }
    local got = q.formats()
    assert.equal(7, #got)
    for i, f in ipairs(got) do
      assert.equal(formats[i], f.name)
      local w = want[f.name]
      assert.same(w, { f.type, f.block_elems, f.block_bytes, f.scale_bytes, f.scale_offset, f.payload_bytes })
      assert.same(f, q.info(f.name))
      assert.same(f, q.info(f.type))
    end
  end)

  it("is xpu.formats(): each record's scale layout, streaming, GGUF block size and kernels per backend", function()
    local want_layout = { q4_0 = "head", q8_0 = "head", q4_K = "none", q6_K = "tail", iq4_nl = "head",
                          q5_0 = "head", q5_K = "none" }
    local want_streams = { q4_0 = true, q8_0 = true, q5_0 = true }
    local registry = {}
    for _, k in ipairs(xpu.kernels()) do registry[k.name] = k end
    local listed = {}
    for i, f in ipairs(xpu.formats()) do
      assert.same(f, q.formats()[i])
      assert.equal(want_layout[f.name], f.scale_layout, f.name)
      assert.equal(want_streams[f.name] or false, f.streams, f.name)
      assert.equal(f.block_bytes, f.scale_bytes + f.payload_bytes, f.name)
      assert.equal(f.name, xpu.format(f.type)) -- the GGUF type table agrees on the number
      assert.same({ f.name .. "_q8k_wave", f.name .. "_q8k_id", f.name .. "_q8k_tail", f.name .. "_q8k_tail_norm" },
        f.kernels.cpu)
      assert.same(f.kernels.cuda, f.kernels.hip)
      for _, backend in ipairs { "cpu", "cuda", "vulkan" } do
        for _, list in ipairs { f.kernels[backend], f.prefill[backend] } do
          for _, name in ipairs(list) do
            assert.is_truthy(registry[name], name .. " is not in the kernel table")
            assert.equal(f.name, registry[name].format, name)
            listed[name] = true
          end
        end
      end
      -- the prefill GEMMs: four everywhere, and on CUDA the tensor-core four (dense and grouped,
      -- two tiles each) where the format has them, and the staged one where it has that
      assert.same({ f.name .. "_q8k_gemm_t64", f.name .. "_q8k_gemm_t128", f.name .. "_q8k_gemm_id_t64",
                    f.name .. "_q8k_gemm_id_t128" }, f.prefill.cpu)
      assert.same(f.prefill.cpu, f.prefill.vulkan)
      assert.same(f.prefill.cpu, f.prefill.hip)
      assert.is_true(#f.prefill.cuda == 4 or #f.prefill.cuda == 8 or #f.prefill.cuda == 9, f.name)
    end
    -- and the other way: every kernel that reads a format is in that format's record
    for name, k in pairs(registry) do
      if k.format then assert.is_true(listed[name], name .. " is in no format's record") end
    end
    local cpu = assert(xpu.device "cpu:0")
    for _, f in ipairs(xpu.formats()) do
      for _, name in ipairs(f.kernels.cpu) do assert.is_true(cpu:kernel_available(name), name) end
      for _, name in ipairs(f.prefill.cpu) do assert.is_true(cpu:kernel_available(name), name) end
    end
  end)

  it("sizes resident rows: the scale prefix padded to a dword, then the payloads", function()
    assert.equal(8 + 3 * 16, q.row_bytes("q4_0", 3))
    assert.equal(4 + 1 * 208, q.row_bytes("q6_K", 1))
    assert.equal(4 * 144, q.row_bytes("q4_K", 4))
    assert.equal(256 + 128 * 16, q.row_bytes("iq4_nl", 128))
    assert.equal(896 + 448 * 32, q.row_bytes("q8_0", 448))
    assert.equal(8 + 3 * 20, q.row_bytes("q5_0", 3))
    assert.equal(3 * 176, q.row_bytes("q5_K", 3))
  end)

  it("refuses an unserved format or a bad argument, naming the function and the argument", function()
    local ok, err = pcall(q.info, "q5_1")
    assert.is_false(ok)
    assert.matches("info: format 'q5_1' is not served (q4_0, q8_0, q4_K, q6_K, iq4_nl, q5_0, q5_K)", err, 1, true)
    ok, err = pcall(q.quantize, "q4_K", f32s(gaussians(100, 1)))
    assert.matches("quantize: 100 values is not a multiple of q4_K's 256", err)
    ok, err = pcall(q.quantize, "q4_0", "abc")
    assert.matches("quantize: f32s is 3 bytes, not a whole number of 4%-byte units", err)
    ok, err = pcall(q.dequantize, "q4_0", ("x"):rep(19))
    assert.matches("dequantize: blocks is 19 bytes, not a whole number of 18%-byte units", err)
    ok, err = pcall(q.q8k_pack, f32s(gaussians(32, 1)))
    assert.matches("q8k_pack: 32 values is not a multiple of 256", err)
    ok, err = pcall(q.resident, "q4_0", ("x"):rep(18 * 5), 2)
    assert.matches("resident: 5 q4_0 blocks is not a whole number of rows of 2", err)
    ok, err = pcall(q.row_bytes, "q4_0", -1)
    assert.matches("row_bytes: bpr %-1 is out of range", err)
    ok, err = pcall(q.matvec_host, "q4_0", "", "", 1, 100)
    assert.matches("matvec_host: cols 100 is not a multiple of 256", err)
    ok, err = pcall(q.matvec_host, "q4_0", "", ("\0"):rep(320), 1, 256, "fast")
    assert.matches("matvec_host: mode 'fast' is none of portable, simd, avx2, vnni", err)
    ok, err = pcall(q.matvec_host, "q4_0", ("\0"):rep(10), ("\0"):rep(320), 1, 256)
    assert.matches("matvec_host: resident_rows is 10 bytes; 1 rows of 256 q4_0 columns are 144", err)
    ok, err = pcall(q.dot_reference, "q6_K", ("\0"):rep(212), ("\0"):rep(640))
    assert.matches("dot_reference: q8k is 640 bytes; a row of 256 values needs 320", err)
  end)
end)

-- ---- quantize and dequantize --------------------------------------------------------------

describe("quantize round trips", function()
  -- a fifth bit halves the step: q5_0's and q5_K's bounds are about half q4_0's and q4_K's
  local bound = { q4_0 = 0.10, q8_0 = 0.007, q4_K = 0.085, q6_K = 0.022, iq4_nl = 0.085, q5_0 = 0.05,
                  q5_K = 0.045 }

  local function rel_rms(fmt, x)
    local y = unf32(q.dequantize(fmt, q.quantize(fmt, f32s(x))))
    assert.equal(#x, #y)
    local se, sx = 0, 0
    for i = 1, #x do
      se = se + (y[i] - x[i]) ^ 2
      sx = sx + x[i] ^ 2
    end
    assert.equal(0, count(y, isnan))
    return math.sqrt(se / sx)
  end

  for _, fmt in ipairs(formats) do
    it(fmt .. " comes back within its error bound", function()
      local e = rel_rms(fmt, gaussians(4096, 7))
      assert.is_true(e < bound[fmt], ("%s relative rms error %.4f, bound %.4f"):format(fmt, e, bound[fmt]))
      assert.is_true(e > 0)
    end)

    it(fmt .. " keeps zeros zero", function()
      local n = q.info(fmt).block_elems * 2
      local y = unf32(q.dequantize(fmt, q.quantize(fmt, ("\0"):rep(4 * n))))
      for i = 1, n do assert.equal(0, y[i]) end
    end)
  end

  it("orders the formats as their bits say", function()
    local x = gaussians(4096, 11)
    assert.is_true(rel_rms("q8_0", x) < rel_rms("q6_K", x))
    assert.is_true(rel_rms("q6_K", x) < rel_rms("q4_K", x))
    assert.is_true(rel_rms("iq4_nl", x) < rel_rms("q4_0", x))
    assert.is_true(rel_rms("q6_K", x) < rel_rms("q5_K", x))
    assert.is_true(rel_rms("q5_K", x) < rel_rms("q4_K", x))
    assert.is_true(rel_rms("q8_0", x) < rel_rms("q5_0", x))
    assert.is_true(rel_rms("q5_0", x) < rel_rms("q4_0", x))
  end)
end)

-- f16 bits of a normal number, decoded by hand: (1 + man / 1024) * 2^(exp - 15)
local function half(bits)
  local sign = bits >= 0x8000 and -1 or 1
  local e, m = (bits >> 10) & 31, bits & 1023
  return sign * (1 + m / 1024) * 2.0 ^ (e - 15)
end

-- q4_K's scales[12] from eight 6-bit scales and mins (the inverse of get_scale_min_k4)
local function k4_scales(sc, m)
  local b = {}
  for i = 1, 12 do b[i] = 0 end
  for j = 0, 7 do
    if j < 4 then
      b[j + 1], b[j + 5] = sc[j + 1], m[j + 1]
    else
      b[j + 5] = (sc[j + 1] & 15) | ((m[j + 1] & 15) << 4)
      b[j - 3] = b[j - 3] | ((sc[j + 1] >> 4) << 6)
      b[j + 1] = b[j + 1] | ((m[j + 1] >> 4) << 6)
    end
  end
  return string.char(table.unpack(b))
end

-- q6_K's ql[128] qh[64] from 256 six-bit levels in element order
local function q6_bits(L)
  local ql, qh = {}, {}
  for h = 0, 1 do
    for l = 0, 31 do
      local b = 128 * h + l + 1
      local q1, q2, q3, q4 = L[b], L[b + 32], L[b + 64], L[b + 96]
      ql[64 * h + l + 1] = (q1 & 15) | ((q3 & 15) << 4)
      ql[64 * h + l + 33] = (q2 & 15) | ((q4 & 15) << 4)
      qh[32 * h + l + 1] = (q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6)
    end
  end
  return string.char(table.unpack(ql)) .. string.char(table.unpack(qh))
end

describe("dequantize of hand-made blocks", function()
  local function check(fmt, block, want)
    local got = unf32(q.dequantize(fmt, block))
    assert.equal(#want, #got)
    for i = 1, #want do
      if got[i] ~= want[i] then
        error(("%s element %d: got %.9g, want %.9g"):format(fmt, i - 1, got[i], want[i]))
      end
    end
  end

  it("q4_0: (q - 8) * d, low nibbles first", function()
    local qs, want = {}, {}
    for j = 0, 15 do
      qs[j + 1] = j | ((15 - j) << 4)
      want[j + 1], want[j + 17] = (j - 8) * 0.5, (7 - j) * 0.5
    end
    check("q4_0", u16(0x3800) .. string.char(table.unpack(qs)), want)
  end)

  it("q8_0: q * d, with a subnormal d", function()
    local qs, want = {}, {}
    for j = 0, 31 do
      local v = j * 8 - 128
      qs[j + 1] = v & 255
      want[j + 1], want[j + 33] = v * 0.25, v * 2.0 ^ -24
    end
    local s = string.char(table.unpack(qs))
    check("q8_0", u16(0x3400) .. s .. u16(0x0001) .. s, want)
  end)

  it("iq4_nl: d * kv[q], a negative d", function()
    local kv = { -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113 }
    local qs, want = {}, {}
    for j = 0, 15 do
      qs[j + 1] = j | ((15 - j) << 4)
      want[j + 1], want[j + 17] = -1.5 * kv[j + 1], -1.5 * kv[16 - j]
    end
    check("iq4_nl", u16(0xBE00) .. string.char(table.unpack(qs)), want)
  end)

  it("q4_K: (d * sc) * q - dmin * m per sub-block, scales and mins past 15", function()
    local sc = { 1, 17, 33, 63, 5, 40, 21, 62 }
    local m = { 0, 3, 63, 16, 48, 7, 31, 60 }
    local L, qs = {}, {}
    for i = 0, 255 do L[i + 1] = (i * 5 + i // 32) % 16 end
    for p = 0, 3 do
      for l = 0, 31 do qs[32 * p + l + 1] = L[64 * p + l + 1] | (L[64 * p + 33 + l] << 4) end
    end
    local body = k4_scales(sc, m) .. string.char(table.unpack(qs))
    local want = {}
    -- exact values, then a d and dmin of eleven significant bits whose difference rounds
    for _, dd in ipairs { { 0x3800, 0x3400 }, { 0x2E66, 0x34CD } } do
      local d, dmin = half(dd[1]), half(dd[2])
      for i = 0, 255 do
        local j = i // 32 + 1
        want[#want + 1] = fr(fr(fr(d * sc[j]) * L[i + 1]) - fr(dmin * m[j]))
      end
    end
    check("q4_K", u16(0x3800) .. u16(0x3400) .. body .. u16(0x2E66) .. u16(0x34CD) .. body, want)
  end)

  it("q5_0: (q - 16) * d, the fifth bit of element j bit j of qh, a subnormal d", function()
    local qh = 0xA5C396F0
    local qs, want = {}, {}
    for j = 0, 15 do qs[j + 1] = j | ((15 - j) << 4) end
    for _, d in ipairs { { 0x3800, 0.5 }, { 0x0001, 2.0 ^ -24 } } do
      for j = 0, 15 do
        want[#want + 1] = ((j | ((qh >> j) & 1) << 4) - 16) * d[2]
      end
      for j = 0, 15 do
        want[#want + 1] = (((15 - j) | ((qh >> (j + 16)) & 1) << 4) - 16) * d[2]
      end
    end
    local body = string.pack("<I4", qh) .. string.char(table.unpack(qs))
    check("q5_0", u16(0x3800) .. body .. u16(0x0001) .. body, want)
  end)

  it("q5_K: (d * sc) * q - dmin * m per sub-block, q's fifth bit in qh, levels past 15", function()
    local sc = { 1, 17, 33, 63, 5, 40, 21, 62 }
    local m = { 0, 3, 63, 16, 48, 7, 31, 60 }
    local L, qs, qh = {}, {}, {}
    for i = 0, 255 do L[i + 1] = (i * 5 + i // 32) % 32 end
    for l = 0, 31 do qh[l + 1] = 0 end
    for p = 0, 3 do
      for l = 0, 31 do
        local lo, hi = L[64 * p + l + 1], L[64 * p + 33 + l]
        qs[32 * p + l + 1] = (lo & 15) | ((hi & 15) << 4)
        qh[l + 1] = qh[l + 1] | ((lo >> 4) << (2 * p)) | ((hi >> 4) << (2 * p + 1))
      end
    end
    local body = k4_scales(sc, m) .. string.char(table.unpack(qh)) .. string.char(table.unpack(qs))
    local want = {}
    for _, dd in ipairs { { 0x3800, 0x3400 }, { 0x2E66, 0x34CD } } do
      local d, dmin = half(dd[1]), half(dd[2])
      for i = 0, 255 do
        local j = i // 32 + 1
        want[#want + 1] = fr(fr(fr(d * sc[j]) * L[i + 1]) - fr(dmin * m[j]))
      end
    end
    check("q5_K", u16(0x3800) .. u16(0x3400) .. body .. u16(0x2E66) .. u16(0x34CD) .. body, want)
  end)

  it("q6_K: (d * sc) * (q - 32) per 16, signed scales, the scale at the tail", function()
    local sc = { 1, -2, 3, -4, 5, -6, 7, -8, 127, -128, 9, 10, -11, 12, 13, -14 }
    local L = {}
    for i = 0, 255 do L[i + 1] = (i * 7 + 3) % 64 end
    local scales = {}
    for g = 1, 16 do scales[g] = sc[g] & 255 end
    local body = q6_bits(L) .. string.char(table.unpack(scales))
    local want = {}
    -- the second d makes 25-bit products: each value is rounded once, in ggml's order
    for _, bits in ipairs { 0x3800, 0x2E66 } do
      local d = half(bits)
      for i = 0, 255 do want[#want + 1] = fr(fr(d * sc[i // 16 + 1]) * (L[i + 1] - 32)) end
    end
    check("q6_K", body .. u16(0x3800) .. body .. u16(0x2E66), want)
  end)
end)

-- ---- the q8_K activation -----------------------------------------------------------------

-- round half to even, as the pack does
local function rhe(v)
  local f = math.floor(v)
  local r = v - f
  if r > 0.5 then return f + 1 end
  if r < 0.5 then return f end
  return f % 2 == 0 and f or f + 1
end

local function parse_q8k(s, b)
  local o = 320 * b
  local v, sums = {}, {}
  for i = 1, 256 do v[i] = string.unpack("<i1", s, o + i) end
  for j = 1, 8 do sums[j] = string.unpack("<i4", s, o + 256 + 4 * j - 3) end
  return v, sums, string.unpack("<f", s, o + 289), s:sub(o + 293, o + 320)
end

describe("q8_K pack", function()
  it("packs values, eight sums, the scale and a zero tail, field by field", function()
    local x = {}
    for i = 0, 255 do x[i + 1] = (i - 100) / 8 end
    local s = q.q8k_pack(f32s(x))
    assert.equal(320, #s)
    local v, sums, d, tail = parse_q8k(s, 0)
    local amax = 155 / 8
    local iscale = fr(127 / amax)
    for i = 1, 256 do
      local want = math.max(-127, math.min(127, rhe(fr(fr(x[i]) * iscale))))
      assert.equal(want, v[i], "value " .. (i - 1))
    end
    for j = 1, 8 do
      local t = 0
      for i = 32 * (j - 1) + 1, 32 * j do t = t + v[i] end
      assert.equal(t, sums[j])
    end
    assert.equal(fr(amax / 127), d)
    assert.equal(("\0"):rep(28), tail)
    assert.equal(127, v[256])
  end)

  it("rounds halves to even and clamps at 127; an all-zero block is all zero", function()
    local x = { 127, 2.5, 3.5, -2.5, -0.5, 0.5, 1.5, 126.5, -126.5, -127, 126.9, -3.5 }
    local want = { 127, 2, 4, -2, 0, 0, 2, 126, -126, -127, 127, -4 }
    for i = #x + 1, 256 do x[i] = 0 end
    for i = 257, 512 do x[i] = 0 end -- the second block: every q, sum and d is 0
    local s = q.q8k_pack(f32s(x))
    assert.equal(640, #s)
    local v, sums, d = parse_q8k(s, 0)
    for i = 1, #want do assert.equal(want[i], v[i], "value " .. (i - 1)) end
    for i = #want + 1, 256 do assert.equal(0, v[i]) end
    assert.equal(fr(127 / 127), d)
    local t = 0
    for i = 1, 32 do t = t + v[i] end
    assert.same({ t, 0, 0, 0, 0, 0, 0, 0 }, sums)
    assert.equal(("\0"):rep(320), s:sub(321))
  end)

  it("unpacks to d * q", function()
    local x = gaussians(512, 3)
    local s = q.q8k_pack(f32s(x))
    local y = unf32(q.q8k_unpack(s))
    for b = 0, 1 do
      local v, _, d = parse_q8k(s, b)
      for i = 1, 256 do assert.equal(fr(d * v[i]), y[256 * b + i]) end
    end
  end)
end)

-- ---- the resident layout -------------------------------------------------------------------

describe("resident split", function()
  -- block k: its scale bytes are 0xA0 + k ..., its payload bytes k * 16 + j
  local function block(fmt, k)
    local f = q.info(fmt)
    local scale, pay = {}, {}
    for i = 1, f.scale_bytes do scale[i] = (0xA0 + 8 * k + i) % 256 end
    for j = 1, f.payload_bytes do pay[j] = (k * 16 + j) % 256 end
    scale, pay = string.char(table.unpack(scale)), string.char(table.unpack(pay))
    if f.scale_offset == 0 then return scale .. pay, scale, pay end
    return pay .. scale, scale, pay
  end

  local function check(fmt, bpr, nrows, pad)
    local blocks, want = {}, {}
    for r = 0, nrows - 1 do
      local scales, pays = {}, {}
      for j = 0, bpr - 1 do
        local b, s, p = block(fmt, r * bpr + j)
        blocks[#blocks + 1], scales[#scales + 1], pays[#pays + 1] = b, s, p
      end
      want[#want + 1] = table.concat(scales) .. ("\0"):rep(pad) .. table.concat(pays)
    end
    blocks, want = table.concat(blocks), table.concat(want)
    local rows = q.resident(fmt, blocks, bpr)
    assert.equal(#want, #rows)
    assert.equal(nrows * q.row_bytes(fmt, bpr), #rows)
    assert.equal(want, rows)
    assert.equal(blocks, q.from_resident(fmt, rows, bpr))
  end

  it("q4_0: three 2-byte scales padded by two zero bytes, then the payloads", function()
    check("q4_0", 3, 2, 2)
  end)

  it("q6_K: the scale taken from the block's tail", function()
    check("q6_K", 1, 3, 2)
  end)

  it("q4_K: no prefix, the blocks as they are; iq4_nl and q8_0 like q4_0", function()
    check("q4_K", 2, 2, 0)
    check("iq4_nl", 5, 2, 2)
    check("q8_0", 4, 2, 0)
  end)

  it("q5_0: 20-byte payloads (qh, then the nibbles) after the scales; q5_K like q4_K", function()
    check("q5_0", 3, 2, 2)
    check("q5_K", 2, 3, 0)
  end)
end)

-- ---- the mat-vec bodies on host memory -------------------------------------------------------

-- rows x cols weights whose rows differ in scale by six orders of magnitude, resident
local function weights(fmt, rows, cols, seed)
  local w = gaussians(rows * cols, seed)
  for r = 0, rows - 1 do
    local s = 10.0 ^ ((r % 7) - 3)
    for i = r * cols + 1, (r + 1) * cols do w[i] = w[i] * s end
  end
  local bpr = cols // q.info(fmt).block_elems
  return q.resident(fmt, q.quantize(fmt, f32s(w)), bpr), bpr
end

local function activation(cols, seed)
  return q.q8k_pack(f32s(gaussians(cols, seed, 3)))
end

local simd_paths = {}
for _, p in ipairs(select(2, q.simd())) do
  if p ~= "portable" then simd_paths[#simd_paths + 1] = p end
end

-- Whether the CPU has a `path` body for fmt (a format is served by its portable body alone
-- until it has SIMD rows: kernels/cpu/quant_kernels.c), and the body its kernels run.
local function has_body(fmt, path)
  local row = ("\0"):rep(q.row_bytes(fmt, 256 // q.info(fmt).block_elems))
  local ok, err = pcall(q.matvec_host, fmt, row, ("\0"):rep(320), 1, 256, path)
  if not ok then assert.matches("no " .. path .. " body for " .. fmt, err, 1, true) end
  return ok
end

local function kernel_path(fmt)
  local current = q.simd()
  return has_body(fmt, current) and current or "portable"
end

describe("mat-vec bodies", function()
  -- cols: one q8_K block; 9 (a partial group of four); 33 (the lanes wrap). Rows: under four
  -- read the activation in place, more read a compact copy unless it is past 128 blocks;
  -- q6_K past 512 blocks sums its activation groups inline.
  local shapes = { { 37, 256 }, { 13, 2304 }, { 5, 8448 }, { 3, 2304 }, { 4, 33024 } }
  local long = { q6_K = { 2, 133120 } }

  for _, fmt in ipairs(formats) do
    it(fmt .. ": every SIMD path == the portable body, element by element", function()
      if #simd_paths == 0 then
        pending("this CPU runs only the portable path")
        return
      end
      local paths = {}
      for _, p in ipairs(simd_paths) do
        if has_body(fmt, p) then paths[#paths + 1] = p end
      end
      if #paths == 0 then
        pending(fmt .. " has no SIMD body: its kernels run the portable one")
        return
      end
      local cases = { table.unpack(shapes) }
      cases[#cases + 1] = long[fmt]
      for si, shape in ipairs(cases) do
        local rows, cols = shape[1], shape[2]
        local w = weights(fmt, rows, cols, 100 + si)
        local x = activation(cols, 200 + si)
        local want = unf32(q.matvec_host(fmt, w, x, rows, cols, "portable"))
        assert.equal(0, count(want, isnan))
        assert.is_true(count(want, function(v) return v ~= 0 end) > rows // 2)
        for _, path in ipairs(paths) do
          local got = unf32(q.matvec_host(fmt, w, x, rows, cols, path))
          for r = 1, rows do
            if got[r] ~= want[r] then
              error(("%s %s %dx%d row %d: %.9g, portable %.9g"):format(fmt, path, rows, cols,
                r - 1, got[r], want[r]))
            end
          end
        end
      end
    end)

    it(fmt .. ": the integer route is near the float reference", function()
      local rows, cols = 13, 2304
      local w, bpr = weights(fmt, rows, cols, 300)
      local x = activation(cols, 301)
      local y = unf32(q.matvec_host(fmt, w, x, rows, cols, kernel_path(fmt)))
      local a = unf32(q.q8k_unpack(x))
      local rb = q.row_bytes(fmt, bpr)
      for r = 0, rows - 1 do
        local row = w:sub(r * rb + 1, (r + 1) * rb)
        local ref = q.dot_reference(fmt, row, x)
        local wf = unf32(q.dequantize(fmt, q.from_resident(fmt, row, bpr)))
        local mag = 0
        for i = 1, cols do mag = mag + math.abs(wf[i] * a[i]) end
        assert.is_true(mag > 0)
        local err = math.abs(y[r + 1] - ref)
        assert.is_true(err <= 1e-6 * mag,
          ("%s row %d: %.9g, reference %.9g, error %.3g of %.3g"):format(fmt, r, y[r + 1], ref, err, mag))
      end
    end)
  end

  -- ARITHMETIC.md's integer route written out from the bytes, float step by float step in
  -- the canonical order: the CPU bodies must give exactly its bits.
  local function f16(bits)
    local sign = bits >= 0x8000 and -1 or 1
    local e, m = (bits >> 10) & 31, bits & 1023
    if e == 0 then return sign * m * 2.0 ^ -24 end
    return sign * (1024 + m) * 2.0 ^ (e - 25)
  end

  local function canonical(acc)
    for _, off in ipairs { 16, 8, 4, 2, 1 } do
      local nxt = {}
      for l = 0, 31 do nxt[l] = fr(acc[l] + acc[l ~ off]) end
      acc = nxt
    end
    return acc[0]
  end

  local function q8k_slice(x, blk, first, n)
    local o = 320 * blk
    return { string.unpack("<" .. ("i1"):rep(n), x, o + first + 1) }, string.unpack("<f", x, o + 289),
      { string.unpack("<i4i4i4i4i4i4i4i4", x, o + 257) }
  end

  local block_value = {
    q5_0 = function(row, bpr, b, x)
      local d = f16(string.unpack("<I2", row, 2 * b + 1))
      local p = (bpr * 2 + 3) // 4 * 4 + 20 * b
      local qh = string.unpack("<I4", row, p + 1)
      local a, xs, sums = q8k_slice(x, b // 8, 32 * (b % 8), 32)
      local dot = 0
      for j = 0, 15 do
        local qs = row:byte(p + 5 + j)
        dot = dot + ((qs & 15) | ((qh >> j) & 1) << 4) * a[j + 1]
          + ((qs >> 4) | ((qh >> (j + 16)) & 1) << 4) * a[j + 17]
      end
      dot = dot - 16 * sums[b % 8 + 1]
      return fr(fr(d * xs) * dot)
    end,
    q5_K = function(row, bpr, b, x)
      local o = 176 * b
      local d, dmin = f16(string.unpack("<I2", row, o + 1)), f16(string.unpack("<I2", row, o + 3))
      local sc = { row:byte(o + 5, o + 16) }
      local a, xs, sums = q8k_slice(x, b, 0, 256)
      local isum, msum = 0, 0
      for j = 0, 7 do
        local s, m
        if j < 4 then
          s, m = sc[j + 1] & 63, sc[j + 5] & 63
        else
          s = (sc[j + 5] & 15) | ((sc[j - 3] >> 6) << 4)
          m = (sc[j + 5] >> 4) | ((sc[j + 1] >> 6) << 4)
        end
        local dot = 0
        for l = 0, 31 do
          local nib = (row:byte(o + 49 + 32 * (j // 2) + l) >> (4 * (j % 2))) & 15
          dot = dot + (nib | ((row:byte(o + 17 + l) >> j) & 1) << 4) * a[32 * j + l + 1]
        end
        isum, msum = isum + s * dot, msum + m * sums[j + 1]
      end
      return fr(fr(fr(d * xs) * fr(isum)) - fr(fr(dmin * xs) * fr(msum)))
    end,
  }

  for fmt, value in pairs(block_value) do
    it(fmt .. ": == ARITHMETIC.md's integer route written out, ragged row counts", function()
      for si, shape in ipairs { { 13, 2304 }, { 3, 8448 } } do
        local rows, cols = shape[1], shape[2]
        local w, bpr = weights(fmt, rows, cols, 700 + si)
        local x = activation(cols, 710 + si)
        local rb = q.row_bytes(fmt, bpr)
        local got = unf32(q.matvec_host(fmt, w, x, rows, cols, kernel_path(fmt)))
        assert.equal(0, count(got, isnan))
        assert.is_true(count(got, function(v) return v ~= 0 end) == rows)
        for r = 0, rows - 1 do
          local row, acc = w:sub(r * rb + 1, (r + 1) * rb), {}
          for l = 0, 31 do acc[l] = 0.0 end
          for b = 0, bpr - 1 do acc[b % 32] = fr(acc[b % 32] + value(row, bpr, b, x)) end
          local want = canonical(acc)
          if got[r + 1] ~= want then
            error(("%s %dx%d row %d: %.9g, written out %.9g"):format(fmt, rows, cols, r, got[r + 1], want))
          end
        end
      end
    end)
  end

  it("switches the kernels' path and says which paths this CPU runs", function()
    local current, paths = q.simd()
    assert.equal("portable", paths[1])
    local prev = q.simd "portable"
    assert.equal(current, prev)
    assert.equal("portable", (q.simd()))
    q.simd(current)
    assert.equal(current, (q.simd()))
    local ok, err = pcall(q.simd, "sse9")
    assert.matches("simd: mode 'sse9' is none of", err)
  end)
end)

-- ---- the kernels on cpu:0 -------------------------------------------------------------------

describe("quant kernels on cpu:0", function()
  local cpu = xpu.device "cpu:0"
  local function sync() cpu:default_stream():sync() end
  local poison = ("\255"):rep(4)

  it("q8k_pack: one workgroup per q8_K block, == the host pack", function()
    local x = f32s(gaussians(1024, 9))
    local xq = cpu:buffer(("\255"):rep(4 * 320))
    cpu:kernel("q8k_pack"):launch(nil, 4, 256, xq, cpu:buffer(x), 1024)
    sync()
    assert.equal(q.q8k_pack(x), xq:download())
    local ok, err = pcall(cpu:kernel("q8k_pack").launch, cpu:kernel("q8k_pack"), nil, 1, 256,
      cpu:buffer(320), cpu:buffer(400), 100)
    assert.is_false(ok)
    assert.matches("n 100 is not a multiple of 256", err)
  end)

  for _, fmt in ipairs(formats) do
    it(fmt .. "_q8k_wave: rows by workgroup, at y_off, == the host body", function()
      local rows, cols = 37, 2304
      local w = weights(fmt, rows, cols, 400)
      local x = activation(cols, 401)
      local want = q.matvec_host(fmt, w, x, rows, cols, kernel_path(fmt))
      local k = cpu:kernel(fmt .. "_q8k_wave")
      local wb, xb = cpu:buffer(w), cpu:buffer(x)
      -- a wave per row at three group sizes, then grids of fewer waves than rows (1, 2, 3
      -- groups of 256: each wave serves several rows), every row covered once
      for _, l in ipairs { { 32, 37 }, { 64, 10 }, { 256, 5 }, { 256, 1 }, { 256, 2 }, { 256, 3 } } do
        local block, groups = l[1], l[2]
        local y = cpu:buffer(poison:rep(rows + 5))
        local before = k.launches
        k:launch(nil, groups, block, y, wb, xb, rows, cols, 3)
        sync()
        assert.equal(before + 1, k.launches)
        local got = y:download()
        local what = ("block %d, %d groups"):format(block, groups)
        assert.equal(poison:rep(3), got:sub(1, 12), what)
        assert.equal(want, got:sub(13, 12 + 4 * rows), what)
        assert.equal(poison:rep(2), got:sub(13 + 4 * rows), what)
      end
      local ok, err = pcall(k.launch, k, nil, 1, 32, cpu:buffer(4 * rows), wb, xb, rows, cols + 32, 0)
      assert.matches("cols 2336 is not a multiple of 256", err)
      ok, err = pcall(k.launch, k, nil, 1, 32, cpu:buffer(4 * rows), wb, xb, rows + 1, cols, 0)
      assert.matches("too short", err)
    end)

    it(fmt .. "_q8k_id: == the wave body per selected expert, NaN for a bad selection", function()
      local experts, rows, cols, used = 4, 16, 512, 4
      local slab = weights(fmt, experts * rows, cols, 500)
      local rb = q.row_bytes(fmt, cols // q.info(fmt).block_elems)
      local sel = { 2, 0, 3, 7 }
      local k = cpu:kernel(fmt .. "_q8k_id")
      for _, xrb in ipairs { 0, 2 } do
        local x = activation(cols * (xrb == 0 and 1 or used), 501 + xrb)
        local y = cpu:buffer(poison:rep(used * rows + 1))
        k:launch(nil, used * rows * 32 // 128, 128, y, cpu:buffer(slab), cpu:buffer(x),
          cpu:buffer(string.pack("<i4i4i4i4", table.unpack(sel))), experts, used, rows, cols, xrb, 1)
        sync()
        local got = unf32(y:download())
        assert.equal(poison, y:download():sub(1, 4))
        for kk = 0, used - 1 do
          local e = sel[kk + 1]
          for r = 0, rows - 1 do
            local v = got[2 + kk * rows + r]
            if e >= experts then
              assert.is_true(isnan(v))
            else
              local xk = x:sub(kk * xrb * 320 + 1, (kk * xrb + cols // 256) * 320)
              local want = unf32(q.matvec_host(fmt, slab:sub((e * rows + r) * rb + 1, (e * rows + r + 1) * rb), xk, 1, cols,
                kernel_path(fmt)))
              assert.equal(want[1], v)
            end
          end
        end
        table.remove(got, 1) -- the poison before y_off is a NaN of its own
        assert.equal(rows, count(got, isnan))
      end
    end)
  end

  -- The split of 5 rows of bpr blocks, in chunks; out starts as garbage so every byte
  -- the layout defines must have been written.
  local function split_case(fmt, bpr, chunks, dword_scales)
    local f = q.info(fmt)
    local nrows = 5
    local blocks = q.quantize(fmt, f32s(gaussians(nrows * bpr * f.block_elems, 600)))
    local want = q.resident(fmt, blocks, bpr)
    local rb, prefix = q.row_bytes(fmt, bpr), q.row_bytes(fmt, bpr) - bpr * f.payload_bytes
    local out = cpu:buffer(("\171"):rep(#want))
    local pay_off = f.scale_offset == 0 and f.scale_bytes or 0
    for _, c in ipairs(chunks) do
      local first, n = c[1], c[2]
      local src = cpu:buffer(blocks:sub(first * f.block_bytes + 1, (first + n) * f.block_bytes))
      local pw = f.payload_bytes // 4
      cpu:kernel("split_payload_dword"):launch(nil, (n * pw + 63) // 64, 64, out, src, n * pw, first,
        f.block_bytes, pw, pay_off, bpr, prefix // 4, rb // 4)
      if f.scale_bytes == 0 then -- no prefix (q4_K): the payload pass moved whole blocks
      elseif dword_scales then
        cpu:kernel("split_scale_dword"):launch(nil, (n // bpr * prefix // 4 + 31) // 32, 32, out, src,
          n // bpr * prefix // 4, first // bpr, f.block_bytes, f.scale_bytes, f.scale_offset, bpr,
          prefix // 4, rb // 4)
      else
        cpu:kernel("split_scale_bytes"):launch(nil, (n + 15) // 16, 16, out, src, n, first,
          f.block_bytes, f.scale_bytes, f.scale_offset, bpr, rb)
      end
    end
    sync()
    assert.equal(want, out:download())
    -- the byte fallback, one launch for the whole tensor
    local out2 = cpu:buffer(("\171"):rep(#want))
    cpu:kernel("split_bytes"):launch(nil, (nrows * bpr + 7) // 8, 8, out2, cpu:buffer(blocks), nrows * bpr,
      0, f.block_bytes, f.payload_bytes, f.scale_bytes, f.scale_offset, bpr, prefix, rb)
    sync()
    assert.equal(want, out2:download())
  end

  it("split: row-aligned chunks through the dword scale kernel == the host split", function()
    local k = cpu:kernel "split_scale_dword"
    local before = k.launches
    split_case("q4_0", 7, { { 0, 14 }, { 14, 21 } }, true)
    split_case("q6_K", 3, { { 0, 15 } }, true)
    split_case("q8_0", 2, { { 0, 4 }, { 4, 6 } }, true)
    assert.equal(before + 5, k.launches)
  end)

  it("split: chunks ending mid-row through the byte scale kernel == the host split", function()
    local k = cpu:kernel "split_scale_dword"
    local before = k.launches
    split_case("iq4_nl", 7, { { 0, 10 }, { 10, 13 }, { 23, 12 } }, false)
    split_case("q8_0", 3, { { 0, 1 }, { 1, 14 } }, false)
    split_case("q6_K", 3, { { 0, 4 }, { 4, 11 } }, false)
    assert.equal(before, k.launches)
  end)

  it("split: q4_K has no prefix, so its payload pass alone makes its rows; no scale pass", function()
    local k = cpu:kernel "split_scale_dword"
    local before = k.launches
    split_case("q4_K", 2, { { 0, 4 }, { 4, 6 } }, true)
    assert.equal(before, k.launches)
    local ok, err = pcall(k.launch, k, nil, 1, 32, cpu:buffer(288), cpu:buffer(288), 1, 0, 144, 0, 0, 2, 0, 72)
    assert.is_false(ok)
    assert.matches("scale_bytes is 0: a format with no row prefix has no scale pass", err)
  end)

  it("split: q5_0 by whole rows and mid-row chunks, q5_K by its payload pass alone", function()
    local k = cpu:kernel "split_scale_dword"
    local before = k.launches
    split_case("q5_0", 7, { { 0, 14 }, { 14, 21 } }, true)
    assert.equal(before + 2, k.launches)
    split_case("q5_0", 3, { { 0, 4 }, { 4, 11 } }, false)
    split_case("q5_K", 3, { { 0, 7 }, { 7, 8 } }, true)
    assert.equal(before + 2, k.launches)
  end)

  it("split: extents refuse an inconsistent layout by name", function()
    local k = cpu:kernel "split_scale_dword"
    local ok, err = pcall(k.launch, k, nil, 1, 32, cpu:buffer(64), cpu:buffer(64), 1, 0, 18, 2, 0, 7, 3, 20)
    assert.is_false(ok)
    assert.matches("prefix 12 bytes is not 7 scales of 2 bytes padded to a dword", err)
  end)
end)

describe("matvec_f32 (the reference forward's mat-vec)", function()
  local mv = xpu.quant.matvec_f32
  local function f32s(t) return string.pack("<" .. ("f"):rep(#t), table.unpack(t)) end
  local function vals(s) return { string.unpack("<" .. ("f"):rep(#s // 4), s) } end

  it("is w times x row by row, from row0, summed in double and rounded once", function()
    local w = f32s({ 1, 2, 3, 4, 5, 6, -7, 0.5 })
    local y = vals(mv(w, f32s({ 3, -2 }), 4, 2))
    assert.are.same({ -1, 1, 3, -22, 17 }, y) -- the fifth value is unpack's next position
    assert.are.same({ 3, -22, 9 }, vals(mv(w, f32s({ 3, -2 }), 2, 2, 2)))
    -- 1e8 + 1 - 1e8: an f32 running sum loses the 1, the double keeps it
    assert.are.equal(1, (string.unpack("<f", mv(f32s({ 1e8, 1, -1e8 }), f32s({ 1, 1, 1 }), 1, 3))))
  end)

  it("refuses a short w, an x of the wrong width and zero cols, by argument", function()
    local w = f32s({ 1, 2, 3, 4, 5, 6 })
    assert.error_matches(function() mv(w, f32s({ 1, 2 }), 2, 2, 2) end, "w is 24 bytes; rows 2..3 of 2 columns need 32")
    assert.error_matches(function() mv(w, f32s({ 1, 2, 3 }), 3, 2) end, "x is 12 bytes; cols 2 need 8")
    assert.error_matches(function() mv(w, "", 1, 0) end, "cols must be positive")
    assert.error_matches(function() mv(w, f32s({ 1, 2 }), -1, 2) end, "rows %-1 is out of range")
    assert.error_matches(function() mv(w .. "x", f32s({ 1, 2 }), 1, 2) end, "w is 25 bytes, not a whole number")
  end)
end)
