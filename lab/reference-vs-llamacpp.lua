-- reference-vs-llamacpp.lua — models.reference beside llama.cpp on the same GGUF: a tiny llama
-- and qwen3moe of the tiny presets' shapes (spec/support/tiny_gguf.lua, seeded weights, f32
-- or q8_0 matrices, tokenizer "none"), --tokens seeded ids stepped one at a time through both,
-- and per position the largest logit difference, the largest logit, and each side's argmax.
-- llama.cpp's side is lab/llamacpp-logits.cpp (its first lines say how to build it). With q8_0
-- matrices llama.cpp's CPU mat-muls quantize the activations to q8_0 as well, so the gap is
-- that quantization's, not the forward's; with f32 matrices only the summation orders differ.
--   xpulua lab/reference-vs-llamacpp.lua [--logits build/llamacpp-logits] [--arch both] [--weights f32] [--tokens 16]
--     [--seed 7] [--tied] [--rope-freqs] [-o table|jsonl|csv]
local R = require "models.reference"
local T = require "spec.support.tiny_gguf"
local report = require "xpu.report"
local cli = require "xpu.cli"

local NAME = "reference-vs-llamacpp"
local opts = cli.parse(arg, {
  name = NAME, dir = "lab",
  about = "models.reference's logits beside llama.cpp's on the same tiny GGUFs, position by position.",
  example = "xpulua lab/reference-vs-llamacpp.lua --logits build/llamacpp-logits --arch llama --tokens 8",
  options = {
    { "logits", "string", "build/llamacpp-logits", "the built lab/llamacpp-logits.cpp", value = "PATH" },
    { "arch", "choice", "both", "the model family", choices = { "llama", "qwen3moe", "both" } },
    { "weights", "choice", "f32", "the matrices' type", choices = { "f32", "q8_0" } },
    { "tokens", "int", 16, "positions stepped", unit = "tokens", max = 256 },
    { "seed", "int", 7, "the weights' and tokens' seed", min = 0 },
    { "tied", "flag", nil, "no output.weight: token_embd is the output (Llama 3.2 1B's layout)" },
    { "rope-freqs", "flag", nil, "a llama rope_freqs.weight of seeded factors 1 .. 4 (llama3's)" },
  },
  output = true,
})

local f = io.open(opts.logits)
if not f then
  cli.die(NAME, "%s: not found; build lab/llamacpp-logits.cpp against a llama.cpp checkout (its first lines say how)",
    opts.logits)
end
f:close()

-- The tiny presets' shapes (lua/models/presets.lua: tiny-llama, tiny-qwen3moe).
T.DIMS.llama = { n_embd = 256, n_layer = 4, n_head = 8, n_head_kv = 4, head_dim = 32, n_ff = 512,
  n_vocab = 512, n_ctx = 1024, base = 10000.0, eps = 1e-5 }
T.DIMS.qwen3moe = { n_embd = 256, n_layer = 4, n_head = 8, n_head_kv = 4, head_dim = 64, n_ff = 512,
  n_vocab = 512, n_ctx = 1024, base = 1000000.0, eps = 1e-6, n_expert = 16, n_expert_used = 4, n_ff_exp = 128 }

local function llamacpp(path, ids)
  local p = assert(io.popen(("%s %s %s"):format(opts.logits, path, table.concat(ids, " "))))
  local rows = {}
  for line in p:lines() do
    local vals = {}
    for v in line:gmatch("%S+") do vals[#vals + 1] = tonumber(v) end
    rows[table.remove(vals, 1) + 1] = vals
  end
  local ok, _, code = p:close()
  if not ok or #rows ~= #ids then cli.die(NAME, "%s exited %s after %d positions", opts.logits, tostring(code), #rows) end
  return rows
end

local w = report.writer(opts.output, nil, NAME, { "arch", "weights", "pos" })
local rows = {}
local archs = opts.arch == "both" and { "llama", "qwen3moe" } or { opts.arch }
for _, arch in ipairs(archs) do
  local extra = {}
  if opts.rope_freqs and arch == "llama" then
    local half = T.DIMS.llama.head_dim // 2
    extra[1] = { name = "rope_freqs.weight", dims = { half }, type = "f32",
      data = T.pack(T.lcg(half, opts.seed + 2, 1.5, 2.5)) }
  end
  local path = T.write(arch, { seed = opts.seed, mat_type = opts.weights, tied = opts.tied, extra = extra,
    extra_meta = { { "tokenizer.ggml.model", "string", "none" } } })
  local ids = {}
  for i, u in ipairs(T.lcg(opts.tokens, opts.seed + 1, 0.5, 0.5)) do ids[i] = math.floor(u * T.DIMS[arch].n_vocab) end
  local theirs = llamacpp(path, ids)
  local m = R.load(path)
  local st = R.new_state(m)
  for pos = 0, #ids - 1 do
    local ours, t = R.floats(R.step(m, st, ids[pos + 1], pos)), theirs[pos + 1]
    local diff, big = 0, 0
    for i = 1, #ours do
      diff, big = math.max(diff, math.abs(ours[i] - t[i])), math.max(big, math.abs(t[i]))
    end
    local a, b = R.argmax(ours), R.argmax(t)
    rows[#rows + 1] = { arch, opts.weights, pos, ("%.3g"):format(diff), ("%.4g"):format(big), a, b, a == b and "yes" or "NO" }
    w:record({ arch = arch, weights = opts.weights, pos = pos, max_abs_diff = diff, max_abs_logit = big,
      argmax_reference = a, argmax_llamacpp = b, tied = opts.tied or false, rope_freqs = opts.rope_freqs or false })
  end
  report.progress(#rows, #archs * #ids, "positions")
end
T.remove()
w:table { title = ("models.reference beside llama.cpp (%s), %d tokens"):format(opts.logits, opts.tokens),
  header = { "arch", "weights", "pos", "max |diff|", "max |logit|", "argmax ours", "argmax llama.cpp", "same" }, rows = rows }
