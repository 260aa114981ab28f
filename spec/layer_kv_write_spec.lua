-- layer_kv_write_spec.lua — kv_write through routes.layer_kv: the f32 K and V rows of `tokens`
-- positions from pos[0] (a device buffer) rounded to f16 and stored at slot p % slots of both
-- caches. On cpu:0 the caches equal bytes computed here (an f16 encoder over the values in
-- Lua, src/quant/f16.h's NaN rule written out) with ==, NaN, infinities, f32 and f16
-- subnormals, ties and overflow to infinity among the inputs; the caches are poisoned first
-- and every slot not written is checked byte for byte. Tokens 1 and 7, a ring that wraps, a
-- position past many turns of it. vulkan:0 and cuda:0 == cpu:0 byte for byte. The row fires
-- and does not; bad arguments are refused by name. Then attention_decode reading that cache
-- with the position from the same buffer (the attention_decode_pos rows) == the scalar form
-- bit for bit, replayed by a deferred stream at a new position. A device that is absent is
-- reported skipped with the reason.
local xpu = require "xpu"
local kv = require "xpu.layers.kv"
local att = require "xpu.layers.attention"
local routes = require "routes.layer_kv"
local att_routes = require "routes.attention"
local fx = require "spec.support.fixtures"

local cpu = xpu.device "cpu:0"
local devices = fx.devices { "vulkan:0", "cuda:0" }

local POISONS = { "\255", "\123" } -- 0xffff (an f16 NaN), 0x7b7b (61280, finite)

-- ---- the expected halves, from the values ----------------------------------------------------

local function exponent(a)
  local e = math.floor(math.log(a, 2))
  while 2.0 ^ (e + 1) <= a do e = e + 1 end
  while 2.0 ^ e > a do e = e - 1 end
  return e
end

-- The f16 bits of the f32 with bits u: a NaN is sign | 0x7e00 | the payload's top 9 bits
-- (src/quant/f16.h); anything else the value rounded to nearest, ties to even, in doubles.
local function f16_of(u)
  local sign = (u >> 16) & 0x8000
  if u & 0x7f800000 == 0x7f800000 and u & 0x7fffff ~= 0 then return sign | 0x7e00 | (u & 0x7fffff) >> 13 end
  local x = string.unpack("<f", string.pack("<I4", u))
  local a = math.abs(x)
  if a == 0 then return sign end
  if a == math.huge then return sign | 0x7c00 end
  local q = 2.0 ^ (math.max(exponent(a), -14) - 10) -- the f16 quantum at a
  local m = a / q
  local r = math.floor(m)
  if m - r > 0.5 or (m - r == 0.5 and r % 2 == 1) then r = r + 1 end
  local v = r * q
  if v >= 65536 then return sign | 0x7c00 end
  if v < 2.0 ^ -14 then return sign | math.tointeger(v / 2.0 ^ -24) end
  local e = exponent(v)
  return sign | ((e + 15) << 10) | math.tointeger(v / 2.0 ^ (e - 10) - 1024)
end

-- f32 bits that round every way: NaNs (quiet, signalling, negative, payloads), infinities,
-- f32 subnormals, f16 subnormals and their ties, the overflow edge, ties to even, -0.
local SPECIAL = { 0x7fc00000, 0x7f800001, 0xffc12345, 0x7fbfe000, 0x7f800000, 0xff800000, 0x00000001, 0x807fffff,
                  0x33800000, 0x33000000, 0x33400000, 0x33c00000, 0x387fc000, 0x38800000, 0x477fe000, 0x477fefff,
                  0x477ff000, 0xc77ff000, 0x7f7fffff, 0x3f801000, 0x3f803000, 0x3f800fff, 0x80000000, 0x3f800001,
                  0x35a00000, 0xb8000001, 0x387fe000 }

-- n f32 bit patterns: seeded values of many sizes (never zero), SPECIAL spliced in from `at`.
local function rows_bits(n, seed, at)
  local r, t = fx.lcg(seed), {}
  for i = 1, n do
    local e = 100 + math.floor(r() * 60) -- 2^-27 .. 2^32: subnormal halves to infinities
    t[i] = (r() < 0.5 and 0x80000000 or 0) | e << 23 | math.floor(r() * 0x800000)
  end
  for j, u in ipairs(SPECIAL) do
    local i = ((at or 0) + 5 * j) % n + 1
    t[i] = u
  end
  return t
end

local function pack32(t) return string.pack("<" .. ("I4"):rep(#t), table.unpack(t)) end

-- The cache bytes after the write: poison everywhere, the tokens' halves at their slots.
local function expected(s, bits, pos, poison)
  local halves = {}
  local P = string.unpack("<I2", poison:rep(2))
  for i = 1, s.n_kv_head * s.slots * s.head_dim do halves[i] = P end
  local row = s.n_kv_head * s.head_dim
  for i = 0, s.tokens * row - 1 do
    local t, h, d = i // row, i % row // s.head_dim, i % s.head_dim
    local slot = (pos + t) % s.slots
    halves[(h * s.slots + slot) * s.head_dim + d + 1] = f16_of(bits[i + 1])
  end
  return string.pack("<" .. ("I2"):rep(#halves), table.unpack(halves)), halves
end

-- ---- one run through the route table -----------------------------------------------------------

-- kv_write of k / v bits at pos on d into caches poisoned with `poison`; returns the caches'
-- bytes, the row and the kernel's launches during the dispatch.
local function run(d, s, kb, vb, pos, poison)
  local cache = s.n_kv_head * s.slots * s.head_dim * 2
  local ops = { kc = d:buffer(poison:rep(cache)), vc = d:buffer(poison:rep(cache)), k = d:buffer(pack32(kb)),
                v = d:buffer(pack32(vb)), pos = d:buffer(string.pack("<i4", pos)) }
  local call = xpu.call { query = kv.query(s), device = d, operands = ops }
  local row = routes:bind(call)
  local k = d:kernel "kv_write"
  local before = k.launches
  row:dispatch(call)
  fx.sync(d)
  return ops.kc:download(), ops.vc:download(), row, k.launches - before
end

-- The first half where a and b differ, named for a person.
local function first_diff(a, b, s)
  for i = 1, #a // 2 do
    local x, y = string.unpack("<I2", a, 2 * i - 1), string.unpack("<I2", b, 2 * i - 1)
    if x ~= y then
      local e = i - 1
      return ("half %d (head %d, slot %d, d %d) is 0x%04x, not 0x%04x"):format(e, e // (s.slots * s.head_dim),
        e // s.head_dim % s.slots, e % s.head_dim, y, x)
    end
  end
end

local function same_cache(want, got, s, what)
  assert.equal(#want, #got, what .. ": lengths differ")
  if want ~= got then error(what .. ": " .. first_diff(want, got, s), 2) end
end

local CASES = {
  { name = "decode: 1 token, 4 KV heads of 64, 32 slots at 5", s = { tokens = 1, n_kv_head = 4, head_dim = 64, slots = 32 }, pos = 5 },
  { name = "prefill: 7 tokens, 2 KV heads of 128, 64 slots at 20", s = { tokens = 7, n_kv_head = 2, head_dim = 128, slots = 64 }, pos = 20 },
  { name = "the ring wraps: 7 tokens at 13 of 16 slots", s = { tokens = 7, n_kv_head = 3, head_dim = 6, slots = 16 }, pos = 13 },
  { name = "a position many turns on: 7 tokens at 16 * 1000 + 12", s = { tokens = 7, n_kv_head = 2, head_dim = 32, slots = 16 }, pos = 16012 },
  { name = "every slot: 16 tokens at 9 of 16", s = { tokens = 16, n_kv_head = 1, head_dim = 2, slots = 16 }, pos = 9 },
}

describe("kv_write on cpu:0", function()
  it("the encoder here rounds the special values as f16.h states", function()
    local want = { [0x7fc00000] = 0x7e00, [0x7f800001] = 0x7e00, [0xffc12345] = 0xfe09, [0x7fbfe000] = 0x7fff,
                   [0x7f800000] = 0x7c00, [0x00000001] = 0, [0x807fffff] = 0x8000, [0x33800000] = 1, [0x33000000] = 0,
                   [0x33400000] = 1, [0x33c00000] = 2, [0x477fe000] = 0x7bff, [0x477fefff] = 0x7bff,
                   [0x477ff000] = 0x7c00, [0x7f7fffff] = 0x7c00, [0x3f801000] = 0x3c00, [0x3f803000] = 0x3c02,
                   [0x80000000] = 0x8000, [0x38800000] = 0x0400, [0x387fc000] = 0x03ff, [0x387fe000] = 0x0400 }
    for u, h in pairs(want) do assert.equal(h, f16_of(u), ("0x%08x"):format(u)) end
  end)

  for _, c in ipairs(CASES) do
    for _, poison in ipairs(POISONS) do
      it(("%s, poison 0x%02x: == the bytes computed here, no other slot touched"):format(c.name, poison:byte()), function()
        local n = c.s.tokens * c.s.n_kv_head * c.s.head_dim
        local kb, vb = rows_bits(n, 7, 0), rows_bits(n, 8, 3)
        local kc, vc, row, launches = run(cpu, c.s, kb, vb, c.pos, poison)
        assert.same({ "kv_write.f16", 1 }, { row.name, launches })
        local wk, halves = expected(c.s, kb, c.pos, poison)
        same_cache(wk, kc, c.s, "K cache")
        same_cache((expected(c.s, vb, c.pos, poison)), vc, c.s, "V cache")
        local nans, written = 0, 0
        for slot = 0, c.s.slots - 1 do
          local d = (slot - c.pos) % c.s.slots
          if d < c.s.tokens then written = written + 1 end
        end
        for _, h in ipairs(halves) do if h & 0x7c00 == 0x7c00 and h & 0x3ff ~= 0 then nans = nans + 1 end end
        assert.equal(math.min(c.s.tokens, c.s.slots), written)
        if n >= 5 * #SPECIAL then assert.is_true(nans >= 4, "the NaN inputs made no NaN") end
      end)
    end
  end

  it("tokens 0 launches nothing and writes nothing", function()
    local s = { tokens = 0, n_kv_head = 2, head_dim = 8, slots = 4 }
    local kc, vc, row, launches = run(cpu, s, { 1 }, { 1 }, 1, "\123")
    assert.same({ "kv_write.f16", 0 }, { row.name, launches })
    assert.equal(("\123"):rep(2 * 4 * 8 * 2), kc)
    assert.equal(("\123"):rep(2 * 4 * 8 * 2), vc)
  end)
end)

for _, e in ipairs(devices) do
  describe("kv_write on " .. e.id .. " == cpu:0", function()
    for _, c in ipairs(CASES) do
      it(c.name .. ", byte for byte, both poisons", function()
        if not e.dev then return pending(e.skip) end
        local n = c.s.tokens * c.s.n_kv_head * c.s.head_dim
        local kb, vb = rows_bits(n, 11, 1), rows_bits(n, 12, 2)
        for _, poison in ipairs(POISONS) do
          local ck, cv = run(cpu, c.s, kb, vb, c.pos, poison)
          local dk, dv, row, launches = run(e.dev, c.s, kb, vb, c.pos, poison)
          assert.same({ "kv_write.f16", 1 }, { row.name, launches })
          same_cache(ck, dk, c.s, e.id .. " K cache")
          same_cache(cv, dv, c.s, e.id .. " V cache")
        end
      end)
    end
  end)
end

-- ---- the row: fires, does not, refuses by name ----------------------------------------------------

local function gate_of(t, q, name)
  local a = t:audit { q }
  for ri = 1, a.nrows do
    if a:row_name(ri) == name then return select(2, a:clause(1, ri)) end
  end
end

describe("routes.layer_kv", function()
  local S = { tokens = 1, n_kv_head = 8, head_dim = 128, slots = 4096 }
  local function with(extra)
    local s = {}
    for k, v in pairs(S) do s[k] = v end
    for k, v in pairs(extra) do s[k] = v end
    return kv.query(s)
  end

  it("kv_write.f16 fires for decode, prefill, a ring and a small head; its kernel runs", function()
    local qs = { with {}, with { tokens = 512 }, with { tokens = 4096 }, with { slots = 16, head_dim = 2, n_kv_head = 1 } }
    assert.equal(#qs, routes:audit_row("kv_write.f16", qs))
    local _, _, row, launches = run(cpu, { tokens = 3, n_kv_head = 1, head_dim = 4, slots = 8 }, rows_bits(12, 1),
      rows_bits(12, 2), 6, "\255")
    assert.same({ "kv_write.f16", 1 }, { row.name, launches })
  end)

  it("kv_write.f16 does not fire where it does not serve, and says why", function()
    local bad = {
      { with { tokens = 4097 }, "tokens 4097 do not fit the cache's 4096 slots at once" },
      { with { head_dim = 7 }, "head_dim 7 is odd" },
      { with { head_dim = 512 }, "head_dim 512 is not 2 .. 256" },
      { with { slots = 0 }, "slots 0 is not 1 .. 262144" },
      { with { n_kv_head = 0 }, "n_kv_head 0 is not 1 .. 65535" },
      { with { n_kv_head = 65535, slots = 262144 }, "a cache of 65535 x 262144 x 128 halves is 2^31 or more" },
      { xpu.query { regime = "kv_write", format = "f16", tokens = 1, n_kv_head = 8, slots = 64 }, "query has no head_dim" },
    }
    for _, b in ipairs(bad) do assert.equal(b[2], gate_of(routes, b[1], "kv_write.f16")) end
    local qs = {}
    for i, b in ipairs(bad) do qs[i] = b[1] end
    assert.equal(0, routes:audit_row("kv_write.f16", qs))
    assert.is_nil(routes:admissible(kv.query(S, "f32")))
    assert.equal("Format", routes:why_not_admissible(kv.query(S, "f32")).clause)
  end)

  it("the ready half refuses a missing or short operand, by name", function()
    local q = kv.query { tokens = 2, n_kv_head = 2, head_dim = 8, slots = 4 }
    local big = cpu:buffer(1024)
    local c = xpu.call { query = q, device = cpu, operands = { kc = big, vc = big, k = big, v = big } }
    assert.same({ "Ready", "operand 'pos' is missing (a buffer)" }, { routes:why_not_picked(c).clause, routes:why_not_picked(c).gate })
    c = xpu.call { query = q, device = cpu, operands = { kc = big, vc = cpu:buffer(64), k = big, v = big, pos = big } }
    assert.equal("operand 'vc' holds 64 bytes; the query needs 128", routes:why_not_picked(c).gate)
    c = xpu.call { query = q, device = cpu, operands = { kc = big, vc = big, k = big, v = big, pos = 3 } }
    assert.equal("operand 'pos' is missing (a buffer)", routes:why_not_picked(c).gate)
  end)

  it("a launch refuses bad arguments and caches that meet, by argument", function()
    local k = cpu:kernel "kv_write"
    local function refused(pattern, ...)
      local ok, err = pcall(k.launch, k, nil, { 1 }, { kv.BLOCK }, ...)
      assert.is_false(ok, "launched")
      assert.matches(pattern, err)
    end
    local kc, vc, rows, pos = cpu:buffer(4096), cpu:buffer(4096), cpu:buffer(4096), cpu:buffer(4)
    refused("argument 'hd': 7 is not an even width 2 .. 256", kc, vc, rows, rows, pos, 1, 2, 7, 16)
    refused("argument 'hd': 0 is not an even width", kc, vc, rows, rows, pos, 1, 2, 0, 16)
    refused("argument 'slots': 0 is not 1 .. 262144", kc, vc, rows, rows, pos, 1, 2, 8, 0)
    refused("argument 'n_kv_head': 0 heads", kc, vc, rows, rows, pos, 1, 0, 8, 16)
    refused("argument 'tokens': 17 positions do not fit the cache's 16 slots", kc, vc, rows, rows, pos, 17, 2, 8, 16)
    refused("argument 2 'vc': buffer too short %(64 bytes, needs 512%)", kc, cpu:buffer(64), rows, rows, pos, 1, 2, 8, 16)
    refused("argument 5 'pos': buffer too short", kc, vc, rows, rows, cpu:buffer(2), 1, 2, 8, 16)
    refused("argument 'kc' shares bytes with 'vc'", kc, kc, rows, rows, pos, 1, 2, 8, 16)
    refused("argument 'vc' shares bytes with 'k'", kc, vc, vc, rows, pos, 1, 2, 8, 16)
    refused("argument 'kc' shares bytes with 'pos'", kc, vc, rows, rows, kc:slice(100, 4), 1, 2, 8, 16)
    refused("argument 4 'v': base not aligned", kc, vc, rows, rows:slice(2, 1024), pos, 1, 2, 8, 16)
    -- views of one buffer that do not meet are fine
    local one = cpu:buffer(2048)
    k:launch(nil, { 1 }, { kv.BLOCK }, one:slice(0, 512), one:slice(512, 512), rows, rows, pos, 1, 2, 8, 16)
    fx.sync(cpu)
  end)
end)

-- ---- attention_decode reads the cache kv_write writes, the position from the buffer --------------

local H, D, GROUP = 2, 64, 4

-- A decode step on d: kv_write of one token's K and V at pos[0], then attention over the cache,
-- the position from the buffer (pos_rows) or as a scalar. Returns out's bytes and the row.
local function step(d, ops, s, p, pos_rows, stream)
  local aq = att.query("attention_decode", { n_head = H * GROUP, n_kv_head = H, head_dim = D, slots = s.slots,
                                            window = s.window, pos_buffer = pos_rows })
  local wc = xpu.call { query = kv.query { tokens = 1, n_kv_head = H, head_dim = D, slots = s.slots }, device = d,
                        stream = stream, operands = { kc = ops.k, vc = ops.v, k = ops.kr, v = ops.vr, pos = ops.pos } }
  routes:bind(wc):dispatch(wc)
  local aops = { out = ops.out, part = ops.part, q = ops.q, k = ops.k, v = ops.v, pos = pos_rows and ops.pos or p }
  local ac = xpu.call { query = aq, device = d, stream = stream, operands = aops }
  local row = att_routes:bind(ac)
  row:dispatch(ac)
  return row
end

-- The operands of a decode over `slots` slots on d: caches filled with seeded halves, a q, a
-- poisoned out and part big enough for either form.
local function decode_ops(d, slots, window)
  local cache = H * slots * D
  local q = att.query("attention_decode", { n_head = H * GROUP, n_kv_head = H, head_dim = D, slots = slots, window = window })
  return { k = d:buffer(att.f16_bytes(cache, 3)), v = d:buffer(att.f16_bytes(cache, 4)),
           q = d:buffer(att.floats(H * GROUP * D, 5)), out = d:buffer(("\255"):rep(4 * H * GROUP * D)),
           part = d:buffer(("\255"):rep(att.partial_bytes(q))), pos = d:buffer(4),
           kr = d:buffer(att.floats(H * D, 9)), vr = d:buffer(att.floats(H * D, 10)) }
end

local function f32_same(want, got, what)
  assert.equal(#want, #got, what .. ": lengths differ")
  local nans = 0
  for i = 1, #want // 4 do
    local a, b = want:sub(4 * i - 3, 4 * i), got:sub(4 * i - 3, 4 * i)
    if string.unpack("<f", b) ~= string.unpack("<f", b) then nans = nans + 1 end
    if a ~= b then
      error(("%s: element %d is %08x, not %08x"):format(what, i - 1, string.unpack("<I4", b), string.unpack("<I4", a)), 2)
    end
  end
  return nans
end

describe("attention_decode with the position from the buffer kv_write reads", function()
  local targets = { { id = "cpu:0", dev = cpu } }
  for _, e in ipairs(devices) do targets[#targets + 1] = e end
  -- slots, window, positions: a plain cache, a ring with a window (wrapping), a ring of one split
  local SHAPES = { { 512, 0, { 0, 1, 31, 32, 300, 511 } }, { 64, 48, { 47, 63, 64, 100, 1000 } }, { 16, 0, { 0, 7, 15 } } }
  for _, e in ipairs(targets) do
    for _, sh in ipairs(SHAPES) do
      it(("%s: %d slots, window %d: == the scalar form bit for bit at each position"):format(e.id, sh[1], sh[2]), function()
        if not e.dev then return pending(e.skip) end
        local d, s = e.dev, { slots = sh[1], window = sh[2] }
        local a, b = decode_ops(d, sh[1], sh[2]), decode_ops(d, sh[1], sh[2])
        local dec, comb = d:kernel "attention_decode_pos_hd64", d:kernel "attention_combine_pos"
        for _, p in ipairs(sh[3]) do
          a.pos:upload(string.pack("<i4", p)); b.pos:upload(string.pack("<i4", p))
          b.out:upload(("\255"):rep(4 * H * GROUP * D))
          local d0, c0 = dec.launches, comb.launches
          local rb = step(d, b, s, p, true)
          local ra = step(d, a, s, p, false)
          fx.sync(d)
          assert.same({ "attention_decode_pos.hd64", 1, 1 }, { rb.name, dec.launches - d0, comb.launches - c0 })
          assert.equal("attention_decode.hd64", ra.name)
          assert.equal(a.k:download(), b.k:download(), "the K caches differ at " .. p)
          -- no NaN: every output of the poisoned out was written
          assert.equal(0, f32_same(a.out:download(), b.out:download(), ("%s at %d"):format(e.id, p)))
        end
      end)
    end
  end

  for _, e in ipairs(targets) do
    it(e.id .. ": a deferred stream replays the recorded step at the next position, == the scalar form", function()
      if not e.dev then return pending(e.skip) end
      local d, s = e.dev, { slots = 128, window = 0 }
      local a, b = decode_ops(d, 128, 0), decode_ops(d, 128, 0)
      local st = d:stream()
      st:set_deferred(true)
      for p = 60, 66 do
        b.pos:upload(string.pack("<i4", p))
        b.out:upload(("\255"):rep(4 * H * GROUP * D))
        step(d, b, s, p, true, st)
        st:sync()
        a.pos:upload(string.pack("<i4", p))
        step(d, a, s, p, false)
        fx.sync(d)
        assert.equal(0, f32_same(a.out:download(), b.out:download(), ("%s deferred at %d"):format(e.id, p)))
      end
      assert.equal(a.v:download(), b.v:download(), "the V caches differ")
      st:release()
    end)

    it(e.id .. ": a position the cache cannot serve gives NaN throughout, and nothing else", function()
      if not e.dev then return pending(e.skip) end
      local d = e.dev
      local b = decode_ops(d, 64, 0)
      for _, p in ipairs { 64, 1000, -1 } do
        b.pos:upload(string.pack("<i4", p))
        b.out:upload(("\0"):rep(4 * H * GROUP * D))
        local aq = att.query("attention_decode", { n_head = H * GROUP, n_kv_head = H, head_dim = D, slots = 64, pos_buffer = 1 })
        local ac = xpu.call { query = aq, device = d, operands = { out = b.out, part = b.part, q = b.q, k = b.k, v = b.v, pos = b.pos } }
        att_routes:bind(ac):dispatch(ac)
        fx.sync(d)
        assert.equal(string.pack("<I4", 0x7fc00000):rep(H * GROUP * D), b.out:download(), "position " .. p)
      end
    end)
  end
end)

describe("routes.attention: the attention_decode_pos rows", function()
  local function q(hd, pos_buffer, extra)
    local s = { n_head = 32, n_kv_head = 8, head_dim = hd, slots = 4096, pos_buffer = pos_buffer }
    for k, v in pairs(extra or {}) do s[k] = v end
    return att.query("attention_decode", s)
  end
  for _, w in ipairs(att.WIDTHS) do
    local name, hd = "attention_decode_pos." .. w[1], w[2] or 96
    it(name .. " fires for a position buffer at its widths, not for a scalar position", function()
      assert.equal(3, att_routes:audit_row(name, { q(hd, true), q(hd, 1, { window = 512 }), q(hd, true, { slots = 1 }) }))
      assert.equal(0, att_routes:audit_row(name, { q(hd, false), q(hd, 0, { window = 512 }) }))
      assert.equal("pos_buffer is not 1 (the position is a scalar)", gate_of(att_routes, q(hd, false), name))
      assert.equal(name, att_routes:candidates(q(hd, true))[1].name)
      local scalar = "attention_decode." .. w[1]
      assert.equal("pos_buffer is 1 (the position is a buffer)", gate_of(att_routes, q(hd, true), scalar))
      assert.equal(0, att_routes:audit_row(scalar, { q(hd, true) }))
    end)
  end

  for _, w in ipairs(att.WIDTHS) do
    local name, hd = "attention_decode_pos." .. w[1], w[2] or 96
    it(name .. ": its kernel runs, then attention_combine_pos, == its scalar row", function()
      local s = { n_head = 8, n_kv_head = 2, head_dim = hd, slots = 40 }
      local cache = 2 * 40 * hd
      local ops = { k = cpu:buffer(att.f16_bytes(cache, 1)), v = cpu:buffer(att.f16_bytes(cache, 2)),
                    q = cpu:buffer(att.floats(8 * hd, 3)), pos = cpu:buffer(string.pack("<i4", 37)) }
      local outs = {}
      for _, pb in ipairs { true, false } do
        s.pos_buffer = pb
        local qq = att.query("attention_decode", s)
        local o = { out = cpu:buffer(("\255"):rep(4 * 8 * hd)), part = cpu:buffer(("\255"):rep(att.partial_bytes(qq))),
                    k = ops.k, v = ops.v, q = ops.q, pos = pb and ops.pos or 37 }
        local c = xpu.call { query = qq, device = cpu, operands = o }
        local row = att_routes:bind(c)
        local kern, comb = cpu:kernel(row.kernel), cpu:kernel(pb and "attention_combine_pos" or "attention_combine")
        local k0, c0 = kern.launches, comb.launches
        row:dispatch(c)
        fx.sync(cpu)
        assert.same({ pb and name or "attention_decode." .. w[1], 1, 1 }, { row.name, kern.launches - k0, comb.launches - c0 })
        outs[#outs + 1] = o.out:download()
      end
      assert.equal(0, f32_same(outs[2], outs[1], name))
    end)
  end

  it("the ready half wants pos as a buffer of 4 bytes", function()
    local qq = q(128, true, { slots = 64 })
    local big = cpu:buffer(att.partial_bytes(qq) + 8 * 64 * 128 * 2)
    local c = xpu.call { query = qq, device = cpu, operands = { out = big, part = big, q = big, k = big, v = big, pos = 7 } }
    assert.same({ "Ready", "operand 'pos' is missing" }, { att_routes:why_not_picked(c).clause, att_routes:why_not_picked(c).gate })
    c = xpu.call { query = qq, device = cpu, operands = { out = big, part = big, q = big, k = big, v = big, pos = cpu:buffer(2) } }
    assert.equal("operand 'pos' holds 2 bytes; the query needs 4", att_routes:why_not_picked(c).gate)
  end)

  it("a launch of the _pos forms refuses bad arguments by name", function()
    local b = cpu:buffer(1 << 20)
    local function refused(kernel, pattern, ...)
      local k = cpu:kernel(kernel)
      local ok, err = pcall(k.launch, k, nil, { 1 }, { att.BLOCK }, ...)
      assert.is_false(ok, kernel .. " launched")
      assert.matches(pattern, err)
    end
    refused("attention_decode_pos_hd64", "argument 'hd': 96 is not 64", b, b, b, b, b, 8, 2, 96, 64, 0, 32, 3, 0.1)
    refused("attention_decode_pos", "argument 'n_max': 0 is not 1 .. 2048", b, b, b, b, b, 8, 2, 96, 64, 0, 32, 0, 0.1)
    refused("attention_decode_pos", "argument 'split': 300 is not 1 .. 256", b, b, b, b, b, 8, 2, 96, 64, 0, 300, 3, 0.1)
    refused("attention_decode_pos", "argument 'scale': %-?nan", b, b, b, b, b, 8, 2, 96, 64, 0, 32, 3, 0 / 0)
    refused("attention_decode_pos", "argument 5 'pos': buffer too short", b, b, b, b, cpu:buffer(2), 8, 2, 96, 64, 0, 32, 3, 0.1)
    refused("attention_combine_pos", "argument 'n_max': 4096 is not 1 .. 2048", b, b, b, 8, 96, 4096, 0, 32, 64)
    refused("attention_combine_pos", "argument 'slots': 0 is not 1 .. 262144", b, b, b, 8, 96, 3, 0, 32, 0)
    refused("attention_combine_pos", "argument 2 'part': buffer too short", b, cpu:buffer(64), b, 8, 96, 3, 0, 32, 64)
  end)
end)
