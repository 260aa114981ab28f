-- moe_tail_norm_spec.lua — the MoE tail with the next layer's norm, <fmt>_q8k_tail_norm[_dot4]:
-- the tail (y[r] += the weighted sum of every used expert's row r), then rms_norm_q8k of the
-- finished residual into a q8_K row, in one launch (the group that counts last normalises, and
-- sets the count back to 0). On every device present and every served format: y and xq are ==
-- the tail followed by rms_norm_q8k on the same device, and == cpu:0's, NaN counted; the count
-- is 0 after each launch, so a second launch on the same count is right too; on a grid of a
-- wave per element and on a strided grid of two groups. Through routes.moe the row fires for the
-- down bank's one-token query and refuses, in its own words, a residual of no whole q8_K blocks
-- and the tail's own refusals; short buffers, a width of no whole blocks and a bad eps are
-- refused by name. A device that is absent is reported skipped with the reason.
local xpu = require "xpu"
local fx = require "spec.support.fixtures"
local common = require "routes.common"
local routes = require "routes.moe"

local cpu = xpu.device "cpu:0"
local others = fx.devices { "vulkan:0", "cuda:0" }

-- 512 residual elements: two q8_K blocks, 64 groups of eight waves
local EXPERTS, ROWS, COLS, EPS = 9, 512, 512, 1e-5
local SELS = { { 4, 0, 5, 2 }, { 1, 3, 0, 5, 2, 4, 1, 3 }, { 2 }, { 4, 9, 5, 2 } } -- the last: expert 9 of 9 (0 .. 8)

local function sel_bytes(sel) return string.pack(("<" .. ("i4"):rep(#sel)), table.unpack(sel)) end

-- A down bank of fmt, the slots' activations and weights, the residual and the norm's weight.
local function case(fmt, used, seed)
  local w = {}
  local r = fx.lcg(seed)
  for i = 1, used do w[i] = (r() < 0.5 and -1 or 1) * (0.5 + r()) * 2.0 ^ math.floor(r() * 13 - 6) end
  return { slab = fx.weights(fmt, EXPERTS * ROWS, COLS, seed), x = fx.activation(COLS * used, seed + 1),
           w = fx.f32s(w), y = fx.f32_values(ROWS, seed + 2), norm_w = fx.f32_values(ROWS, seed + 3) }
end

local XQ_BYTES = ROWS // 256 * 320

-- The tail-and-norm kernel `name` on d (groups: a wave per element where nil), launched `times`
-- over one count buffer; the residual, the pack and the count after.
local function tail_norm(d, name, c, sel, groups, times)
  local y, xq, count = d:buffer(c.y), d:buffer(fx.POISON:rep(XQ_BYTES // 4)), d:buffer(string.pack("<I4", 0))
  local args = { d:buffer(c.slab), d:buffer(c.x), d:buffer(sel_bytes(sel)), d:buffer(c.w), EXPERTS, #sel, ROWS, COLS,
                 COLS // 256, xq, d:buffer(c.norm_w), count, EPS }
  for _ = 1, times or 1 do -- the residual and the pack afresh: the last launch must have normed
    y:upload(c.y)
    xq:upload(fx.POISON:rep(XQ_BYTES // 4))
    d:kernel(name):launch(nil, groups or ROWS // 8, 256, y, table.unpack(args))
  end
  fx.sync(d)
  return y:download(), xq:download(), string.unpack("<I4", count:download())
end

-- The two launches it replaces, on d: fmt's tail, then rms_norm_q8k of the residual.
local function pair(d, fmt, c, sel)
  local y, xq = d:buffer(c.y), d:buffer(fx.POISON:rep(XQ_BYTES // 4))
  d:kernel(fmt .. "_q8k_tail"):launch(nil, ROWS // 8, 256, y, d:buffer(c.slab), d:buffer(c.x), d:buffer(sel_bytes(sel)),
    d:buffer(c.w), EXPERTS, #sel, ROWS, COLS, COLS // 256)
  d:kernel("rms_norm_q8k"):launch(nil, 1, 256, xq, y, d:buffer(c.norm_w), 1, ROWS, EPS)
  fx.sync(d)
  return y:download(), xq:download()
end

-- The first differing byte of two packs, or nil.
local function first_diff(a, b)
  if #a ~= #b then return ("%d bytes, want %d"):format(#b, #a) end
  for i = 1, #a do
    if a:byte(i) ~= b:byte(i) then return ("byte %d (block %d, word %d)"):format(i - 1, (i - 1) // 320, (i - 1) % 320 // 4) end
  end
end

local function check(want_y, want_xq, got_y, got_xq, count, sel, what)
  local nan = fx.same_or_nan(want_y, got_y, what .. ": the residual")
  assert.equal(sel[2] == 9 and ROWS or 0, nan, what .. ": NaN count")
  assert.is_nil(first_diff(want_xq, got_xq), what .. ": the pack")
  assert.equal(0, count, what .. ": the count after")
end

local function tail_norm_query(fmt, used, extra)
  local spec = { regime = "moe_tail_norm", format = fmt, in_dim = COLS, out_dim = ROWS, experts = EXPERTS, used = used,
                 x_row_blocks = COLS // 256 }
  for k, v in pairs(extra or {}) do spec[k] = v end
  return xpu.query(spec)
end

local function call_of(d, query)
  return xpu.call { query = query, device = d, receiver = { bound = true, resident = true } }
end

describe("the MoE tail with the next norm (<fmt>_q8k_tail_norm)", function()
  for _, fmt in ipairs(fx.formats) do
    it(("cpu:0 %s: == the tail then rms_norm_q8k, the count left 0, on both grids and launched twice"):format(fmt), function()
      for si, sel in ipairs(SELS) do
        local c = case(fmt, #sel, 60 + si)
        local want_y, want_xq = pair(cpu, fmt, c, sel)
        local what = ("%s sel {%s}"):format(fmt, table.concat(sel, ","))
        local y, xq, count = tail_norm(cpu, fmt .. "_q8k_tail_norm", c, sel)
        check(want_y, want_xq, y, xq, count, sel, what)
        y, xq, count = tail_norm(cpu, fmt .. "_q8k_tail_norm", c, sel, 2, 2)
        check(want_y, want_xq, y, xq, count, sel, what .. ", two groups, twice")
        assert.are_not.equal(c.y, want_y, what .. ": the residual did not change")
        if sel[2] ~= 9 then assert.are_not.equal(("\0"):rep(XQ_BYTES), want_xq, what .. ": a zero pack") end
      end
    end)

    for _, e in ipairs(others) do
      local it_or_skip = e.dev and it or pending
      it_or_skip(("%s %s: == its own tail then rms_norm_q8k and == cpu:0, plain and packed-dot forms%s"):format(e.id, fmt,
        e.skip and (" — " .. e.skip) or ""), function()
        local d, ran = e.dev, 0
        for _, name in ipairs { fmt .. "_q8k_tail_norm", fmt .. "_q8k_tail_norm_dot4" } do
          if d:kernel_available(name) then
            ran = ran + 1
            for si, sel in ipairs(SELS) do
              local c = case(fmt, #sel, 60 + si)
              local what = ("%s %s sel {%s}"):format(e.id, name, table.concat(sel, ","))
              local cy, cxq = tail_norm(cpu, fmt .. "_q8k_tail_norm", c, sel)
              local y, xq, count = tail_norm(d, name, c, sel)
              check(cy, cxq, y, xq, count, sel, what .. " vs cpu:0")
              local py, pxq = pair(d, fmt, c, sel)
              y, xq, count = tail_norm(d, name, c, sel, 2, 2)
              check(py, pxq, y, xq, count, sel, what .. ", two groups, twice, vs its own pair")
            end
          end
        end
        assert.is_true(ran >= 1, e.id .. ": no tail_norm kernel of " .. fmt .. " is built")
      end)
    end
  end

  it("routes.moe: the tail-and-norm row fires for the down bank's one-token query, the packed-dot form where built", function()
    for _, e in ipairs { { id = "cpu:0", dev = cpu }, table.unpack(others) } do
      if e.dev then
        for _, fmt in ipairs(fx.formats) do
          local row = routes:pick(call_of(e.dev, tail_norm_query(fmt, 8)))
          local dot4 = e.dev:kernel_available(fmt .. "_q8k_tail_norm_dot4")
          assert.equal(fmt .. (dot4 and "-dot4-tail-norm" or "-int-tail-norm"), row and row.name, e.id)
          assert.equal(row.name, routes:pick(call_of(e.dev, common.tail_norm_query(
            { format = fmt, cols = COLS, rows = ROWS, experts = EXPERTS }, 8))).name, "common.tail_norm_query")
        end
      end
    end
  end)

  it("routes.moe: the tail-and-norm rows refuse what they do not serve, in their own words", function()
    local cases = {
      { { out_dim = 72 }, "out_dim 72: the residual is no whole q8_K blocks (256) for the next norm's pack" },
      { { experts = false }, "not an expert bank" },
      { { used = 9 }, "used 9 is not 1 to 8 experts a token" },
      { { tokens = 2 }, "tokens 2: the tail serves one token" },
      { { in_dim = 300 }, "in width not a multiple of 256" },
    }
    for _, fmt in ipairs(fx.formats) do
      for _, cs in ipairs(cases) do
        local spec = { regime = "moe_tail_norm", format = fmt, in_dim = COLS, out_dim = ROWS, experts = EXPERTS, used = 4 }
        for k, v in pairs(cs[1]) do spec[k] = v or nil end
        local c = call_of(cpu, xpu.query(spec))
        assert.is_nil(routes:pick(c), fmt .. ": " .. cs[2])
        assert.matches(cs[2], tostring(routes:why_not_picked(c)), 1, true)
      end
      local c = xpu.call { query = tail_norm_query(fmt, 4), device = cpu, receiver = { bound = false } }
      assert.is_nil(routes:pick(c))
      assert.matches("slab is not bound", tostring(routes:why_not_picked(c)), 1, true)
    end
  end)

  it("refuses a short pack, a short count, a residual of no whole blocks and a bad eps by name", function()
    local fmt = "q4_0"
    local c = case(fmt, 4, 7)
    local k = cpu:kernel(fmt .. "_q8k_tail_norm")
    local sel = cpu:buffer(sel_bytes { 0, 1, 2, 3 })
    local function launch(o)
      return pcall(k.launch, k, nil, ROWS // 8, 256, cpu:buffer(o.y or c.y), cpu:buffer(c.slab), cpu:buffer(c.x), sel,
        cpu:buffer(c.w), EXPERTS, 4, o.rows or ROWS, COLS, COLS // 256, cpu:buffer(o.xq or ("\0"):rep(XQ_BYTES)),
        cpu:buffer(c.norm_w), cpu:buffer(o.count or string.pack("<I4", 0)), o.eps or EPS)
    end
    local ok, err = launch { xq = ("\0"):rep(XQ_BYTES - 4) }
    assert.is_false(ok)
    assert.matches("'xq'.*too short", err)
    ok, err = launch { count = "\0\0" }
    assert.is_false(ok)
    assert.matches("'count'.*too short", err)
    ok, err = launch { rows = 72 }
    assert.is_false(ok)
    assert.matches("rows 72: the residual is no whole q8_K blocks", err, 1, true)
    ok, err = launch { eps = 0 / 0 }
    assert.is_false(ok)
    assert.matches("argument 'eps'", err, 1, true)
  end)
end)
