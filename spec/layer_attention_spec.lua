-- layer_attention_spec.lua — attention over the KV cache (attention_decode + attention_combine,
-- attention_prefill) through the rows of routes.attention: the CPU body against the doubles
-- (a stated tolerance) and, for decode, against an f32 simulation of docs/ARITHMETIC.md's
-- order written here (bit for bit); then every device present against the CPU with == (bits;
-- NaN counted, outputs poisoned first) at contexts 1, 7, 512, 4096, windows shorter than the
-- context (a ring of slots and a plain cache), GQA 32/8 and 8/8, head widths 64, 128 and 96
-- (the generic row); each row fires (its kernel's launches counted) and is refused by its
-- gate words. A device that is absent is reported skipped with the reason.
local xpu = require "xpu"
local att = require "xpu.layers.attention"
local routes = require "routes.attention"
local fx = require "spec.support.fixtures"

local cpu = xpu.device "cpu:0"
local devices = fx.devices { "vulkan:0", "cuda:0" }

local decode_f16 = function(s) return xpu.fixture.decode("f16", s) end
local decode_f32 = function(s) return xpu.fixture.decode("f32", s) end
local function f32(x) return (string.unpack("<f", string.pack("<f", x))) end
local NAN = string.pack("<f", 0 / 0)

-- ---- a case: shape, data, and one run through the route table -----------------------------

-- s: n_head, n_kv_head, head_dim, slots, window, tokens (prefill); at: pos (decode) or pos0.
local function case(kernel, s, at, seed)
  local cache = s.n_kv_head * s.slots * s.head_dim
  return { kernel = kernel, s = s, at = at, k = att.f16_bytes(cache, seed or 1), v = att.f16_bytes(cache, (seed or 1) + 1),
           q = att.floats((s.tokens or 1) * s.n_head * s.head_dim, (seed or 1) + 2) }
end

-- Binds and dispatches c's row on d; returns out's bytes, the row, and the launches of its
-- kernel and of attention_combine during the dispatch.
local function run(d, c, extra)
  local q = att.query(c.kernel, c.s)
  local n = #c.q
  local ops = { q = d:buffer(c.q), k = d:buffer(c.k), v = d:buffer(c.v), out = d:buffer(("\255"):rep(n)) }
  if c.kernel == "attention_decode" then
    ops.part = d:buffer(("\255"):rep(att.partial_bytes(q))); ops.pos = c.at
  else
    ops.pos0 = c.at
  end
  for k, v in pairs(extra or {}) do ops[k] = v end
  local call = xpu.call { query = q, device = d, operands = ops }
  local row = routes:bind(call)
  local kern, comb = d:kernel(row.kernel), d:kernel "attention_combine"
  local k0, c0 = kern.launches, comb.launches
  row:dispatch(call)
  fx.sync(d)
  return ops.out:download(), row, kern.launches - k0, comb.launches - c0
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
      error(("%s: element %d is %.9g (%08x), the CPU's %.9g"):format(what, i - 1, fb, string.unpack("<I4", b), fa), 2)
    end
  end
  return nans
end

local function lo_of(p, w) return (w > 0 and p + 1 > w) and p + 1 - w or 0 end

-- The doubles: softmax(q . k * scale) over the positions seen, times v, per query row.
local function doubles(c)
  local s, K, V, Q = c.s, decode_f16(c.k), decode_f16(c.v), decode_f32(c.q)
  local hd, group, scale = s.head_dim, s.n_head // s.n_kv_head, f32(1 / math.sqrt(s.head_dim))
  local out, first = {}, c.kernel == "attention_decode" and c.at or c.at
  for t = 0, (s.tokens or 1) - 1 do
    local pos = first + t
    for h = 0, s.n_head - 1 do
      local kh, sc, m = h // group, {}, -math.huge
      for p = lo_of(pos, s.window or 0), pos do
        local row, acc = ((kh * s.slots) + p % s.slots) * hd, 0
        for d = 1, hd do acc = acc + Q[(t * s.n_head + h) * hd + d] * K[row + d] end
        sc[p] = acc * scale
        m = math.max(m, sc[p])
      end
      local l = 0
      for p, x in pairs(sc) do sc[p] = math.exp(x - m); l = l + sc[p] end
      for d = 1, hd do
        local o = 0
        for p, e in pairs(sc) do o = o + e * V[((kh * s.slots) + p % s.slots) * hd + d] end
        out[(t * s.n_head + h) * hd + d] = o / l
      end
    end
  end
  return out
end

local function within(got_s, want, tol, what)
  local got = decode_f32(got_s)
  for i = 1, #want do
    if not (math.abs(got[i] - want[i]) <= tol) then
      error(("%s: element %d is %.9g, the doubles' %.9g (allowed %.3g)"):format(what, i - 1, got[i], want[i], tol), 2)
    end
  end
end

-- ---- the stated order in f32 (docs/ARITHMETIC.md), for decode ------------------------------

-- kernels/xmath.h's xm_exp, each step rounded to f32 as the C does it.
local function xm_exp(x)
  if x ~= x then return x end
  if x > f32(88.7228393) then return math.huge end
  if x < -87.0 then return 0.0 end
  local n = math.floor(f32(f32(x * f32(1.44269504)) + 0.5))
  local r = f32(x - f32(n * f32(0.693359375)))
  r = f32(r - f32(n * f32(-2.12194440e-4)))
  local p = f32(1.9875691500e-4)
  for _, c in ipairs { 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1 } do
    p = f32(f32(p * r) + f32(c))
  end
  p = f32(f32(f32(p * f32(r * r)) + r) + 1.0)
  local k = math.tointeger(n)
  local h = k // 2
  return f32(f32(p * 2.0 ^ h) * 2.0 ^ (k - h))
end

-- The splits, each head's partial (m, l, acc), then the combine, every step in f32.
local function f32_decode(c, split)
  local s, K, V, Q = c.s, decode_f16(c.k), decode_f16(c.v), decode_f32(c.q)
  local hd, group, scale, pos = s.head_dim, s.n_head // s.n_kv_head, f32(1 / math.sqrt(s.head_dim)), c.at
  local lo = lo_of(pos, s.window or 0)
  local out = {}
  for h = 0, s.n_head - 1 do
    local row0, parts = (h // group) * s.slots, {}
    for p0 = lo // split * split, pos, split do
      local e, m = {}, -math.huge
      for p = math.max(p0, lo), math.min(pos, p0 + split - 1) do
        local acc = 0.0
        for d = 1, hd do acc = f32(acc + f32(Q[h * hd + d] * K[(row0 + p % s.slots) * hd + d])) end
        e[#e + 1] = { p, f32(acc * scale) }
        m = math.max(m, e[#e][2])
      end
      local l, acc = 0.0, {}
      for _, pe in ipairs(e) do pe[2] = xm_exp(f32(pe[2] - m)); l = f32(l + pe[2]) end
      for d = 1, hd do
        local a = 0.0
        for _, pe in ipairs(e) do a = f32(a + f32(pe[2] * V[(row0 + pe[1] % s.slots) * hd + d])) end
        acc[d] = a
      end
      parts[#parts + 1] = { m = m, l = l, acc = acc }
    end
    local M = -math.huge
    for _, pt in ipairs(parts) do M = math.max(M, pt.m) end
    local L, w = 0.0, {}
    for i, pt in ipairs(parts) do w[i] = xm_exp(f32(pt.m - M)); L = f32(L + f32(pt.l * w[i])) end
    local inv = f32(1 / L)
    for d = 1, hd do
      local o = 0.0
      for i, pt in ipairs(parts) do o = f32(o + f32(pt.acc[d] * w[i])) end
      out[h * hd + d] = string.pack("<f", f32(o * inv))
    end
  end
  return table.concat(out)
end

-- ---- the CPU against the oracles ------------------------------------------------------------

local SMALL = {
  case("attention_decode", { n_head = 8, n_kv_head = 2, head_dim = 96, slots = 300 }, 250),
  case("attention_decode", { n_head = 4, n_kv_head = 4, head_dim = 64, slots = 7 }, 6),
  case("attention_decode", { n_head = 4, n_kv_head = 2, head_dim = 64, slots = 1 }, 0),
  case("attention_decode", { n_head = 4, n_kv_head = 2, head_dim = 64, slots = 100, window = 100 }, 777),
  case("attention_decode", { n_head = 4, n_kv_head = 1, head_dim = 32, slots = 600, window = 70 }, 555),
}

describe("attention on cpu:0 == the Lua oracles", function()
  it("decode: bit for bit the f32 steps in the stated order (splits, partials, combine)", function()
    for _, c in ipairs(SMALL) do
      local got = run(cpu, c)
      local what = ("decode %d/%d hd %d slots %d window %d pos %d"):format(c.s.n_head, c.s.n_kv_head, c.s.head_dim,
        c.s.slots, c.s.window or 0, c.at)
      assert.equal(f32_decode(c, att.split(att.query(c.kernel, c.s))), got, what)
    end
  end)

  it("decode and prefill: within 2^-18 of the doubles' softmax(q k * scale) v", function()
    local cases = { table.unpack(SMALL) }
    cases[#cases + 1] = case("attention_prefill", { n_head = 8, n_kv_head = 2, head_dim = 96, slots = 300, tokens = 37 }, 200)
    cases[#cases + 1] = case("attention_prefill", { n_head = 4, n_kv_head = 2, head_dim = 64, slots = 200, window = 100,
                                                    tokens = 50 }, 1000)
    cases[#cases + 1] = case("attention_prefill", { n_head = 2, n_kv_head = 2, head_dim = 64, slots = 7, tokens = 7 }, 0)
    for _, c in ipairs(cases) do
      within(run(cpu, c), doubles(c), 2 ^ -18, c.kernel .. " " .. c.s.head_dim)
    end
  end)

  it("the split is part of the arithmetic: another split gives other bits, both near the doubles", function()
    local c = SMALL[1]
    local a, b = run(cpu, c), run(cpu, c, { split = 64 })
    assert.equal(f32_decode(c, 64), b)
    assert.are_not.equal(a, b)
    within(b, doubles(c), 2 ^ -18, "split 64")
  end)
end)

-- ---- every device against the CPU ----------------------------------------------------------

local DECODE = {
  { { n_head = 32, n_kv_head = 8, head_dim = 128, slots = 4096 }, { 0, 6, 511, 4095 }, "hd128" },
  { { n_head = 8, n_kv_head = 8, head_dim = 64, slots = 4096 }, { 0, 6, 511, 4095 }, "hd64" },
  { { n_head = 8, n_kv_head = 2, head_dim = 96, slots = 512 }, { 0, 6, 511 }, "generic" },
  { { n_head = 32, n_kv_head = 8, head_dim = 128, slots = 4096, window = 256 }, { 4000 }, "hd128" },
  { { n_head = 8, n_kv_head = 2, head_dim = 64, slots = 100, window = 100 }, { 99, 777 }, "hd64" },
}

local PREFILL = {
  { { n_head = 8, n_kv_head = 8, head_dim = 64, slots = 7, tokens = 7 }, 0, "hd64" },
  { { n_head = 8, n_kv_head = 2, head_dim = 96, slots = 512, tokens = 37 }, 475, "generic" },
  { { n_head = 32, n_kv_head = 8, head_dim = 128, slots = 4096, tokens = 3 }, 4093, "hd128" },
  { { n_head = 4, n_kv_head = 2, head_dim = 64, slots = 200, window = 100, tokens = 50 }, 1000, "hd64" },
}

for _, entry in ipairs(devices) do
  local function dev_it(name, fn)
    it(name, function()
      if not entry.dev then return pending(entry.skip) end
      fn(entry.dev)
    end)
  end

  describe("attention on " .. entry.id .. " == cpu:0", function()
    dev_it("decode at contexts 1, 7, 512, 4096 and windows, GQA 32/8, 8/8, 8/2: bit for bit, two launches", function(d)
      for _, dc in ipairs(DECODE) do
        for _, pos in ipairs(dc[2]) do
          local c = case("attention_decode", dc[1], pos, pos + 3)
          local what = ("%s decode %d/%d hd %d slots %d window %d pos %d"):format(entry.id, c.s.n_head, c.s.n_kv_head,
            c.s.head_dim, c.s.slots, c.s.window or 0, pos)
          local got, row, launches, combines = run(d, c)
          assert.equal("attention_decode." .. dc[3], row.name, what)
          assert.same({ 1, 1 }, { launches, combines }, what .. ": launches of " .. row.kernel .. " and the combine")
          assert.equal(0, same(run(cpu, c), got, what), what .. ": NaN count")
        end
      end
    end)

    dev_it("decode with a NaN in a query head and in one V element: exactly those outputs NaN", function(d)
      local s = { n_head = 32, n_kv_head = 8, head_dim = 128, slots = 512 }
      local c = case("attention_decode", s, 300, 9)
      c.q = c.q:sub(1, 4 * (5 * 128 + 17)) .. NAN .. c.q:sub(4 * (5 * 128 + 18) + 1)   -- head 5: all NaN
      local at = 2 * ((2 * 512 + 123) * 128 + 40)                                       -- KV head 2, position 123, d 40
      c.v = c.v:sub(1, at) .. "\255\127" .. c.v:sub(at + 3)
      -- head 5's 128 outputs, and d 40 of KV head 2's four query heads (8 .. 11)
      assert.equal(128 + 4, same(run(cpu, c), (run(d, c)), entry.id .. " decode NaN"))
    end)

    dev_it("prefill at contexts 7, 512, 4096 and a ring window: bit for bit, one launch", function(d)
      for _, pc in ipairs(PREFILL) do
        local c = case("attention_prefill", pc[1], pc[2], pc[2] + 5)
        local what = ("%s prefill %d/%d hd %d tokens %d pos0 %d"):format(entry.id, c.s.n_head, c.s.n_kv_head,
          c.s.head_dim, c.s.tokens, pc[2])
        local got, row, launches = run(d, c)
        assert.equal("attention_prefill." .. pc[3], row.name, what)
        assert.equal(1, launches, what .. ": launches of " .. row.kernel)
        assert.equal(0, same(run(cpu, c), got, what), what .. ": NaN count")
      end
    end)

    dev_it("prefill with a NaN in one query row: exactly that row NaN", function(d)
      local s = { n_head = 4, n_kv_head = 2, head_dim = 64, slots = 64, tokens = 20 }
      local c = case("attention_prefill", s, 40, 4)
      local at = 4 * ((3 * 4 + 1) * 64 + 9)                                             -- token 3, head 1
      c.q = c.q:sub(1, at) .. NAN .. c.q:sub(at + 5)
      assert.equal(64, same(run(cpu, c), (run(d, c)), entry.id .. " prefill NaN"))
    end)
  end)
end

-- ---- the cache as the shape ops write it ------------------------------------------------------

-- Tokens 0 .. last written one at a time into an f16 [2, slots, 64] K and V cache through the
-- write_slice contract (position p at slot p) or write_slice_rotating's (the position from a
-- buffer, slot p % slots), then decoded at `last` from those very buffers: the caches are the
-- bytes assembled here by that layout, and attention over them is the CPU's over those bytes.
local H, D = 2, 64
local contracts = assert(xpu.contracts.try_load("contracts/shape-ops.md"))
local function contract_for(d, op)
  for _, c in ipairs(contracts) do
    if c.kernel == op and d:supports(c.code_capability) then return c end
  end
end

local function write_tokens(d, op, slots, last)
  local c = assert(contract_for(d, op), op .. " has no contract on " .. d.id)
  local cache, want, bufs = {}, {}, {}
  for _, name in ipairs { "k", "v" } do
    local dest = d:buffer(att.f16_bytes(H * slots * D, 77))
    local rows = {}
    for i = 0, H * slots - 1 do rows[i] = att.f16_bytes(H * slots * D, 77):sub(2 * D * i + 1, 2 * D * (i + 1)) end
    for p = 0, last do
      local tok = att.f16_bytes(H * D, 1000 * #name + p)
      local inputs = { source = { dtype = "f16", shape = { H, 1, D }, buffer = d:buffer(tok) },
                       dest = { dtype = "f16", shape = { H, slots, D }, buffer = dest } }
      local params = { ranges = { { 0, H }, { p, p + 1 }, { 0, D } } }
      if op == "write_slice_rotating" then
        inputs.position = { dtype = "u32", shape = { 1 }, buffer = d:buffer(string.pack("<I4", p)) }
        params = { axis = 1, modulus = slots, ranges = { { 0, H }, { 0, 1 }, { 0, D } } }
      end
      c:launch { inputs = inputs, params = params }
      for h = 0, H - 1 do rows[h * slots + p % slots] = tok:sub(2 * D * h + 1, 2 * D * (h + 1)) end
    end
    fx.sync(d)
    cache[name], bufs[name] = dest:download(), dest
    want[name] = table.concat(rows, "", 0, H * slots - 1)
  end
  return cache, want, bufs
end

describe("attention reads the cache write_slice and write_slice_rotating write", function()
  local targets = { { id = "cpu:0", dev = cpu } }
  for _, e in ipairs(devices) do targets[#targets + 1] = e end
  for _, e in ipairs(targets) do
    for _, w in ipairs { { "write_slice", 32, 19, 0 }, { "write_slice_rotating", 16, 39, 16 } } do
      it(("%s: %s, %d slots, decoded at %d (window %d)"):format(e.id, w[1], w[2], w[3], w[4]), function()
        if not e.dev then return pending(e.skip) end
        local cache, want, bufs = write_tokens(e.dev, w[1], w[2], w[3])
        assert.equal(want.k, cache.k, "the K cache is not the layout's bytes")
        assert.equal(want.v, cache.v, "the V cache is not the layout's bytes")
        local c = case("attention_decode", { n_head = 4, n_kv_head = H, head_dim = D, slots = w[2], window = w[4] }, w[3])
        c.k, c.v = cache.k, cache.v
        local got = run(e.dev, c, bufs) -- the written buffers themselves: no copy between
        assert.equal(0, same(run(cpu, c), got, e.id .. " " .. w[1]))
        within(got, doubles(c), 2 ^ -18, e.id .. " " .. w[1] .. " against the doubles")
      end)
    end
  end
end)

-- ---- the rows: each fires, and does not where it does not serve -------------------------------

local function shape(hd, extra)
  local s = { n_head = 32, n_kv_head = 8, head_dim = hd, slots = 4096, tokens = 512 }
  for k, v in pairs(extra or {}) do s[k] = v end
  return s
end

-- The clause and gate of row `name` for q, from the audit (every row's answer).
local function gate_of(q, name)
  local a = routes:audit { q }
  for ri = 1, a.nrows do
    if a:row_name(ri) == name then return select(2, a:clause(1, ri)) end
  end
end

describe("routes.attention", function()
  for _, kernel in ipairs(att.KERNELS) do
    for _, w in ipairs(att.WIDTHS) do
      local name = kernel .. "." .. w[1]
      local hd = w[2] or 96
      it(name .. " fires for its head widths; its kernel runs", function()
        local qs = {}
        for _, s in ipairs { shape(hd), shape(hd, { n_kv_head = 32 }), shape(hd, { window = 512 }), shape(hd, { slots = 1 }) } do
          qs[#qs + 1] = att.query(kernel, s)
        end
        assert.equal(#qs, routes:audit_row(name, qs))
        local c = case(kernel, shape(hd, { slots = 64, tokens = 5 }), 63)
        if kernel == "attention_prefill" then c.at = 59 end
        local _, row, launches = run(cpu, c)
        assert.same({ name, 1 }, { row.name, launches })
      end)

      it(name .. " is refused by its gate words", function()
        if w[2] then
          local other = w[2] == 64 and 128 or 64
          local cands = routes:candidates(att.query(kernel, shape(other)))
          for _, r in ipairs(cands) do assert.are_not.equal(name, r.name) end
          assert.equal(0, routes:audit_row(name, { att.query(kernel, shape(other)), att.query(kernel, shape(96)) }))
          assert.equal(("head_dim 96 is not %d"):format(w[2]), gate_of(att.query(kernel, shape(96)), name))
        else
          assert.equal("head_dim 512 is past 256", gate_of(att.query(kernel, shape(512)), name))
          assert.equal("head_dim 97 is odd", gate_of(att.query(kernel, shape(97)), name))
          assert.equal(0, routes:audit_row(name, { att.query(kernel, shape(512)), att.query(kernel, shape(97)) }))
        end
        assert.equal(0, routes:audit_row(name, { att.query(kernel, shape(hd, { n_kv_head = 5 })) }))
      end)
    end

    it(kernel .. ": a 96-wide head routes to the generic row; a 512-wide one is refused naming every row's gate", function()
      local cands = routes:candidates(att.query(kernel, shape(96)))
      assert.equal(1, #cands)
      assert.equal(kernel .. ".generic", cands[1].name)
      local why = routes:why_not_admissible(att.query(kernel, shape(512)))
      assert.equal("Shape", why.clause)
      local line = tostring(why)
      assert.matches(kernel .. "%.generic[^;]*head_dim 512 is past 256", line)
      assert.matches(kernel .. "%.hd128[^;]*head_dim 512 is not 128", line)
      assert.matches(kernel .. "%.hd64[^;]*head_dim 512 is not 64", line)
    end)
  end

  it("the shape half refuses heads that do not group, an odd width and a missing fact, by name", function()
    local function gate(kernel, s)
      return routes:why_not_admissible(att.query(kernel, s)).gate
    end
    assert.equal("n_head 32 is not a multiple of n_kv_head 5", gate("attention_decode", shape(96, { n_kv_head = 5 })))
    assert.equal("256 query heads per KV head, more than 128", gate("attention_decode", shape(96, { n_head = 256, n_kv_head = 1 })))
    local q = xpu.query { regime = "attention_prefill", format = "f16", n_head = 8, n_kv_head = 8, head_dim = 96, slots = 64 }
    assert.equal("query has no tokens", gate_of(q, "attention_prefill.generic"))
  end)

  it("the ready half refuses a missing or short operand, by name", function()
    local q = att.query("attention_decode", shape(128, { slots = 64 }))
    local big = cpu:buffer(att.partial_bytes(q) + 8 * 64 * 128 * 2)
    local c = xpu.call { query = q, device = cpu, operands = { out = big, q = big, k = big, v = big } }
    local why = routes:why_not_picked(c)
    assert.same({ "Ready", "operand 'part' is missing" }, { why.clause, why.gate })
    c = xpu.call { query = q, device = cpu, operands = { out = big, q = big, k = cpu:buffer(64), v = big, part = big } }
    assert.equal(("operand 'k' holds 64 bytes; the query needs %d"):format(8 * 64 * 128 * 2), routes:why_not_picked(c).gate)
  end)

  it("a launch refuses a width it is not built for, positions past the cache and a bad split, by argument", function()
    local b = cpu:buffer(1 << 20)
    local function refused(kernel, pattern, ...)
      local k = cpu:kernel(kernel)
      local ok, err = pcall(k.launch, k, nil, { 1 }, { att.BLOCK }, ...)
      assert.is_false(ok, kernel .. " launched")
      assert.matches(pattern, err)
    end
    refused("attention_decode_hd64", "argument 'hd': 96 is not 64", b, b, b, b, 8, 2, 96, 64, 10, 0, 32, 0.1)
    refused("attention_decode", "argument 'pos': positions 0 .. 64 are seen, more than the cache's 64 slots hold",
      b, b, b, b, 8, 2, 96, 64, 64, 0, 32, 0.1)
    refused("attention_decode", "argument 'split': 300 is not 1 .. 256", b, b, b, b, 8, 2, 96, 64, 10, 0, 300, 0.1)
    refused("attention_decode", "argument 'n_head': 8 is not a multiple of n_kv_head 3", b, b, b, b, 8, 3, 96, 64, 10, 0, 32, 0.1)
    refused("attention_decode", "argument 'scale': inf", b, b, b, b, 8, 2, 96, 64, 10, 0, 32, 1 / 0)
    refused("attention_prefill", "argument 'pos0': positions 0 .. 69 are seen", b, b, b, b, 10, 8, 2, 96, 64, 60, 0, 0.1)
    refused("attention_prefill_hd128", "argument 'hd': 64 is not 128", b, b, b, b, 1, 8, 2, 64, 64, 0, 0, 0.1)
    refused("attention_decode", "argument 4 'v'", b, b, b, cpu:buffer(64), 8, 2, 96, 64, 10, 0, 32, 0.1)
    local q = att.query("attention_decode", shape(128, { slots = 64 }))
    local c = xpu.call { query = q, device = cpu, operands = { out = b, q = b, k = b, v = b, part = b } }
    local ok, err = pcall(function() routes:bind(c):dispatch(c) end)
    assert.is_false(ok)
    assert.matches("operand 'pos' is %-1, not in 0 .. 4294967294", err)
  end)

  it("bench_case: decode and prefill cases that run, with their bytes, flops and ctx", function()
    local s = { n_head = 8, n_kv_head = 2, head_dim = 64, slots = 256, tokens = 16 }
    local dc = att.bench_case("attention_decode", cpu, s)
    assert.same({ 2 * 2 * 256 * 64 * 2, 4 * 256 * 8 * 64, 256 }, { dc.bytes, dc.flops, dc.ctx })
    local pc = att.bench_case("attention_prefill", cpu, s)
    local pairs_seen = 0
    for p = 240, 255 do pairs_seen = pairs_seen + p + 1 end
    assert.same({ 2 * 2 * 256 * 64 * 2, 4 * pairs_seen * 8 * 64, 256 }, { pc.bytes, pc.flops, pc.ctx })
    for _, bc in ipairs { dc, pc } do
      local c = xpu.call { query = bc.query, device = cpu, operands = bc.operands }
      routes:bind(c):dispatch(c)
      fx.sync(cpu)
      local out = decode_f32(bc.operands.out:download())
      for i = 1, #out do assert.is_true(out[i] == out[i], "bench case output NaN") end
    end
  end)
end)
