-- moe_tail_spec.lua — the MoE tail, <fmt>_q8k_tail[_dot4]: the down bank and moe_combine in one
-- launch (y[r] += the weighted sum of every used expert's row r against its slot's q8_K row).
-- On every device present and every served format it is == the two launches it replaces (the
-- id mat-vec into a poisoned buffer, then moe_combine in place) and == cpu:0's tail, NaN counted
-- (a bad expert selection makes every element NaN), on a grid of a wave per element and on a
-- grid of two groups whose waves stride; through routes.moe its row fires for the down bank's
-- one-token query and refuses, by its own words, a dense matrix, more than eight experts, a
-- batch and a width that is no q8_K blocks; short buffers and a ninth expert are refused by
-- name. A device that is absent is reported skipped with the reason.
local xpu = require "xpu"
local q = xpu.quant
local fx = require "spec.support.fixtures"
local common = require "routes.common"
local routes = require "routes.moe"
local layer_moe = require "routes.layer_moe"
local moe = require "xpu.layers.moe"

local cpu = xpu.device "cpu:0"
local others = fx.devices { "vulkan:0", "cuda:0" }

local EXPERTS, ROWS, COLS = 9, 72, 512 -- 72 rows: nine groups of eight waves, the last one full
local SELS = { { 4, 0, 5, 2 }, { 1, 3, 0, 5, 2, 4, 1, 3 }, { 2 }, { 4, 9, 5, 2 } } -- the last: expert 9 of 9 (0 .. 8)

-- A down bank of fmt: its slab, the slots' activations (slot kk at q8_K block kk * COLS / 256),
-- the weights of the slots (magnitudes 2^-6 .. 2^6, both signs) and the residual.
local function case(fmt, used, seed)
  local w = {}
  local r = fx.lcg(seed)
  for i = 1, used do w[i] = (r() < 0.5 and -1 or 1) * (0.5 + r()) * 2.0 ^ math.floor(r() * 13 - 6) end
  return { slab = fx.weights(fmt, EXPERTS * ROWS, COLS, seed), x = fx.activation(COLS * used, seed + 1),
           w = fx.f32s(w), y = fx.f32_values(ROWS, seed + 2) }
end

