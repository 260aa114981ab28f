-- make-model.lua — a GGUF model of a real shape (lua/models/presets.lua) with synthetic weights
-- that llama.cpp loads: llama.cpp's tensor names, metadata and tensor types (models.mix), an
-- SPM tokenizer of byte tokens and filler pieces, weights generated from the seed and
-- quantized in C by worker threads (xpu.gguf.write_model), streamed to the file.
--   xpulua scripts/make-model.lua --preset NAME [--type FMT] [--seed N] [--threads N] OUT
--   xpulua scripts/make-model.lua --list
local xpu = require "xpu"
local cli = require "xpu.cli"
local report = require "xpu.report"
local presets = require "models.presets"
local mix = require "models.mix"

local NAME = "make-model"
local opts = cli.parse(arg, {
  name = NAME,
  about = "A GGUF model of a preset's shape with seeded synthetic weights, in llama.cpp's layout.",
  example = "xpulua scripts/make-model.lua --preset tiny-llama --type q4_K_M --seed 1 tiny.gguf",
  options = {
    { "preset", "choice", nil, "the model's shape (--list shows them)", choices = presets.names, default_text = "none: required" },
    { "type", "choice", "q4_0", "the weight type, or q4_K_M (llama.cpp's mix)", choices = mix.kinds() },
    { "seed", "int", 1, "the weights' seed: same seed, same bytes", min = 0 },
    { "threads", "int", nil, "worker threads", unit = "threads", max = 256, default_text = "the cores, at most 64" },
    { "list", "flag", nil, "print the presets and stop" },
  },
  args = { { "OUT", "the GGUF file to write", key = "out" } },
  output = true,
})

-- ---- --list --------------------------------------------------------------------------------------

local function list_presets()
  local w = report.writer(opts.output, nil, "make-model-list", { "preset" })
  local rows = {}
  for _, name in ipairs(presets.names) do
    local p = presets.presets[name]
    local params = presets.parameters(p)
    w:record { preset = name, arch = p.arch, n_embd = p.n_embd, n_layer = p.n_layer, n_head = p.n_head,
               n_head_kv = p.n_head_kv, head_dim = p.head_dim, n_ff = p.n_ff, n_expert = p.n_expert,
               n_expert_used = p.n_expert_used, n_ff_exp = p.n_ff_exp, n_vocab = p.n_vocab,
               tied = p.tied, parameters = params }
    rows[#rows + 1] = { name, p.arch, p.n_embd, p.n_layer, ("%d/%d"):format(p.n_head, p.n_head_kv), p.head_dim,
                        p.n_expert and ("%d x %d, %d used"):format(p.n_expert, p.n_ff_exp, p.n_expert_used) or p.n_ff,
                        p.n_vocab, p.tied and "tied" or "own", ("%.2fB"):format(params / 1e9) }
  end
  w:table { header = { "preset", "arch", "n_embd", "layers", "heads/kv", "head_dim", "ffn", "vocab", "output", "params" },
            rows = rows }
end

if opts.list then
  list_presets()
  os.exit(0)
end
if not opts.preset then cli.fail(NAME, "--preset is missing (one of %s)", cli.either(presets.names)) end
if not opts.out then cli.fail(NAME, "OUT is missing (usage: xpulua scripts/make-model.lua --preset NAME OUT)") end

-- ---- metadata -----------------------------------------------------------------------------------

