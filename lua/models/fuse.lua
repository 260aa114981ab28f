-- models.fuse — the fused decode step's pieces for models.decoder (opts.fuse, on unless false):
--   group(list, h, groups)     a layer's projections that read the same activation (attn_q |
--                              attn_k | attn_v; a family's ffn_gate | ffn_up) as ONE matrix,
--                              where the parts share a served format and cols
--   bind(g, dev, w)            that matrix resident: the parts' GGUF rows one after another
--   parts(w)                   the parts' row ranges in it (prefill runs a GEMM a part)
-- The decoder's other fusions: add_rms_norm_q8k (the residual add and the next norm's q8_K
-- pack in one launch, Session:add_norm) and RoPE over q and k adjacent in one buffer.
-- A resident row is whole bytes (xpu.quant.row_bytes), so a part's rows are one slice of the
-- fused buffer (fused only where each starts at a multiple of 16 bytes): a prefill GEMM over
-- that slice is the call the part's own matrix would get.
local xpu = require "xpu"

local M = {}

local function layer_tensor(i, what) return ("blk.%d.%s.weight"):format(i, what) end

-- The groups every family fuses, and the fused matrix's name in each layer.
M.ATTN = { name = "attn_qkv", parts = { "attn_q", "attn_k", "attn_v" } }
function M.name(i, group) return ("blk.%d.%s"):format(i, group.name) end

-- Bytes of a resident row of w's format and width, or nil where the format is not served (its
-- tensors then stay apart, and the audit refuses each by its own name).
local function row_bytes(w)
  local ok, info = pcall(xpu.quant.info, w.format)
  if not ok or w.cols % info.block_elems ~= 0 then return nil end
  return xpu.quant.row_bytes(w.format, w.cols // info.block_elems)
end

-- Whether the parts can be one matrix: one format and width, no expert banks, and every part
-- starting at a multiple of 16 bytes (a slice a kernel may read in 16-byte vectors).
local function fusable(ws)
  for k = 2, #ws do
    if ws[k].format ~= ws[1].format or ws[k].cols ~= ws[1].cols or ws[k].experts or ws[1].experts then return false end
  end
  local rb = row_bytes(ws[1])
  if not rb then return false end
  local row = 0
  for _, w in ipairs(ws) do
    if row * rb % 16 ~= 0 then return false end
    row = row + w.rows
  end
  return true
end

-- The fused entry of layer i's group (ws: the parts' entries of models.decoder's weight list).
local function fused_entry(i, group, ws)
  local names, rows = {}, 0
  for k, w in ipairs(ws) do
    names[k], rows = ("'%s'"):format(w.name), rows + w.rows
  end
  return { name = M.name(i, group), format = ws[1].format, cols = ws[1].cols, rows = rows, parts = ws,
           label = ("fused matrix '%s' (tensors %s)"):format(M.name(i, group), table.concat(names, ", ")) }
end

-- list with each layer's group parts that can be one matrix (fusable) replaced by one fused
-- entry (where the first part stood); other parts stay as they are.
function M.group(list, h, groups)
  local at = {}
  for k, w in ipairs(list) do at[w.name] = k end
  local replace, drop = {}, {}
  for i = 0, h.n_layer - 1 do
    for _, group in ipairs(groups) do
      local ws = {}
      for k, p in ipairs(group.parts) do ws[k] = list[at[layer_tensor(i, p)]] end
      if fusable(ws) then
        replace[at[ws[1].name]] = fused_entry(i, group, ws)
        for k = 2, #ws do drop[at[ws[k].name]] = true end
      end
    end
  end
  local out = {}
  for k, w in ipairs(list) do
    if not drop[k] then out[#out + 1] = replace[k] or w end
  end
  return out
end

-- The fused matrix w resident on dev: the parts' GGUF blocks concatenated (rows after rows),
-- then the resident split over all of them.
function M.bind(g, dev, w)
  local data = {}
  for k, p in ipairs(w.parts) do data[k] = g:data(p.name) end
  local bpr = w.cols // xpu.quant.info(w.format).block_elems
  return dev:buffer(xpu.quant.resident(w.format, table.concat(data), bpr))
end

-- Each part's { name, of = the fused matrix's name, offset (bytes), bytes, rows } in the fused
-- buffer.
function M.parts(w)
  local rb = row_bytes(w)
  local out, row = {}, 0
  for _, p in ipairs(w.parts) do
    out[#out + 1] = { name = p.name, of = w.name, offset = row * rb, bytes = p.rows * rb, rows = p.rows }
    row = row + p.rows
  end
  return out
end

return M
