-- make_model_spec.lua — scripts/make-model.lua and xpu.gguf.write_model: the tiny presets
-- written and reopened (every tensor with its dims, type and bytes, llama.cpp's metadata keys),
-- the bytes a function of (seed, name) only (threads and chunking do not change them), the
-- values those of xpu.gguf.model_value and the quantized tensors those of xpu.quant.quantize
-- (==), llama.cpp's q4_K_M mix, and bad input refused by name with no file left behind.
local xpu = require "xpu"
local presets = require "models.presets"
local mix = require "models.mix"
local fx = require "spec.support.fixtures"
local slurp = fx.slurp

local BIN = os.getenv("XPULUA") or "build/xpulua"
local DIR = os.tmpname()
os.remove(DIR)
assert(os.execute("mkdir -p " .. DIR))

local function run(cmdline)
  local err = DIR .. "/stderr"
  local p = assert(io.popen(("%s 2>%s; echo \"exit $?\""):format(cmdline, err)))
  local out = p:read("a")
  p:close()
  local e = slurp(err) or ""
  return out:gsub("exit %d+\n$", ""), e, tonumber(out:match("exit (%d+)\n$"))
end

local function make(preset, fmt, seed, name)
  local path = DIR .. "/" .. (name or ("%s-%s-%d.gguf"):format(preset, fmt, seed))
  local out, err, code = run(("%s scripts/make-model.lua --preset %s --type %s --seed %d -o jsonl %s")
    :format(BIN, preset, fmt, seed, path))
  assert.equal(0, code, err)
  assert.matches('"preset":"' .. preset:gsub("%-", "%%-") .. '"', out)
  return path
end

local function files_in_dir()
  local p = io.popen("ls " .. DIR)
  local names = {}
  for l in p:lines() do if l ~= "stderr" then names[#names + 1] = l end end
  p:close()
  return names
end

local function nbytes(ty, dims)
  local e = 1
  for _, d in ipairs(dims) do e = e * d end
  if ty == "f32" then return e * 4 elseif ty == "f16" then return e * 2 end
  for _, f in ipairs(xpu.formats()) do
    if f.name == ty then return e // f.block_elems * f.block_bytes end
  end
  error("no format " .. ty)
end

local function f32s(s)
  local v = {}
  for i = 1, #s // 4 do v[i] = string.unpack("<f", s, 4 * i - 3) end
  return v
end

teardown(function() os.execute("rm -rf " .. DIR) end)

describe("models.presets", function()
  it("counts the parameters of the real shapes exactly", function()
    assert.equal(1235814400, presets.parameters(presets.presets["llama-1b"]))
    assert.equal(8030261248, presets.parameters(presets.presets["llama3-8b"]))
    assert.is_nil(presets.get("llama-7b"))
    assert.matches("unknown preset 'llama%-7b' %(one of tiny%-llama,", select(2, presets.get("llama-7b")))
  end)

  it("lists each tensor once, in ggml's dims order", function()
    for _, name in ipairs(presets.names) do
      local p, seen = presets.presets[name], {}
      local list = presets.tensors(p)
      for _, t in ipairs(list) do
        assert.is_nil(seen[t.name], t.name)
        seen[t.name] = true
      end
      local per = p.arch == "qwen3moe" and 12 or 9
      assert.equal(2 + (p.tied and 0 or 1) + per * p.n_layer, #list, name)
      assert.same({ p.n_embd, p.n_vocab }, list[1].dims)
      local q
      for _, t in ipairs(list) do if t.name == "blk.0.attn_q.weight" then q = t end end
      assert.same({ p.n_embd, p.n_head * p.head_dim }, q.dims, name)
    end
    local moe = presets.tensors(presets.presets["tiny-qwen3moe"])
    local down
    for _, t in ipairs(moe) do if t.name == "blk.1.ffn_down_exps.weight" then down = t end end
    assert.same({ 256, 256, 16 }, down.dims)
  end)
end)

describe("models.mix", function()
  local function layers_in(preset, role, want)
    local p, got = presets.presets[preset], {}
    for _, t in ipairs(presets.tensors(p)) do
      if t.role == role and mix.type_of(p, t, "q4_K_M") == want then got[#got + 1] = t.layer end
    end
    return got
  end

  it("q4_K_M: attn_v and ffn_down in q6_K where llama.cpp's use_more_bits says", function()
    local eight = { 0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31 }
    assert.same(eight, layers_in("llama3-8b", "attn_v", "q6_K"))
    assert.same(eight, layers_in("llama3-8b", "ffn_down", "q6_K"))
    assert.same({ 0, 1, 4, 7, 10, 13, 14, 15 }, layers_in("llama-1b", "attn_v", "q6_K"))
    assert.same({ 2, 3 }, layers_in("tiny-llama", "ffn_down", "q6_K"))
    assert.same({ 0, 1 }, layers_in("tiny-llama", "ffn_down", "q4_K"))
    assert.same({}, layers_in("llama3-8b", "attn_q", "q6_K"))
    -- a 768-wide expert row takes q6_K; a 128-wide one falls back as llama.cpp does
    assert.same({ 0, 1, 2, 3, 4, 5, 8, 11, 14, 17, 20, 23, 26, 29, 32, 35, 38, 41, 42, 43, 44, 45, 46, 47 },
                layers_in("qwen3-30b-a3b", "ffn_down_exps", "q6_K"))
    assert.same({ 2, 3 }, layers_in("tiny-qwen3moe", "ffn_down_exps", "q6_K"))
    assert.same({ 0, 1 }, layers_in("tiny-qwen3moe", "ffn_down_exps", "q4_K"))
    -- 128-wide expert rows (no whole q4_K / q6_K block): q8_0 where q6_K was due, else q5_0
    local narrow = {}
    for k, v in pairs(presets.presets["tiny-qwen3moe"]) do narrow[k] = v end
    narrow.n_ff_exp = 128
    local by = {}
    for _, t in ipairs(presets.tensors(narrow)) do
      if t.role == "ffn_down_exps" then by[#by + 1] = mix.type_of(narrow, t, "q4_K_M") end
    end
    assert.same({ "q5_0", "q5_0", "q8_0", "q8_0" }, by)
  end)

  it("the output matrix in q6_K, the tied embedding with it, vectors and the router f32", function()
    local function ty(preset, name, fmt)
      local p = presets.presets[preset]
      for _, t in ipairs(presets.tensors(p)) do
        if t.name == name then return mix.type_of(p, t, fmt) end
      end
    end
    assert.equal("q6_K", ty("tiny-llama", "output.weight", "q4_0"))
    assert.equal("q4_0", ty("tiny-llama", "token_embd.weight", "q4_0"))
    assert.equal("q6_K", ty("llama-1b", "token_embd.weight", "q4_0"))
    assert.equal("q4_K", ty("llama3-8b", "token_embd.weight", "q4_K_M"))
    assert.equal("q8_0", ty("tiny-llama", "output.weight", "q8_0"))
    assert.equal("f16", ty("tiny-llama", "output.weight", "f16"))
    assert.equal("f32", ty("tiny-llama", "blk.0.attn_norm.weight", "q4_K_M"))
    assert.equal("f32", ty("tiny-qwen3moe", "blk.0.ffn_gate_inp.weight", "q4_0"))
    assert.equal("f32", ty("tiny-qwen3moe", "blk.0.attn_k_norm.weight", "q4_0"))
  end)
end)

describe("scripts/make-model.lua", function()
  local KEYS = {
    llama = { "context_length", "embedding_length", "block_count", "feed_forward_length",
              "attention.head_count", "attention.head_count_kv", "rope.freq_base",
              "attention.layer_norm_rms_epsilon", "rope.dimension_count", "vocab_size" },
    qwen3moe = { "expert_count", "expert_used_count", "expert_feed_forward_length",
                 "attention.key_length", "attention.value_length" },
  }

  local function check_file(path, preset, fmt)
    local p = presets.presets[preset]
    local g = xpu.gguf.open(path)
    assert.equal(p.arch, g:meta("general.architecture"))
    assert.equal(mix.file_type(fmt), g:meta("general.file_type"))
    assert.is_string(g:meta("general.name"))
    for _, k in ipairs(KEYS.llama) do assert.is_not_nil(g:meta(p.arch .. "." .. k), k) end
    if p.arch == "qwen3moe" then
      for _, k in ipairs(KEYS.qwen3moe) do assert.is_not_nil(g:meta(p.arch .. "." .. k), k) end
      assert.equal(p.n_expert, g:meta("qwen3moe.expert_count"))
    end
    assert.equal(p.n_layer, g:meta(p.arch .. ".block_count"))
    assert.equal("llama", g:meta("tokenizer.ggml.model"))
    local tokens = g:meta("tokenizer.ggml.tokens")
    assert.equal(p.n_vocab, #tokens)
    assert.equal(p.n_vocab, #g:meta("tokenizer.ggml.scores"))
    assert.equal("array:i32", g:meta_type("tokenizer.ggml.token_type"))
    assert.same({ "<unk>", "<s>", "</s>", "<0x00>" }, { tokens[1], tokens[2], tokens[3], tokens[4] })
    assert.equal("<0xFF>", tokens[259])
    local seen = {}
    for _, t in ipairs(tokens) do assert.is_nil(seen[t], t); seen[t] = true end
    assert.equal(1, g:meta("tokenizer.ggml.bos_token_id"))
    assert.equal(2, g:meta("tokenizer.ggml.eos_token_id"))
    local list = presets.tensors(p)
    assert.equal(#list, g.tensor_count)
    for _, t in ipairs(list) do
      local got = g:tensor(t.name)
      assert.is_not_nil(got, t.name)
      assert.same(t.dims, got.dims, t.name)
      assert.equal(mix.type_of(p, t, fmt), got.type, t.name)
      assert.equal(nbytes(got.type, t.dims), got.bytes, t.name)
    end
    return g
  end

  it("writes tiny-llama and tiny-qwen3moe as q4_0, q4_K_M and f32, every tensor and key", function()
    for _, preset in ipairs { "tiny-llama", "tiny-qwen3moe" } do
      for _, fmt in ipairs { "q4_0", "q4_K_M", "f32" } do
        check_file(make(preset, fmt, 5), preset, fmt):close()
      end
    end
  end)

  it("reads back as its preset through models.hparams", function()
    local hparams = require "models.hparams"
    for _, preset in ipairs { "tiny-llama", "tiny-qwen3moe" } do
      local p = presets.presets[preset]
      local g = xpu.gguf.open(make(preset, "q4_0", 6))
      local h = hparams.read(g)
      for _, k in ipairs { "arch", "n_embd", "n_layer", "n_head", "head_dim", "n_vocab", "tied",
                           "n_expert", "n_expert_used", "n_ff_exp" } do
        assert.equal(p[k], h[k], preset .. " " .. k)
      end
      assert.equal(p.n_head_kv, h.n_kv_head)
      assert.equal(p.n_ctx, h.ctx)
      assert.equal(p.head_dim, h.rope_dims)
      assert.equal(p.rope_base, h.rope_base)
      assert.is_true(math.abs(h.eps - p.eps) < p.eps * 1e-6)
      if p.arch == "llama" then assert.equal(p.n_ff, h.n_ff) end
      g:close()
    end
  end)

  it("q4_K_M holds q6_K exactly where the mix says", function()
    local g = xpu.gguf.open(make("tiny-llama", "q4_K_M", 5))
    for i = 0, 3 do
      local want = i >= 2 and "q6_K" or "q4_K"
      assert.equal(want, g:tensor(("blk.%d.attn_v.weight"):format(i)).type)
      assert.equal(want, g:tensor(("blk.%d.ffn_down.weight"):format(i)).type)
      assert.equal("q4_K", g:tensor(("blk.%d.attn_q.weight"):format(i)).type)
    end
    assert.equal("q6_K", g:tensor("output.weight").type)
    g:close()
  end)

  it("same seed, same bytes; another seed, other weights and the same header", function()
    local a = slurp(make("tiny-qwen3moe", "q4_K_M", 9, "a.gguf"))
    local b = slurp(make("tiny-qwen3moe", "q4_K_M", 9, "b.gguf"))
    assert.equal(#a, #b)
    assert.is_true(a == b)
    local ga, gc = xpu.gguf.open(DIR .. "/a.gguf"), xpu.gguf.open(make("tiny-qwen3moe", "q4_K_M", 10, "c.gguf"))
    assert.equal(ga.data_offset, gc.data_offset)
    for _, t in ipairs(ga:tensors()) do
      assert.are_not.equal(ga:data(t.name), gc:data(t.name), t.name)
    end
    ga:close()
    gc:close()
  end)

  it("f32 weights are the generator's values: finite, spread as set, never all zeros", function()
    local g = xpu.gguf.open(make("tiny-llama", "f32", 3))
    local v = f32s(g:data("blk.1.ffn_up.weight"))
    local nan, zeros, sum, sum2 = 0, 0, 0, 0
    for i, x in ipairs(v) do
      if x ~= x then nan = nan + 1 end
      if x == 0 then zeros = zeros + 1 end
      sum, sum2 = sum + x, sum2 + x * x
      if i % 997 == 1 then
        assert.equal(xpu.gguf.model_value(3, "blk.1.ffn_up.weight", i - 1, 0, 1 / 16), x)
      end
    end
    assert.equal(0, nan)
    assert.is_true(zeros < #v // 1000)
    local sd = math.sqrt(sum2 / #v - (sum / #v) ^ 2)
    assert.is_true(math.abs(sd - 1 / 16) < 0.002, sd)
    assert.is_true(math.abs(sum / #v) < 0.002)
    local norm = f32s(g:data("blk.0.attn_norm.weight"))
    local nsum = 0
    for _, x in ipairs(norm) do nsum = nsum + x end
    assert.is_true(math.abs(nsum / #norm - 1) < 0.01)
    assert.are_not.equal(norm[1], norm[2])
    g:close()
  end)

  it("quantized tensors are xpu.quant.quantize of the f32 file's (==)", function()
    local f = xpu.gguf.open(make("tiny-llama", "f32", 4))
    local q = xpu.gguf.open(make("tiny-llama", "q4_K_M", 4))
    local z = xpu.gguf.open(make("tiny-llama", "q4_0", 4))
    for _, name in ipairs { "blk.0.attn_q.weight", "blk.3.ffn_down.weight", "output.weight", "token_embd.weight" } do
      local ty = q:tensor(name).type
      assert.is_true(xpu.quant.quantize(ty, f:data(name)) == q:data(name), name .. " " .. ty)
      ty = z:tensor(name).type
      assert.is_true(xpu.quant.quantize(ty, f:data(name)) == z:data(name), name .. " " .. ty)
    end
    assert.is_true(f:data("blk.2.ffn_norm.weight") == q:data("blk.2.ffn_norm.weight"))
    f:close(); q:close(); z:close()
  end)

  it("--list names every preset; bad --preset, --type and a missing OUT are refused by name", function()
    local out, err, code = run(BIN .. " scripts/make-model.lua --list -o jsonl")
    assert.equal(0, code, err)
    for _, name in ipairs(presets.names) do assert.matches('"preset":"' .. name:gsub("%-", "%%-") .. '"', out) end
    out, err, code = run(BIN .. " scripts/make-model.lua --preset llama-7b " .. DIR .. "/x.gguf")
    assert.equal(2, code)
    assert.matches("^make%-model: %-%-preset 'llama%-7b': not tiny%-llama", err)
    out, err, code = run(BIN .. " scripts/make-model.lua --preset tiny-llama --type q4_1 " .. DIR .. "/x.gguf")
    assert.equal(2, code)
    assert.matches("^make%-model: %-%-type 'q4_1': not q4_0", err)
    out, err, code = run(BIN .. " scripts/make-model.lua --preset tiny-llama")
    assert.equal(2, code)
    assert.matches("^make%-model: OUT is missing", err)
    out, err, code = run(BIN .. " scripts/make-model.lua " .. DIR .. "/x.gguf")
    assert.equal(2, code)
    assert.matches("^make%-model: %-%-preset is missing", err)
    out, err, code = run(BIN .. " scripts/make-model.lua --preset tiny-llama " .. DIR .. "/no/such/dir/x.gguf")
    assert.equal(1, code)
    assert.matches("no/such/dir/x.gguf", err, 1, true)
    assert.not_matches("traceback", err)
    for _, n in ipairs(files_in_dir()) do assert.not_matches("^x%.gguf", n) end
  end)
end)

describe("xpu.gguf.write_model", function()
  local function spec(over)
    local s = { seed = 1, threads = 2, tensors = {
      { name = "big", dims = { 256, 8192 }, type = "q4_0", std = 0.05 }, -- two jobs of 1 Mi elements
      { name = "small", dims = { 64 }, type = "f32", mean = 1, std = 0.02 },
      { name = "half", dims = { 32, 3 }, type = "f16", std = 1 },
    } }
    for k, v in pairs(over or {}) do s[k] = v end
    return s
  end

  it("gives the same bytes for any thread count, across job boundaries", function()
    local one, four = DIR .. "/t1.gguf", DIR .. "/t4.gguf"
    xpu.gguf.write_model(one, spec { threads = 1 })
    xpu.gguf.write_model(four, spec { threads = 4 })
    assert.is_true(slurp(one) == slurp(four))
    local g = xpu.gguf.open(one)
    -- blocks on both sides of the first job's end: quantize of the generator's values
    local data = g:data("big")
    for _, blk in ipairs { 0, 32767, 32768, 65535 } do
      local vals = {}
      for i = 0, 31 do vals[i + 1] = xpu.gguf.model_value(1, "big", blk * 32 + i, 0, 0.05) end
      local want = xpu.quant.quantize("q4_0", string.pack("<" .. ("f"):rep(32), table.unpack(vals)))
      assert.is_true(want == data:sub(blk * 18 + 1, blk * 18 + 18), "block " .. blk)
    end
    g:close()
  end)

  -- The lanes that try eight candidates at once (quantize.c) write the bytes of the
  -- one-candidate-at-a-time search: the same tensors written by a process with
  -- XPU_QUANT_SCALAR=1 (the scalar search) are byte for byte the same.
  it("keeps the q4_K, q5_K and q6_K bytes of the scalar search", function()
    local t = {}
    for _, ty in ipairs { "q4_K", "q5_K" } do
      for k, ms in ipairs { { 0, 0.02 }, { 1, 0.02 }, { -3, 0.5 }, { 0, 1e-30 } } do
        t[#t + 1] = { name = ty .. "." .. k, dims = { 256, 64 }, type = ty, mean = ms[1], std = ms[2] }
      end
    end
    for k, ms in ipairs { { 0, 0.02 }, { 1, 0.02 }, { -3, 0.5 }, { 0, 1e-30 } } do
      t[#t + 1] = { name = "q6_K." .. k, dims = { 256, 256 }, type = "q6_K", mean = ms[1], std = ms[2] }
    end
    local lanes, scalar = DIR .. "/lanes.gguf", DIR .. "/scalar.gguf"
    xpu.gguf.write_model(lanes, { seed = 11, threads = 2, tensors = t })
    local parts = {}
    for _, x in ipairs(t) do
      parts[#parts + 1] = ("{name=%q,dims={%d,%d},type=%q,mean=%.17g,std=%.17g}"):format(x.name, x.dims[1], x.dims[2],
        x.type, x.mean, x.std)
    end
    local chunk = ("require'xpu'.gguf.write_model(%q,{seed=11,threads=2,tensors={%s}})"):format(scalar,
      table.concat(parts, ","))
    local bin = arg and arg[-1] or "build/xpulua"
    assert(os.execute(("XPU_QUANT_SCALAR=1 %s -e %q"):format(bin, chunk)), "the scalar writer ran")
    local a, b = xpu.gguf.open(lanes), xpu.gguf.open(scalar)
    for _, x in ipairs(t) do
      local da, db = a:data(x.name), b:data(x.name)
      if x.std > 1e-3 then assert.is_true(da ~= ("\0"):rep(#da), x.name .. " is not all zero") end
      assert.is_true(da == db, x.name .. ": the lanes' bytes differ from the scalar search's")
    end
    a:close()
    b:close()
  end)

  it("refuses bad input by field, leaving no file", function()
    local p = DIR .. "/bad.gguf"
    local function refused(s, words)
      local ok, err = pcall(xpu.gguf.write_model, p, s)
      assert.is_false(ok)
      assert.matches(words, err, 1, true)
      assert.is_nil(io.open(p))
    end
    refused(spec { seed = false }, "seed")
    local s = spec(); s.seed = nil
    refused(s, "seed is missing")
    refused(spec { threads = 0 }, "threads 0 is outside 1..256")
    refused(spec { colour = 1 }, "unknown field 'colour'")
    refused(spec { tensors = { { name = "w", dims = { 64, 2 }, type = "q4_1", std = 1 } } },
            "tensor 'w': type q4_1 is not f32, f16 or a served format")
    refused(spec { tensors = { { name = "w", dims = { 100, 2 }, type = "q4_K", std = 1 } } },
            "dims[0] = 100 is not a multiple of q4_K's block of 256")
    refused(spec { tensors = { { name = "w", dims = { 64 }, type = "f32" } } }, "tensor 'w': std is missing")
    refused(spec { tensors = { { name = "w", dims = { 64 }, type = "f32", std = -1 } } }, "std -1")
    refused(spec { tensors = { { name = "w", dims = { 64 }, type = "f32", std = 1, scale = 2 } } },
            "unknown field 'scale'")
    refused(spec { tensors = { { name = "w", dims = { 64 }, type = "f32", std = 1 },
                               { name = "w", dims = { 64 }, type = "f32", std = 1 } } }, "duplicate tensor name 'w'")
    local ok, err = pcall(xpu.gguf.write_model, DIR .. "/none/x.gguf", spec())
    assert.is_false(ok)
    assert.matches("none/x.gguf", err, 1, true)
    for _, n in ipairs(files_in_dir()) do assert.not_matches("^bad%.gguf", n) end
  end)
end)