-- SPM vocabulary: <unk>, <s>, </s>, the 256 byte tokens, then printable ASCII, the word marker
-- and made-up words (with and without the marker) up to n pieces, each unique.
local function vocabulary(n)
  local tokens, scores, types = { "<unk>", "<s>", "</s>" }, { 0.0, 0.0, 0.0 }, { 2, 3, 3 }
  for b = 0, 255 do
    tokens[#tokens + 1], scores[#scores + 1], types[#types + 1] = ("<0x%02X>"):format(b), 0.0, 6
  end
  local seen = {}
  local function add(piece)
    if #tokens >= n or seen[piece] then return end
    seen[piece] = true
    tokens[#tokens + 1], scores[#scores + 1], types[#types + 1] = piece, -(#tokens + 0.0), 1
  end
  add("\u{2581}")
  for c = 0x21, 0x7e do add(string.char(c)) end
  local k = 0
  while #tokens < n do
    k = k + 1
    local word, v = {}, k
    repeat
      v = v - 1
      table.insert(word, 1, string.char(97 + v % 26))
      v = v // 26
    until v == 0
    word = table.concat(word)
    add("\u{2581}" .. word)
    add(word)
  end
  return tokens, scores, types
end

local function metadata(p, name, fmt)
  local a = p.arch
  local m = {
    { "general.architecture", "string", a },
    { "general.name", "string", name },
    { "general.file_type", "u32", mix.file_type(fmt) },
    { "general.quantization_version", "u32", 2 },
    { a .. ".vocab_size", "u32", p.n_vocab },
    { a .. ".context_length", "u32", p.n_ctx },
    { a .. ".embedding_length", "u32", p.n_embd },
    { a .. ".block_count", "u32", p.n_layer },
    { a .. ".feed_forward_length", "u32", p.n_ff },
    { a .. ".attention.head_count", "u32", p.n_head },
    { a .. ".attention.head_count_kv", "u32", p.n_head_kv },
    { a .. ".rope.freq_base", "f32", p.rope_base },
    { a .. ".rope.dimension_count", "u32", p.head_dim },
    { a .. ".attention.layer_norm_rms_epsilon", "f32", p.eps },
  }
  local function add(k, t, v) m[#m + 1] = { k, t, v } end
  if a == "qwen3moe" then
    add(a .. ".attention.key_length", "u32", p.head_dim)
    add(a .. ".attention.value_length", "u32", p.head_dim)
    add(a .. ".expert_count", "u32", p.n_expert)
    add(a .. ".expert_used_count", "u32", p.n_expert_used)
    add(a .. ".expert_feed_forward_length", "u32", p.n_ff_exp)
  end
  local tokens, scores, types = vocabulary(p.n_vocab)
  add("tokenizer.ggml.model", "string", "llama")
  add("tokenizer.ggml.tokens", "array:string", tokens)
  add("tokenizer.ggml.scores", "array:f32", scores)
  add("tokenizer.ggml.token_type", "array:i32", types)
  add("tokenizer.ggml.unknown_token_id", "u32", 0)
  add("tokenizer.ggml.bos_token_id", "u32", 1)
  add("tokenizer.ggml.eos_token_id", "u32", 2)
  add("tokenizer.ggml.add_bos_token", "bool", true)
  add("tokenizer.ggml.add_eos_token", "bool", false)
  return m
end

-- ---- tensors ------------------------------------------------------------------------------------

-- Spread like a freshly initialised model: matrices 1/sqrt(input width), the embedding 0.02,
-- norms 1 with a little noise.
local function spread(t)
  if #t.dims == 1 then return 1.0, 0.02 end
  if t.role == "token_embd" then return 0.0, 0.02 end
  return 0.0, 1 / math.sqrt(t.dims[1])
end

local function tensor_specs(p, fmt)
  local list = {}
  for _, t in ipairs(presets.tensors(p)) do
    local mean, std = spread(t)
    list[#list + 1] = { name = t.name, dims = t.dims, type = mix.type_of(p, t, fmt), mean = mean, std = std }
  end
  return list
end

-- ---- the run ------------------------------------------------------------------------------------

local p = presets.presets[opts.preset]
local label = ("%s %s (seed %d)"):format(opts.preset, opts.type, opts.seed)
local tensors = tensor_specs(p, opts.type)
report.log("%s: %s: %d tensors, %.2fB parameters -> %s", NAME, label, #tensors, presets.parameters(p) / 1e9, opts.out)
local t0 = xpu.now()
local ok, err = pcall(xpu.gguf.write_model, opts.out, {
  meta = metadata(p, label, opts.type), seed = opts.seed, threads = opts.threads, tensors = tensors,
})
if not ok then cli.die(NAME, "%s", tostring(err):gsub("^[^:]*:%d+: ", "")) end
local seconds = xpu.now() - t0
local g = xpu.gguf.open(opts.out)
local size = g.size
g:close()

local counts = {}
for _, t in ipairs(tensors) do counts[t.type] = (counts[t.type] or 0) + 1 end
local mixed = {}
for ty, c in pairs(counts) do mixed[#mixed + 1] = ("%s x%d"):format(ty, c) end
table.sort(mixed)
local w = report.writer(opts.output, nil, "make-model", { "preset", "type", "seed" })
w:record { preset = opts.preset, type = opts.type, seed = opts.seed, path = opts.out, tensors = #tensors,
           bytes = size, parameters = presets.parameters(p), seconds = seconds, types = table.concat(mixed, ", ") }
w:table { header = { "preset", "type", "seed", "tensors", "MiB", "seconds", "types", "file" },
          rows = { { opts.preset, opts.type, opts.seed, #tensors, size / 2 ^ 20, seconds, table.concat(mixed, ", "), opts.out } } }