local function sel_bytes(sel) return string.pack(("<" .. ("i4"):rep(#sel)), table.unpack(sel)) end

-- The tail kernel `name` on d over c (groups: a wave per element where nil); the residual after.
local function tail(d, name, c, sel, groups)
  local y = d:buffer(c.y)
  d:kernel(name):launch(nil, groups or (ROWS + 7) // 8, 256, y, d:buffer(c.slab), d:buffer(c.x), d:buffer(sel_bytes(sel)),
    d:buffer(c.w), EXPERTS, #sel, ROWS, COLS, COLS // 256)
  fx.sync(d)
  return y:download()
end

-- The two launches the tail replaces, on d: fmt's id mat-vec into a poisoned buffer, then
-- moe_combine through routes.layer_moe, in place on the residual.
local function pair(d, fmt, c, sel)
  local used = #sel
  local y, down = d:buffer(c.y), d:buffer(fx.POISON:rep(used * ROWS))
  d:kernel(fmt .. "_q8k_id"):launch(nil, (used * ROWS + 7) // 8, 256, down, d:buffer(c.slab), d:buffer(c.x),
    d:buffer(sel_bytes(sel)), EXPERTS, used, ROWS, COLS, COLS // 256, 0)
  local call = xpu.call { query = moe.combine_query(1, used, ROWS), device = d,
                          operands = { out = y, x = y, y = down, w = d:buffer(c.w) } }
  layer_moe:bind(call):dispatch(call)
  fx.sync(d)
  return y:download()
end

local function tail_query(fmt, used, extra)
  local spec = { regime = "moe_tail", format = fmt, in_dim = COLS, out_dim = ROWS, experts = EXPERTS, used = used,
                 x_row_blocks = COLS // 256 }
  for k, v in pairs(extra or {}) do spec[k] = v end
  return xpu.query(spec)
end

local function call_of(d, query)
  return xpu.call { query = query, device = d, receiver = { bound = true, resident = true } }
end

describe("the MoE tail (<fmt>_q8k_tail)", function()
  for _, fmt in ipairs(fx.formats) do
    it(("cpu:0 %s: == the id mat-vec then moe_combine, a NaN row for a bad selection, on both grids"):format(fmt), function()
      for si, sel in ipairs(SELS) do
        local c = case(fmt, #sel, 40 + si)
        local want = pair(cpu, fmt, c, sel)
        local what = ("%s sel {%s}"):format(fmt, table.concat(sel, ","))
        local nan = fx.same_or_nan(want, tail(cpu, fmt .. "_q8k_tail", c, sel), what)
        assert.equal(sel[2] == 9 and ROWS or 0, nan, what .. ": NaN count")
        fx.same_or_nan(want, tail(cpu, fmt .. "_q8k_tail", c, sel, 2), what .. ", two groups")
        assert.are_not.equal(c.y, want, what .. ": the residual did not change")
      end
    end)

    for _, e in ipairs(others) do
      local it_or_skip = e.dev and it or pending
      it_or_skip(("%s %s: == its own two launches and == cpu:0, plain and packed-dot forms%s"):format(e.id, fmt,
        e.skip and (" — " .. e.skip) or ""), function()
        local d, ran = e.dev, 0
        for _, name in ipairs { fmt .. "_q8k_tail", fmt .. "_q8k_tail_dot4" } do
          if d:kernel_available(name) then
            ran = ran + 1
            for si, sel in ipairs(SELS) do
              local c = case(fmt, #sel, 40 + si)
              local what = ("%s %s sel {%s}"):format(e.id, name, table.concat(sel, ","))
              local want = tail(cpu, fmt .. "_q8k_tail", c, sel)
              local nan = fx.same_or_nan(want, tail(d, name, c, sel), what .. " vs cpu:0")
              assert.equal(sel[2] == 9 and ROWS or 0, nan, what .. ": NaN count")
              fx.same_or_nan(pair(d, fmt, c, sel), tail(d, name, c, sel, 2), what .. ", two groups, vs its own pair")
            end
          end
        end
        assert.is_true(ran >= 1, e.id .. ": no tail kernel of " .. fmt .. " is built")
      end)
    end
  end

  it("routes.moe: the tail row fires for the down bank's one-token query, the packed-dot form where built", function()
    for _, e in ipairs { { id = "cpu:0", dev = cpu }, table.unpack(others) } do
      if e.dev then
        for _, fmt in ipairs(fx.formats) do
          local row = routes:pick(call_of(e.dev, tail_query(fmt, 8)))
          local dot4 = e.dev:kernel_available(fmt .. "_q8k_tail_dot4")
          assert.equal(fmt .. (dot4 and "-dot4-tail" or "-int-tail"), row and row.name, e.id)
          assert.equal(row.name, routes:pick(call_of(e.dev, common.tail_query(
            { format = fmt, cols = COLS, rows = ROWS, experts = EXPERTS }, 8))).name, "common.tail_query")
        end
      end
    end
  end)

  it("routes.moe: the tail rows refuse what they do not serve, in their own words", function()
    local cases = {
      { { experts = false }, "not an expert bank" },
      { { used = 9 }, "used 9 is not 1 to 8 experts a token" },
      { { used = 7, experts = 6 }, "used experts exceed the bank" },
      { { tokens = 2 }, "tokens 2: the tail serves one token" },
      { { in_dim = 300 }, "in width not a multiple of 256" },
    }
    for _, fmt in ipairs(fx.formats) do
      for _, cs in ipairs(cases) do
        local extra = {}
        for k, v in pairs(cs[1]) do extra[k] = v end
        local spec = { regime = "moe_tail", format = fmt, in_dim = COLS, out_dim = ROWS, experts = EXPERTS, used = 4 }
        for k, v in pairs(extra) do spec[k] = v or nil end
        local c = call_of(cpu, xpu.query(spec))
        assert.is_nil(routes:pick(c), fmt .. ": " .. cs[2])
        assert.matches(cs[2], tostring(routes:why_not_picked(c)), 1, true)
      end
      -- a bank that is not bound is the ready half's refusal
      local c = xpu.call { query = tail_query(fmt, 4), device = cpu, receiver = { bound = false } }
      assert.is_nil(routes:pick(c))
      assert.matches("slab is not bound", tostring(routes:why_not_picked(c)), 1, true)
    end
  end)

  it("refuses a short residual, a short slab and a ninth expert by name", function()
    local fmt = "q4_0"
    local c = case(fmt, 4, 7)
    local k = cpu:kernel(fmt .. "_q8k_tail")
    local sel = cpu:buffer(sel_bytes { 0, 1, 2, 3 })
    local function launch(y, slab, used, w)
      return pcall(k.launch, k, nil, 9, 256, y, slab, cpu:buffer(c.x .. c.x), sel, w or cpu:buffer(c.w), EXPERTS, used,
        ROWS, COLS, COLS // 256)
    end
    local ok, err = launch(cpu:buffer(c.y:sub(5)), cpu:buffer(c.slab), 4)
    assert.is_false(ok)
    assert.matches("'y'.*too short", err)
    ok, err = launch(cpu:buffer(c.y), cpu:buffer(c.slab:sub(2)), 4)
    assert.is_false(ok)
    assert.matches("'slab'.*too short", err)
    ok, err = launch(cpu:buffer(c.y), cpu:buffer(c.slab), 9, cpu:buffer(c.w:rep(3)))
    assert.is_false(ok)
    assert.matches("used 9 is over 8 experts a token", err, 1, true)
  end)
end)
