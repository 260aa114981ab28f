-- models.hparams — a GGUF model's hyperparameters, read from its metadata under the
-- architecture's prefix (llama.cpp's key names), with the defaults llama.cpp applies and an
-- error naming the key where a required one is missing or out of range.
local M = {}

M.ARCHS = { llama = true, qwen3moe = true }

local function need(g, key, what)
  local v = g:meta(key)
  if v == nil then error(("%s: metadata key '%s' (%s) is missing"):format(g.path or "model", key, what), 3) end
  return v
end

local function count(g, key, what, lo)
  local v = need(g, key, what)
  if math.type(v) ~= "integer" or v < (lo or 1) then
    error(("%s: metadata key '%s' is %s, not an integer >= %d"):format(g.path or "model", key, tostring(v), lo or 1), 3)
  end
  return v
end

-- The hyperparameters of the model in GGUF object g: arch, n_embd, n_layer, n_head,
-- n_kv_head, head_dim, n_ff, n_vocab, ctx, rope_base, rope_dims, eps, and for qwen3moe
-- n_expert, n_expert_used, n_ff_exp.
function M.read(g)
  local arch = need(g, "general.architecture", "the model family")
  if not M.ARCHS[arch] then
    error(("%s: general.architecture '%s' is not llama or qwen3moe"):format(g.path or "model", tostring(arch)), 2)
  end
  local p = arch .. "."
  local h = { arch = arch }
  h.n_embd = count(g, p .. "embedding_length", "the hidden width")
  h.n_layer = count(g, p .. "block_count", "the layer count")
  h.n_head = count(g, p .. "attention.head_count", "query heads")
  h.n_kv_head = g:meta(p .. "attention.head_count_kv") or h.n_head
  h.head_dim = g:meta(p .. "attention.key_length") or h.n_embd // h.n_head
  h.ctx = count(g, p .. "context_length", "the trained context")
  h.rope_base = g:meta(p .. "rope.freq_base") or 10000.0
  h.rope_dims = g:meta(p .. "rope.dimension_count") or h.head_dim
  h.eps = g:meta(p .. "attention.layer_norm_rms_epsilon") or 1e-5
  if arch == "qwen3moe" then
    h.n_expert = count(g, p .. "expert_count", "experts per layer")
    h.n_expert_used = count(g, p .. "expert_used_count", "experts each token takes")
    h.n_ff_exp = count(g, p .. "expert_feed_forward_length", "an expert's FFN width")
  else
    h.n_ff = count(g, p .. "feed_forward_length", "the FFN width")
  end
  if h.n_kv_head < 1 or h.n_head % h.n_kv_head ~= 0 then
    error(("%s: %d query heads are not a multiple of %d KV heads"):format(g.path or "model", h.n_head, h.n_kv_head), 2)
  end
  local embd = g:tensor "token_embd.weight"
  if not embd then error(("%s: tensor 'token_embd.weight' is missing"):format(g.path or "model"), 2) end
  h.n_vocab = g:meta(p .. "vocab_size") or embd.dims[2]
  h.tied = g:tensor "output.weight" == nil
  return h
end

return M
