-- layer_gemm_spec.lua — the prefill GEMMs through the rows of routes.prefill: every format at
-- T = 2, 7, 64, 65 and 512 tokens, each token's outputs against the decode mat-vec's portable
-- body on the host (==, element by element, NaN counted, outputs poisoned first), on the CPU
-- and on every device present; the grouped form over expert_map's lists (ragged counts, an
-- expert with no token, one activation a token or one a pair) against the same reference and
-- against the dense GEMM run on one expert's gathered tokens; each row firing (its kernel's
-- launch count) and refused by its gate words; the grid a launch makes, and a grid of sixteen
-- groups flagged as one that cannot fill a device. An absent device is reported skipped with
-- the reason.
local xpu = require "xpu"
local G = require "xpu.layers.gemm"
local routes = require "routes.prefill"
local select_routes = require "routes.layer_select"
local fx = require "spec.support.fixtures"

local devices = fx.devices { "cpu:0", "vulkan:0", "cuda:0" }

local ROWS, COLS = 20, 1280 -- 20 rows: a partial row tile; 40 blocks of 32 wrap the 32 accumulators
local TOKENS = { 2, 7, 64, 65, 512 }

local function dev_it(entry, name, fn)
  it(name, function()
    if not entry.dev then return pending(entry.skip) end
    fn(entry.dev)
  end)
end

