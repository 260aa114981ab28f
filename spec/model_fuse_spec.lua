-- model_fuse_spec.lua — the fused decode step (models.fuse; models.decoder's opts.fuse) against
-- the unfused one on every device present, on the tiny presets scripts/make-model.lua writes:
-- the logits byte for byte after a prompt's prefill and after 8 decode steps, 16 greedy ids the
-- same; the launches a step runs, counted as they run (17 a dense llama layer unfused, 11
-- fused where q, k and v share a format; qwen3moe 22 and 15); the weights resident once (a fused matrix binds its
-- parts' rows, the parts are not bound beside it); a fused matrix no row serves refused by its
-- name and its tensors' names; models.fuse.group's choice of what to join. A device that is
-- absent is reported skipped with the reason.
local xpu = require "xpu"
local load_model = require "models.load"

local BIN = arg and arg[-1] or "build/xpulua"
local DIR = os.tmpname()
os.remove(DIR)
assert(os.execute("mkdir -p " .. DIR))

local files = {}
local function file(preset, fmt)
  local path = ("%s/%s-%s.gguf"):format(DIR, preset, fmt)
  if not files[path] then
    local cmd = ("%s scripts/make-model.lua --preset %s --type %s --seed 5 %s >/dev/null 2>&1"):format(BIN, preset, fmt, path)
    assert(os.execute(cmd), cmd)
    files[path] = true
  end
  return path
end

local devices = {}
for _, id in ipairs { "cpu:0", "vulkan:0", "cuda:0" } do
  local d, why = xpu.device(id)
  devices[#devices + 1] = { id = id, dev = d, why = tostring(why) }
end

local PROMPT = { 3, 17, 420, 9, 77, 301, 5, 260, 44, 1 }
local MODELS = { { "tiny-llama", "q8_0" }, { "tiny-llama", "q4_K_M" }, { "tiny-qwen3moe", "q4_0" } }

-- The NaN count of f32s, and whether every value is zero.
local function scan(bytes)
  local v = xpu.fixture.decode("f32", bytes)
  local nan, zero = 0, true
  for _, x in ipairs(v) do
    if x ~= x then nan = nan + 1 end
    if x ~= 0 then zero = false end
  end
  return nan, zero
end

-- The prompt's prefill logits, the logits after 8 steps, the step's launch counts, and 16
-- greedy ids from a fresh start, with the step fused or not.
local function trace(path, d, fuse)
  local m = load_model(path, d, { fuse = fuse })
  local s = m:session { ctx = 64 }
  s:prefill(PROMPT)
  local after_prompt = s:logits()
  for _ = 1, 8 do s:step() end
  local after_steps, launches = s:logits(), s:launches_per_token()
  s:reset()
  return { m = m, prompt = after_prompt, steps = after_steps, launches = launches, ids = s:greedy(PROMPT, 16) }
end

-- Whether layer i's tensors of a group share the format (the fused step binds them as one).
local function shared(g, i, parts)
  local f
  for _, p in ipairs(parts) do
    local t = g:tensor(("blk.%d.%s.weight"):format(i, p)).type
    if f and t ~= f then return false end
    f = t
  end
  return true
end

for _, mt in ipairs(MODELS) do
  local preset, fmt = mt[1], mt[2]
  describe(preset .. " " .. fmt .. " fused == unfused", function()
    for _, e in ipairs(devices) do
      it(e.id .. ": logits byte for byte after the prompt and after 8 steps, 16 greedy ids the same", function()
        if not e.dev then return pending("skipped: no " .. e.id .. " (" .. e.why .. ")") end
        local path = file(preset, fmt)
        local want, got = trace(path, e.dev, false), trace(path, e.dev, true)
        assert.is_false(want.m.fused)
        assert.is_true(got.m.fused)
        for _, k in ipairs { "prompt", "steps" } do
          local nan, zero = scan(got[k])
          assert.equal(0, nan, k .. ": NaN logits")
          assert.is_false(zero, k .. ": the logits are all zero")
          assert.is_true(want[k] == got[k], k .. ": the fused logits differ from the unfused")
        end
        assert.same(want.ids, got.ids)
        local distinct = {}
        for _, id in ipairs(got.ids) do distinct[id] = true end
        assert.is_truthy(next(distinct, next(distinct)), "the ids are not all one token")
      end)
    end

    it("cpu:0: the launches a step runs, per layer and in all, counted as they run", function()
      local path = file(preset, fmt)
      local cpu = xpu.device "cpu:0"
      local want, got = trace(path, cpu, false), trace(path, cpu, true)
      local g, llama = xpu.gguf.open(path), preset == "tiny-llama"
      local h = want.m.h
      for i = 0, h.n_layer - 1 do
        -- unfused: norm1, q, k, v, rope_q, rope_k, store, attend, pack, o, add1, then llama's
        -- ffn norm, gate, up, glu, down, add (6) or qwen's norm, norm_f, router, top_k, gate,
        -- up, glu, down, combine (9), each its own launch; qwen adds QK-norm's two
        assert.equal(llama and 17 or 22, want.launches.layers[i], "unfused layer " .. i)
        -- fused: one RoPE, add1 with the ffn norm, q | k | v one mat-vec where they share the
        -- format; llama: gate | up likewise, the last add with the next layer's norm1; qwen:
        -- the down bank, the combine and the next layer's norm1 one launch (the tail), the ffn
        -- norm's f32 row for the router written by the add's launch
        local n = (llama and 17 or 22) - 2
        if shared(g, i, { "attn_q", "attn_k", "attn_v" }) then n = n - 2 end
        if llama and shared(g, i, { "ffn_gate", "ffn_up" }) then n = n - 1 end
        n = n - (llama and 1 or 3)
        assert.equal(n, got.launches.layers[i], "fused layer " .. i)
      end
      if llama and fmt == "q8_0" then
        assert.equal(17, want.launches.per_layer)
        assert.equal(11, got.launches.per_layer)
      end
      -- the first norm1 runs after the embedding, the output norm in the last layer's tail
      assert.same({ 2, 2 }, { got.launches.embed, got.launches.head })
      assert.same({ 1, 3 }, { want.launches.embed, want.launches.head })
      local sum = got.launches.embed + got.launches.head
      for i = 0, h.n_layer - 1 do sum = sum + got.launches.layers[i] end
      assert.equal(sum, got.launches.total)
      assert.is_true(got.launches.total < want.launches.total)
    end)

    it("cpu:0: the weights resident once (fused matrices bind their parts' rows, the parts not beside them)", function()
      local path = file(preset, fmt)
      local cpu = xpu.device "cpu:0"
      local g = xpu.gguf.open(path)
      local unfused, fused = load_model(path, cpu, { fuse = false }), load_model(path, cpu)
      assert.equal(unfused.weight_bytes, fused.weight_bytes)
      assert.equal(unfused.token_bytes, fused.token_bytes)
      local groups = { attn_qkv = { "attn_q", "attn_k", "attn_v" } }
      if preset == "tiny-llama" then groups.ffn_gate_up = { "ffn_gate", "ffn_up" } end
      local seen = 0
      for i = 0, fused.h.n_layer - 1 do
        for name, parts in pairs(groups) do
          local fname = ("blk.%d.%s"):format(i, name)
          local bytes = 0
          for _, p in ipairs(parts) do bytes = bytes + unfused.w[("blk.%d.%s.weight"):format(i, p)].bytes end
          if shared(g, i, parts) then
            seen = seen + 1
            assert.equal(bytes, fused.w[fname].bytes, fname)
            for _, p in ipairs(parts) do assert.is_nil(fused.w[("blk.%d.%s.weight"):format(i, p)], fname .. " " .. p) end
          else
            assert.is_nil(fused.w[fname], fname)
          end
          assert.is_nil(unfused.w[fname], fname .. " unfused")
        end
      end
      assert.is_true(seen > 0, "no group fused")
      local n_unfused, n_fused, b_unfused, b_fused = 0, 0, 0, 0
      for _, b in pairs(unfused.w) do n_unfused, b_unfused = n_unfused + 1, b_unfused + b.bytes end
      for _, b in pairs(fused.w) do n_fused, b_fused = n_fused + 1, b_fused + b.bytes end
      assert.equal(b_unfused, b_fused)
      assert.is_true(n_fused < n_unfused)
    end)
  end)
end

describe("models.fuse.group", function()
  local fuse = require "models.fuse"
  local function list(fmt, rows, vfmt)
    local t = {}
    for k, p in ipairs { "attn_q", "attn_k", "attn_v", "attn_output" } do
      t[k] = { name = ("blk.0.%s.weight"):format(p), format = k == 3 and vfmt or fmt, cols = 256, rows = rows[k] }
    end
    return t
  end
  local function names(l)
    local t = {}
    for k, w in ipairs(l) do t[k] = w.name end
    return t
  end

  it("joins q, k and v of one format where each part starts at a multiple of 16 bytes", function()
    local out = fuse.group(list("q6_K", { 16, 8, 8, 16 }, "q6_K"), { n_layer = 1 }, { fuse.ATTN })
    assert.same({ "blk.0.attn_qkv", "blk.0.attn_output.weight" }, names(out))
    assert.equal(32, out[1].rows)
    assert.equal("fused matrix 'blk.0.attn_qkv' (tensors 'blk.0.attn_q.weight', 'blk.0.attn_k.weight', "
      .. "'blk.0.attn_v.weight')", out[1].label)
    local parts = fuse.parts(out[1])
    assert.same({ 0, 16 * 212, 24 * 212 }, { parts[1].offset, parts[2].offset, parts[3].offset })
    assert.same({ 16 * 212, 8 * 212, 8 * 212 }, { parts[1].bytes, parts[2].bytes, parts[3].bytes })
  end)

  it("keeps them apart where a format differs, a part would start off 16 bytes, or the format is not served", function()
    local apart = { "blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight", "blk.0.attn_output.weight" }
    assert.same(apart, names(fuse.group(list("q4_K", { 16, 8, 8, 16 }, "q6_K"), { n_layer = 1 }, { fuse.ATTN })))
    -- a q6_K row is 212 resident bytes: k would start at 3 x 212 = 636
    assert.same(apart, names(fuse.group(list("q6_K", { 3, 8, 8, 16 }, "q6_K"), { n_layer = 1 }, { fuse.ATTN })))
    assert.same(apart, names(fuse.group(list("f32", { 16, 8, 8, 16 }, "f32"), { n_layer = 1 }, { fuse.ATTN })))
  end)
end)

describe("the fused step's refusals", function()
  local cpu = xpu.device "cpu:0"

  -- routes.llama with no row for 512 x 256 mat-vecs: tiny-llama's q | k | v (256 + 128 + 128
  -- rows), and its ffn_gate, ffn_up and output matrices (512 rows each).
  local function tables()
    local real = require "routes.llama"
    local decode = {
      pick = function(_, c)
        if c.query.out_dim == 512 and c.query.in_dim == 256 then return nil end
        return real:pick(c)
      end,
      why_not_picked = function() return "no row for 512 rows (the spec's table)" end,
    }
    return { decode = decode, prefill = require "routes.prefill", norm = require "routes.layer_norm",
             ew = require "routes.layer_elementwise", select = require "routes.layer_select",
             attention = require "routes.attention", kv = require "routes.layer_kv" }
  end

  it("a fused matrix no row serves is refused at load by its name and its tensors'", function()
    local path = file("tiny-llama", "q8_0")
    local ok, err = pcall(load_model, path, cpu, { routes = tables() })
    assert.is_false(ok)
    assert.matches("fused matrix 'blk.0.attn_qkv' (tensors 'blk.0.attn_q.weight', 'blk.0.attn_k.weight', "
      .. "'blk.0.attn_v.weight') (q8_0): no decode row serves it on cpu:0: no row for 512 rows", tostring(err), 1, true)
    -- unfused, the same table serves every layer's q, k and v: ffn_gate is the first it refuses
    ok, err = pcall(load_model, path, cpu, { routes = tables(), fuse = false })
    assert.is_false(ok)
    assert.matches("tensor 'blk.0.ffn_gate.weight' (q8_0): no decode row serves it", tostring(err), 1, true)
  end)

  it("launches_per_token before any decode step is an error that says so", function()
    local s = load_model(file("tiny-llama", "q8_0"), cpu):session { ctx = 16 }
    s:prefill { 1, 2 }
    assert.has_error(function() s:launches_per_token() end, "session:launches_per_token: no decode step has run")
  end)
end)

describe("scripts/run-model.lua", function()
  it("prints the launches a token in its split, fused and --unfused", function()
    local path = file("tiny-llama", "q8_0")
    for _, case in ipairs { { "", 48, 11, "true" }, { " --unfused", 72, 17, "false" } } do
      local cmd = ("%s scripts/run-model.lua %s -p 8 -n 4 -r 1 -o jsonl%s 2>/dev/null"):format(BIN, path, case[1])
      local p = io.popen(cmd)
      local out = p:read "a"
      p:close()
      local split = out:match '[^\n]*"test":"split"[^\n]*'
      assert.is_truthy(split, out)
      assert.matches('"launches_per_token":' .. case[2], split)
      assert.matches('"launches_per_layer":' .. case[3], split)
      assert.matches('"fused":' .. case[4], split)
    end
  end)
end)
