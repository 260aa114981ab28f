-- gemm_tile_spec.lua — the prefill GEMM's tile chosen by K through Autotune (seed §25.3): the
-- 128-token rows refuse a K below the measured partition in the query (facts tile_k for the
-- dp4a and grouped rows, mma_tile_k for the tensor-core rows) in their own words and fire from
-- it on; with no partition the padding rule alone chooses; the least-cost split of a sweep;
-- xpu.layers.gemm.partition reading the store (entries validated one by one: a corrupt line
-- or another binary's is not read); scripts/tune-gemm.lua measuring on cpu:0, storing, and a
-- prefill query built from what it stored picking the tile it chose, with the same bytes out.
local xpu = require "xpu"
local G = require "xpu.layers.gemm"
local autotune = require "xpu.autotune"
local routes = require "routes.prefill"
local fx = require "spec.support.fixtures"

local function refusal(q)
  return tostring(routes:why_not_admissible(q))
end

-- The row the audit says answered query qi, and its clause and gate words.
local function clause_of(qs, name)
  local a = routes:audit(qs)
  local out = {}
  for ri = 1, a.nrows do
    if a:row_name(ri) == name then
      for qi = 1, #qs do out[qi] = { a:clause(qi, ri) } end
    end
  end
  return out
end

describe("gemm tile partition by K", function()
  it("the 128-token rows fire from the partition's K on and refuse below it, by name", function()
    for _, f in ipairs { "q4_0", "q8_0", "q4_K", "q6_K" } do
      local at = G.query(f, 512, 64, 4096, { tile_k = 4096 })
      local below = G.query(f, 512, 64, 2048, { tile_k = 4096 })
      assert.equal(("gemm.%s.t128"):format(f), routes:candidates(at)[1].name, f .. ": at the partition")
      local c = clause_of({ at, below }, ("gemm.%s.t128"):format(f))
      assert.equal("Admitted", c[1][1])
      assert.equal("Shape", c[2][1])
      assert.equal("in_dim 2048 is below tile_k 4096, the K from which the 128-token tile was measured faster", c[2][2])
      -- below the partition the 64-token tile serves the same batch
      local cpu = xpu.device "cpu:0"
      assert.equal(("gemm.%s.t64"):format(f), routes:candidates(below, cpu)[1].name, f .. ": below the partition")
    end
  end)

  it("a partition of NEVER keeps the 128-token tile off at every K; 0 and none leave the padding rule", function()
    local never = G.query("q4_0", 512, 64, 14336, { tile_k = G.NEVER })
    assert.equal("gemm.q4_0.t64", routes:candidates(never, xpu.device "cpu:0")[1].name)
    assert.truthy(clause_of({ never }, "gemm.q4_0.t128")[1][2]:find("not faster at any K measured here", 1, true))
    for _, part in ipairs { { tile_k = 0 }, {} } do
      assert.equal("gemm.q4_0.t128", routes:candidates(G.query("q4_0", 512, 64, 256, part))[1].name)
      -- the padding rule still refuses a ragged batch
      local why = clause_of({ G.query("q4_0", 130, 64, 14336, part) }, "gemm.q4_0.t128")[1][2]
      assert.equal("tokens 130 pad 126 dead tokens in 128-token tiles, 62 in 64-token ones", why)
    end
  end)

  it("the tensor-core and grouped rows read their own facts", function()
    for _, f in ipairs(G.MMA_FORMATS) do
      local q = G.query(f, 512, 64, 2048, { tile_k = 0, mma_tile_k = 4096 })
      local mma = clause_of({ q }, ("gemm.%s.mma.t128"):format(f))[1]
      assert.equal("Shape", mma[1])
      assert.equal("in_dim 2048 is below mma_tile_k 4096, the K from which the 128-token tile was measured faster", mma[2])
      assert.equal("Admitted", clause_of({ q }, ("gemm.%s.t128"):format(f))[1][1])
    end
    local id_at = G.id_query("q8_0", 2048, 64, 2048, 128, 8, 0, { id_tile_k = 2048, tile_k = G.NEVER })
    local id_below = G.id_query("q8_0", 2048, 64, 1024, 128, 8, 0, { id_tile_k = 2048 })
    assert.equal("gemm_id.q8_0.t128", routes:candidates(id_at)[1].name, "the dense partition is not the bank's")
    local c = clause_of({ id_below }, "gemm_id.q8_0.t128")[1]
    assert.equal("in_dim 1024 is below tile_k 2048, the K from which the 128-token tile was measured faster", c[2])
    assert.equal("gemm_id.q8_0.t64", routes:candidates(id_below, xpu.device "cpu:0")[1].name)
  end)

  it("the split of a sweep costs least, each K weighed alike", function()
    local ks = { 1024, 4096, 8192, 14336 }
    assert.equal(8192, G.best_split(ks, { 1, 1, 2, 2 }, { 2, 2, 1, 1 }))
    assert.equal(0, G.best_split(ks, { 2, 2, 2, 2 }, { 1, 1, 1, 1 }))
    assert.equal(G.NEVER, G.best_split(ks, { 1, 1, 1, 1 }, { 3, 3, 3, 3 }))
    assert.equal(0, G.best_split(ks, { 1, 1, 1, 1 }, { 1, 1, 1, 1 }), "a tie keeps the padding rule's choice")
    -- one noisy K does not flip the rest: t128 loses only at 4096
    assert.equal(0, G.best_split(ks, { 2, 1, 2, 2 }, { 1, 1.1, 1, 1 }))
    -- a large K's microseconds do not outweigh a small K's
    assert.equal(4096, G.best_split(ks, { 10, 1000, 2000, 3000 }, { 20, 900, 1900, 2900 }))
  end)

  describe("read from Autotune", function()
    local tmp, remove = fx.temps()
    local dir
    before_each(function()
      dir = tmp()
      os.remove(dir)
      autotune.cache_dir = dir
      G.forget_partitions()
    end)
    after_each(function()
      autotune.cache_dir = nil
      G.forget_partitions()
      remove()
    end)

    it("is empty with no store, and reads each key the tuner writes", function()
      local d = xpu.device "cpu:0"
      assert.same({}, G.partition(d, "q4_0"))
      local keys = G.partition_keys("q4_0")
      assert.equal("gemm.tile_k.q4_0", keys.tile_k)
      assert.equal("gemm.mma.tile_k.q4_0", keys.mma_tile_k)
      assert.equal("gemm_id.tile_k.q4_0", keys.id_tile_k)
      assert.is_true(autotune.remember(d, keys.tile_k, "8192"))
      assert.is_true(autotune.remember(d, keys.id_tile_k, tostring(G.NEVER)))
      assert.same({}, G.partition(d, "q4_0"), "read once per process until forgotten")
      G.forget_partitions()
      assert.same({ tile_k = 8192, id_tile_k = G.NEVER }, G.partition(d, "q4_0"))
      assert.same({}, G.partition(d, "q8_0"), "another format's partition is its own")
    end)

    it("drops a value that is not a K, and a line edited by hand, alone", function()
      local d = xpu.device "cpu:0"
      assert.is_true(autotune.remember(d, "gemm.tile_k.q8_0", "fast"))
      assert.is_true(autotune.remember(d, "gemm.mma.tile_k.q8_0", "-5"))
      assert.is_true(autotune.remember(d, "gemm_id.tile_k.q8_0", "2048"))
      assert.same({ id_tile_k = 2048 }, G.partition(d, "q8_0"))
      local path = autotune.path(d)
      local text = fx.slurp(path)
      fx.spit(path, (text:gsub("gemm_id%.tile_k%.q8_0\t2048", "gemm_id.tile_k.q8_0\t1024")))
      G.forget_partitions()
      local part
      local err = io.stderr
      io.stderr = io.open("/dev/null", "w") -- the dropped line is said once on stderr
      part = G.partition(d, "q8_0")
      io.stderr:close()
      io.stderr = err
      assert.same({}, part)
    end)

    it("tune-gemm measures both tiles on cpu:0, stores the partition, and a query from it picks that tile", function()
      local exe = arg and arg[-1] or "build/xpulua"
      local cmd = ("XPULUA_CACHE=%s %s scripts/tune-gemm.lua --device cpu:0 --format q8_0 --ks 256,512 --tokens 128 "
        .. "--rows 8 --reps 1 -o jsonl 2>/dev/null"):format(fx.quote(dir), exe)
      local p = assert(io.popen(cmd))
      local out = p:read("a")
      assert.is_true(p:close(), "tune-gemm exits 0")
      local n, split = 0, nil
      for line in out:gmatch("[^\n]+") do
        n = n + 1
        assert.truthy(line:find('"outputs":"=="', 1, true), "the two tiles write the same bytes: " .. line)
        split = line:match('"partition":"?(%w+)"?')
        assert.truthy(line:find('"partition_key":"gemm.tile_k.q8_0"', 1, true), line)
      end
      assert.equal(2, n, "one record per K")
      local d = xpu.device "cpu:0"
      local part = G.partition(d, "q8_0")
      assert.equal(split == "never" and G.NEVER or tonumber(split), part.tile_k)
      -- the query the model builds from it picks the tile the sweep chose at each K
      for _, k in ipairs { 256, 512 } do
        local row = routes:candidates(G.query("q8_0", 128, 8, k, part), d)[1]
        assert.equal(k >= part.tile_k and "gemm.q8_0.t128" or "gemm.q8_0.t64", row.name, "K " .. k)
      end
    end)

    it("tune-gemm --no-store keeps nothing, and refuses a batch the 128-token tile would pad", function()
      local exe = arg and arg[-1] or "build/xpulua"
      local p = assert(io.popen(("XPULUA_CACHE=%s %s scripts/tune-gemm.lua --format q4_0 --ks 256 --tokens 128 "
        .. "--rows 8 --reps 1 --no-store 2>&1"):format(fx.quote(dir), exe)))
      local out = p:read("a")
      assert.is_true(p:close())
      assert.truthy(out:find("not stored", 1, true), out)
      assert.same({}, G.partition(xpu.device "cpu:0", "q4_0"))
      p = assert(io.popen(("%s scripts/tune-gemm.lua --tokens 130 2>&1; echo \"exit $?\""):format(exe)))
      out = p:read("a")
      p:close()
      assert.truthy(out:find("--tokens 130: not a multiple of 128", 1, true), out)
      assert.truthy(out:find("exit 2", 1, true), out)
    end)
  end)
end)
