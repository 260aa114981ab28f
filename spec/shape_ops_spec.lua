-- shape_ops_spec.lua — every claim of contracts/shape-ops.md against its kernel, on every
-- backend present (the CPU always; CUDA and Vulkan where a device is, skipped with the reason
-- where not): dtypes accepted and refused, the shape rule (outputs poisoned first, every byte
-- checked against a Lua reference), in-place aliasing (bytes outside the slab untouched),
-- `bitwise` as identical bytes across backends, cumsum and pad_backward within their stated
-- bounds, the empty fast paths, and misaligned or short buffers refused before a launch.
local xpu = require "xpu"
local fixture = xpu.fixture
-- Globals read in a spec file go through busted's environment, a function call each: the hot
-- loops (references, per-element checks) read these locals instead.
local ipairs, pairs, error, select, math, string, table = ipairs, pairs, error, select, math, string, table
local fx = require "spec.support.fixtures"

local contracts = xpu.contracts.load("contracts/shape-ops.md")
local C = {}
for _, c in ipairs(contracts) do C[c.kernel .. "." .. c.backend] = c end

local BYTES = { f32 = 4, f64 = 8, f16 = 2, bf16 = 2, i8 = 1, i16 = 2, i32 = 4, i64 = 8, u8 = 1, u16 = 2, u32 = 4, u64 = 8 }

-- ---- data ------------------------------------------------------------------------------------

local seed = 12345
-- Each case's data from a seed of its own, so a second run and another backend see the same.
local function reseed(...)
  seed = 7
  for _, c in ipairs { string.byte(table.concat({ ... }, "/"), 1, -1) } do seed = (seed * 31 + c) % 2147483648 end
end
-- n bytes, deterministic, never all one value (xpu.fixture.bytes: the LCG's next state mod
-- 251, plus 1, a byte each)
local function random_bytes(n)
  local s
  s, seed = fixture.bytes(n, seed)
  return s
end

local function poison(n) return ("\xa5\x5a"):rep(n // 2 + 1):sub(1, n) end

local function elements(s, e)
  local t = {}
  for i = 1, #s, e do t[#t + 1] = s:sub(i, i + e - 1) end
  return t
end

-- elements(s, e), split on the first call only (a case's references share its input's elements)
local function lazy_elements(s, e)
  local t
  return function()
    t = t or elements(s, e)
    return t
  end
end

local function prod(shape, from, to)
  local n = 1
  for k = from or 1, to or #shape do n = n * shape[k] end
  return n
end

-- Elements of a float dtype as Lua numbers (xpu.fixture.decode: halves and bf16 exact).
local function decode(dt, s) return fixture.decode(dt, s) end

-- n values k/8 (exact in every float dtype), plus an f32/f64 tail that makes rounding happen
-- (xpu.fixture.eighths): the values the kernel will see, rounded to the dtype, and their bytes.
local function random_values(n, dt)
  local s
  s, seed = fixture.eighths(dt, n, seed)
  return decode(dt, s), s
end

local function random_data(n, dt) return select(2, random_values(n, dt)) end

-- One step of a sum in the accumulator of dtype dt: f64 adds in Lua's doubles; f32 rounds the
-- double sum of two f32 values to f32, which is f32's own correctly rounded sum (53 >= 2 * 24
-- + 2 bits). Halves accumulate in f32 too but round again on store, so they are held to the
-- bound instead.
local ORDERED = { f32 = function(s, v) return (string.unpack("<f", string.pack("<f", s + v))) end,
                  f64 = function(s, v) return s + v end }

-- f32 or f64 values as the dtype's bytes
local function packed(dt, t)
  local p, fmt = {}, dt == "f32" and "<f" or "<d"
  for i = 1, #t do p[i] = string.pack(fmt, t[i]) end
  return table.concat(p)
end

-- The in-order sums held to a contract's bound |sum in order - exact sum| <= bound * sum of
-- magnitudes, once per case and bound: an output that is those sums byte for byte passes or
-- fails with them. what names the case for the message.
local within_checked = {}
local function ordered_within(key, bound, ordered, sum, mag, what)
  local k = key .. " " .. bound
  if within_checked[k] then return end
  for at = 1, #ordered do
    if not (math.abs(ordered[at] - sum[at]) <= bound * mag[at]) then
      error(("%s at %d: %.9g vs %.9g, bound %.3g"):format(what, at, ordered[at], sum[at], bound * mag[at]))
    end
  end
  within_checked[k] = true
end

local function hex(s) return (s:gsub(".", function(c) return ("%02x"):format(c:byte()) end)) end