-- got == want as f32 words, element by element; the NaN count of got; some output non-zero.
local function gate(want, got, what)
  assert.equal(#want, #got, what .. ": lengths")
  local nan, nonzero = 0, false
  for i = 1, #got, 4 do
    local g = string.unpack("<f", got, i)
    if g ~= g then nan = nan + 1 end
    if g == g and g ~= 0 then nonzero = true end
    if got:sub(i, i + 3) ~= want:sub(i, i + 3) then
      error(("%s: output %d is %.9g, the reference %.9g"):format(what, (i - 1) // 4, g,
        (string.unpack("<f", want, i))), 2)
    end
  end
  assert.equal(0, nan, what .. ": NaN outputs")
  assert.is_true(nonzero, what .. ": all outputs zero")
end

-- Runs q on d with the operands (strings uploaded; buffers as they are), y poisoned first:
-- through `row` when given, else the row the table binds. Returns y downloaded, the row and
-- its kernel's launches during the dispatch.
local function run(d, q, inputs, y_bytes, row)
  local ops = { y = d:buffer(("\255"):rep(y_bytes)) }
  for k, v in pairs(inputs) do ops[k] = type(v) == "string" and d:buffer(v) or v end
  local c = xpu.call { query = q, device = d, operands = ops }
  row = row or routes:bind(c)
  local k = d:kernel(row.kernel)
  local before = k.launches
  row:dispatch(c)
  fx.sync(d)
  return ops.y:download(), row, k.launches - before
end

-- expert_map on d over ids: the four list buffers gemm_id reads.
local function expert_map(d, ids_bytes, tokens, used, experts)
  local pairs = tokens * used
  local ops = { counts = d:buffer(experts * 4), offsets = d:buffer(experts * 4), tokens = d:buffer(pairs * 4),
                slots = d:buffer(pairs * 4), ids = d:buffer(ids_bytes) }
  local q = xpu.query { regime = "expert_map", format = "i32", tokens = tokens, k = used, n_expert = experts }
  local c = xpu.call { query = q, device = d, operands = ops }
  select_routes:bind(c):dispatch(c)
  return { counts = ops.counts, offsets = ops.offsets, list_tokens = ops.tokens, list_slots = ops.slots }
end

local weights, acts = {}, {}
local function fixture(fmt)
  weights[fmt] = weights[fmt] or G.weights(fmt, ROWS, COLS, 3)
  acts[1] = acts[1] or G.activations(1024, COLS, 5)
  return weights[fmt], acts[1]
end

for _, entry in ipairs(devices) do
  describe("gemm on " .. entry.id, function()
    for _, fmt in ipairs(G.formats) do
      dev_it(entry, fmt .. ": every token's outputs are the decode mat-vec's, T = 2, 7, 64, 65, 512", function(d)
        local w, xall = fixture(fmt)
        for _, T in ipairs(TOKENS) do
          local x = xall:sub(1, T * COLS // 256 * 320)
          local q = G.query(fmt, T, ROWS, COLS)
          local want = G.reference(fmt, w, x, T, ROWS, COLS)
          local tile = T >= 128 and 128 or 64
          local _, bound = run(d, q, { w = w, x = x }, T * ROWS * 4)
          local has_mma = false
          for _, f in ipairs(G.MMA_FORMATS) do has_mma = has_mma or f == fmt end
          local mma = has_mma and d:supports "mma_int8" and d:kernel(G.kernel_name(fmt, tile, "mma")).available
          assert.equal(("gemm.%s.%st%d"):format(fmt, mma and "mma." or "", tile), bound.name)
          -- every row the device admits for the shape, each through its own kernel
          local names = {}
          for _, row in ipairs(routes:candidates(q, d)) do
            local got, _, launches = run(d, q, { w = w, x = x }, T * ROWS * 4, row)
            assert.equal(1, launches, row.name .. " launched once")
            gate(want, got, ("%s %s T %d"):format(entry.id, row.name, T))
            names[#names + 1] = row.name
          end
          assert.is_truthy(#names >= 1 and names[1] == bound.name, table.concat(names, ", "))
        end
      end)
    end
  end)

  describe("gemm_id on " .. entry.id, function()
    local E, K = 6, 2
    for _, fmt in ipairs(G.formats) do
      dev_it(entry, fmt .. ": one launch over the expert map, ragged, expert 3 with no token, x per token and per pair",
        function(d)
          local slab = G.weights(fmt, ROWS * E, COLS, 7)
          for _, T in ipairs { 7, 65, 300 } do
            local ids_bytes, ids = G.expert_ids(T, K, E, 11 + T, 3)
            for _, per_slot in ipairs { 0, 1 } do
              local x = G.activations(per_slot == 1 and T * K or T, COLS, 13)
              local ops = expert_map(d, ids_bytes, T, K, E)
              ops.slab, ops.x = slab, x
              local q = G.id_query(fmt, T, ROWS, COLS, E, K, per_slot)
              local want = G.id_reference(fmt, slab, x, ids, T, K, ROWS, COLS, per_slot)
              local tile = G.expert_share(q) >= 128 and 128 or 64
              local mma = d:supports "mma_int8" and d:kernel(G.kernel_name(fmt, tile, "id_mma")).available
              local _, bound = run(d, q, ops, T * K * ROWS * 4)
              assert.equal(("gemm_id.%s.%st%d"):format(fmt, mma and "mma." or "", tile), bound.name)
              -- every row the device admits for the shape, each through its own kernel
              for _, row in ipairs(routes:candidates(q, d)) do
                local got, _, launches = run(d, q, ops, T * K * ROWS * 4, row)
                assert.equal(1, launches, row.name .. " launched once")
                gate(want, got, ("%s %s T %d per_slot %d"):format(entry.id, row.name, T, per_slot))
              end
            end
          end
        end)
    end

    dev_it(entry, "equals the dense gemm run on one expert's gathered tokens, every format", function(d)
      local T = 65
      local ids_bytes, ids = G.expert_ids(T, K, E, 5, 3)
      local x = G.activations(T, COLS, 17)
      for _, fmt in ipairs(G.formats) do
        local slab = G.weights(fmt, ROWS * E, COLS, 9)
        local ops = expert_map(d, ids_bytes, T, K, E)
        local lt, ls = ops.list_tokens, ops.list_slots
        ops.slab, ops.x = slab, x
        local got = run(d, G.id_query(fmt, T, ROWS, COLS, E, K, 0), ops, T * K * ROWS * 4)
        -- expert 0's pairs in list order, and their tokens' activations gathered
        local rb = #slab // (ROWS * E)
        local pairs, xs = {}, {}
        for p = 0, T * K - 1 do
          if ids[p + 1] == 0 then
            pairs[#pairs + 1] = p
            xs[#xs + 1] = G.x_row(x, p // K, COLS)
          end
        end
        assert.is_true(#pairs >= 2, "expert 0 has tokens")
        local dense = run(d, G.query(fmt, #pairs, ROWS, COLS), { w = slab:sub(1, ROWS * rb), x = table.concat(xs) },
          #pairs * ROWS * 4)
        for i, p in ipairs(pairs) do
          assert.equal(dense:sub((i - 1) * ROWS * 4 + 1, i * ROWS * 4), got:sub(p * ROWS * 4 + 1, (p + 1) * ROWS * 4),
            ("%s %s: pair %d, the dense gemm's token %d"):format(entry.id, fmt, p, i - 1))
        end
        assert.is_truthy(lt and ls)
      end
    end)
  end)
end

describe("prefill rows", function()
  local function refusal(q) return tostring(routes:why_not_admissible(q)) end

  it("each row fires for its query and is refused by its gate words", function()
    local cases = {}
    for _, f in ipairs(G.formats) do
      local block = math.max(256, xpu.quant.info(f).block_elems)
      cases[#cases + 1] = { "gemm." .. f .. ".t64", G.query(f, 65, 64, 512), G.query(f, 1, 64, 512),
        "tokens 1 is not 2 to 4096" }
      cases[#cases + 1] = { "gemm." .. f .. ".t64", G.query(f, 7, 64, 512), G.query(f, 7, 64, block + 32),
        ("in_dim %d is not a positive multiple of %d"):format(block + 32, block) }
      cases[#cases + 1] = { "gemm." .. f .. ".t128", G.query(f, 512, 64, 512), G.query(f, 4097, 64, 512),
        "tokens 4097 is not 2 to 4096" }
      cases[#cases + 1] = { "gemm_id." .. f .. ".t64", G.id_query(f, 512, 64, 512, 128, 8),
        G.id_query(f, 512, 64, 512, 4, 8), "used experts exceed the bank" }
      cases[#cases + 1] = { "gemm_id." .. f .. ".t128", G.id_query(f, 512, 64, 512, 16, 4),
        G.id_query(f, 512, 64, 512, 16, 4, 2), "per_slot 2 is not 0 or 1" }
    end
    for _, c in ipairs(cases) do
      local name, yes, no, words = c[1], c[2], c[3], c[4]
      assert.equal(name, routes:candidates(yes)[1].name, name .. " fires")
      local why = refusal(no)
      assert.is_truthy(why:find(words, 1, true), name .. ": refusal '" .. why .. "' lacks '" .. words .. "'")
    end
  end)

  it("the tensor-core rows need mma_int8: first where a device has it, passed over where not", function()
    local cpu = xpu.device "cpu:0"
    for _, f in ipairs(G.MMA_FORMATS) do
      local q, q65 = G.query(f, 512, 64, 512), G.query(f, 65, 64, 512)
      local mma, mma64 = routes:row("gemm." .. f .. ".mma.t128"), routes:row("gemm." .. f .. ".mma.t64")
      assert.same({ "mma_int8" }, mma.needs)
      assert.is_true(mma.priority > routes:row("gemm." .. f .. ".t128").priority)
      -- the declared half admits them; the CPU, which has no mma_int8, is served by the next
      local a = routes:audit { q, q65 }
      for ri = 1, a.nrows do
        local name = a:row_name(ri)
        if name == mma.name then
          assert.equal("Admitted", (a:clause(1, ri)))
          assert.equal("Shape", (a:clause(2, ri)))
        end
        if name == mma64.name then
          assert.equal("Admitted", (a:clause(2, ri)))
        end
      end
      assert.is_false(cpu:supports "mma_int8")
      assert.equal("gemm." .. f .. ".t128", routes:candidates(q, cpu)[1].name)
      assert.equal("gemm." .. f .. ".t64", routes:candidates(q65, cpu)[1].name)
      -- the grouped tensor-core rows likewise
      local id = routes:row("gemm_id." .. f .. ".mma.t64")
      assert.same({ "mma_int8" }, id.needs)
      assert.is_true(id.priority > routes:row("gemm_id." .. f .. ".t128").priority)
      assert.equal("gemm_id." .. f .. ".t64", routes:candidates(G.id_query(f, 512, 64, 512, 128, 8), cpu)[1].name)
    end
    assert.is_true(#G.MMA_FORMATS >= 4, "the tensor-core formats: " .. table.concat(G.MMA_FORMATS, ","))
    -- the staged rows: mma_int8 too, under the tensor-core rows until measured faster
    for _, f in ipairs(G.MMAS_FORMATS) do
      local staged = routes:row("gemm." .. f .. ".mmas.t64")
      assert.same({ "mma_int8" }, staged.needs)
      assert.is_true(staged.priority < routes:row("gemm." .. f .. ".mma.t64").priority)
      assert.is_true(staged.priority > routes:row("gemm." .. f .. ".t128").priority)
      assert.equal("gemm." .. f .. ".t64", routes:candidates(G.query(f, 65, 64, 512), cpu)[1].name)
    end
    assert.is_true(#G.MMAS_FORMATS >= 4, "the staged formats: " .. table.concat(G.MMAS_FORMATS, ","))
  end)

  it("the 128-token tiles are refused where the 64-token tile pads less, in their own words", function()
    local qs = { G.query("q4_0", 65, 64, 512), G.query("q4_0", 130, 64, 512), G.query("q4_0", 256, 64, 512),
                 G.query("q4_0", 200, 64, 512), G.id_query("q4_0", 512, 64, 512, 128, 8),
                 G.id_query("q4_0", 512, 64, 512, 16, 4), G.id_query("q4_0", 512, 64, 512, 128, 8) }
    local a = routes:audit(qs)
    local function clause(qi, name)
      for ri = 1, a.nrows do
        if a:row_name(ri) == name then return a:clause(qi, ri) end
      end
    end
    local want = {
      { "gemm.q4_0.t128", "Shape", "tokens 65 under the 128-token tile" },
      { "gemm.q4_0.t128", "Shape", "tokens 130 pad 126 dead tokens in 128-token tiles, 62 in 64-token ones" },
      { "gemm.q4_0.t128", "Admitted" },
      { "gemm.q4_0.t128", "Admitted" }, -- 200: 56 dead either way
      { "gemm_id.q4_0.t128", "Shape", "an expert's expected tokens 32 under the 128-token tile" },
      { "gemm_id.q4_0.t128", "Admitted" },
      { "gemm.q4_0.t64", "Shape", "expert bank: served by the gemm_id rows" },
    }
    for qi, w in ipairs(want) do
      local c, gatew = clause(qi, w[1])
      assert.equal(w[2], c, ("query %d, %s"):format(qi, w[1]))
      if w[3] then assert.equal(w[3], gatew, ("query %d, %s"):format(qi, w[1])) end
    end
    assert.equal(0, a:unserved_count())
  end)

  it("counts the grid a launch makes and flags one of sixteen groups as unable to fill a device", function()
    -- seed §25.3.1: one expert's 64 padded tokens over 128 rows at the 64-token tile
    local q = G.query("iq4_nl", 64, 128, 2048)
    assert.equal(16, G.groups(q, 64))
    local why = G.fill_refusal(G.groups(q, 64), 132)
    assert.equal("16 workgroups on 132 compute units: the grid cannot fill the device", why)
    assert.is_nil(G.fill_refusal(G.groups(G.query("q4_0", 512, 4096, 4096), 128), 132))
    assert.equal(512 * 4, G.groups(G.query("q4_0", 512, 4096, 4096), 128))
    -- the bank: 512 x 8 pairs over 128 experts at the 64-token tile, 96 row tiles
    assert.equal(96 * (4096 // 64 + 128), G.groups(G.id_query("q4_0", 512, 768, 2048, 128, 8), 64))
    local d = xpu.device "cpu:0"
    local case = G.bench_case(d, { format = "q4_0", tokens = 64, rows = 128, cols = 2048 })
    local y, row, launches = run(d, case.query, { w = case.operands.w, x = case.operands.x }, 64 * 128 * 4)
    assert.equal(1, launches)
    assert.equal("gemm.q4_0.t64", row.name)
    gate(G.reference("q4_0", G.weights("q4_0", 128, 2048, 5), G.activations(64, 2048, 9), 64, 128, 2048), y,
      "the bench case")
  end)

  it("the kernels refuse a short buffer or inconsistent scalars by argument name", function()
    local d = xpu.device "cpu:0"
    local function err_of(q, ops)
      local c = xpu.call { query = q, device = d, operands = ops }
      local ok, e = pcall(function() routes:bind(c):dispatch(c) end)
      assert.is_false(ok, "dispatch should fail")
      return tostring(e)
    end
    local xrow = 512 // 256 * 320
    local e = err_of(G.query("q8_0", 4, 8, 512), { y = d:buffer(4 * 8 * 4), w = d:buffer(8 * 544), x = d:buffer(4 * xrow - 1) })
    assert.is_truthy(e:find("'x': buffer too short", 1, true), e)
    e = err_of(G.query("q8_0", 4, 8, 512), { y = d:buffer(4 * 8 * 4 - 4), w = d:buffer(8 * 544), x = d:buffer(4 * xrow) })
    assert.is_truthy(e:find("'y': buffer too short", 1, true), e)
    local ops = { y = d:buffer(8 * 2 * 8 * 4), slab = d:buffer(4 * 8 * 544), x = d:buffer(8 * xrow), counts = d:buffer(12),
                  offsets = d:buffer(16), list_tokens = d:buffer(64), list_slots = d:buffer(64) }
    e = err_of(G.id_query("q8_0", 8, 8, 512, 4, 2), ops)
    assert.is_truthy(e:find("'counts': buffer too short", 1, true), e)
    local k = d:kernel "q8_0_q8k_gemm_id_t64"
    local ok, e2 = pcall(k.launch, k, d:default_stream(), 1, 256, ops.y, ops.slab, ops.x, ops.counts, ops.offsets,
      ops.list_tokens, ops.list_slots, 4, 2, 8, 8, 512, 3)
    assert.is_false(ok)
    assert.is_truthy(tostring(e2):find("argument 'per_slot': 3 is not 0", 1, true), tostring(e2))
  end)
end)
