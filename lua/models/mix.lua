-- models.mix — the weight type of every tensor of a file made as FMT, by the rules llama.cpp's
-- quantizer (src/llama-quant.cpp) follows, so a made file has the tensor types a quantized
-- download of that kind has. Uses xpu.formats() for the served formats.
--
--   plain FMT (q4_0, q8_0, q4_K, ..., f16, f32): every matrix in FMT, except the output matrix
--     (token_embd when the output is tied to it): q6_K, or q8_0 when FMT is q8_0, or FMT itself
--     when FMT is not quantized;
--   q4_K_M: q4_K, with attn_v and ffn_down of the layers use_more_bits picks in q6_K, the
--     output in q6_K (and, with 8 experts, attn_v / attn_k in q8_0, attn_output in q5_K);
--   always: vectors (norms) and the router (ffn_gate_inp) f32; a type whose block does not
--     divide a row falls back (q4_K -> q5_0, q5_K -> q5_0, q6_K -> q8_0, then f16).
local xpu = require "xpu"

local M = {}

-- ggml's block width of each type a file may hold.
local BLOCK = { f32 = 1, f16 = 1 }
for _, f in ipairs(xpu.formats()) do BLOCK[f.name] = f.block_elems end

-- llama.cpp's general.file_type (enum llama_ftype) of each kind of file.
local FILE_TYPE = {
  f32 = 0, f16 = 1, q4_0 = 2, q8_0 = 7, q5_0 = 8, q4_K = 14, q4_K_M = 15, q5_K = 16,
  q6_K = 18, iq4_nl = 25,
}

-- Every FMT make-model takes: the served formats, f16, f32 and the mixes.
function M.kinds()
  local list = {}
  for _, f in ipairs(xpu.formats()) do list[#list + 1] = f.name end
  list[#list + 1] = "f16"
  list[#list + 1] = "f32"
  list[#list + 1] = "q4_K_M"
  return list
end

function M.file_type(fmt)
  return FILE_TYPE[fmt]
end

-- llama.cpp's use_more_bits: the first and last eighth of the layers and every third between.
function M.use_more_bits(i, n)
  return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2
end

-- llama.cpp's fallback when a row is not a whole number of the type's blocks. q5_K's own
-- fallback there is q5_1, which no quantizer here writes: q5_0 stands in.
local FALLBACK = { q4_K = "q5_0", q5_K = "q5_0", q6_K = "q8_0" }

local function fits(ty, width)
  return width % BLOCK[ty] == 0
end

local function fallback(ty, width)
  if fits(ty, width) then return ty end
  local alt = FALLBACK[ty]
  if alt and fits(alt, width) then return alt end
  return "f16"
end

local function output_type(fmt, base)
  if base == "f16" or base == "f32" or base == "q8_0" then return base end
  return "q6_K"
end

-- The type of tensor t (an entry of presets.tensors(p)) in a file of kind fmt.
function M.type_of(p, t, fmt)
  if #t.dims < 2 or t.role == "ffn_gate_inp" then return "f32" end
  local base = fmt == "q4_K_M" and "q4_K" or fmt
  local ty = base
  local role = t.role
  if role == "output" or (p.tied and role == "token_embd") then
    ty = output_type(fmt, base)
    if not fits(ty, t.dims[1]) then ty = "q8_0" end
  elseif fmt == "q4_K_M" then
    local eight = (p.n_expert or 0) == 8
    if role == "attn_v" then
      ty = eight and "q8_0" or M.use_more_bits(t.layer, p.n_layer) and "q6_K" or ty
    elseif role == "attn_k" and eight then
      ty = "q8_0"
    elseif role == "attn_output" and eight then
      ty = "q5_K"
    elseif role == "ffn_down" or role == "ffn_down_exps" then
      ty = M.use_more_bits(t.layer, p.n_layer) and "q6_K" or ty
    end
  end
  return fallback(ty, t.dims[1])
end

return M