-- Equal bytes, or a failure naming the first element that differs (never a dump of bytes).
local function same_bytes(want, got, e, what)
  if want == got then return end
  if #want ~= #got then error(("%s: %d bytes, expected %d"):format(what, #got, #want), 2) end
  for i = 1, #want, e do
    local a, b = want:sub(i, i + e - 1), got:sub(i, i + e - 1)
    if a ~= b then
      error(("%s: element %d is %s, expected %s"):format(what, (i - 1) // e, hex(b), hex(a)), 2)
    end
  end
end

-- A case's reference is computed once: a kernel's case gets the same data on every device and
-- in the second run (reseed), so later runs are checked against what the first computed. The
-- data is kept with it and compared, so data that differed would get a reference of its own.
local memo = {}
local function reference(key, data, compute)
  local m = memo[key]
  if not (m and m.data == data) then
    m = { data = data, values = table.pack(compute()) }
    memo[key] = m
  end
  return table.unpack(m.values, 1, m.values.n)
end

-- ---- references (on elements: byte strings) ------------------------------------------------------

local ref = {}

-- The next 0-based coordinates of idx in shape, in row-major order: the last axis steps, a
-- full axis carries into the one before.
local function step_index(idx, shape)
  for k = #shape, 1, -1 do
    idx[k] = idx[k] + 1
    if idx[k] < shape[k] then return end
    idx[k] = 0
  end
end

local function zeros(n)
  local t = {}
  for k = 1, n do t[k] = 0 end
  return t
end

local function padded_shape(shape, padding)
  local out_shape = {}
  for k = 1, #shape do out_shape[k] = shape[k] + padding[k][1] + padding[k][2] end
  return out_shape
end

-- The 0-based input index an output element of pad at coordinates idx reads, or nil where
-- it is constant mode's border (mode 0 constant, 1 reflect, 2 replicate).
local function pad_source(idx, shape, padding, mode)
  local src = 0
  for k = 1, #shape do
    local q, d = idx[k] - padding[k][1], shape[k]
    if q < 0 or q >= d then
      if mode == 0 then return nil
      elseif mode == 2 then q = q < 0 and 0 or d - 1
      else q = q < 0 and -q or 2 * (d - 1) - q end
    end
    src = src * d + q
  end
  return src
end

function ref.pad(x, shape, padding, mode, fill)
  local out_shape = padded_shape(shape, padding)
  local out, idx = {}, zeros(#shape)
  for o = 1, prod(out_shape) do
    local src = pad_source(idx, shape, padding, mode)
    out[o] = src and x[src + 1] or fill
    step_index(idx, out_shape)
  end
  return table.concat(out), out_shape
end

-- the terms (as upstream indices) folded into every gradient element
function ref.pad_terms(in_shape, padding, mode)
  local out_shape = padded_shape(in_shape, padding)
  local terms, idx = {}, zeros(#in_shape)
  for i = 1, prod(in_shape) do terms[i] = {} end
  for o = 1, prod(out_shape) do
    local src = pad_source(idx, in_shape, padding, mode)
    if src then table.insert(terms[src + 1], o) end
    step_index(idx, out_shape)
  end
  return terms, out_shape
end

local function outer_dim_inner(shape, axis)
  return prod(shape, 1, axis), shape[axis + 1], prod(shape, axis + 2)
end

function ref.reorder(x, shape, axis, src_of)
  local outer, dim, inner = outer_dim_inner(shape, axis)
  local out = {}
  for o = 0, outer - 1 do
    for j = 0, dim - 1 do
      for i = 0, inner - 1 do out[#out + 1] = x[(o * dim + src_of(j, dim)) * inner + i + 1] end
    end
  end
  return table.concat(out)
end

function ref.tri(x, shape, diag, upper, zero)
  local rows, cols, out = shape[#shape - 1], shape[#shape], {}
  for e = 0, #x - 1 do
    local c, r = e % cols, (e // cols) % rows
    local keep = upper and c >= r + diag or (not upper and c <= r + diag)
    out[e + 1] = keep and x[e + 1] or zero
  end
  return table.concat(out)
end

function ref.slab(dest, dest_shape, src, ranges, axis, modulus, pos)
  local w = {}
  for k = 1, #dest_shape do w[k] = ranges[k][2] - ranges[k][1] end
  local out, idx = { table.unpack(dest) }, zeros(#w)
  for e = 1, prod(w) do
    local at = 0
    for k = 1, #w do
      local dk = (k - 1 == axis) and (pos % modulus + idx[k]) % modulus or ranges[k][1] + idx[k]
      at = at * dest_shape[k] + dk
    end
    out[at + 1] = src[e]
    step_index(idx, w)
  end
  return table.concat(out)
end

function ref.view(x, shape, strides, offset)
  local out, rank, idx, at = {}, #shape, {}, offset
  for k = 1, rank do idx[k] = 0 end
  for e = 1, prod(shape) do
    out[e] = x[at + 1]
    for k = rank, 1, -1 do -- the next coordinates: the last axis steps, a full one carries
      idx[k], at = idx[k] + 1, at + strides[k]
      if idx[k] < shape[k] then break end
      idx[k], at = 0, at - strides[k] * shape[k]
    end
  end
  return table.concat(out)
end

-- ---- devices ------------------------------------------------------------------------------------

-- The devices that run a backend's code, or nil and why none does.
local function devices_of(backend)
  local cap = C["flip." .. backend].code_capability
  local list = {}
  for _, d in ipairs(xpu.devices()) do
    if d:supports(cap) then list[#list + 1] = d end
  end
  if #list > 0 then
    if not list[1]:kernel_available "pad" then return nil, ("the shape kernels are not built for %s"):format(list[1].id) end
    return list
  end
  for _, b in ipairs(xpu.backends()) do
    if b.name == backend then return nil, ("no %s device: %s (%s)"):format(backend:upper(), b.state, b.reason) end
  end
  return nil, "no backend named " .. backend
end

-- Runs contract c on device d. inputs: name -> { dtype, shape, data = bytes [, strides, offset] };
-- `out_bytes` sizes a poisoned output (nil: in place). Returns the output's bytes and the result.
local function run(c, d, inputs, params, out_bytes, in_place)
  local spec = { inputs = {}, params = params }
  local bufs = {}
  for name, op in pairs(inputs) do
    bufs[name] = d:buffer(op.data)
    spec.inputs[name] = { dtype = op.dtype, shape = op.shape, strides = op.strides, offset = op.offset, buffer = bufs[name] }
  end
  local out
  if out_bytes then
    out = d:buffer(poison(out_bytes))
    spec.out = out
  else
    out = bufs[in_place]
  end
  local r = c:launch(spec)
  return out:download(), r
end

-- ---- cases: each returns the expected bytes and runs the kernel -------------------------------------

local cases = {}

cases.pad = function(c, d, dt)
  local e = BYTES[dt]
  local out = {}
  for ci, case in ipairs {
    { shape = { 3, 4, 5 }, padding = { { 1, 2 }, { 0, 3 }, { 2, 0 } } },
    { shape = { 40, 70 }, padding = { { 3, 5 }, { 7, 2 } } },
    { shape = {}, padding = {} },
    { shape = { 6, 64 }, padding = { { 1, 2 }, { 4, 8 } } }, -- whole 16-byte interiors and borders
    { shape = { 2, 3, 61 }, padding = { { 0, 1 }, { 2, 0 }, { 3, 6 } } }, -- interiors off 16-byte alignment
    { shape = { 3, 29, 53 }, padding = { { 1, 1 }, { 2, 3 }, { 5, 4 } } }, -- several groups, rows shorter than 256
    -- rows of 7 items over two groups: a group's 4096 items span more rows than Vulkan pad's
    -- table holds (256), so each item finds its own input row
    { shape = { 700, 4 }, padding = { { 1, 1 }, { 2, 1 } } },
    -- rows of XPU_SHAPE_ROW_MIN (128) items and more in whole 16-byte chunks: pad_rows where
    -- built. Input runs off 16-byte alignment; then input rows that alternate alignment, a
    -- constant row at each end
    { shape = { 5, 200 }, padding = { { 1, 2 }, { 3, 5 } } },
    { shape = { 3, 5, 150 }, padding = { { 0, 1 }, { 2, 1 }, { 16, 10 } } },
    { shape = { 40, 500 }, padding = { { 2, 3 }, { 7, 9 } }, big = true }, -- past a rows group's 16384 items
  } do
    if case.big and dt ~= "f32" and dt ~= "f64" then goto next end -- the reference's time: two sizes
    local data = random_bytes(prod(case.shape) * e)
    local xs = lazy_elements(data, e)
    for mode = 0, 2 do
      local fill_bits = 0x1122334455667788 & ((1 << (8 * e)) - 1)
      if e == 8 then fill_bits = 0x1122334455667788 end
      local want, out_shape = reference(("pad %s %d %d"):format(dt, ci, mode), data, function()
        return ref.pad(xs(), case.shape, case.padding, mode, string.pack("<i8", fill_bits):sub(1, e))
      end)
      local got, r = run(c, d, { input = { dtype = dt, shape = case.shape, data = data } },
        { padding = case.padding, mode_tag = mode, fill_bits = fill_bits }, #want)
      assert.same(out_shape, r.shape)
      same_bytes(want, got, e, ("pad %s %s mode %d"):format(dt, table.concat(case.shape, "x"), mode))
      out[#out + 1] = got
    end
    ::next::
  end
  return table.concat(out)
end

local function scan_case(c, d, dt, extra, want_of)
  local e, out = BYTES[dt], {}
  -- { 3, 96 } and { 2, 5, 24 }: whole 16-byte runs; { 37, 5, 29 }: more than a group's 4096
  -- items, so a thread's later items (256 apart) carry across every axis
  for si, shape in ipairs { { 3, 4, 5 }, { 3, 96 }, { 2, 5, 24 }, { 37, 5, 29 } } do
    local data = random_bytes(prod(shape) * e)
    local xs = lazy_elements(data, e)
    for axis = 0, #shape - 1 do
      for pi, p in ipairs(extra) do
        local params = { axis = axis }
        for k, v in pairs(p) do params[k] = v end
        local want = reference(("%s %s %d %d %d"):format(c.kernel, dt, si, axis, pi), data, function()
          return want_of(xs(), shape, axis, p)
        end)
        local got, r = run(c, d, { input = { dtype = dt, shape = shape, data = data } }, params, #want)
        assert.same(shape, r.shape)
        same_bytes(want, got, e, ("%s %s %s axis %d"):format(c.kernel, dt, table.concat(shape, "x"), axis))
        out[#out + 1] = got
      end
    end
  end
  return table.concat(out)
end

cases.flip = function(c, d, dt)
  return scan_case(c, d, dt, { {} }, function(x, shape, axis)
    return ref.reorder(x, shape, axis, function(j, dim) return dim - 1 - j end)
  end)
end

cases.roll = function(c, d, dt)
  return scan_case(c, d, dt, { { shift = -7 }, { shift = 0 }, { shift = 2 }, { shift = 13 } }, function(x, shape, axis, p)
    return ref.reorder(x, shape, axis, function(j, dim) return (j - p.shift) % dim end)
  end)
end

local function tri_case(upper)
  return function(c, d, dt)
    local e, out = BYTES[dt], {}
    -- { 2, 20, 64 }: whole 16-byte zero and kept runs; { 3, 41, 53 }: several groups, rows
    -- shorter than a group's 256-item step
    for si, shape in ipairs { { 2, 5, 7 }, { 2, 20, 64 }, { 3, 41, 53 } } do
      local data = random_bytes(prod(shape) * e)
      local xs = lazy_elements(data, e)
      for _, diag in ipairs { -2, 0, 3 } do
        local want = reference(("%s %s %d %d"):format(c.kernel, dt, si, diag), data, function()
          return ref.tri(xs(), shape, diag, upper, ("\0"):rep(e))
        end)
        local got = run(c, d, { input = { dtype = dt, shape = shape, data = data } }, { diagonal = diag }, #want)
        same_bytes(want, got, e, ("%s %s %s diagonal %d"):format(c.kernel, dt, table.concat(shape, "x"), diag))
        out[#out + 1] = got
      end
    end
    return table.concat(out)
  end
end
cases.triu, cases.tril = tri_case(true), tri_case(false)

cases.write_slice = function(c, d, dt)
  local e, out = BYTES[dt], {}
  for ci, case in ipairs {
    { dest = { 4, 6, 5 }, ranges = { { 1, 3 }, { 2, 6 }, { 0, 5 } } },
    { dest = { 2, 8, 32 }, ranges = { { 0, 2 }, { 5, 6 }, { 0, 32 } } }, -- one token into a cache: 16-byte runs
    { dest = { 2, 8, 32 }, ranges = { { 1, 2 }, { 2, 7 }, { 0, 32 } } }, -- one contiguous span
    { dest = { 3, 40 }, ranges = { { 0, 3 }, { 3, 37 } } },                -- runs off 16-byte alignment
    -- past a group's 4096 items: runs shorter than a group (a group over several), and one run
    -- over several groups
    { dest = { 6, 50, 40 }, ranges = { { 1, 5 }, { 3, 47 }, { 0, 40 } } },
    { dest = { 12, 1000 }, ranges = { { 2, 11 }, { 0, 1000 } } },
    { dest = { 3, 5, 3000 }, ranges = { { 0, 3 }, { 1, 4 }, { 0, 3000 } } }, -- runs of 9000: groups inside a later one
    -- a whole group over runs of whole 16-byte chunks whose dest starts one element past 16
    -- bytes (Vulkan's chunk walk: word stores, or element by element below 4 bytes)
    { dest = { 6, 1028 }, ranges = { { 0, 6 }, { 1, 1025 } } },
    -- runs of 3 and of 4 items: a group spans hundreds of runs (Vulkan's row table holds an
    -- entry each); f32 runs of 4 are 16-byte chunks
    { dest = { 700, 8 }, ranges = { { 0, 700 }, { 2, 5 } } },
    { dest = { 1200, 8 }, ranges = { { 0, 1200 }, { 4, 8 } } },
    -- runs of 2: a group spans 2048 runs, more than Vulkan's row table holds (filled twice)
    { dest = { 3000, 4 }, ranges = { { 0, 3000 }, { 1, 3 } } },
  } do
    local w = {}
    for k = 1, #case.dest do w[k] = case.ranges[k][2] - case.ranges[k][1] end
    local src, dest = random_bytes(prod(w) * e), poison(prod(case.dest) * e)
    local want = reference(("write_slice %s %d"):format(dt, ci), src, function()
      return ref.slab(elements(dest, e), case.dest, elements(src, e), case.ranges)
    end)
    local got, r = run(c, d, { source = { dtype = dt, shape = w, data = src }, dest = { dtype = dt, shape = case.dest, data = dest } },
      { ranges = case.ranges }, nil, "dest")
    assert.equal("dest", r.in_place)
    same_bytes(want, got, e, "write_slice " .. dt .. " " .. table.concat(case.dest, "x")) -- outside the slab: still the poison
    out[#out + 1] = got
  end
  return table.concat(out)
end

cases.write_slice_rotating = function(c, d, dt)
  local e, out = BYTES[dt], {}
  for ci, case in ipairs {
    { dest = { 6, 4 }, axis = 0, modulus = 5, ranges = { { 0, 3 }, { 0, 4 } }, pos = 3 },  -- splits: rows 3, 4, 0
    { dest = { 6, 4 }, axis = 0, modulus = 5, ranges = { { 0, 3 }, { 1, 3 } }, pos = 7 },  -- no split: rows 2..4
    { dest = { 3, 8 }, axis = 1, modulus = 8, ranges = { { 1, 3 }, { 0, 5 } }, pos = 6 },  -- splits on the last axis
    { dest = { 8, 32 }, axis = 0, modulus = 8, ranges = { { 0, 5 }, { 0, 32 } }, pos = 6 }, -- 16-byte rows, splits
    { dest = { 2, 8, 32 }, axis = 1, modulus = 7, ranges = { { 0, 2 }, { 0, 1 }, { 0, 32 } }, pos = 13 }, -- one token
    -- whole rows under a one-wide outer axis: two contiguous runs (CUDA's ring2 path)
    { dest = { 3, 8, 32 }, axis = 1, modulus = 8, ranges = { { 1, 2 }, { 0, 3 }, { 0, 32 } }, pos = 6 },
    { dest = { 6, 3 }, axis = 0, modulus = 5, ranges = { { 0, 4 }, { 0, 3 } }, pos = 3 }, -- a chunk across the split
    { dest = { 40, 300 }, axis = 0, modulus = 37, ranges = { { 0, 30 }, { 0, 300 } }, pos = 20 }, -- past a group's items
    -- runs of 3 over a ring of 700 rows: hundreds of runs in a group
    { dest = { 800, 8 }, axis = 0, modulus = 700, ranges = { { 0, 600 }, { 2, 5 } }, pos = 650 },
    -- runs of 2 over a ring of 2500 rows: more runs in a group than Vulkan's row table holds
    { dest = { 2600, 4 }, axis = 0, modulus = 2500, ranges = { { 0, 2400 }, { 1, 3 } }, pos = 2000 },
  } do
    local w = {}
    for k = 1, #case.dest do w[k] = case.ranges[k][2] - case.ranges[k][1] end
    local src, dest = random_bytes(prod(w) * e), poison(prod(case.dest) * e)
    local want = reference(("write_slice_rotating %s %d"):format(dt, ci), src, function()
      return ref.slab(elements(dest, e), case.dest, elements(src, e), case.ranges, case.axis, case.modulus, case.pos)
    end)
    local got = run(c, d, {
      source = { dtype = dt, shape = w, data = src },
      position = { dtype = "u32", shape = { 1 }, data = string.pack("<I4", case.pos) },
      dest = { dtype = dt, shape = case.dest, data = dest },
    }, { axis = case.axis, modulus = case.modulus, ranges = case.ranges }, nil, "dest")
    same_bytes(want, got, e, ("ring %s pos %d"):format(dt, case.pos))
    out[#out + 1] = got
  end
  return table.concat(out)
end

cases.contiguize = function(c, d, dt)
  local e, out = BYTES[dt], {}
  local data = random_bytes(82000 * e)
  local xs = lazy_elements(data, e)
  for vi, v in ipairs {
    { shape = { 4, 6 }, strides = { 1, 4 }, offset = 0 },      -- a transpose
    { shape = { 3, 5 }, strides = { 0, 2 }, offset = 7 },      -- broadcast rows, every other element
    { shape = { 2, 3, 4 }, strides = { -24, 4, -1 }, offset = 50 }, -- reversed, offset
    { shape = { 5, 7 }, strides = { 7, 1 }, offset = 0 },      -- already dense
    { shape = { 40, 70 }, strides = { 1, 40 }, offset = 0 },   -- a transpose in partial 64 x 64 tiles
    { shape = { 2, 30, 40 }, strides = { 1200, 1, 30 }, offset = 0 }, -- a batched transpose
    { shape = { 6, 48 }, strides = { 64, 1 }, offset = 3 },    -- rows of a wider tensor, off 16-byte alignment
    { shape = { 6, 48 }, strides = { 64, 1 }, offset = 64 },   -- the same rows, aligned
    { shape = { 3, 50, 37 }, strides = { 1, 3, 150 }, offset = 0 },  -- several groups, short rows
    { shape = { 70, 80 }, strides = { 1, 70 }, offset = 3 },   -- whole 64 x 64 tiles beside partial ones, more tiles than groups
    { shape = { 20, 3, 90 }, strides = { 1, 1800, 20 }, offset = 0 }, -- a transpose with an axis between p and the last
    -- walks past a group's 4096 items with rows shorter than its 256-item step: rows reversed,
    -- and rows repeated (stride 0)
    { shape = { 3, 50, 37 }, strides = { 1850, -37, 1 }, offset = 1813 },
    { shape = { 70, 3, 29 }, strides = { 29, 0, 1 }, offset = 0 },
    { shape = { 4, 9 }, strides = { 5, 0 }, offset = 2 },       -- the last axis broadcast: a row of one item
    -- a transpose past contiguize_tiles' first group (8 tiles of 4096 items a group): partial
    -- tiles on both edges, the second group's tiles after the first's
    { shape = { 150, 230 }, strides = { 1, 150 }, offset = 5 },
    { shape = { 3000, 1 }, strides = { 3, 1 }, offset = 2 },  -- rows of one item: thousands of rows in a group
    -- whole tiles on 16 bytes (CUDA copies them in while the one before is written out) among
    -- partial ones, and a group's eight whole tiles in a row (f64's tiles are 32 x 64: two groups)
    { shape = { 72, 136 }, strides = { 1, 72 }, offset = 8 },
    { shape = { 128, 256 }, strides = { 1, 128 }, offset = 0 },
    -- a transpose whose CPU worker's share (an eighth on two cores) holds whole 64 x 64 tiles
    -- beside partial ones (kernels/cpu/shape_ops.c's transpose_rows)
    { shape = { 1024, 80 }, strides = { 1, 1024 }, offset = 0 },
  } do
    local want = reference(("contiguize %s %d"):format(dt, vi), data, function()
      return ref.view(xs(), v.shape, v.strides, v.offset)
    end)
    local got, r = run(c, d, { input = { dtype = dt, shape = v.shape, strides = v.strides, offset = v.offset, data = data } }, {}, #want)
    assert.same(v.shape, r.shape)
    same_bytes(want, got, e, "contiguize " .. dt .. " " .. table.concat(v.strides, ","))
    out[#out + 1] = got
  end
  return table.concat(out)
end

cases.copy = function(c, d, dt)
  local e = BYTES[dt]
  local data = random_bytes(1000 * e)
  local got = run(c, d, { src = { dtype = dt, shape = { 10, 100 }, data = data } }, {}, #data)
  same_bytes(data, got, e, "copy " .. dt)
  -- a tensor shorter than its buffer, into an output buffer as long: the tensor's bytes only,
  -- the output's bytes past it untouched
  local short = run(c, d, { src = { dtype = dt, shape = { 10 }, data = data:sub(1, 64 * e) } }, {}, 64 * e)
  same_bytes(data:sub(1, 10 * e) .. poison(64 * e):sub(10 * e + 1), short, e, "copy of 10 " .. dt .. " from a buffer of 64")
  return got .. short
end

-- typed kernels: values checked within the stated bound; the bytes returned for determinism
cases.cumsum = function(c, d, dt)
  local e, out = BYTES[dt], {}
  -- { 2, 140001 } along axis 0: more lanes side by side than the CPU's 64 KiB of sums hold in a
  -- worker's share (16384 f32, 8192 f64), and a last run that is no whole eight lanes
  for ci, case in ipairs { { shape = { 3, 50, 4 } }, { shape = { 2, 3000 } }, { shape = { 2, 140001 }, big = true } } do
    if case.big and dt ~= "f32" and dt ~= "f64" then goto next end -- the reference's time: two sizes
    local x, data = random_values(prod(case.shape), dt)
    for axis = 0, #case.shape - 1 do
      local params = { axis = axis }
      local got = run(c, d, { input = { dtype = dt, shape = case.shape, data = data } }, params, #data)
      local bound = c:precision { inputs = { { dtype = dt, shape = case.shape } }, params = params }.max_relative
      local step = ORDERED[dt]
      -- per element: the exact running sum, the sum of magnitudes, and (f32, f64) the sum the
      -- lane makes adding in order in its accumulator
      local key = ("cumsum %s %d %d"):format(dt, ci, axis)
      local sum, mag, ordered, ordered_bytes = reference(key, data, function()
        local outer, dim, inner = outer_dim_inner(case.shape, axis)
        local sum, mag, ordered = {}, {}, {}
        for o = 0, outer - 1 do
          for i = 0, inner - 1 do
            local s, m, ord = 0, 0, nil
            for j = 0, dim - 1 do
              local at = (o * dim + j) * inner + i + 1
              s, m = s + x[at], m + math.abs(x[at])
              sum[at], mag[at] = s, m
              if step then
                ord = ord and step(ord, x[at]) or x[at]
                ordered[at] = ord
              end
            end
          end
        end
        return sum, mag, ordered, step and packed(dt, ordered)
      end)
      if step and got == ordered_bytes then -- every lane's in-order sum, bit for bit
        ordered_within(key, bound, ordered, sum, mag, ("cumsum %s axis %d"):format(dt, axis))
      else
        local y = decode(dt, got)
        for at = 1, #y do
          if not (math.abs(y[at] - sum[at]) <= bound * mag[at]) then -- (a message only for a failure: lanes are many)
            error(("cumsum %s axis %d at %d: %.9g vs %.9g, bound %.3g"):format(dt, axis, at, y[at], sum[at], bound * mag[at]))
          end
          if step and y[at] ~= ordered[at] then -- the lane adds in order, in its accumulator: exactly that sum
            error(("cumsum %s axis %d at %d: %.9g, in order %.9g"):format(dt, axis, at, y[at], ordered[at]))
          end
        end
      end
      out[#out + 1] = got
    end
    ::next::
  end
  return table.concat(out)
end

cases.pad_backward = function(c, d, dt)
  local e, out = BYTES[dt], {}
  for ci, case in ipairs {
    { in_shape = { 3, 4 }, padding = { { 1, 2 }, { 2, 1 } } },
    { in_shape = { 5, 64 }, padding = { { 1, 2 }, { 8, 4 } } }, -- single-term interiors as 16-byte copies
    { in_shape = { 4, 3 }, padding = { { 0, 2 }, { 1, 0 } } },  -- a side with no padding: its edge one term
    -- gradient rows of 4 items over two groups: a group's 4096 items span more rows than
    -- Vulkan pad_backward's table holds (256), so each item sums its own terms
    { in_shape = { 700, 4 }, padding = { { 1, 1 }, { 2, 1 } } },
    -- rows of 128 items and more in whole 16-byte chunks: pad_backward_rows where built.
    -- Mirrors off 16-byte alignment; aligned interiors and border chunks with outer rows of
    -- several terms; two plain groups
    { in_shape = { 6, 152 }, padding = { { 2, 1 }, { 5, 7 } } },
    { in_shape = { 3, 4, 160 }, padding = { { 1, 1 }, { 1, 2 }, { 16, 16 } } },
    { in_shape = { 2, 19, 132 }, padding = { { 1, 0 }, { 3, 3 }, { 4, 4 } } },
    { in_shape = { 4, 30, 140 }, padding = { { 1, 1 }, { 2, 2 }, { 4, 3 } }, big = true }, -- past a rows group's 16384 items
    -- long rows: CUDA pad_backward_rows moves a lane's chunks from one source pointer where
    -- they lie in one row (they span 900 f32 items, 450 f64, 1800 f16); off alignment (the
    -- next lane's vector, the last lane's own) and aligned
    { in_shape = { 3, 1100 }, padding = { { 1, 1 }, { 5, 7 } } },
    { in_shape = { 2, 1900 }, padding = { { 1, 0 }, { 8, 8 } } }, -- f16 and bf16 rows past 1800
    { in_shape = { 2, 2100 }, padding = { { 1, 0 }, { 16, 16 } }, big = true },
    -- Vulkan's quads (f32 rows on 16 bytes both sides) over two rows groups, the second from
    -- the middle of a row
    { in_shape = { 40, 500 }, padding = { { 1, 1 }, { 4, 4 } }, big = true },
    -- reflect's two mirrors on most columns (b + after >= d - 1): the rows kernels sum those
    -- columns element by element (Vulkan's column walk, CUDA's general chunks)
    { in_shape = { 3, 128 }, padding = { { 1, 1 }, { 120, 120 } } },
    -- gradient rows that are no whole 16-byte chunks in any dtype, of 17 items or more (CUDA's
    -- pad_backward_items from its row table): several rows a group and rows past a group's
    -- 256-item step; then columns 7 .. 15 with both of reflect's mirrors (three terms)
    { in_shape = { 9, 45 }, padding = { { 1, 2 }, { 3, 4 } } },
    { in_shape = { 5, 301 }, padding = { { 2, 1 }, { 6, 5 } } },
    { in_shape = { 4, 20 }, padding = { { 1, 1 }, { 15, 12 } } },
    -- rows of 128 items or more that are no whole chunks: over three groups, the second from
    -- the middle of a row; both of reflect's mirrors on most columns
    { in_shape = { 30, 301 }, padding = { { 1, 1 }, { 6, 5 } } },
    { in_shape = { 3, 131 }, padding = { { 1, 1 }, { 120, 120 } } },
  } do
    if case.big and dt ~= "f32" and dt ~= "f64" then goto next end -- the reference's time: two sizes
    local in_shape, padding = case.in_shape, case.padding
    for mode = 0, 2 do
      -- the terms (upstream indices) of every gradient element: the same in every dtype
      local terms, out_shape = reference(("pad_backward terms %d %d"):format(ci, mode), "", function()
        return ref.pad_terms(in_shape, padding, mode)
      end)
      local x, data = random_values(prod(out_shape), dt)
      local params = { padding = padding, mode_tag = mode }
      local got, r = run(c, d, { upstream = { dtype = dt, shape = out_shape, data = data } }, params, prod(in_shape) * e)
      assert.same(in_shape, r.shape)
      local bound = c:precision { inputs = { { dtype = dt, shape = out_shape } }, params = params }.max_relative or 0
      local step = ORDERED[dt]
      -- per gradient element: the exact sum of its terms, of their magnitudes, and (f32, f64)
      -- the sum in ascending upstream index in the accumulator; constant mode: the one term's bytes
      local key = ("pad_backward %s %d %d"):format(dt, ci, mode)
      local sum, mag, ordered, copies, ordered_bytes = reference(key, data, function()
        local xs, sum, mag, ordered, copies = elements(data, e), {}, {}, {}, {}
        for g = 1, prod(in_shape) do
          local s, m, ord = 0, 0, nil
          for _, t in ipairs(terms[g]) do
            s, m = s + x[t], m + math.abs(x[t])
            if step then ord = ord and step(ord, x[t]) or x[t] end -- ascending upstream index
          end
          sum[g], mag[g], ordered[g], copies[g] = s, m, ord, xs[terms[g][1]]
        end
        return sum, mag, ordered, mode == 0 and table.concat(copies) or nil, step and packed(dt, ordered)
      end)
      if step and got == ordered_bytes then -- every element's in-order sum, bit for bit
        if mode ~= 0 then ordered_within(key, bound, ordered, sum, mag, ("pad_backward %s mode %d"):format(dt, mode)) end
      else
        local y = decode(dt, got)
        for g = 1, prod(in_shape) do
          if step and y[g] ~= ordered[g] then
            error(("pad_backward %s mode %d at %d: %.9g, in order %.9g"):format(dt, mode, g, y[g], ordered[g]))
          end
          if mode ~= 0 and not (math.abs(y[g] - sum[g]) <= bound * mag[g]) then
            error(("pad_backward %s mode %d at %d: %.9g vs %.9g, bound %.3g"):format(dt, mode, g, y[g], sum[g], bound * mag[g]))
          end
        end
      end
      if mode == 0 then same_bytes(copies, got, e, ("pad_backward %s constant mode copies exactly"):format(dt)) end
      out[#out + 1] = got
    end
    ::next::
  end
  return table.concat(out)
end

-- ---- the specs ------------------------------------------------------------------------------------

local ORDER = { "pad", "pad_backward", "flip", "roll", "cumsum", "triu", "tril", "write_slice", "write_slice_rotating",
                "copy", "contiguize" }

-- A dtype no contract of the kernel accepts, for the refusal.
local function refused_dtype(c)
  for _, dt in ipairs { "i32", "u64", "f32" } do
    local ok = false
    for _, a in ipairs(c.dtypes) do ok = ok or a == dt end
    if not ok then return dt end
  end
end

local outputs = {} -- backend -> kernel -> dtype -> bytes (for the cross-backend comparison)

local BACKENDS = { "cpu", "cuda", "vulkan" }

for _, backend in ipairs(BACKENDS) do
  describe("shape kernels on " .. backend, function()
    local devs, why = devices_of(backend)
    outputs[backend] = {}
    for _, k in ipairs(ORDER) do
      local c = C[k .. "." .. backend]
      outputs[backend][k] = {}
      it(("%s: every dtype it accepts, against the reference"):format(k), function()
        if not devs then return pending(why) end
        for _, d in ipairs(devs) do
          for _, dt in ipairs(c.dtypes) do
            reseed(k, dt)
            local first = cases[k](c, d, dt)
            reseed(k, dt)
            if d == devs[1] then outputs[backend][k][dt] = first end
            if c.determinism ~= "nondeterministic" then -- same hardware: the same bytes again
              same_bytes(first, cases[k](c, d, dt), BYTES[dt], ("%s %s on %s: a second run"):format(k, dt, d.id))
            end
          end
        end
      end)
      local bad = refused_dtype(c)
      local base = C[k .. ".cpu"]
      if backend ~= "cpu" and #c.dtypes < #base.dtypes then
        it(("%s: refuses the cpu dtypes its contract leaves out, before any launch"):format(k), function()
          if not devs then return pending(why) end
          local accepted = {}
          for _, a in ipairs(c.dtypes) do accepted[a] = true end
          for _, dt in ipairs(base.dtypes) do
            if not accepted[dt] then
              local _, refusal = c:call { inputs = { [c.inputs[1].name] = { dtype = dt, shape = { 2, 2 } } } }
              assert.matches("^accept.inputs%[0%].dtypes: " .. dt:upper() .. " not accepted", refusal)
            end
          end
        end)
      end
      if bad then
        it(("%s: refuses %s before any launch, naming accept.inputs[0].dtypes"):format(k, bad), function()
          if not devs then return pending(why) end
          local d = devs[1]
          local name = c.inputs[1].name
          local _, refusal = c:call { inputs = { [name] = { dtype = bad, shape = { 2, 2 } } } }
          assert.matches("^accept.inputs%[0%].dtypes: " .. bad:upper() .. " not accepted", refusal)
          if #c.inputs > 1 then return end
          local kernel = d:kernel(c.entry_point)
          local before = kernel.launches
          local ok, err = pcall(c.launch, c, { inputs = { [name] = { dtype = bad, shape = { 2, 2 }, buffer = d:buffer(64) } },
                                               out = d:buffer(64) })
          assert.is_false(ok)
          assert.matches("accept.inputs[0].dtypes: " .. bad:upper() .. " not accepted", err, 1, true)
          assert.equal(before, kernel.launches)
        end)
      end
    end

    it("refuses a misaligned or too-short buffer before the launch, at the contract and at the kernel", function()
      if not devs then return pending(why) end
      local d, c = devs[1], C["flip." .. backend]
      local kernel = d:kernel "flip"
      local before = kernel.launches
      local big = d:buffer(random_bytes(256))
      local out = d:buffer(256)
      local spec = { inputs = { input = { dtype = "f32", shape = { 4, 8 }, buffer = big:slice(2, 128) } }, params = { axis = 0 }, out = out }
      assert.has_error(function() c:launch(spec) end,
        "contract 'flip' (" .. backend .. "): caps.alignment_bytes: input's base offset 2 is not a multiple of 4")
      spec.inputs.input.buffer = big:slice(0, 100)
      assert.has_error(function() c:launch(spec) end,
        "contract 'flip' (" .. backend .. "): input: buffer too short (100 bytes, the call needs 128)")
      spec.inputs.input.buffer = big
      spec.out = d:buffer(64)
      assert.has_error(function() c:launch(spec) end,
        "contract 'flip' (" .. backend .. "): out: buffer too short (64 bytes, the call needs 128)")
      -- the kernel's own signature refuses the same, whoever launches it
      local ok, err = pcall(kernel.launch, kernel, nil, 1, 256, out, big:slice(2, 128), 4, 8, 1, 4)
      assert.is_false(ok)
      assert.matches("argument 'in': base not aligned %(offset 2 is not a multiple of the 4%-byte element%)", err)
      ok, err = pcall(kernel.launch, kernel, nil, 1, 256, out, big:slice(0, 100), 4, 8, 1, 4)
      assert.matches("argument 2 'in': buffer too short %(100 bytes, needs 128%)", err)
      assert.equal(before, kernel.launches)
    end)

    it("refuses an input sharing bytes with what the kernel writes, before the launch; disjoint slices of one buffer run", function()
      if not devs then return pending(why) end
      local d, c = devs[1], C["flip." .. backend]
      local kernel = d:kernel "flip"
      local before = kernel.launches
      local bytes = random_bytes(256)
      local big = d:buffer(bytes)
      local spec = { inputs = { input = { dtype = "f32", shape = { 4, 8 }, buffer = big:slice(0, 128) } }, params = { axis = 0 },
                     out = big:slice(64, 128) }
      assert.has_error(function() c:launch(spec) end,
        "contract 'flip' (" .. backend .. "): return.aliasing: input 'input' shares bytes with the output 'out', " ..
        "which the kernel writes while it reads (bytes 0..128 of one allocation against 64..192)")
      assert.equal(before, kernel.launches)
      assert.equal(bytes, big:download()) -- nothing written
      -- the next 128 bytes of the same allocation meet the input nowhere
      spec.out = big:slice(128, 128)
      assert.no_error(function() c:launch(spec) end)
      d:default_stream():sync()
      assert.equal(before + 1, kernel.launches)
      local got = big:download()
      assert.equal(bytes:sub(1, 128), got:sub(1, 128)) -- the input, untouched
      assert.equal(bytes:sub(97, 128), got:sub(129, 160)) -- the flip's first row is the input's last
      -- in place: a source inside dest's view is refused; dest alone is what is written
      local ws = C["write_slice." .. backend]
      local cache = d:buffer(random_bytes(256))
      local wspec = { inputs = { dest = { dtype = "f32", shape = { 8, 8 }, buffer = cache },
                                 source = { dtype = "f32", shape = { 1, 8 }, buffer = cache:slice(96, 32) } },
                      params = { ranges = { { 0, 1 }, { 0, 8 } } } }
      local wbefore = d:kernel("write_slice").launches
      assert.has_error(function() ws:launch(wspec) end,
        "contract 'write_slice' (" .. backend .. "): return.aliasing: input 'source' shares bytes with the in-place 'dest', " ..
        "which the kernel writes while it reads (bytes 96..128 of one allocation against 0..256)")
      assert.equal(wbefore, d:kernel("write_slice").launches)
      wspec.inputs.source.buffer = d:buffer(random_bytes(32))
      assert.no_error(function() ws:launch(wspec) end)
    end)

    it("takes the empty fast paths: nothing launched, nothing written", function()
      if not devs then return pending(why) end
      local d = devs[1]
      local ws, k = C["write_slice." .. backend], d:kernel "write_slice"
      local before = k.launches
      local dest = poison(4 * 4 * 4)
      local got, r = run(ws, d, { source = { dtype = "f32", shape = { 0, 4 }, data = "" }, dest = { dtype = "f32", shape = { 4, 4 }, data = dest } },
        { ranges = { { 2, 2 }, { 0, 4 } } }, nil, "dest")
      assert.equal("empty slab: nothing launched", r.fast_path)
      assert.is_false(r.launched)
      assert.is_nil(r.kernel)
      same_bytes(dest, got, 4, "an empty slab writes nothing")
      assert.equal(before, k.launches)
      local roll = C["roll." .. backend]
      local r2 = roll:launch { inputs = { input = { dtype = "f16", shape = { 3, 0, 2 }, buffer = d:buffer(0) } },
                               params = { axis = 1, shift = 5 }, out = d:buffer(0) }
      assert.equal("empty axis: nothing launched", r2.fast_path)
      assert.is_false(r2.launched)
      local _, r3 = run(C["write_slice." .. backend], d, { source = { dtype = "u8", shape = { 3 }, data = "abc" },
        dest = { dtype = "u8", shape = { 5 }, data = "-----" } }, { ranges = { { 1, 4 } } }, nil, "dest")
      assert.equal("rank 1: one contiguous span", r3.fast_path)
      assert.is_true(r3.launched)
      -- the result names the kernel that ran: a one-run slab is a copy, bytes here (3 of them)
      assert.equal("copy_bytes", r3.kernel)
    end)
  end)
end

describe("shape kernels across backends", function()
  for _, backend in ipairs(BACKENDS) do
    if backend ~= "cpu" then
      it(("bitwise contracts give identical bytes on cpu and %s; the others on finite values too"):format(backend), function()
        local devs, why = devices_of(backend)
        if not devs then return pending(why) end
        local n = 0
        for _, k in ipairs(ORDER) do
          local c = C[k .. "." .. backend]
          local accepted = {}
          for _, a in ipairs(c.dtypes) do accepted[a] = true end
          for dt, bytes in pairs(outputs.cpu[k] or {}) do
            local other = outputs[backend][k] and outputs[backend][k][dt]
            if accepted[dt] then
              assert.truthy(other, k .. " " .. dt .. " did not run on " .. backend)
            else
              assert.is_nil(other, k .. " " .. dt .. " ran on " .. backend .. ", which its contract refuses")
            end
            -- the typed kernels (same_hardware_bitwise) state the CPU's bytes on finite values, which
            -- the cases' data is; CUDA's typed bodies are only held to their bounds here
            local typed = C[k .. ".cpu"].determinism == "same_hardware_bitwise" and backend == "vulkan"
            if other and (C[k .. ".cpu"].determinism == "bitwise" or typed) then
              same_bytes(bytes, other, BYTES[dt], ("%s %s: %s against cpu"):format(k, dt, backend))
              n = n + 1
            end
          end
        end
        assert.is_true(n > 50)
      end)

      it(("copies host to %s and back, and device to device"):format(backend), function()
        local devs, why = devices_of(backend)
        if not devs then return pending(why) end
        local cpu = xpu.device "cpu:0"
        local data = random_bytes(3 * 1024 * 1024 + 5)
        local host = cpu:buffer(data)
        local dev = devs[1]:buffer(#data)
        local r = C["copy.cpu"]:launch { inputs = { src = { dtype = "u8", shape = { #data }, buffer = host } }, out = dev }
        assert.is_false(r.launched) -- through the host: no kernel, none named
        assert.is_nil(r.kernel)
        local dev2 = devs[#devs]:buffer(#data)
        r = C["copy." .. backend]:launch { inputs = { src = { dtype = "u8", shape = { #data }, buffer = dev } }, out = dev2 }
        if devs[#devs].id == devs[1].id then -- on one device: the byte kernel (the length is no 16-byte multiple)
          assert.equal("copy_bytes", r.kernel)
        end
        local back = cpu:buffer(#data)
        C["copy." .. backend]:launch { inputs = { src = { dtype = "u8", shape = { #data }, buffer = dev2 } }, out = back }
        same_bytes(data, back:download(), 1, "host to device to device to host")
      end)
    end
  end
end)

-- One spec per backend, run on the backend's first device (pending with the reason where there
-- is none): the variants' fire / no-fire pairs below.
local function on_each_backend(title, body)
  for _, backend in ipairs(BACKENDS) do
    it(backend .. ": " .. title, function()
      local devs, why = devices_of(backend)
      if not devs then return pending("skipped: " .. why) end
      body(devs[1], backend)
    end)
  end
end

-- Runs launch() (it returns the output bytes and the call's result) and checks that of the
-- kernels `names` exactly `want` ran on d, once, and that the result names it. Returns what
-- launch returned. expect_variant: of kernel `plain` and its variant, the variant where `fired`.
local function expect_kernel(d, names, want, what, launch)
  local before = {}
  for _, n in ipairs(names) do before[n] = d:kernel(n).launches end
  local got, r = launch()
  assert.equal(want, r.kernel, "the kernel the result names, " .. what)
  -- the route row that ran names it: the op's own row, or `<op>.<backend>.<dtype>:<kernel>`
  local op = r.row:match("^([%w_]+)%.")
  if want ~= (op == "copy" and "copy_bytes" or op) then
    assert.equal(":" .. want, r.row:match(":[%w_]+$"), "the row that ran, " .. what)
  else
    assert.is_nil(r.row:match(":"), "the op's own row ran, " .. what)
  end
  for _, n in ipairs(names) do
    assert.equal(n == want and 1 or 0, d:kernel(n).launches - before[n], n .. " launches, " .. what)
  end
  return got, r
end

local function expect_variant(d, plain, variant, fired, what, launch)
  return expect_kernel(d, { plain, variant }, fired and variant or plain, what, launch)
end

-- A write_slice* fire / no-fire list on d (op "write_slice" or "write_slice_rotating", its variant
-- op .. "_rows", built on CUDA and Vulkan): each case's bytes == the CPU reference's, the variant
-- launched exactly where case.rows (and built), the plain kernel elsewhere. ring: the cases carry
-- pos, axis (default 1) and modulus (default 8).
local function slab_cases(d, backend, op, cases, ring)
  local c, variant = C[op .. "." .. backend], op .. "_rows"
  local built = d:kernel_available(variant)
  assert.equal(backend == "cuda" or backend == "vulkan", built, variant .. " built on " .. backend)
  for _, case in ipairs(cases) do
    local axis, modulus, dtype = case.axis or 1, case.modulus or 8, case.dtype or "f32"
    local size, w = dtype == "f16" and 2 or 4, {}
    for k = 1, #case.dest do w[k] = case.ranges[k][2] - case.ranges[k][1] end
    local src, dest = random_bytes(prod(w) * size), poison(prod(case.dest) * size)
    local want = ref.slab(elements(dest, size), case.dest, elements(src, size), case.ranges,
                          ring and axis or nil, ring and modulus or nil, ring and case.pos or nil)
    local out = d:buffer(dest)
    local what = ring and ("ring %s of %s on axis %d, pos %d"):format(dtype, table.concat(case.dest, "x"), axis, case.pos)
      or ("slab %s of %s"):format(dtype, table.concat(case.dest, "x"))
    local inputs = { source = { dtype = dtype, shape = w, buffer = d:buffer(src) },
                     dest = { dtype = dtype, shape = case.dest, buffer = out } }
    local params = { ranges = case.ranges }
    if ring then
      inputs.position = { dtype = "u32", shape = { 1 }, buffer = d:buffer(string.pack("<I4", case.pos)) }
      params.axis, params.modulus = axis, modulus
    end
    -- write_slice's one-run slab is a copy: 16-byte vectors where its start and length are
    -- whole 16 bytes (the source's base is its buffer's)
    local start, stride = 0, 1
    for k = #case.dest, 1, -1 do start, stride = start + case.ranges[k][1] * stride, stride * case.dest[k] end
    local copy = d:copy_path() == "driver" and "driver_copy"
      or (start * size % 16 == 0 and prod(w) * size % 16 == 0) and "stream_copy" or "copy_bytes"
    local ring_copy = case.ring_copy and d:kernel_available "ring_copy" and "ring_copy"
    local want_kernel = case.run and copy or ring_copy or case.rows and built and variant or op
    expect_kernel(d, { op, variant, "stream_copy", "copy_bytes", "ring_copy" }, want_kernel, what, function()
      return nil, c:launch { inputs = inputs, params = params }
    end)
    d:default_stream():sync()
    same_bytes(want, out:download(), size, what)
  end
end

-- write_slice_rotating's kernel: a ring of whole rows (every axis after the ring whole) whose
-- outer axes make one block of rings (one-wide axes, then at most one partial axis, then whole
-- ones: a KV cache of any heads) goes to write_slice_rotating_rows where the device has it
-- (CUDA and Vulkan here; HIP builds the CUDA bodies) and fires nowhere else; a ring of part rows, or under
-- a partial axis inside a wide one, goes to the plain kernel everywhere. Both write what the
-- CPU reference says: rows of 20 bytes and modulus short of the axis put chunks across the
-- wrap and across rings (the element path), f16 tokens the one-token write.
describe("write_slice_rotating_rows", function()
  on_each_backend("fires for a block of rings of whole rows where built, not for part rows or a broken block", function(d, backend)
    slab_cases(d, backend, "write_slice_rotating", {
      { dest = { 2, 8, 32 }, ranges = { { 0, 2 }, { 0, 1 }, { 0, 32 } }, pos = 13, rows = true },
      { dest = { 32, 16, 8 }, ranges = { { 0, 32 }, { 0, 1 }, { 0, 8 } }, pos = 21, rows = true, dtype = "f16" },
      { dest = { 3, 8, 5 }, ranges = { { 0, 3 }, { 0, 6 }, { 0, 5 } }, pos = 5, modulus = 7, rows = true },
      -- rows of 8 bytes from row 2 of 7: the third 16-byte chunk is on 16 bytes and across the wrap
      { dest = { 1, 8, 2 }, ranges = { { 0, 1 }, { 0, 6 }, { 0, 2 } }, pos = 2, modulus = 7, rows = true },
      { dest = { 3, 2, 8, 16 }, ranges = { { 1, 3 }, { 0, 2 }, { 0, 3 }, { 0, 16 } }, axis = 2, pos = 6, rows = true },
      { dest = { 1, 3, 8, 4 }, ranges = { { 0, 1 }, { 1, 3 }, { 0, 4 }, { 0, 4 } }, axis = 2, pos = 7, rows = true },
      { dest = { 3, 2, 8, 16 }, ranges = { { 0, 3 }, { 1, 2 }, { 0, 3 }, { 0, 16 } }, axis = 2, pos = 6, rows = false },
      { dest = { 2, 8, 32 }, ranges = { { 0, 2 }, { 0, 1 }, { 0, 16 } }, pos = 13, rows = false },
      { dest = { 2, 8 }, ranges = { { 0, 2 }, { 0, 3 } }, pos = 6, rows = false },
      -- one ring, but rows of 20 bytes: the rows kernel, not ring_copy
      { dest = { 1, 8, 5 }, ranges = { { 0, 1 }, { 0, 6 }, { 0, 5 } }, pos = 5, rows = true },
    }, true)
  end)
end)

-- write_slice_rotating's slab that is one ring of rows in whole 16-byte words (the axes before
-- the ring one wide, after it whole) goes to ring_copy where the device has it (CUDA and Vulkan;
-- HIP builds the CUDA bodies): a copy that wraps at the ring's end, at positions that wrap the
-- slab and positions that do not, a modulus short of the axis, every byte outside the ring's
-- written rows kept. The rotating_rows cases above are its does-not-fire half (several rings,
-- rows of 20 or 8 bytes).
describe("ring_copy", function()
  on_each_backend("copies one ring of whole 16-byte rows where built, wrapping at the ring's end", function(d, backend)
    if backend ~= "cpu" then assert.is_true(d:kernel_available "ring_copy", "ring_copy built on " .. backend) end
    slab_cases(d, backend, "write_slice_rotating", {
      { dest = { 1, 8, 32 }, ranges = { { 0, 1 }, { 0, 5 }, { 0, 32 } }, pos = 6, rows = true, ring_copy = true },
      { dest = { 1, 8, 32 }, ranges = { { 0, 1 }, { 0, 5 }, { 0, 32 } }, pos = 1, rows = true, ring_copy = true },
      { dest = { 3, 9, 4 }, ranges = { { 2, 3 }, { 0, 7 }, { 0, 4 } }, pos = 11, modulus = 8, rows = true, ring_copy = true },
      { dest = { 16, 8 }, ranges = { { 0, 16 }, { 0, 8 } }, axis = 0, pos = 21, modulus = 16, rows = true, ring_copy = true,
        dtype = "f16" },
      { dest = { 2, 1, 6, 8 }, ranges = { { 1, 2 }, { 0, 1 }, { 0, 3 }, { 0, 8 } }, axis = 2, pos = 4, modulus = 6, rows = true,
        ring_copy = true },
    }, true)
  end)
end)

-- write_slice's kernel: a slab that is a block of whole dest rows about its last partial axis
-- (every axis after it whole; before it one-wide axes, then at most one partial, then whole
-- ones: a one-token write into a KV cache of any heads; every axis whole counts as about axis 0)
-- goes to write_slice_rows where the device has it (CUDA and Vulkan here; HIP builds the CUDA
-- bodies), the plain kernel everywhere else: a partial last axis, a partial axis inside a wide
-- one, a rank-1 slab. Both write what the CPU reference says; rows of 20 and 8 bytes put chunks
-- across rings, one of them on 16 bytes (the element path).
describe("write_slice_rows", function()
  on_each_backend("fires for a block of whole rows where built, not for part rows or a broken block", function(d, backend)
    slab_cases(d, backend, "write_slice", {
      { dest = { 2, 8, 32 }, ranges = { { 0, 2 }, { 3, 4 }, { 0, 32 } }, rows = true },
      { dest = { 32, 16, 8 }, ranges = { { 0, 32 }, { 5, 6 }, { 0, 8 } }, rows = true, dtype = "f16" },
      { dest = { 3, 8, 5 }, ranges = { { 0, 3 }, { 1, 7 }, { 0, 5 } }, rows = true },
      { dest = { 3, 8, 2 }, ranges = { { 0, 3 }, { 2, 7 }, { 0, 2 } }, rows = true },
      { dest = { 3, 2, 8, 16 }, ranges = { { 1, 3 }, { 0, 2 }, { 2, 5 }, { 0, 16 } }, rows = true },
      { dest = { 1, 3, 8, 4 }, ranges = { { 0, 1 }, { 1, 3 }, { 0, 4 }, { 0, 4 } }, rows = true },
      { dest = { 3, 2, 8, 16 }, ranges = { { 0, 3 }, { 1, 2 }, { 0, 3 }, { 0, 16 } }, rows = false },
      { dest = { 2, 8, 32 }, ranges = { { 0, 2 }, { 0, 1 }, { 0, 16 } }, rows = false },
      { dest = { 3, 5, 7 }, ranges = { { 1, 2 }, { 1, 3 }, { 2, 5 } }, rows = false },
    })
  end)
end)

-- write_slice's slab that is one contiguous run of dest (one-wide axes, then any one axis, then
-- whole ones) is a copy on every backend: stream_copy where its start and length are whole
-- 16 bytes, copy_bytes elsewhere; every byte outside the run keeps its poison. The cases above
-- are its does-not-fire half (a wide axis before a partial one, a part last axis under a wide one).
describe("write_slice as a copy", function()
  on_each_backend("copies a one-run slab, 16-byte vectors where it is on 16 bytes", function(d, backend)
    slab_cases(d, backend, "write_slice", {
      { dest = { 1, 8, 32 }, ranges = { { 0, 1 }, { 2, 7 }, { 0, 32 } }, run = true },
      { dest = { 1, 3, 8, 4 }, ranges = { { 0, 1 }, { 1, 3 }, { 0, 8 }, { 0, 4 } }, run = true },
      { dest = { 4, 8 }, ranges = { { 0, 4 }, { 0, 8 } }, run = true },
      { dest = { 40 }, ranges = { { 3, 29 } }, run = true },
      { dest = { 2, 3, 9 }, ranges = { { 1, 2 }, { 2, 3 }, { 1, 8 } }, run = true },
      { dest = { 6, 16 }, ranges = { { 2, 5 }, { 0, 16 } }, run = true, dtype = "f16" },
    })
  end)
end)

-- The driver's copy path (d:copy_path "driver", which lua/xpu/autotune.lua sets where the
-- driver's copy measured faster than the copy kernel): the copy op on one device and
-- write_slice's one-run slab go to the backend's device copy, named "driver_copy", no kernel
-- launched, every byte outside the run kept; a slab of several runs still takes its walk (the
-- does-not-fire half), and so does the ring. The path is set back to the kernels after.
describe("the driver's copy path", function()
  on_each_backend("copies the copy op and one-run slabs by the device copy, and nothing else", function(d, backend)
    assert.equal("kernel", d:copy_path())
    d:copy_path "driver"
    local ok, err = pcall(function()
      slab_cases(d, backend, "write_slice", {
        { dest = { 1, 8, 32 }, ranges = { { 0, 1 }, { 2, 7 }, { 0, 32 } }, run = true },
        { dest = { 40 }, ranges = { { 3, 29 } }, run = true },
        { dest = { 6, 16 }, ranges = { { 2, 5 }, { 0, 16 } }, run = true, dtype = "f16" },
        { dest = { 2, 8, 32 }, ranges = { { 0, 2 }, { 3, 4 }, { 0, 32 } }, rows = true },
        { dest = { 3, 5, 7 }, ranges = { { 1, 2 }, { 1, 3 }, { 2, 5 } }, rows = false },
      })
      slab_cases(d, backend, "write_slice_rotating", {
        { dest = { 1, 8, 32 }, ranges = { { 0, 1 }, { 0, 5 }, { 0, 32 } }, pos = 6, rows = true, ring_copy = true },
      }, true)
      local data = random_bytes(3 * 65536 + 5)
      local src, out = d:buffer(("\0"):rep(7) .. data), d:buffer(poison(#data + 24))
      expect_kernel(d, { "stream_copy", "copy_bytes" }, "driver_copy", "the copy op", function()
        return nil, C["copy." .. backend]:launch { inputs = { src = { dtype = "u8", shape = { #data }, buffer = src:slice(7, #data) } },
                                                   out = out:slice(11, #data) }
      end)
      d:default_stream():sync()
      local got, pad = out:download(), poison(#data + 24)
      assert.is_true(pad:sub(1, 11) == got:sub(1, 11) and data == got:sub(12, 11 + #data) and pad:sub(12 + #data) == got:sub(12 + #data),
        "the copy op by the driver's copy: the run copied, the poison around it kept")
    end)
    d:copy_path "kernel"
    assert(ok, err)
  end)

  it("refuses a path that is not one", function()
    local ok, err = pcall(function() xpu.device("cpu:0"):copy_path "engines" end)
    assert.is_false(ok)
    assert.matches("invalid option 'engines'", err, 1, true)
    assert.equal("kernel", xpu.device("cpu:0"):copy_path())
  end)
end)

-- pad's and pad_backward's kernels: output rows of XPU_SHAPE_ROW_MIN (128) items or more, in
-- whole 16-byte chunks, go to pad_rows / pad_backward_rows where the device has them (CUDA
-- and Vulkan; HIP builds the CUDA bodies) and nowhere else; shorter rows,
-- and rows of 130 f32 (520 bytes, whose chunks the CUDA rows walk would take element by
-- element), go to the plain kernels, or where a row is not whole 16-byte chunks to the item
-- kernels where built (CUDA). All write what the CPU reference says.
describe("pad_rows and pad_backward_rows", function()
  -- pad_backward's gradient in constant mode: each element is its one upstream term, bit for bit
  local function one_term_grad(up, shape, padding)
    local ups, terms, want = elements(up, 4), ref.pad_terms(shape, padding, 0), {}
    for g = 1, prod(shape) do want[g] = ups[terms[g][1]] end
    return table.concat(want)
  end

  on_each_backend("fire for rows of 128 items where built, not for rows of 127 or 130", function(d, backend)
    for _, kn in ipairs { "pad", "pad_backward" } do
      local c = C[kn .. "." .. backend]
      local built = d:kernel_available(kn .. "_rows")
      assert.equal(backend == "cuda" or backend == "vulkan", built, kn .. "_rows built on " .. backend)
      for _, len in ipairs { 128, 127, 130 } do
        -- pad: 3 x (len - 3) padded to rows of len; pad_backward: gradient rows of len
        local padding = { { 1, 1 }, { 1, 2 } }
        local shape = kn == "pad" and { 3, len - 3 } or { 3, len }
        local out_shape = { 5, shape[2] + 3 }
        local input, want
        if kn == "pad" then
          input = random_bytes(prod(shape) * 4)
          want = ref.pad(elements(input, 4), shape, padding, 0, string.pack("<I4", 0x3f800000))
        else
          input = random_data(prod(out_shape), "f32")
          want = one_term_grad(input, shape, padding)
        end
        local what = ("%s rows of %d"):format(kn, len)
        local whole = len * 4 % 16 == 0
        local items = d:kernel_available(kn .. "_items") and not whole
        local want_kernel = built and len >= 128 and whole and kn .. "_rows" or items and kn .. "_items" or kn
        local got = expect_kernel(d, { kn, kn .. "_rows", kn .. "_items" }, want_kernel, what, function()
          return run(c, d, { [kn == "pad" and "input" or "upstream"] = { dtype = "f32", shape = kn == "pad" and shape or out_shape,
            data = input } }, { padding = padding, mode_tag = 0, fill_bits = kn == "pad" and 0x3f800000 or nil }, #want)
        end)
        same_bytes(want, got, 4, what)
      end
    end
  end)

  -- An output view 4 bytes past a 16-byte boundary: the rows kernels still fire (the launcher
  -- looks at the rows, not the base) and write every chunk element by element, nothing outside
  -- the view.
  on_each_backend("write an output view off 16 bytes element by element, nothing outside it", function(d, backend)
    for _, kn in ipairs { "pad", "pad_backward" } do
      local c = C[kn .. "." .. backend]
      local padding, shape = { { 1, 2 }, { 4, 8 } }, kn == "pad" and { 3, 140 } or { 3, 152 }
      local out_shape = { 6, kn == "pad" and 152 or 164 }
      local input = random_data(prod(kn == "pad" and shape or out_shape), "f32")
      local want = kn == "pad" and ref.pad(elements(input, 4), shape, padding, 1, string.pack("<I4", 0))
        or one_term_grad(input, shape, padding)
      local bytes = #want
      local fill = poison(bytes + 32)
      local out = d:buffer(fill)
      local what = ("%s into bytes 4.. of its buffer"):format(kn)
      expect_variant(d, kn, kn .. "_rows", d:kernel_available(kn .. "_rows"), what, function()
        return nil, c:launch { inputs = { [kn == "pad" and "input" or "upstream"] = { dtype = "f32",
          shape = kn == "pad" and shape or out_shape, buffer = d:buffer(input) } },
          params = { padding = padding, mode_tag = kn == "pad" and 1 or 0 }, out = out:slice(4, bytes) }
      end)
      local got = out:download()
      same_bytes(want, got:sub(5, 4 + bytes), 4, what)
      assert.equal(fill:sub(1, 4), got:sub(1, 4), what .. ": the bytes before the view")
      assert.equal(fill:sub(5 + bytes), got:sub(5 + bytes), what .. ": the bytes after the view")
    end
  end)

  -- Vulkan's pad_backward_rows never gets rows shorter than 128 from the launcher; launched
  -- straight on gradient rows of 4 (700 rows: more than its table holds), it sums each item
  -- by itself and writes what the plain kernel writes, bit for bit.
  it("vulkan: pad_backward_rows launched straight on short rows == pad_backward", function()
    local devs, why = devices_of("vulkan")
    if not devs then return pending("skipped: " .. why) end
    local d = devs[1]
    local shape, padding = { 700, 4 }, { { 1, 1 }, { 2, 1 } }
    local out_shape = { 702, 7 }
    local up = random_data(prod(out_shape), "f32")
    local want = run(C["pad_backward.vulkan"], d, { upstream = { dtype = "f32", shape = out_shape, data = up } },
      { padding = padding, mode_tag = 1 }, prod(shape) * 4)
    local out = d:buffer(poison(#want))
    local u64 = function(lo, hi) return lo | hi << 32 end
    d:kernel("pad_backward_rows"):launch(nil, 1, 256, out, d:buffer(up), u64(2 | 0 << 8 | 1 << 16, 0), u64(700, 4), 0, 0, 0,
      u64(1, 2), 0, 0, 0, u64(1, 1), 0, 0, 0)
    same_bytes(want, out:download(), 4, "pad_backward_rows on rows of 4, one group")
  end)

  -- pad_backward_rows.comp's compile-time forms, each built here and read from a directory
  -- (XPULUA_VULKAN_SPV) in a child process: the quads (-DPBW_CHUNKS=0) and the chunk walk with
  -- 4 or 16 chunks in flight write the built module's bytes on the same device, for f32 rows on
  -- 16 bytes in every mode: reflect's mirrors, replicate's edges, rows of several terms, a rows
  -- group that starts mid-row, and border chunks whose invocation has no interior chunk. A sweep
-- of three builds and four processes: make test-long.
  it("vulkan: pad_backward_rows' compile-time forms (-DPBW_CHUNKS=0, -DPBW_CB=4u and 16u) write the built module's bytes #long", function()
    local devs, why = devices_of("vulkan")
    if not devs then return pending("skipped: " .. why) end
    if not os.execute("glslc --version >/dev/null 2>&1") then return pending("skipped: no glslc to build the forms") end
    local body = [[
      local xpu = require "xpu"
      local d = assert(xpu.device "vulkan:0")
      local c
      for _, k in ipairs(xpu.contracts.load("contracts/shape-ops.md")) do
        if k.kernel == "pad_backward" and k.backend == "vulkan" then c = k end
      end
      local seed = 7
      for _, case in ipairs { { { 40, 500 }, { { 1, 1 }, { 4, 4 } } }, { { 3, 4, 160 }, { { 1, 1 }, { 1, 2 }, { 16, 16 } } },
                              { { 3, 128 }, { { 1, 1 }, { 120, 120 } } }, { { 2, 1900 }, { { 1, 0 }, { 8, 8 } } } } do
        local shape, padding, up_shape, n, m = case[1], case[2], {}, 1, 1
        for i, v in ipairs(shape) do up_shape[i] = v + padding[i][1] + padding[i][2]; n, m = n * up_shape[i], m * v end
        local vals = {}
        for i = 1, n do
          seed = (seed * 1103515245 + 12345) % 2147483648
          vals[i] = string.pack("<f", (seed % 20011 - 10005) / 64)
        end
        for mode = 0, 2 do
          local out = d:buffer(("\165\90"):rep(m * 2))
          local r = c:launch { inputs = { upstream = { dtype = "f32", shape = up_shape, buffer = d:buffer(table.concat(vals)) } },
                               params = { padding = padding, mode_tag = mode }, out = out }
          local h = 2166136261
          for _, b in ipairs { out:download():byte(1, -1) } do h = ((h ~ b) * 16777619) & 0xffffffff end
          print(table.concat(shape, "x"), mode, r.kernel, ("%08x"):format(h))
        end
      end
    ]]
    local built = fx.child("", body)
    assert.matches("^40x500\t0\tpad_backward_rows\t%x+\n", built) -- the first case's line: the rows kernel ran
    assert.equal(12, select(2, built:gsub("\tpad_backward_rows\t", "")), built)
    for _, flags in ipairs { "-DPBW_CHUNKS=0", "-DPBW_CB=4u", "-DPBW_CB=16u" } do
      local dir = os.tmpname()
      os.remove(dir)
      assert(os.execute("mkdir " .. dir))
      assert(os.execute(("glslc --target-env=vulkan1.2 -fshader-stage=compute -Ikernels/vulkan -O %s "
        .. "kernels/vulkan/pad_backward_rows.comp -o %s/vk_pad_backward_rows.spv"):format(flags, dir)), flags)
      local got = fx.child("XPULUA_VULKAN_SPV=" .. dir, body)
      local from = "vulkan: pad_backward_rows's module from " .. dir .. "/vk_pad_backward_rows.spv\n"
      assert.equal(from, got:sub(1, #from), flags)
      assert.equal(built, got:sub(#from + 1), flags)
      os.remove(dir .. "/vk_pad_backward_rows.spv")
      os.remove(dir)
    end
  end)
end)

-- The item kernels (pad_items, pad_backward_items, flip_items, triu_items, tril_items): where a
-- row is not a whole number of 16-byte chunks, or the output's base is off 16 bytes, the
-- launcher takes them where built (CUDA) and the plain kernel elsewhere; whole rows on 16-byte
-- bases take the plain kernel everywhere (rows of 64 f32: below pad_rows' 128), but for triu
-- and tril, whose item kernels take every shape where built. Each writes what the reference
-- says and nothing outside its output.
describe("item kernels", function()
  -- Per op: the input of rows of `cols` f32 (pad: padded to rows of cols), params, reference.
  local function item_case(kn, cols)
    if kn == "pad" then
      local shape, padding = { 3, cols - 8 }, { { 1, 1 }, { 4, 4 } }
      local x = random_bytes(prod(shape) * 4)
      return "input", { dtype = "f32", shape = shape, data = x }, { padding = padding, mode_tag = 0, fill_bits = 0x3f800000 },
        ref.pad(elements(x, 4), shape, padding, 0, string.pack("<I4", 0x3f800000))
    elseif kn == "pad_backward" then -- constant mode: each gradient element is its one upstream term
      local shape, padding = { 3, cols }, { { 1, 1 }, { 4, 4 } }
      local terms, up_shape = ref.pad_terms(shape, padding, 0)
      local x = random_data(prod(up_shape), "f32")
      local ups, want = elements(x, 4), {}
      for g = 1, prod(shape) do want[g] = ups[terms[g][1]] end
      return "upstream", { dtype = "f32", shape = up_shape, data = x }, { padding = padding, mode_tag = 0 }, table.concat(want)
    elseif kn == "flip" then
      local shape = { 5, cols }
      local x = random_bytes(prod(shape) * 4)
      return "input", { dtype = "f32", shape = shape, data = x }, { axis = 1 },
        ref.reorder(elements(x, 4), shape, 1, function(j, dim) return dim - 1 - j end)
    end
    local shape = { 2, 9, cols }
    local x = random_bytes(prod(shape) * 4)
    return "input", { dtype = "f32", shape = shape, data = x }, { diagonal = 1 },
      ref.tri(elements(x, 4), shape, 1, kn == "triu", ("\0"):rep(4))
  end

  on_each_backend("fire for rows of 45 and a base off 16 bytes where built, not for whole rows of 64", function(d, backend)
    for _, kn in ipairs { "pad", "pad_backward", "flip", "triu", "tril" } do
      local c, items = C[kn .. "." .. backend], kn .. "_items"
      local built = d:kernel_available(items)
      assert.equal(backend == "cuda", built, items .. " built on " .. backend)
      for _, case in ipairs { { cols = 45, fires = true }, { cols = 301, fires = true }, { cols = 64, fires = false },
                              { cols = 64, off = 4, fires = true } } do
        local name, input, params, want = item_case(kn, case.cols)
        local off = case.off or 0
        local fill = poison(#want + 32)
        local out = d:buffer(fill)
        local what = ("%s rows of %d at byte %d"):format(kn, case.cols, off)
        input.buffer, input.data = d:buffer(input.data), nil
        local fires = case.fires or kn == "triu" or kn == "tril"
        expect_kernel(d, { kn, items }, built and fires and items or kn, what, function()
          return nil, c:launch { inputs = { [name] = input }, params = params, out = out:slice(off, #want) }
        end)
        local got = out:download()
        same_bytes(want, got:sub(off + 1, off + #want), 4, what)
        assert.equal(fill:sub(1, off), got:sub(1, off), what .. ": the bytes before the output")
        assert.equal(fill:sub(off + #want + 1), got:sub(off + #want + 1), what .. ": the bytes after the output")
      end
    end
  end)
end)

-- contiguize of a transpose (the last axis strided, an earlier one of stride 1) goes to
-- contiguize_tiles where the device has it (CUDA and Vulkan here; HIP builds the CUDA bodies)
-- and not on the CPU; rows of stride 1 and views with no axis of stride 1 go to the plain
-- kernel everywhere. Both write what the CPU reference says.
describe("contiguize_tiles", function()
  -- odd: a transpose whose steps are off 16 bytes (the last axis's stride, or the output's
  -- stride of the unit axis: the rows of 70 f32 below), which goes to contiguize_tiles_odd
  -- where built (CUDA) instead.
  on_each_backend("fires for a transpose where built, not for strided rows or a view with no unit axis", function(d, backend)
    local c = C["contiguize." .. backend]
    local built, odd_built = d:kernel_available "contiguize_tiles", d:kernel_available "contiguize_tiles_odd"
    assert.equal(backend ~= "cpu", built, "contiguize_tiles built on " .. backend)
    assert.equal(backend == "cuda", odd_built, "contiguize_tiles_odd built on " .. backend)
    local data = random_bytes(128 * 193 * 4)
    for _, v in ipairs {
      { shape = { 40, 70 }, strides = { 1, 40 }, offset = 0, transpose = true, odd = true },
      { shape = { 33, 70 }, strides = { 1, 33 }, offset = 2, transpose = true, odd = true },
      -- whole 64 x 64 tiles on 16-byte rows (Vulkan moves them as 16-byte words), and off them
      { shape = { 128, 192 }, strides = { 1, 128 }, offset = 0, transpose = true },
      { shape = { 128, 192 }, strides = { 1, 128 }, offset = 1, transpose = true },
      { shape = { 6, 48 }, strides = { 64, 1 }, offset = 3, transpose = false },
      { shape = { 3, 5 }, strides = { 0, 2 }, offset = 7, transpose = false },
    } do
      local want = ref.view(elements(data, 4), v.shape, v.strides, v.offset)
      local what = ("strides %s offset %d"):format(table.concat(v.strides, ","), v.offset)
      local kernel = not (built and v.transpose) and "contiguize"
        or (odd_built and v.odd) and "contiguize_tiles_odd" or "contiguize_tiles"
      local got = expect_kernel(d, { "contiguize", "contiguize_tiles", "contiguize_tiles_odd" }, kernel, what, function()
        return run(c, d, { input = { dtype = "f32", shape = v.shape, strides = v.strides, offset = v.offset, data = data } }, {}, #want)
      end)
      same_bytes(want, got, 4, what)
    end
  end)

  -- kernel launched straight on groups groups over a 50 x 100 f32 view of data (its element
  -- strides and offset), against the reference's bytes.
  local function launched_straight(d, kernel, groups, strides, offset, data, what)
    local want = ref.view(elements(data, 4), { 50, 100 }, strides, offset)
    local out, src = d:buffer(poison(#want)), d:buffer(data)
    local u64 = function(lo, hi) return lo | hi << 32 end
    d:kernel(kernel):launch(nil, groups, 256, out, src, u64(2 | 4 << 8, 0), offset, u64(50, 100), 0, 0, 0,
      strides[1], strides[2], 0, 0, 0, 0, 0, 0)
    same_bytes(want, out:download(), 4, what)
  end

  -- The launcher never gives it one, but a view that is no transpose launched straight on
  -- contiguize_tiles' grid (here one group for 5000 items) still comes out whole.
  on_each_backend("launched straight on a view that is no transpose, writes every item", function(d, backend)
    if not d:kernel_available "contiguize_tiles" then return pending("contiguize_tiles is not built for " .. backend) end
    -- rows reversed, a row pitch of 103
    launched_straight(d, "contiguize_tiles", 1, { 103, -1 }, 99, random_bytes(50 * 103 * 4),
      "contiguize_tiles on reversed rows, one group")
    if d:kernel_available "contiguize_tiles_odd" then
      launched_straight(d, "contiguize_tiles_odd", 1, { 103, -1 }, 99, random_bytes(50 * 103 * 4),
        "contiguize_tiles_odd on reversed rows, one group")
    end
  end)

  -- The launcher sends every transpose to contiguize_tiles where built, but the plain kernel
  -- launched straight on one (CUDA's keeps no tiles: its element walk) still comes out whole.
  on_each_backend("the plain contiguize launched straight on a transpose writes every item", function(d, backend)
    -- a column-major source
    launched_straight(d, "contiguize", 2, { 1, 50 }, 3, random_bytes((50 * 100 + 3) * 4),
      "contiguize on a transpose, launched straight")
  end)
end)

-- cumsum_vec4 (four lanes an invocation) takes f32 cumsums whose inner extent is a multiple
-- of 4 where the device has it (Vulkan here) and fires nowhere else; an inner extent of 21, or
-- f16, goes to the plain kernel. Both write the CPU's bytes: each column adds in the same
-- order, so f32 compares with ==.
describe("cumsum_vec4", function()
  local cpu = devices_of("cpu")[1]
  on_each_backend("fires for f32 with inner % 4 == 0 where built, not for inner 21 or f16", function(d, backend)
    local c = C["cumsum." .. backend]
    local built = d:kernel_available "cumsum_vec4"
    assert.equal(backend == "vulkan" or backend == "cuda", built, "cumsum_vec4 built on " .. backend)
    for _, v in ipairs {
      { dt = "f32", shape = { 3, 19, 20 }, axis = 1, fires = true },  -- inner 20, batches of 8 and a tail
      { dt = "f32", shape = { 17, 12 }, axis = 0, fires = true },     -- inner 12, one outer block
      { dt = "f32", shape = { 3, 19, 21 }, axis = 1, fires = false }, -- inner 21
      { dt = "f16", shape = { 3, 19, 20 }, axis = 1, fires = false },
    } do
      local data = random_data(prod(v.shape), v.dt)
      local inputs, params = { input = { dtype = v.dt, shape = v.shape, data = data } }, { axis = v.axis }
      local want = run(C["cumsum.cpu"], cpu, inputs, params, #data)
      local what = ("%s %s axis %d"):format(v.dt, table.concat(v.shape, "x"), v.axis)
      local got = expect_variant(d, "cumsum", "cumsum_vec4", built and v.fires, what, function()
        return run(c, d, inputs, params, #data)
      end)
      same_bytes(want, got, BYTES[v.dt], what)
    end
  end)

  -- The launcher never gives it one, but an inner extent of 5 launched straight on it (each
  -- invocation its four lanes one by one) writes what the CPU writes.
  on_each_backend("launched straight on inner 5, walks its lanes one by one", function(d, backend)
    if not d:kernel_available "cumsum_vec4" then return pending("cumsum_vec4 is not built for " .. backend) end
    local shape = { 3, 11, 5 }
    local data = random_data(prod(shape), "f32")
    local want = run(C["cumsum.cpu"], cpu, { input = { dtype = "f32", shape = shape, data = data } }, { axis = 1 }, #data)
    local out = d:buffer(poison(#data))
    d:kernel("cumsum_vec4"):launch(nil, 1, 256, out, d:buffer(data), 3, 11, 5, 0)
    same_bytes(want, out:download(), 4, "cumsum_vec4 on inner 5, one group")
  end)
end)

-- A launch checked once (c:bind) and launched again: the ring write at two positions, each
-- == c:launch of the same call; the bound launch keeps its buffers past the caller's handles
-- and refuses once released.
describe("bound launches", function()
  for _, backend in ipairs(BACKENDS) do
    it(backend .. ": write_slice_rotating bound once, launched at two positions, == c:launch", function()
      local devs, why = devices_of(backend)
      if not devs then return pending("skipped: " .. why) end
      local d, c = devs[1], C["write_slice_rotating." .. backend]
      local token = random_data(2 * 64, "f16")
      local function call(dest, pos)
        return { inputs = { source = { dtype = "f16", shape = { 2, 1, 64 }, buffer = d:buffer(token) },
                            position = { dtype = "u32", shape = { 1 }, buffer = pos },
                            dest = { dtype = "f16", shape = { 2, 8, 64 }, buffer = dest } },
                 params = { axis = 1, modulus = 8, ranges = { { 0, 2 }, { 0, 1 }, { 0, 64 } } } }
      end
      local cache0 = poison(2 * 8 * 64 * 2)
      local dest, pos = d:buffer(cache0), d:buffer(string.pack("<I4", 5))
      local bound, result = c:bind(call(dest, pos))
      assert.equal(2 * 64 * 2 * 2, result.bytes_moved)
      local want, wpos = d:buffer(cache0), d:buffer(string.pack("<I4", 5))
      for _, p in ipairs { 5, 10 } do -- 10 wraps to 2
        pos:upload(string.pack("<I4", p))
        wpos:upload(string.pack("<I4", p))
        local launched, kernel = bound:launch()
        local r = c:launch(call(want, wpos))
        assert.is_true(launched)
        assert.equal(r.kernel, kernel) -- both name the same kernel: the ring-of-rows one where built
        assert.equal(d:kernel_available "write_slice_rotating_rows" and "write_slice_rotating_rows"
          or "write_slice_rotating", kernel)
      end
      d:default_stream():sync()
      local got = dest:download()
      same_bytes(want:download(), got, 1, "bound == launched")
      assert.are_not.equal(cache0, got, "nothing was written")
      pos:upload(string.pack("<I4", 7))
      pos:release() -- the caller's handle; the bound launch keeps its own view
      bound:launch()
      d:default_stream():sync()
      assert.are_not.equal(got, dest:download(), "the position buffer outlived its handle")
      bound:release()
      assert.has_error(function() bound:launch() end, "launch: this bound launch was released")
    end)
  end
end)
