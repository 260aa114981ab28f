-- models.presets — model shapes as plain tables (llama and qwen3moe, llama.cpp's GGUF names)
-- and the tensor list of each: name, GGUF dims (ggml's ne order: dims[1] is a weight's input
-- width) and role. Uses nothing but Lua.
local M = {}

-- Every preset: arch, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff (dense FFN width),
-- n_vocab, n_ctx, rope_base, eps (RMSNorm epsilon), tied (no output.weight: the output
-- reuses token_embd); qwen3moe adds n_expert, n_expert_used, n_ff_exp.
M.presets = {
  ["tiny-llama"] = {
    arch = "llama", n_embd = 256, n_layer = 4, n_head = 8, n_head_kv = 4, head_dim = 32,
    n_ff = 512, n_vocab = 512, n_ctx = 1024, rope_base = 10000, eps = 1e-5, tied = false,
  },
  ["tiny-llama-tied"] = { -- tied output: the embedding is the output matrix, read resident
    arch = "llama", n_embd = 256, n_layer = 4, n_head = 8, n_head_kv = 4, head_dim = 32,
    n_ff = 512, n_vocab = 512, n_ctx = 1024, rope_base = 10000, eps = 1e-5, tied = true,
  },
  ["tiny-qwen3moe"] = {
    arch = "qwen3moe", n_embd = 256, n_layer = 4, n_head = 8, n_head_kv = 4, head_dim = 64,
    n_ff = 512, n_vocab = 512, n_ctx = 1024, rope_base = 1000000, eps = 1e-6, tied = false,
    n_expert = 16, n_expert_used = 4, n_ff_exp = 256, -- q8_K activations: widths of 256
  },
  ["llama-1b"] = { -- Llama 3.2 1B
    arch = "llama", n_embd = 2048, n_layer = 16, n_head = 32, n_head_kv = 8, head_dim = 64,
    n_ff = 8192, n_vocab = 128256, n_ctx = 131072, rope_base = 500000, eps = 1e-5, tied = true,
  },
  ["llama3-8b"] = { -- Llama 3 8B
    arch = "llama", n_embd = 4096, n_layer = 32, n_head = 32, n_head_kv = 8, head_dim = 128,
    n_ff = 14336, n_vocab = 128256, n_ctx = 8192, rope_base = 500000, eps = 1e-5, tied = false,
  },
  ["qwen3-30b-a3b"] = { -- Qwen3-30B-A3B
    arch = "qwen3moe", n_embd = 2048, n_layer = 48, n_head = 32, n_head_kv = 4, head_dim = 128,
    n_ff = 6144, n_vocab = 151936, n_ctx = 40960, rope_base = 1000000, eps = 1e-6, tied = false,
    n_expert = 128, n_expert_used = 8, n_ff_exp = 768,
  },
}

-- The names, smallest first.
M.names = { "tiny-llama", "tiny-llama-tied", "tiny-qwen3moe", "llama-1b", "llama3-8b", "qwen3-30b-a3b" }

-- The preset called name, or nil and a message naming the choices.
function M.get(name)
  local p = M.presets[name]
  if p then return p end
  return nil, ("unknown preset '%s' (one of %s)"):format(tostring(name), table.concat(M.names, ", "))
end

-- The layer's tensors in the order llama.cpp's converter writes them.
local function layer(p, i, out)
  local E, q, kv = p.n_embd, p.n_head * p.head_dim, p.n_head_kv * p.head_dim
  local function add(role, dims) out[#out + 1] = { name = ("blk.%d.%s.weight"):format(i, role), dims = dims, role = role, layer = i } end
  add("attn_norm", { E })
  add("attn_q", { E, q })
  add("attn_k", { E, kv })
  add("attn_v", { E, kv })
  add("attn_output", { q, E })
  if p.arch == "qwen3moe" then
    add("attn_q_norm", { p.head_dim })
    add("attn_k_norm", { p.head_dim })
  end
  add("ffn_norm", { E })
  if p.arch == "qwen3moe" then
    add("ffn_gate_inp", { E, p.n_expert })
    add("ffn_gate_exps", { E, p.n_ff_exp, p.n_expert })
    add("ffn_up_exps", { E, p.n_ff_exp, p.n_expert })
    add("ffn_down_exps", { p.n_ff_exp, E, p.n_expert })
  else
    add("ffn_gate", { E, p.n_ff })
    add("ffn_up", { E, p.n_ff })
    add("ffn_down", { p.n_ff, E })
  end
end

-- Every tensor of preset p: { name, dims, role, layer (nil outside the blocks) }, in file order.
function M.tensors(p)
  local out = { { name = "token_embd.weight", dims = { p.n_embd, p.n_vocab }, role = "token_embd" } }
  for i = 0, p.n_layer - 1 do layer(p, i, out) end
  out[#out + 1] = { name = "output_norm.weight", dims = { p.n_embd }, role = "output_norm" }
  if not p.tied then
    out[#out + 1] = { name = "output.weight", dims = { p.n_embd, p.n_vocab }, role = "output" }
  end
  return out
end

-- Elements of the whole model (every tensor).
function M.parameters(p)
  local n = 0
  for _, t in ipairs(M.tensors(p)) do
    local e = 1
    for _, d in ipairs(t.dims) do e = e * d end
    n = n + e
  end
  return n
end

return M
