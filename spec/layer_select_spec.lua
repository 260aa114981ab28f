-- layer_select_spec.lua — the selection kernels (get_rows, argmax, top_k, compact, expert_map)
-- through the rows of routes.layer_select: the CPU body against oracles written here in Lua
-- (exact for ids, counts, indices and the dequantized values, which are one f32 product or
-- difference each; top_k's weights within a stated tolerance of a double softmax), then every
-- device present against the CPU, byte for byte, at several sizes (odd ones too): outputs
-- poisoned first, NaN counted, ties and out-of-range ids, refusals by their words, each row
-- firing (the kernel's launch count) and not firing. An absent device is reported skipped with
-- the reason.
local xpu = require "xpu"
local S = require "xpu.layers.select"
local routes = require "routes.layer_select"
local fx = require "spec.support.fixtures"

local cpu = xpu.device "cpu:0"
local devices = fx.devices { "vulkan:0", "cuda:0" }

local POISON = "\255"

-- ---- values and bytes ---------------------------------------------------------------------

local function f32(x) return (string.unpack("<f", string.pack("<f", x))) end
local function isnan(x) return x ~= x end

local function pack_f32s(v, n)
  local p = {}
  for i = 0, n - 1 do p[#p + 1] = string.pack("<f", v[i]) end
  return table.concat(p)
end

local function pack_i32s(v, n)
  local p = {}
  for i = 0, n - 1 do p[#p + 1] = string.pack("<i4", v[i]) end
  return table.concat(p)
end

local function unpack_all(fmt, size, s)
  local v = {}
  for i = 0, #s // size - 1 do v[i] = string.unpack(fmt, s, 1 + i * size) end
  return v
end

local function f32s(s) return unpack_all("<f", 4, s) end
local function i32s(s) return unpack_all("<i4", 4, s) end

-- An f16's value, exactly (NaN as NaN).
local function f16_value(h)
  local sign = (h & 0x8000) ~= 0 and -1.0 or 1.0
  local e, m = (h >> 10) & 31, h & 1023
  if e == 31 then return m == 0 and sign * math.huge or 0 / 0 end
  if e == 0 then return sign * (m * 2.0 ^ -24) end
  return sign * (1024 + m) * 2.0 ^ (e - 25)
end

-- want (oracle numbers) against got (f32 bytes): equal, or NaN on both sides; the NaN count.
local function match_f32(want, got, what)
  local g, nans = f32s(got), 0
  assert.equal(#want, #g, what .. ": element counts")
  for i = 0, #want do
    if isnan(g[i]) then nans = nans + 1 end
    if not (isnan(want[i]) and isnan(g[i])) and string.pack("<f", want[i]) ~= string.pack("<f", g[i]) then
      error(("%s: element %d is %.9g, the oracle's %.9g"):format(what, i, g[i], want[i]), 2)
    end
  end
  return nans
end

-- f32 elements equal bit for bit where both are numbers, NaN where either is (a NaN's payload
-- is the device's: docs/ARITHMETIC.md, get_rows); names the first that differs.
local function same_values(want, got, what)
  assert.equal(#want, #got, what .. ": lengths differ")
  local nans = 0
  for i = 1, #want, 4 do
    local wb, gb = string.unpack("<I4", want, i), string.unpack("<I4", got, i)
    local wnan, gnan = wb & 0x7fffffff > 0x7f800000, gb & 0x7fffffff > 0x7f800000
    if wnan ~= gnan or (not wnan and wb ~= gb) then
      error(("%s: element %d is %08x, the CPU's %08x"):format(what, (i - 1) // 4, gb, wb), 2)
    end
    if wnan then nans = nans + 1 end
  end
  return nans
end

-- Bytes equal, element by element (4-byte elements), naming the first that differs.
local function same_bytes(want, got, what)
  assert.equal(#want, #got, what .. ": lengths differ")
  if want == got then return end
  for i = 1, #want, 4 do
    if want:sub(i, i + 3) ~= got:sub(i, i + 3) then
      error(("%s: element %d is %08x, the CPU's %08x"):format(what, (i - 1) // 4, string.unpack("<I4", got, i),
        string.unpack("<I4", want, i)), 2)
    end
  end
end

-- ---- runs through the route table -----------------------------------------------------------

-- Binds and dispatches q's row on d with operands: inputs are strings (uploaded), outputs
-- byte counts (poisoned with 0xff bytes) or {bytes, poison byte}. Returns the outputs downloaded by name, the row, and the launches
-- of each kernel named in `kernels` during the dispatch.
local function run(d, q, inputs, outputs, kernels)
  local ops = {}
  for k, s in pairs(inputs) do ops[k] = d:buffer(s) end
  for k, n in pairs(outputs) do
    local poison = POISON
    if type(n) == "table" then n, poison = n[1], n[2] end
    ops[k] = d:buffer(poison:rep(n))
  end
  local c = xpu.call { query = q, device = d, operands = ops }
  local row = routes:bind(c)
  local before = {}
  for _, k in ipairs(kernels or {}) do before[k] = d:kernel(k).launches end
  row:dispatch(c)
  fx.sync(d)
  local got, launches = {}, {}
  for k in pairs(outputs) do got[k] = ops[k]:download() end
  for _, k in ipairs(kernels or {}) do launches[k] = d:kernel(k).launches - before[k] end
  return got, row, launches
end

local function dev_it(entry, name, fn)
  it(name, function()
    if not entry.dev then return pending(entry.skip) end
    fn(entry.dev)
  end)
end

-- ---- get_rows: tables and the oracle --------------------------------------------------------

-- f16 scales of every kind: normal, small and large, subnormal, negative.
local SCALES = { 0x2c00, 0x3555, 0x1001, 0x0001, 0x03ff, 0x0200, 0xac00, 0x5a00, 0x8123, 0x0400 }

-- A table of n_rows x cols in format, random bytes with chosen scales; nan_scale: block 0 of
-- row 1 gets a NaN scale (f16 / f32: row 1's element 0 is a NaN).
local function make_table(format, n_rows, cols, seed, nan_scale)
  local r, bytes = fx.lcg(seed), {}
  local rb = S.row_bytes(format, cols)
  local elems, bsize = S.BLOCK[format][1], S.BLOCK[format][2]
  for row = 0, n_rows - 1 do
    for b = 0, cols // elems - 1 do
      local blk = {}
      for i = 1, bsize do blk[i] = math.floor(r() * 256) end
      if format == "f32" then
        local v = string.pack("<f", (r() - 0.5) * 2.0 ^ math.floor(r() * 40 - 20))
        if nan_scale and row == 1 and b == 0 then v = string.pack("<I4", 0x7fa00001) end
        blk = { v:byte(1, 4) }
      elseif format == "f16" then
        local h = SCALES[1 + math.floor(r() * #SCALES)] ~ math.floor(r() * 1024)
        if nan_scale and row == 1 and b == 0 then h = 0x7e05 end
        blk = { h & 255, h >> 8 }
      else
        local h = SCALES[1 + (row * 7 + b * 3) % #SCALES]
        if nan_scale and row == 1 and b == 0 then h = 0x7d01 end
        local at = format == "q6_K" and 209 or 1 -- q6_K's d trails its block
        blk[at], blk[at + 1] = h & 255, h >> 8
        if format == "q4_K" then -- dmin
          local hm = SCALES[1 + (row * 5 + b + 4) % #SCALES]
          blk[3], blk[4] = hm & 255, hm >> 8
        end
      end
      bytes[#bytes + 1] = string.char(table.unpack(blk))
    end
  end
  local s = table.concat(bytes)
  assert(#s == n_rows * rb)
  return s
end

local function u16(s, p) return string.unpack("<I2", s, p + 1) end
local function byte(s, p) return s:byte(p + 1) end

-- ggml's get_scale_min_k4 on the 12 scale bytes at p.
local function scale_min_k4(s, p, j)
  if j < 4 then return byte(s, p + j) & 63, byte(s, p + j + 4) & 63 end
  local a = byte(s, p + j + 4)
  return (a & 15) | ((byte(s, p + j - 4) >> 6) << 4), (a >> 4) | ((byte(s, p + j) >> 6) << 4)
end

-- Element c of the row starting at byte `at`, by ARITHMETIC.md's value formula, each product
-- and difference rounded to f32.
local ORACLE = {
  f32 = function(s, at, c) return (string.unpack("<f", s, at + 4 * c + 1)) end,
  f16 = function(s, at, c) return f16_value(u16(s, at + 2 * c)) end,
  q8_0 = function(s, at, c)
    local b = at + (c // 32) * 34
    local q = byte(s, b + 2 + c % 32)
    return f32((q >= 128 and q - 256 or q) * f16_value(u16(s, b)))
  end,
  q4_0 = function(s, at, c)
    local b, j = at + (c // 32) * 18, c % 32
    local x = byte(s, b + 2 + j % 16)
    return f32(((j < 16 and x & 15 or x >> 4) - 8) * f16_value(u16(s, b)))
  end,
  q4_K = function(s, at, c)
    local b, e = at + (c // 256) * 144, c % 256
    local p, hi, l = e // 64, (e % 64) // 32, e % 32
    local sc, m = scale_min_k4(s, b + 4, 2 * p + hi)
    local d1, m1 = f32(f16_value(u16(s, b)) * sc), f32(f16_value(u16(s, b + 2)) * m)
    local x = byte(s, b + 16 + 32 * p + l)
    return f32(f32(d1 * (hi == 0 and x & 15 or x >> 4)) - m1)
  end,
  q6_K = function(s, at, c)
    local b, e = at + (c // 256) * 210, c % 256
    local h, q, l = e // 128, (e % 128) // 32, e % 32
    local lo, hb = byte(s, b + 64 * h + l + 32 * (q & 1)), byte(s, b + 128 + 32 * h + l)
    local v = ((q < 2 and lo & 15 or lo >> 4) | ((hb >> (2 * q)) & 3) << 4) - 32
    local sc = byte(s, b + 192 + 8 * h + l // 16 + 2 * q)
    if sc >= 128 then sc = sc - 256 end
    return f32(f32(f16_value(u16(s, b + 208)) * sc) * v)
  end,
}

local function get_rows_oracle(format, tab, ids, n, n_rows, cols)
  local want, rb = {}, S.row_bytes(format, cols)
  for i = 0, n - 1 do
    for c = 0, cols - 1 do
      local id = ids[i]
      want[i * cols + c] = (id < 0 or id >= n_rows) and 0 / 0 or ORACLE[format](tab, id * rb, c)
    end
  end
  return want
end

-- ids in range, and where `bad` the out-of-range ones at fixed places: -1, n_rows, the
-- i32 extremes.
local function make_ids(n, n_rows, seed, bad)
  local r, ids = fx.lcg(seed), {}
  for i = 0, n - 1 do ids[i] = math.floor(r() * n_rows) end
  local nbad = 0
  if bad then
    for i, v in ipairs { -1, n_rows, 0x7fffffff, -0x80000000 } do
      local at = (i * 3) % n
      if ids[at] >= 0 and ids[at] < n_rows then nbad = nbad + 1 end
      ids[at] = v
    end
  end
  return ids, nbad
end

-- {n, n_rows, cols} per format: odd counts, single blocks, several.
local GET_ROWS_CASES = {
  f32 = { { 5, 9, 1 }, { 33, 17, 257 }, { 3, 4, 4096 } },
  f16 = { { 5, 9, 3 }, { 33, 17, 257 }, { 3, 4, 4096 } },
  q8_0 = { { 5, 9, 32 }, { 7, 13, 96 }, { 3, 5, 4096 } },
  q4_0 = { { 5, 9, 32 }, { 7, 13, 96 }, { 3, 5, 4096 } },
  q4_K = { { 5, 9, 256 }, { 7, 3, 768 }, { 2, 5, 4096 } },
  q6_K = { { 5, 9, 256 }, { 7, 3, 768 }, { 2, 5, 4096 } },
}

local function get_rows_run(d, format, case, seed, bad, nan_scale)
  local n, n_rows, cols = case[1], case[2], case[3]
  local tab = make_table(format, n_rows, cols, seed, nan_scale)
  local ids, nbad = make_ids(n, n_rows, seed + 1, bad)
  local got, row, launches = run(d, S.get_rows_query(format, n, n_rows, cols),
    { table = tab, ids = pack_i32s(ids, n) }, { out = n * cols * 4 }, { "get_rows" })
  return got.out, tab, ids, nbad, row, launches.get_rows
end

describe("get_rows on cpu:0 == the Lua oracle", function()
  for _, format in ipairs(S.TABLE_FORMATS) do
    it(("get_rows.%s: every element by the format's value formula, subnormal scales included"):format(format),
      function()
        for ci, case in ipairs(GET_ROWS_CASES[format]) do
          local out, tab, ids, _, row, launches = get_rows_run(cpu, format, case, 100 + ci, false)
          local what = ("get_rows.%s %dx%d of %d rows"):format(format, case[1], case[3], case[2])
          assert.equal("get_rows." .. format, row.name)
          assert.equal(1, launches, what .. ": launches")
          local nans = match_f32(get_rows_oracle(format, tab, ids, case[1], case[2], case[3]), out, what)
          assert.equal(0, nans, what .. ": NaN count (no NaN in the table)")
        end
      end)

    it(("get_rows.%s: an id outside [0, n_rows) gives a row of quiet NaN and reads nothing"):format(format), function()
      local case = GET_ROWS_CASES[format][2]
      local n, cols = case[1], case[3]
      local out, tab, ids, nbad = get_rows_run(cpu, format, case, 200, true)
      local nans = match_f32(get_rows_oracle(format, tab, ids, n, case[2], cols), out, format .. " bad ids")
      assert.equal(4, nbad, "the fixture's bad ids")
      assert.equal(nbad * cols, nans, "NaN count: whole rows, only for the bad ids")
      for i = 0, n - 1 do
        if ids[i] < 0 or ids[i] >= case[2] then
          assert.equal(string.pack("<I4", 0x7fc00000):rep(cols), out:sub(1 + i * cols * 4, (i + 1) * cols * 4),
            ("row %d (id %d): the quiet NaN 0x7fc00000"):format(i, ids[i]))
        end
      end
    end)

    it(("get_rows.%s: a NaN in the table comes out as NaN, counted"):format(format), function()
      local case = GET_ROWS_CASES[format][1]
      local n, n_rows, cols = case[1], case[2], case[3]
      local tab = make_table(format, n_rows, cols, 300, true)
      local ids = {}
      for i = 0, n - 1 do ids[i] = 1 end -- every id reads row 1, whose first block is NaN
      local got = run(cpu, S.get_rows_query(format, n, n_rows, cols), { table = tab, ids = pack_i32s(ids, n) },
        { out = n * cols * 4 })
      local nans = match_f32(get_rows_oracle(format, tab, ids, n, n_rows, cols), got.out, format .. " NaN")
      assert.equal(n * S.BLOCK[format][1], nans, "NaN count: the NaN block's elements in every row")
    end)
  end
end)

-- ---- argmax ---------------------------------------------------------------------------------

-- Whether (a, ia) is chosen before (b, ib): a NaN before every number (the first NaN first),
-- then the larger value, then the lower index (-0 and +0 are equal).
local function before(a, ia, b, ib)
  if isnan(a) then return not isnan(b) or ia < ib end
  if isnan(b) then return false end
  if a ~= b then return a > b end
  return ia < ib
end

local function argmax_oracle(v, rows, cols)
  local want = {}
  for r = 0, rows - 1 do
    local best = 0
    for i = 1, cols - 1 do
      if before(v[r * cols + i], i, v[r * cols + best], best) then best = i end
    end
    want[r] = best
  end
  return want
end

-- rows x cols: Gaussians, quantized to halves on odd rows (ties everywhere), and special rows:
-- a tie for the max late and early, NaNs, all -inf, -0 before +0, +inf twice.
local function argmax_values(rows, cols, seed)
  local g = f32s(fx.f32_values(rows * cols, seed))
  local v = {}
  for r = 0, rows - 1 do
    for i = 0, cols - 1 do
      local x = g[r * cols + i]
      v[r * cols + i] = r % 2 == 1 and math.floor(x * 2) / 2 or x
    end
  end
  local special = {
    function(at) v[at + cols - 1] = 1e30; v[at + cols // 2] = 1e30 end,
    function(at) v[at + cols // 3] = 0 / 0; v[at + cols - 1] = 0 / 0; v[at] = math.huge end,
    function(at) for i = 0, cols - 1 do v[at + i] = -math.huge end end,
    function(at) for i = 0, cols - 1 do v[at + i] = i == 0 and -1.0 or i % 2 == 1 and -0.0 or 0.0 end end,
    function(at) v[at + cols - 1] = math.huge; v[at + cols // 4] = math.huge end,
  }
  for r = 2, rows - 1 do special[1 + (r - 2) % #special]((r) * cols) end
  return v
end

local ARGMAX_CASES = { { 1, 1 }, { 3, 31 }, { 7, 1025 }, { 9, 5000 }, { 2, 128256 } }

describe("argmax on cpu:0 == the Lua oracle", function()
  it("the first index of the max: NaN first, ties to the lower index, -0 == +0, at every size", function()
    for _, case in ipairs(ARGMAX_CASES) do
      local rows, cols = case[1], case[2]
      local v = argmax_values(rows, cols, rows + cols)
      local got, row, launches = run(cpu, S.argmax_query(rows, cols), { x = pack_f32s(v, rows * cols) },
        { out = rows * 4 }, { "argmax" })
      assert.equal("argmax.f32", row.name)
      assert.equal(1, launches.argmax)
      local want, g = argmax_oracle(v, rows, cols), i32s(got.out)
      for r = 0, rows - 1 do
        assert.equal(want[r], g[r], ("%dx%d row %d"):format(rows, cols, r))
      end
    end
  end)

  it("the special rows pick what the rules say", function()
    local cols = 64
    local v = argmax_values(7, cols, 5)
    local g = i32s(run(cpu, S.argmax_query(7, cols), { x = pack_f32s(v, 7 * cols) }, { out = 28 }).out)
    assert.equal(cols // 2, g[2], "a tie for the max: the lower index")
    assert.equal(cols // 3, g[3], "NaN above +inf: the first NaN")
    assert.equal(0, g[4], "all -inf: index 0")
    assert.equal(1, g[5], "-0 then +0: equal, the first")
    assert.equal(cols // 4, g[6], "+inf twice: the first")
  end)
end)

-- ---- top_k ----------------------------------------------------------------------------------

-- The k ids, best first, by `before`.
local function top_k_ids(v, at, n_expert, k)
  local taken, ids = {}, {}
  for s = 1, k do
    local best
    for j = 0, n_expert - 1 do
      if not taken[j] and (best == nil or before(v[at + j], j, v[at + best], best)) then best = j end
    end
    taken[best], ids[s] = true, best
  end
  return ids
end

-- The softmax weights in double: over the k, or over all n_expert (then taken).
local function top_k_weights(v, at, n_expert, ids, norm)
  local m, sum, w = v[at + ids[1]], 0.0, {}
  if norm == "k" then
    for _, j in ipairs(ids) do sum = sum + math.exp(v[at + j] - m) end
  else
    for j = 0, n_expert - 1 do sum = sum + math.exp(v[at + j] - m) end
  end
  for s, j in ipairs(ids) do w[s] = math.exp(v[at + j] - m) / sum end
  return w
end

-- Logits: Gaussians, ties (quantized to quarters) on rows 1 mod 3, a NaN row at row 2.
local function top_k_values(rows, n_expert, seed)
  local g = f32s(fx.f32_values(rows * n_expert, seed))
  local v = {}
  for r = 0, rows - 1 do
    for j = 0, n_expert - 1 do
      local x = g[r * n_expert + j]
      v[r * n_expert + j] = r % 3 == 1 and math.floor(x * 4) / 4 or x
    end
  end
  if rows > 2 then
    v[2 * n_expert + n_expert // 2] = 0 / 0
    v[2 * n_expert + n_expert - 1] = 0 / 0
  end
  return v
end

local TOP_K_CASES = { { 1, 1, 1 }, { 5, 7, 3 }, { 9, 60, 8 }, { 13, 128, 8 }, { 4, 256, 8 }, { 6, 33, 2 } }
local WEIGHT_TOL = 2e-6 -- relative: e^x within 2 ulp, a sum of up to 256 terms, one division

local function top_k_run(d, case, norm, seed)
  local rows, n_expert, k = case[1], case[2], case[3]
  local v = top_k_values(rows, n_expert, seed)
  local got, row, launches = run(d, S.top_k_query(rows, n_expert, k, norm), { x = pack_f32s(v, rows * n_expert) },
    { ids = rows * k * 4, weights = rows * k * 4 }, { "top_k" })
  return got, v, row, launches.top_k
end

describe("top_k on cpu:0 == the Lua oracle", function()
  for _, norm in ipairs { "k", "all" } do
    it(("ids exact (descending, ties to the lower index, NaN first), weights over %s within %g"):format(
      norm == "k" and "the k" or "all experts", WEIGHT_TOL), function()
      for ci, case in ipairs(TOP_K_CASES) do
        local rows, n_expert, k = case[1], case[2], case[3]
        local got, v, row, launches = top_k_run(cpu, case, norm, 40 + ci)
        assert.equal("top_k.f32", row.name)
        assert.equal(1, launches)
        local ids, w, nans = i32s(got.ids), f32s(got.weights), 0
        for r = 0, rows - 1 do
          local want = top_k_ids(v, r * n_expert, n_expert, k)
          local ww = top_k_weights(v, r * n_expert, n_expert, want, norm)
          for s = 1, k do
            local what = ("%s %dx%d k %d row %d slot %d"):format(norm, rows, n_expert, k, r, s)
            assert.equal(want[s], ids[r * k + s - 1], what .. ": id")
            local x = w[r * k + s - 1]
            if isnan(ww[s]) then
              nans = nans + 1
              assert.equal(0x7fc00000, string.unpack("<I4", got.weights, 1 + 4 * (r * k + s - 1)), what .. ": NaN bits")
            else
              assert.is_true(math.abs(x - ww[s]) <= WEIGHT_TOL * ww[s] + 1e-38,
                ("%s: weight %.9g, the oracle's %.9g"):format(what, x, ww[s]))
            end
          end
        end
        assert.equal(rows > 2 and k or 0, nans, "NaN count: the NaN row's weights")
      end
    end)
  end

  it("ties: equal logits come out lower index first", function()
    local v = {}
    for j = 0, 15 do v[j] = (j % 4 == 1) and 2.0 or 1.0 end -- 1, 5, 9, 13 tie at the top
    local got = run(cpu, S.top_k_query(1, 16, 6, "k"), { x = pack_f32s(v, 16) }, { ids = 24, weights = 24 })
    local ids = i32s(got.ids)
    assert.same({ [0] = 1, 5, 9, 13, 0, 2 }, ids)
    local w = f32s(got.weights)
    assert.equal(w[0], w[3], "tied logits, equal weights")
    assert.equal(w[4], w[5], "tied logits, equal weights")
  end)
end)

-- ---- compact --------------------------------------------------------------------------------

-- x: Gaussians with zeros, -0, NaN, +-inf and denormals sprinkled.
local function compact_values(n, seed)
  local g = n > 0 and f32s(fx.f32_values(n, seed)) or {}
  local odd = { 0.0, -0.0, 0 / 0, math.huge, -math.huge, 2.0 ^ -140, -2.0 ^ -140 }
  local v = {}
  for i = 0, n - 1 do v[i] = i % 11 == 3 and odd[1 + (i // 11) % #odd] or g[i] end
  return v
end

local function compact_oracle(v, n)
  local values, indices, c = {}, {}, 0
  for i = 0, n - 1 do
    if v[i] > 0 then values[c], indices[c], c = v[i], i, c + 1 end
  end
  return values, indices, c
end

local COMPACT_ONE = { 0, 1, 7, 1000, 1025, 5000, 65536 }
local COMPACT_GROUPS = { 1, 4095, 4097, 70001, 3 * 4096 + 17 }

-- Runs compact on d (pinning the multi-group row when `groups`); returns the outputs.
local function compact_run(d, n, seed, groups)
  local v = compact_values(n, seed)
  local inputs = { x = pack_f32s(v, n) }
  if groups then
    routes:pin("compact_groups.f32", { regime = "compact" })
    inputs.scratch = POISON:rep(S.compact_scratch_bytes(n))
  end
  local ok, got, row, launches = pcall(run, d, S.compact_query(n), inputs,
    { values = math.max(4, n * 4), indices = math.max(4, n * 4), count = 4 },
    { "compact", "compact_count", "compact_offsets", "compact_scatter" })
  if groups then routes:unpin "compact_groups.f32" end
  assert(ok, got)
  return got, v, row, launches
end

local function check_compact(got, v, n, what)
  local values, indices, c = compact_oracle(v, n)
  assert.equal(c, string.unpack("<i4", got.count), what .. ": count")
  assert.equal(pack_f32s(values, c), got.values:sub(1, 4 * c), what .. ": values")
  assert.equal(pack_i32s(indices, c), got.indices:sub(1, 4 * c), what .. ": indices")
  assert.equal(POISON:rep(#got.values - 4 * c), got.values:sub(4 * c + 1), what .. ": nothing written past the count")
  assert.equal(POISON:rep(#got.indices - 4 * c), got.indices:sub(4 * c + 1), what .. ": nothing written past the count")
end

describe("compact on cpu:0 == the Lua oracle", function()
  it("compact.f32 (one launch): the positive elements in order, -0, NaN and negatives dropped", function()
    for _, n in ipairs(COMPACT_ONE) do
      local got, v, row, launches = compact_run(cpu, n, n + 3)
      assert.equal("compact.f32", row.name)
      assert.equal(1, launches.compact, "one launch")
      assert.equal(0, launches.compact_count)
      check_compact(got, v, n, "one-group n " .. n)
    end
  end)

  it("compact_groups.f32 (counts, their scan, the scatter): the same, at group edges", function()
    for _, n in ipairs(COMPACT_GROUPS) do
      local got, v, row, launches = compact_run(cpu, n, n + 5, true)
      assert.equal("compact_groups.f32", row.name)
      assert.same({ compact = 0, compact_count = 1, compact_offsets = 1, compact_scatter = 1 }, launches)
      check_compact(got, v, n, "multi-group n " .. n)
    end
  end)

  it("an n past the one-group form picks the multi-group row by itself", function()
    local q = S.compact_query(S.COMPACT_ONE_MAX + 1)
    local c = xpu.call { query = q, device = cpu, operands = {} }
    assert.equal("compact_groups.f32", routes:pick(c).name)
  end)
end)

-- ---- expert_map -----------------------------------------------------------------------------

local function expert_map_oracle(ids, tokens, k, n_expert)
  local counts, offsets, list_t, list_s = {}, {}, {}, {}
  for e = 0, n_expert - 1 do counts[e] = 0 end
  for p = 0, tokens * k - 1 do
    local e = ids[p]
    if e >= 0 and e < n_expert then counts[e] = counts[e] + 1 end
  end
  local run_ = 0
  for e = 0, n_expert - 1 do offsets[e], run_ = run_, run_ + counts[e] end
  local at = 0
  for e = 0, n_expert - 1 do
    for p = 0, tokens * k - 1 do
      if ids[p] == e then list_t[at], list_s[at], at = p // k, p % k, at + 1 end
    end
  end
  for i = at, tokens * k - 1 do list_t[i], list_s[i] = -1, -1 end
  return counts, offsets, list_t, list_s
end

-- ids: skewed towards low experts (some get many tokens), none for an expert 5 mod 7 (some
-- get none), bad ids sprinkled.
local function expert_ids(tokens, k, n_expert, seed, bad)
  local r, ids = fx.lcg(seed), {}
  for p = 0, tokens * k - 1 do
    local e = math.floor(r() ^ 2 * n_expert)
    ids[p] = e % 7 == 5 and e - 1 or e
  end
  if bad and tokens * k > 8 then
    ids[3], ids[tokens * k - 2], ids[7] = -1, n_expert, 0x7fffffff
  end
  return ids
end

local EXPERT_MAP_CASES = { { 0, 8, 16 }, { 1, 8, 128 }, { 7, 2, 60 }, { 37, 8, 128 }, { 512, 8, 128 }, { 129, 3, 1024 } }

local function expert_map_run(d, case, seed, bad)
  local tokens, k, n_expert = case[1], case[2], case[3]
  local ids = expert_ids(tokens, k, n_expert, seed, bad)
  local pairs = tokens * k
  local got, row, launches = run(d, S.expert_map_query(tokens, k, n_expert), { ids = pack_i32s(ids, pairs) .. "\0\0\0\0" },
    -- poisoned with 0x5a, not 0xff: the list's tail is -1, which 0xff bytes already are
    { counts = { n_expert * 4, "\90" }, offsets = { n_expert * 4, "\90" }, tokens = { math.max(4, pairs * 4), "\90" },
      slots = { math.max(4, pairs * 4), "\90" } },
    { "expert_map" })
  return got, ids, row, launches.expert_map
end

describe("expert_map on cpu:0 == the Lua oracle", function()
  it("counts, offsets and each expert's (token, slot) list in token order; bad ids dropped", function()
    for ci, case in ipairs(EXPERT_MAP_CASES) do
      local tokens, k, n_expert = case[1], case[2], case[3]
      local got, ids, row, launches = expert_map_run(cpu, case, 60 + ci, true)
      assert.equal("expert_map.i32", row.name)
      assert.equal(1, launches)
      local what = ("%d tokens x %d over %d"):format(tokens, k, n_expert)
      local counts, offsets, lt, ls = expert_map_oracle(ids, tokens, k, n_expert)
      assert.equal(pack_i32s(counts, n_expert), got.counts, what .. ": counts")
      assert.equal(pack_i32s(offsets, n_expert), got.offsets, what .. ": offsets")
      assert.equal(pack_i32s(lt, tokens * k), got.tokens:sub(1, 4 * tokens * k), what .. ": tokens")
      assert.equal(pack_i32s(ls, tokens * k), got.slots:sub(1, 4 * tokens * k), what .. ": slots")
      local empty = 0
      for e = 0, n_expert - 1 do empty = empty + (counts[e] == 0 and 1 or 0) end
      if tokens * k > 8 and n_expert > 8 then assert.is_true(empty > 0, what .. ": some expert gets no token") end
    end
  end)
end)

-- ---- every device against the CPU -----------------------------------------------------------

for _, entry in ipairs(devices) do
  describe("selection kernels on " .. entry.id .. " == cpu:0, byte for byte", function()
    for _, format in ipairs(S.TABLE_FORMATS) do
      dev_it(entry, ("get_rows.%s at every size, bad ids and NaN in the table"):format(format), function(d)
        for ci, case in ipairs(GET_ROWS_CASES[format]) do
          for _, nan in ipairs { false, true } do
            local want = get_rows_run(cpu, format, case, 500 + ci, true, nan)
            local got, _, _, _, row, launches = get_rows_run(d, format, case, 500 + ci, true, nan)
            local what = ("%s get_rows.%s %dx%d of %d%s"):format(entry.id, format, case[1], case[3], case[2],
              nan and " (NaN table)" or "")
            assert.equal("get_rows." .. format, row.name)
            assert.equal(1, launches, what .. ": launches")
            if nan and format ~= "f32" and format ~= "f16" then
              -- a NaN scale's NaNs: payloads are the device's
              assert.is_true(same_values(want, got, what) > 0, what .. ": no NaN in the output")
            else
              same_bytes(want, got, what)
            end
          end
        end
      end)
    end

    dev_it(entry, "argmax at every size, ties, NaN, -0 and infinities", function(d)
      for _, case in ipairs(ARGMAX_CASES) do
        local rows, cols = case[1], case[2]
        local x = pack_f32s(argmax_values(rows, cols, rows * 3 + cols), rows * cols)
        local want = run(cpu, S.argmax_query(rows, cols), { x = x }, { out = rows * 4 })
        local got, _, launches = run(d, S.argmax_query(rows, cols), { x = x }, { out = rows * 4 }, { "argmax" })
        assert.equal(1, launches.argmax)
        same_bytes(want.out, got.out, ("%s argmax %dx%d"):format(entry.id, rows, cols))
      end
    end)

    for _, norm in ipairs { "k", "all" } do
      dev_it(entry, ("top_k ids and weights (norm over %s) at every size, ties and a NaN row"):format(norm), function(d)
        local cases = { table.unpack(TOP_K_CASES) }
        cases[#cases + 1] = { 512, 128, 8 }
        for ci, case in ipairs(cases) do
          local want = top_k_run(cpu, case, norm, 70 + ci)
          local got, _, _, launches = top_k_run(d, case, norm, 70 + ci)
          local what = ("%s top_k %dx%d k %d norm %s"):format(entry.id, case[1], case[2], case[3], norm)
          assert.equal(1, launches, what .. ": launches")
          same_bytes(want.ids, got.ids, what .. ": ids")
          same_bytes(want.weights, got.weights, what .. ": weights")
        end
      end)
    end

    dev_it(entry, "compact, one launch and multi-group, at every size", function(d)
      for _, groups in ipairs { false, true } do
        for _, n in ipairs(groups and COMPACT_GROUPS or COMPACT_ONE) do
          local want = compact_run(cpu, n, n + 9, groups)
          local got, v, row = compact_run(d, n, n + 9, groups)
          local what = ("%s %s n %d"):format(entry.id, row.name, n)
          same_bytes(want.count, got.count, what .. ": count")
          same_bytes(want.values, got.values, what .. ": values")
          same_bytes(want.indices, got.indices, what .. ": indices")
          check_compact(got, v, n, what)
        end
      end
    end)

    dev_it(entry, "expert_map at every size, bad ids dropped, the list in token order", function(d)
      for ci, case in ipairs(EXPERT_MAP_CASES) do
        local want = expert_map_run(cpu, case, 80 + ci, true)
        local got, _, _, launches = expert_map_run(d, case, 80 + ci, true)
        local what = ("%s expert_map %d x %d over %d"):format(entry.id, case[1], case[2], case[3])
        assert.equal(1, launches, what .. ": launches")
        for _, k in ipairs { "counts", "offsets", "tokens", "slots" } do same_bytes(want[k], got[k], what .. ": " .. k) end
      end
    end)
  end)
end

-- ---- rows: firing, refusing, bad arguments --------------------------------------------------

describe("layer_select rows", function()
  local function refusal(q) return tostring(routes:why_not_admissible(q)) end

  it("each row fires for its query and refuses one outside its gates, in its own words", function()
    local cases = {
      { "get_rows.f32", S.get_rows_query("f32", 2, 3, 5), S.get_rows_query("f32", 2, 0, 5), "n_rows 0 is not 1 to" },
      { "get_rows.f16", S.get_rows_query("f16", 2, 3, 5), S.get_rows_query("f16", 0x10000, 3, 0x10000),
        "n 65536 x cols 65536 is more than 2^32 - 1 elements" },
      { "get_rows.q8_0", S.get_rows_query("q8_0", 2, 3, 64), S.get_rows_query("q8_0", 2, 3, 48),
        "cols 48 is not a multiple of q8_0's block of 32" },
      { "get_rows.q4_0", S.get_rows_query("q4_0", 2, 3, 64), S.get_rows_query("q4_0", 2, 3, 40),
        "cols 40 is not a multiple of q4_0's block of 32" },
      { "get_rows.q4_K", S.get_rows_query("q4_K", 2, 3, 512), S.get_rows_query("q4_K", 2, 3, 4064),
        "cols 4064 is not a multiple of q4_K's block of 256" },
      { "get_rows.q6_K", S.get_rows_query("q6_K", 2, 3, 512), S.get_rows_query("q6_K", 2, 3, 320),
        "cols 320 is not a multiple of q6_K's block of 256" },
      { "argmax.f32", S.argmax_query(1, 128256), S.argmax_query(1, 0), "cols 0 is not 1 to" },
      { "top_k.f32", S.top_k_query(1, 128, 8), S.top_k_query(1, 300, 8), "n_expert 300 is not 1 to 256" },
      { "top_k.f32", S.top_k_query(1, 128, 8, "all"), S.top_k_query(1, 4, 6), "k 6 is more than n_expert 4" },
      { "top_k.f32", S.top_k_query(1, 16, 8), S.top_k_query(1, 16, 9), "k 9 is not 1 to 8" },
      { "compact.f32", S.compact_query(65536), S.compact_query(-1), "n -1 is not 0 to" },
      { "compact_groups.f32", S.compact_query(65537), S.compact_query(0x80000000), "n 2147483648 is not 0 to 2147483647" },
      { "expert_map.i32", S.expert_map_query(512, 8, 128), S.expert_map_query(512, 8, 2048),
        "n_expert 2048 is not 1 to 1024" },
    }
    for _, c in ipairs(cases) do
      local name, yes, no, words = c[1], c[2], c[3], c[4]
      assert.equal(name, routes:candidates(yes)[1].name, name .. " fires")
      local why = refusal(no)
      assert.is_truthy(why:find(words, 1, true), name .. ": refusal '" .. why .. "' lacks '" .. words .. "'")
    end
  end)

  it("the kernels refuse a short buffer or inconsistent scalars by argument name", function()
    local function dispatch_error(q, ops)
      local bufs = {}
      for k, v in pairs(ops) do bufs[k] = cpu:buffer(v) end
      local c = xpu.call { query = q, device = cpu, operands = bufs }
      local row = routes:bind(c)
      local ok, err = pcall(row.dispatch, row, c)
      assert.is_false(ok, "dispatch should fail")
      return tostring(err)
    end
    local err = dispatch_error(S.get_rows_query("q4_0", 2, 10, 64), { out = 512, table = 10 * 36 - 1, ids = 8 })
    assert.is_truthy(err:find("'table': buffer too short (359 bytes, needs 360)", 1, true), err)
    err = dispatch_error(S.get_rows_query("f32", 3, 10, 4), { out = 48, table = 160, ids = 8 })
    assert.is_truthy(err:find("'ids': buffer too short", 1, true), err)
    err = dispatch_error(S.argmax_query(2, 100), { out = 4, x = 800 })
    assert.is_truthy(err:find("'out': buffer too short", 1, true), err)
    err = dispatch_error(S.top_k_query(4, 128, 8), { ids = 128, weights = 127, x = 2048 })
    assert.is_truthy(err:find("'weights': buffer too short", 1, true), err)
    err = dispatch_error(S.expert_map_query(4, 8, 128), { counts = 512, offsets = 512, tokens = 128, slots = 124, ids = 128 })
    assert.is_truthy(err:find("'slots': buffer too short", 1, true), err)
    routes:pin("compact_groups.f32", { regime = "compact" })
    local ok, e2 = pcall(dispatch_error, S.compact_query(10000), { values = 40000, indices = 40000, count = 4, x = 40000, scratch = 8 })
    routes:unpin "compact_groups.f32"
    assert(ok, e2)
    assert.is_truthy(e2:find("'scratch': buffer too short (8 bytes, needs 12)", 1, true), e2)
    local k = cpu:kernel "top_k"
    local okl, e3 = pcall(k.launch, k, cpu:default_stream(), { 1 }, { 32 }, cpu:buffer(64), cpu:buffer(64),
      cpu:buffer(64), 1, 16, 9, 1)
    assert.is_false(okl)
    assert.is_truthy(tostring(e3):find("argument 'k': 9 is not 1 to 8", 1, true), tostring(e3))
  end)

  it("bench_case builds each kernel's decode and prefill case, and it runs", function()
    for _, k in ipairs { "get_rows", "get_rows.q4_0", "get_rows.q4_K", "argmax", "top_k", "compact", "expert_map" } do
      for _, size in ipairs(k == "argmax" and { "decode" } or { "decode", "prefill" }) do
        local case = S.bench_case(k, cpu, size)
        assert.is_true(case.bytes > 0 and #case.note > 0, k .. " " .. size)
        local c = xpu.call { query = case.query, device = cpu, operands = case.operands }
        routes:bind(c):dispatch(c)
        fx.sync(cpu)
      end
    end
    assert.has_error(function() S.bench_case("top_k", cpu, "huge") end,
      "select.bench_case: size 'huge' is not \"decode\" or \"prefill\"")
    assert.has_error(function() S.bench_case("sort", cpu, "decode") end)
  end)
end)
