-- routes/common.lua — rows shared by the per-model route tables: one row per (format,
-- regime) kernel variant of the integer route, each with its shape gates (from the query)
-- and ready gates (from the receiver, at bind).
local xpu = require "xpu"

local M = {}

-- The formats with integer-route decode kernels, and their kernel name stems: xpu.formats()'s
-- names, in its order.
M.decode_formats = {}
for i, f in ipairs(xpu.formats()) do M.decode_formats[i] = f.name end

local function ready(c)
  local r = c.receiver
  if not r.bound then return "slab is not bound" end
  if not r.resident then return "resident layout not done" end
end

-- A dense mat-vec: one 32-lane wave per output row against the q8_K-packed activation.
local function dense_shape(q)
  if q.experts then return "expert bank: served by the id row" end
  if not q.in_dim or not q.out_dim then return "query has no in_dim / out_dim" end
  if q.in_dim % 256 ~= 0 then return "in width not a multiple of 256 (q8_K blocks)" end
  if q.out_dim < 1 then return "no output rows" end
end

-- Grouped experts: one launch over the bank's slab through the selection buffer.
local function id_shape(q)
  if not q.experts then return "not an expert bank" end
  if q.experts < 1 or (q.used or 1) > q.experts then return "used experts exceed the bank" end
  if q.in_dim % 256 ~= 0 then return "in width not a multiple of 256 (q8_K blocks)" end
end

