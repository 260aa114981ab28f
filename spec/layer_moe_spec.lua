-- layer_moe_spec.lua — the mixture-of-experts layer kernels (matvec_f32, moe_combine) through
-- the rows of routes.layer_moe: the CPU body against a reference computed here in the stated
-- order (each product and sum rounded to f32 through string.pack "f", no double kept between
-- steps), then every device present against the CPU with == on the bytes (NaN counted) on
-- values whose sums depend on the order, outputs poisoned first; moe_combine in place on the
-- residual; the rows firing and refusing in their own words; short buffers and bad scalars
-- refused by argument name. A device that is absent is reported skipped with the reason.
local xpu = require "xpu"
local moe = require "xpu.layers.moe"
local routes = require "routes.layer_moe"
local fx = require "spec.support.fixtures"

local cpu = xpu.device "cpu:0"
local devices = fx.devices { "vulkan:0", "cuda:0" }

local POISON = "\255"
local POISON_WORD = 0xffffffff

-- ---- values and the reference ---------------------------------------------------------------

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

local function words(s)
  local v = {}
  for i = 1, #s // 4 do v[i] = string.unpack("<I4", s, 4 * i - 3) end
  return v
end

-- n values of magnitudes 2^-12 .. 2^12, sign mixed, now and then a large pair of opposite
-- signs: f32 sums of their products depend on the order. Element nan (if given) is a NaN.
local function values(n, seed, nan)
  local r, v = fx.lcg(seed), {}
  for i = 1, n do
    local sign = r() < 0.5 and -1 or 1
    v[i] = f32(sign * (1 + r()) * 2.0 ^ math.floor(r() * 25 - 12))
    if i % 97 == 0 then v[i] = f32(3.0e6 * (1 + r())) end
    if i % 97 == 1 and i > 1 then v[i] = f32(-3.0e6 * (1 + r())) end
  end
  if nan then v[nan] = 0 / 0 end
  return v
end

-- matvec_f32 as stated: lane l adds f32(w * x) of columns l, l + 32, ... from +0, then the
-- butterfly off = 16 .. 1 (lanes l, l ^ off take lower + upper), lane 0's value.
local function ref_dot(w, wo, x, xo, cols)
  local acc = {}
  for l = 0, 31 do acc[l] = 0.0 end
  for c = 0, cols - 1 do
    local l = c % 32
    acc[l] = f32(acc[l] + f32(w[wo + c + 1] * x[xo + c + 1]))
  end
  for off = 16, 1, -1 do
    if off & (off - 1) == 0 then
      local t = {}
      for l = 0, 31 do t[l] = f32(acc[l & ~off] + acc[l | off]) end
      acc = t
    end
  end
  return acc[0]
end

local function ref_matvec(w, x, rows, cols, tokens)
  local y = {}
  for t = 0, tokens - 1 do
    for r = 0, rows - 1 do y[t * rows + r + 1] = ref_dot(w, r * cols, x, t * cols, cols) end
  end
  return y
end

-- The plain sequential sum, the order the kernel does NOT keep: it shows the order matters.
local function seq_dot(w, x, cols)
  local s = 0.0
  for c = 1, cols do s = f32(s + f32(w[c] * x[c])) end
  return s
end

local function ref_combine(x, w, y, tokens, used, n)
  local out = {}
  for t = 0, tokens - 1 do
    for i = 0, n - 1 do
      local s = 0.0
      for k = 0, used - 1 do s = f32(s + f32(w[t * used + k + 1] * y[(t * used + k) * n + i + 1])) end
      out[t * n + i + 1] = f32(x[t * n + i + 1] + s)
    end
  end
  return out
end

local function is_nan(v) return v ~= v end