-- The query facts each kind of row reads (its shape half and its kernel's launcher): declared,
-- so a query may carry them and a misspelt one is refused by name.
local DENSE_FACTS = { "in_dim", "out_dim", "experts" }
local ID_FACTS = { "in_dim", "out_dim", "experts", "used", "x_row_blocks" }
local SPLIT_FACTS = { "bpr", "block_base", "blocks" }

-- Each kernel variant is its own row: the packed int8 dot product form (built where the
-- device has a shader-level dot4, e.g. Vulkan) ahead of the plain integer form, which every
-- backend builds. Where the dot4 kernel is absent pick refuses it as Unsupported and takes
-- the plain row; the audit shows the pair as shadowed, so the choice is visible.
function M.dense_rows(t)
  for _, f in ipairs(M.decode_formats) do
    t:register { name = f .. "-int-wave", regime = "decode", format = f, priority = 20, facts = DENSE_FACTS,
                 kernel = f .. "_q8k_wave", shape = dense_shape, ready = ready }
    t:register { name = f .. "-dot4-wave", regime = "decode", format = f, priority = 30, facts = DENSE_FACTS,
                 needs = { "dot4_i8" }, kernel = f .. "_q8k_wave_dot4", shape = dense_shape, ready = ready }
  end
end

function M.id_rows(t)
  for _, f in ipairs(M.decode_formats) do
    t:register { name = f .. "-int-id", regime = "decode", format = f, priority = 20, facts = ID_FACTS,
                 kernel = f .. "_q8k_id", shape = id_shape, ready = ready }
    t:register { name = f .. "-dot4-id", regime = "decode", format = f, priority = 30, facts = ID_FACTS,
                 needs = { "dot4_i8" }, kernel = f .. "_q8k_id_dot4", shape = id_shape, ready = ready }
  end
end

-- The MoE tail (one token): the down bank and moe_combine in one launch, y[r] += the weighted
-- sum of every used expert's row r (kernels <fmt>_q8k_tail[_dot4]; docs/ARITHMETIC.md). The
-- query is the down bank's, under regime "moe_tail"; one token's slots, at most eight.
M.TAIL_MAX_USED = 8
xpu.regime "moe_tail"

local function tail_shape(q)
  local why = id_shape(q)
  if why then return why end
  if not q.used or q.used < 1 or q.used > M.TAIL_MAX_USED then
    return ("used %s is not 1 to %d experts a token"):format(tostring(q.used), M.TAIL_MAX_USED)
  end
  if q.tokens and q.tokens ~= 1 then return ("tokens %d: the tail serves one token"):format(q.tokens) end
end

local TAIL_FACTS = { "in_dim", "out_dim", "experts", "used", "x_row_blocks", "tokens" }

function M.tail_rows(t)
  for _, f in ipairs(M.decode_formats) do
    t:register { name = f .. "-int-tail", regime = "moe_tail", format = f, priority = 20, facts = TAIL_FACTS,
                 kernel = f .. "_q8k_tail", shape = tail_shape, ready = ready }
    t:register { name = f .. "-dot4-tail", regime = "moe_tail", format = f, priority = 30, facts = TAIL_FACTS,
                 needs = { "dot4_i8" }, kernel = f .. "_q8k_tail_dot4", shape = tail_shape, ready = ready }
  end
end

-- The tail's query: the down bank w (models.decoder's weight entry: format, cols, rows,
-- experts) over one token's `used` slots, each its own q8_K activation row.
function M.tail_query(w, used)
  return xpu.query { regime = "moe_tail", format = w.format, in_dim = w.cols, out_dim = w.rows, experts = w.experts,
                     used = used, x_row_blocks = w.cols // 256 }
end

-- The tail with the next layer's norm: the tail, then rms_norm_q8k of the residual it finished
-- (the next attn_norm, or the output norm) into a q8_K row, in the same launch: the group that
-- finishes last normalises (kernels <fmt>_q8k_tail_norm[_dot4]). Its query is the tail's under
-- regime "moe_tail_norm"; the residual must be whole q8_K blocks.
xpu.regime "moe_tail_norm"

local function tail_norm_shape(q)
  local why = tail_shape(q)
  if why then return why end
  if q.out_dim % 256 ~= 0 then
    return ("out_dim %d: the residual is no whole q8_K blocks (256) for the next norm's pack"):format(q.out_dim)
  end
end

function M.tail_norm_rows(t)
  for _, f in ipairs(M.decode_formats) do
    t:register { name = f .. "-int-tail-norm", regime = "moe_tail_norm", format = f, priority = 20, facts = TAIL_FACTS,
                 kernel = f .. "_q8k_tail_norm", shape = tail_norm_shape, ready = ready }
    t:register { name = f .. "-dot4-tail-norm", regime = "moe_tail_norm", format = f, priority = 30, facts = TAIL_FACTS,
                 needs = { "dot4_i8" }, kernel = f .. "_q8k_tail_norm_dot4", shape = tail_norm_shape, ready = ready }
  end
end

-- The tail-and-norm query: tail_query's, under regime "moe_tail_norm".
function M.tail_norm_query(w, used)
  return xpu.query { regime = "moe_tail_norm", format = w.format, in_dim = w.cols, out_dim = w.rows,
                     experts = w.experts, used = used, x_row_blocks = w.cols // 256 }
end

-- The bind split (GGUF blocks -> resident rows): each way it runs is a row of its own, best
-- first. A format without a row prefix (q4_K) is its payload pass alone; one with a prefix takes
-- the dword scale pass on a chunk of whole rows (a prefix dword spans two blocks of a row) and
-- the byte scale pass on any other; split_bytes serves a payload that is no whole dwords. Each
-- launcher launches the passes its row names (src/ops/quant/launch.c).
local function split_shape(q)
  if not q.bpr or q.bpr < 1 then return "query has no bpr (blocks per row)" end
end

local function info(f) return xpu.quant.info(f) end
local function dword_clean(f) return info(f).payload_bytes % 4 == 0 end

local function split_rows_of(f)
  local rows = {}
  local function row(suffix, kernel, priority, gate)
    rows[#rows + 1] = { name = f .. "-split" .. suffix, regime = "bind", format = f, priority = priority, facts = SPLIT_FACTS,
                        kernel = kernel, shape = function(q) return split_shape(q) or gate(q) end }
  end
  local clean = dword_clean(f)
  local function needs_clean() if not clean then return "a payload of whole dwords" end end
  if info(f).scale_bytes == 0 then
    row("", "split_payload_dword", 12, needs_clean)
  else
    row("", "split_scale_dword", 12, function(q)
      if not clean or info(f).scale_bytes % 2 ~= 0 then return "a payload of whole dwords and an even scale prefix" end
      if not q.blocks then return "a chunk of whole rows (query has no blocks)" end
      if (q.block_base or 0) % q.bpr ~= 0 or q.blocks % q.bpr ~= 0 then return "a chunk of whole rows" end
    end)
    row("-part", "split_scale_bytes", 11, needs_clean)
  end
  row("-bytes", "split_bytes", 10, function() end)
  return rows
end

function M.bind_rows(t)
  for _, f in ipairs(M.decode_formats) do
    for _, r in ipairs(split_rows_of(f)) do t:register(r) end
  end
end

-- One decode query per weight tensor of a GGUF file (2-D and 3-D tensors; GGUF's ne[0] is
-- the in width, ne[1] the out width, ne[2] the expert count). Returns queries, tensors.
function M.queries_of(xpu, gguf)
  local qs, ts = {}, {}
  for _, t in ipairs(gguf:tensors()) do
    local dims = t.dims
    if #dims >= 2 then
      local spec = { format = t.type, regime = "decode", in_dim = dims[1], out_dim = dims[2] }
      if #dims >= 3 then spec.experts = dims[3] end
      qs[#qs + 1] = xpu.query(spec)
      ts[#ts + 1] = t
    end
  end
  return qs, ts
end

return M