-- Equal as floats, NaN matching NaN; returns the count of NaN seen.
local function same_values(want, got, what)
  assert.equal(#want, #got, what .. ": lengths")
  local nans = 0
  for i = 1, #want do
    if is_nan(want[i]) then
      assert.is_true(is_nan(got[i]), ("%s[%d]: want NaN, got %s"):format(what, i, tostring(got[i])))
      nans = nans + 1
    elseif want[i] ~= got[i] then
      error(("%s[%d]: want %.9g, got %.9g"):format(what, i, want[i], got[i]))
    end
  end
  return nans
end

local function all_written(s, what)
  for i, u in ipairs(words(s)) do
    assert(u ~= POISON_WORD, ("%s[%d] was never written (still the poison)"):format(what, i))
  end
end

-- Same bytes on two devices, NaN counted; returns the count of NaN.
local function same_bytes(want, got, what)
  assert.equal(#want, #got, what .. ": lengths")
  local nans = 0
  for i, u in ipairs(words(want)) do
    if (u & 0x7fffffff) > 0x7f800000 then nans = nans + 1 end
  end
  if want ~= got then
    local a, b = words(want), words(got)
    for i = 1, #a do
      if a[i] ~= b[i] then error(("%s: word %d: cpu 0x%08x, device 0x%08x"):format(what, i, a[i], b[i])) end
    end
  end
  return nans
end

-- ---- runs through the route table -----------------------------------------------------------

-- Binds and dispatches the row for q on d; inputs maps operand names to value lists (or byte
-- strings), outs to poisoned output sizes in bytes. Returns the downloads, the row and the
-- kernel's launches during the dispatch.
local function run(d, q, inputs, outs)
  local ops = {}
  for name, v in pairs(inputs) do ops[name] = d:buffer(type(v) == "string" and v or pack(v)) end
  for name, bytes in pairs(outs) do ops[name] = d:buffer(POISON:rep(bytes)) end
  local c = xpu.call { query = q, device = d, operands = ops }
  local row = routes:bind(c)
  local k = d:kernel(row.kernel)
  local before = k.launches
  row:dispatch(c)
  fx.sync(d)
  local got = {}
  for name in pairs(outs) do got[name] = ops[name]:download() end
  return got, row, k.launches - before
end

local MV_SHAPES = { { 1, 1, 1 }, { 3, 31, 1 }, { 5, 33, 1 }, { 128, 2048, 1 }, { 7, 100, 3 }, { 6, 257, 9 } }
local COMBINE_SHAPES = { { 1, 1, 1 }, { 1, 8, 2048 }, { 3, 4, 37 }, { 5, 8, 300 }, { 2, 1, 1000 } }

local function mv_case(rows, cols, tokens, nan_w)
  local w, x = values(rows * cols, rows * 31 + cols, nan_w), values(tokens * cols, cols * 7 + tokens)
  return w, x, moe.matvec_query(tokens, rows, cols)
end

-- ---- matvec_f32 -----------------------------------------------------------------------------

describe("matvec_f32 on cpu:0", function()
  for _, s in ipairs(MV_SHAPES) do
    local rows, cols, tokens = s[1], s[2], s[3]
    it(("%d rows x %d cols, %d token(s): the stated order, bit for bit, every output written"):format(rows, cols, tokens),
      function()
        local w, x, q = mv_case(rows, cols, tokens)
        local got, row, launches = run(cpu, q, { w = w, x = x }, { y = 4 * rows * tokens })
        assert.equal(tokens == 1 and "matvec_f32.decode" or "matvec_f32.prefill", row.name)
        assert.equal(1, launches)
        all_written(got.y, "y")
        same_values(ref_matvec(w, x, rows, cols, tokens), unpack_all(got.y), "y")
      end)
  end

  it("keeps the lane order, not the sequential one: the two differ on these values", function()
    local rows, cols = 128, 2048
    local w, x, q = mv_case(rows, cols, 1)
    local y = unpack_all(run(cpu, q, { w = w, x = x }, { y = 4 * rows }).y)
    local differ = 0
    for r = 0, rows - 1 do
      local wr = table.move(w, r * cols + 1, (r + 1) * cols, 1, {})
      if seq_dot(wr, x, cols) ~= y[r + 1] then differ = differ + 1 end
    end
    assert.is_true(differ > 0, "no row's lane-order sum differs from the sequential one: the values do not test the order")
  end)

  it("a NaN weight makes its row NaN, every other row finite", function()
    local rows, cols = 4, 64
    local w, x, q = mv_case(rows, cols, 1, 2 * cols + 5) -- row 2, column 5
    local y = unpack_all(run(cpu, q, { w = w, x = x }, { y = 4 * rows }).y)
    local nans = same_values(ref_matvec(w, x, rows, cols, 1), y, "y")
    assert.equal(1, nans)
    assert.is_true(is_nan(y[3]))
  end)
end)

describe("matvec_f32 on the devices against cpu:0 (==, bits)", function()
  for _, entry in ipairs(devices) do
    for _, s in ipairs(MV_SHAPES) do
      local rows, cols, tokens = s[1], s[2], s[3]
      it(("%s: %d x %d, %d token(s), a NaN in row 0"):format(entry.id, rows, cols, tokens), function()
        if not entry.dev then return pending(entry.skip) end
        local w, x, q = mv_case(rows, cols, tokens, cols > 1 and 2 or nil)
        local want = run(cpu, q, { w = w, x = x }, { y = 4 * rows * tokens }).y
        local got, row, launches = run(entry.dev, q, { w = w, x = x }, { y = 4 * rows * tokens })
        assert.equal(1, launches, row.name)
        all_written(got.y, "y")
        local nans = same_bytes(want, got.y, entry.id .. " y")
        assert.equal(cols > 1 and tokens or 0, nans, "NaN count")
      end)
    end
  end
end)

-- ---- moe_combine ----------------------------------------------------------------------------

local function combine_case(tokens, used, n, nan_w)
  local x, y = values(tokens * n, n + tokens), values(tokens * used * n, used * 13 + n)
  local r, w = fx.lcg(tokens + used), {}
  for i = 1, tokens * used do w[i] = f32(r() * 0.9 + 0.01) end
  if nan_w then w[nan_w] = 0 / 0 end
  return x, w, y, moe.combine_query(tokens, used, n)
end

describe("moe_combine on cpu:0", function()
  for _, s in ipairs(COMBINE_SHAPES) do
    local tokens, used, n = s[1], s[2], s[3]
    it(("%d token(s), %d used, n %d: the stated order, bit for bit, every output written"):format(tokens, used, n),
      function()
        local x, w, y, q = combine_case(tokens, used, n)
        local got, row, launches = run(cpu, q, { x = x, w = w, y = y }, { out = 4 * tokens * n })
        assert.equal("moe_combine.f32", row.name)
        assert.equal(1, launches)
        all_written(got.out, "out")
        same_values(ref_combine(x, w, y, tokens, used, n), unpack_all(got.out), "out")
      end)
  end

  it("sums the experts from k = 0, then adds x (not x first): the orders differ here", function()
    -- x = 1, w y = 2^-24 + 2^-24 (k 0, k 1): (0 + 2^-24 + 2^-24) + 1 = 1 + 2^-23; x first gives 1.
    local q = moe.combine_query(1, 2, 1)
    local got = run(cpu, q, { x = { 1.0 }, w = { 1.0, 1.0 }, y = { 2.0 ^ -24, 2.0 ^ -24 } }, { out = 4 })
    assert.equal(1 + 2.0 ^ -23, unpack_all(got.out)[1])
  end)

  it("works in place on the residual (out = x)", function()
    local tokens, used, n = 3, 8, 100
    local x, w, y, q = combine_case(tokens, used, n)
    local bx, bw, by = cpu:buffer(pack(x)), cpu:buffer(pack(w)), cpu:buffer(pack(y))
    local c = xpu.call { query = q, device = cpu, operands = { out = bx, x = bx, w = bw, y = by } }
    routes:bind(c):dispatch(c)
    fx.sync(cpu)
    same_values(ref_combine(x, w, y, tokens, used, n), unpack_all(bx:download()), "out")
  end)

  it("a NaN weight makes its token's whole row NaN, the other tokens finite", function()
    local tokens, used, n = 2, 4, 50
    local x, w, y, q = combine_case(tokens, used, n, used + 2) -- token 1, slot 2
    local out = unpack_all(run(cpu, q, { x = x, w = w, y = y }, { out = 4 * tokens * n }).out)
    assert.equal(n, same_values(ref_combine(x, w, y, tokens, used, n), out, "out"))
    for i = n + 1, 2 * n do assert.is_true(is_nan(out[i])) end
  end)
end)

describe("moe_combine on the devices against cpu:0 (==, bits)", function()
  for _, entry in ipairs(devices) do
    for _, s in ipairs(COMBINE_SHAPES) do
      local tokens, used, n = s[1], s[2], s[3]
      it(("%s: %d token(s), %d used, n %d, a NaN weight in the last token"):format(entry.id, tokens, used, n), function()
        if not entry.dev then return pending(entry.skip) end
        local x, w, y, q = combine_case(tokens, used, n, tokens * used)
        local want = run(cpu, q, { x = x, w = w, y = y }, { out = 4 * tokens * n }).out
        local got, row, launches = run(entry.dev, q, { x = x, w = w, y = y }, { out = 4 * tokens * n })
        assert.equal(1, launches, row.name)
        all_written(got.out, "out")
        assert.equal(n, same_bytes(want, got.out, entry.id .. " out"), "NaN count")
      end)
    end
    it(entry.id .. ": in place (out = x) equals the CPU", function()
      if not entry.dev then return pending(entry.skip) end
      local tokens, used, n = 2, 8, 2048
      local x, w, y, q = combine_case(tokens, used, n)
      local want = run(cpu, q, { x = x, w = w, y = y }, { out = 4 * tokens * n }).out
      local d = entry.dev
      local bx = d:buffer(pack(x))
      local c = xpu.call { query = q, device = d, operands = { out = bx, x = bx, w = d:buffer(pack(w)), y = d:buffer(pack(y)) } }
      routes:bind(c):dispatch(c)
      fx.sync(d)
      same_bytes(want, bx:download(), entry.id .. " in place")
    end)
  end
end)

-- ---- rows and refusals ----------------------------------------------------------------------

describe("routes.layer_moe", function()
  local function refusal(t, q) return tostring(t:why_not_admissible(q)) end

  it("each row fires for its query and refuses one outside its gates, in its own words", function()
    local cases = {
      { "matvec_f32.decode", moe.matvec_query(1, 128, 2048), xpu.query { regime = "decode", format = "f32", in_dim = 0,
        out_dim = 128 }, "in_dim 0, out_dim 128: both must be 1 or more" },
      { "matvec_f32.decode", moe.matvec_query(1, 128, 2048), xpu.query { regime = "decode", format = "f32", in_dim = 2048,
        out_dim = 128, experts = 8 }, "expert bank: served by the id rows" },
      { "matvec_f32.prefill", moe.matvec_query(512, 128, 2048), moe.matvec_query(2, 1 << 20, 4096),
        "out_dim x in_dim is 4294967296 elements, 2^31 or more" },
      { "matvec_f32.prefill", moe.matvec_query(2, 128, 2048), xpu.query { regime = "prefill", format = "f32",
        in_dim = 2048, out_dim = 128 }, "query has no tokens" },
      { "moe_combine.f32", moe.combine_query(1, 8, 2048), moe.combine_query(1, 9, 2048), "used 9 is not 1 to 8" },
      { "moe_combine.f32", moe.combine_query(512, 8, 2048), moe.combine_query(1 << 20, 8, 4096),
        "tokens x n is 4294967296 elements, 2^31 or more" },
      { "moe_combine.f32", moe.combine_query(0, 1, 1), moe.combine_query(1, 1, 0), "n 0 is not 1 or more" },
    }
    for _, c in ipairs(cases) do
      local name, yes, no, words_ = c[1], c[2], c[3], c[4]
      assert.equal(name, routes:candidates(yes)[1].name, name .. " fires")
      assert.equal(0, #routes:candidates(no), name .. " does not fire")
      local why = refusal(routes, no)
      assert.is_truthy(why:find(words_, 1, true), name .. ": refusal '" .. why .. "' lacks '" .. words_ .. "'")
    end
  end)

  it("routes.moe serves the router's f32 decode query; routes.prefill its f32 batch", function()
    local dec, pre = require "routes.moe", require "routes.prefill"
    assert.equal("matvec_f32.decode", dec:candidates(moe.matvec_query(1, 128, 2048))[1].name)
    assert.equal("matvec_f32.prefill", pre:candidates(moe.matvec_query(64, 128, 2048))[1].name)
    -- a quantized weight is still the integer route's
    assert.is_nil(dec:candidates(xpu.query { regime = "decode", format = "q4_0", in_dim = 2048, out_dim = 128 })[1].name
      :match "f32")
  end)

  it("the kernels refuse a short buffer or a bad scalar by argument name", function()
    local function dispatch_error(q, ops)
      local bufs = {}
      for k, v in pairs(ops) do bufs[k] = cpu:buffer(v) end
      local c = xpu.call { query = q, device = cpu, operands = bufs }
      local row = routes:bind(c)
      local ok, err = pcall(row.dispatch, row, c)
      assert.is_false(ok, "dispatch should fail")
      return tostring(err)
    end
    local err = dispatch_error(moe.matvec_query(1, 4, 64), { y = 16, w = 4 * 4 * 64 - 4, x = 256 })
    assert.is_truthy(err:find("'w': buffer too short (1020 bytes, needs 1024)", 1, true), err)
    err = dispatch_error(moe.matvec_query(3, 4, 64), { y = 44, w = 1024, x = 768 })
    assert.is_truthy(err:find("'y': buffer too short (44 bytes, needs 48)", 1, true), err)
    err = dispatch_error(moe.combine_query(2, 8, 16), { out = 128, x = 128, w = 60, y = 1024 })
    assert.is_truthy(err:find("'w': buffer too short (60 bytes, needs 64)", 1, true), err)
    err = dispatch_error(moe.combine_query(2, 8, 16), { out = 128, x = 128, w = 64, y = 1020 })
    assert.is_truthy(err:find("'y': buffer too short (1020 bytes, needs 1024)", 1, true), err)
    err = dispatch_error(moe.combine_query(2, 8, 16), { out = 124, x = 128, w = 64, y = 1024 })
    assert.is_truthy(err:find("'out': buffer too short", 1, true), err)
    local s, b = cpu:default_stream(), cpu:buffer(4096)
    local k = cpu:kernel "moe_combine"
    local ok, e = pcall(k.launch, k, s, { 1 }, { 256 }, b, b, b, b, 1, 9, 16)
    assert.is_false(ok)
    assert.is_truthy(tostring(e):find("argument 'used': 9 is not 1 .. 8", 1, true), tostring(e))
    k = cpu:kernel "matvec_f32"
    ok, e = pcall(k.launch, k, s, { 1 }, { 128 }, b, b, b, 4, 0, 1)
    assert.is_false(ok)
    assert.is_truthy(tostring(e):find("argument 'cols': 0; it must be 1 or more", 1, true), tostring(e))
    ok, e = pcall(k.launch, k, s, { 1 }, { 256 }, b, b, b, 4, 4, 1)
    assert.is_false(ok, "a block other than the kernel's is refused")
  end)

  it("bench_case builds each kernel's decode and prefill case, and it runs", function()
    for _, k in ipairs(moe.KERNELS) do
      for _, size in ipairs { "decode", "prefill" } do
        local case = moe.bench_case(k, cpu, size)
        assert.is_true(case.bytes > 0 and #case.note > 0, k .. " " .. size)
        local c = xpu.call { query = case.query, device = cpu, operands = case.operands }
        routes:bind(c):dispatch(c)
        fx.sync(cpu)
      end
    end
    assert.has_error(function() moe.bench_case("matvec_f32", cpu, "huge") end)
    assert.has_error(function() moe.bench_case("nope", cpu, "decode") end)
  end)
end)
