-- models.decoder — the decoder both model families share (models.llama: dense SwiGLU;
-- models.qwen3moe: QK-norm, neox RoPE and a mixture-of-experts FFN), on one device, every
-- kernel picked by a route table. A family names its FFN's tensors and builds and runs its FFN
-- calls; everything else is here:
--   open(g, device, family, opts)  audit every tensor against the tables (a tensor no row
--                              serves is an error naming it), then bind each once (resident);
--                              opts.fuse = false keeps the unfused step (models.fuse says what
--                              the fused one joins)
--   m:session{ctx =, batch =}  the KV cache (f16, [n_kv_head, slots, head_dim] per layer),
--                              the activations, and the bound calls of the step
--   s:prefill(ids)             the prompt through the prefill GEMM and prefill attention, in
--                              batches; leaves the next token's id on the device
--   s:step()                   one decode token: the id the last step left, through every layer
--                              to the argmax, on the device; no host round trip inside it
--   s:logits()                 the last position's logits (f32s), for the specs
--   s:launches_per_token()     the bound calls a decode step runs, by stage and layer
-- The Lua side decides which rows run; the launches are the rows' C launchers.
local xpu = require "xpu"
local hparams = require "models.hparams"
local attention = require "xpu.layers.attention"
local ew = require "xpu.layers.elementwise"
local norm = require "xpu.layers.norm"
local select = require "xpu.layers.select"
local gemm = require "xpu.layers.gemm"
local kv = require "xpu.layers.kv"
local fuse = require "models.fuse"

local M = {}
M.__index = M
local Session = {}
Session.__index = Session
M.Session = Session

M.Q8K = 320 -- bytes of a q8_K block of 256 activations
local Q8K = M.Q8K

local function layer_tensor(i, what) return ("blk.%d.%s.weight"):format(i, what) end
M.layer_tensor = layer_tensor

-- The attention weights of a layer a mat-vec reads; a family adds its FFN's (family.mats) and
-- its norm vectors (family.norms, beside attn_norm).
local MATS = { "attn_q", "attn_k", "attn_v", "attn_output" }

-- ---- routes and the audit -----------------------------------------------------------------

local function tables(family)
  return { decode = require(family.decode_routes), prefill = require "routes.prefill", norm = require "routes.layer_norm",
           ew = require "routes.layer_elementwise", select = require "routes.layer_select",
           attention = require "routes.attention", kv = require "routes.layer_kv" }
end

local function tensor_or_error(g, name)
  return g:tensor(name) or error(("%s: tensor '%s' is missing"):format(g.path, name), 3)
end

M.tensor_or_error = tensor_or_error

-- Every mat-vec weight of the file: { name, format, rows, cols [, experts] } (an expert bank's
-- rows are one expert's).
local function weights(g, h, family)
  local list = {}
  for i = 0, h.n_layer - 1 do
    for _, set in ipairs { MATS, family.mats } do
      for _, w in ipairs(set) do
        local t = tensor_or_error(g, layer_tensor(i, w))
        list[#list + 1] = { name = t.name, format = t.type, cols = t.dims[1], rows = t.dims[2] or 1, experts = t.dims[3] }
      end
    end
  end
  local out = g:tensor "output.weight" or tensor_or_error(g, "token_embd.weight")
  list[#list + 1] = { name = out.name, format = out.type, cols = out.dims[1], rows = out.dims[2], output = true }
  return list
end

-- The audit: each weight's decode and prefill queries picked on the device, the embedding's
-- get_rows; the first tensor no row serves raises with the refusal.
local function audit(g, h, dev, rt, list)
  local function check(t, q, name, regime)
    local c = xpu.call { query = q, device = dev, receiver = { bound = true, resident = true } }
    local row = t:pick(c)
    if not row then
      local what = name:find "^fused" and name or ("tensor '%s'"):format(name)
      error(("%s: %s (%s): no %s row serves it on %s: %s"):format(g.path, what, q.format, regime, dev.id,
        tostring(t:why_not_picked(c))), 3)
    end
    return row
  end
  local rows = {}
  for _, w in ipairs(list) do
    local name = w.label or w.name
    if w.experts then
      local q = xpu.query { regime = "decode", format = w.format, in_dim = w.cols, out_dim = w.rows, experts = w.experts,
                            used = h.n_expert_used }
      rows[w.name] = check(rt.decode, q, name, "decode")
      check(rt.prefill, gemm.id_query(w.format, 64, w.rows, w.cols, w.experts, h.n_expert_used), name, "prefill")
    else
      local q = xpu.query { regime = "decode", format = w.format, in_dim = w.cols, out_dim = w.rows }
      rows[w.name] = check(rt.decode, q, name, "decode")
      -- a fused matrix's prefill runs a GEMM over each part's rows
      for _, p in ipairs(w.parts or { w }) do check(rt.prefill, gemm.query(w.format, 64, p.rows, w.cols), name, "prefill") end
    end
  end
  local e = tensor_or_error(g, "token_embd.weight")
  check(rt.select, select.get_rows_query(e.type, 1, e.dims[2], e.dims[1], M.tied_resident(g, e)), e.name, "get_rows")
  return rows
end

-- ---- load ---------------------------------------------------------------------------------

-- Whether the embedding is read from the output matrix's resident rows: a tied model (no
-- output.weight) whose embedding format has a resident get_rows row, so its one table is
-- bound once.
function M.tied_resident(g, e)
  if g:tensor "output.weight" then return false end
  for _, f in ipairs(select.RESIDENT_FORMATS) do
    if f == e.type then return true end
  end
  return false
end

local function bind_matrix(g, dev, w)
  local info = xpu.quant.info(w.format)
  local bpr = w.cols // info.block_elems
  return dev:buffer(xpu.quant.resident(w.format, g:data(w.name), bpr))
end

-- Every matrix of list bound once on m.dev: a fused one's parts only inside it (m.part: where
-- each part's rows lie). weight_bytes: every matrix (open adds the vectors and the embedding);
-- token_bytes: what one decode token reads of them (an expert bank's used share).
local function bind_all(m, list)
  m.weight_bytes, m.token_bytes = 0, 0
  for _, w in ipairs(list) do
    m.fmt[w.name] = w
    if w.parts then
      m.w[w.name] = fuse.bind(m.g, m.dev, w)
      for _, p in ipairs(fuse.parts(w)) do m.part[p.name] = p end
    else
      m.w[w.name] = bind_matrix(m.g, m.dev, w)
    end
    for _, t in ipairs(w.parts or { w }) do
      local bytes = m.g:tensor(t.name).bytes
      m.weight_bytes = m.weight_bytes + bytes
      m.token_bytes = m.token_bytes + (w.experts and bytes * m.h.n_expert_used // w.experts or bytes)
    end
  end
end

-- Opens GGUF object g on dev for family (models.llama's or models.qwen3moe's table):
-- hyperparameters, the audit, then every tensor bound once. opts.routes: route tables to use
-- instead of the defaults (for specs); opts.fuse = false: the unfused step (each projection
-- its own matrix, every add and norm its own launch).
function M.open(g, dev, family, opts)
  opts = opts or {}
  local h = hparams.read(g)
  if h.arch ~= family.arch then error(("%s: architecture %s is not %s"):format(g.path, h.arch, family.arch), 3) end
  local rt = opts.routes or tables(family)
  for k, t in pairs(family.routes or {}) do rt[k] = rt[k] or require(t) end
  local fused = opts.fuse ~= false
  local list = weights(g, h, family)
  if fused then list = fuse.group(list, h, { fuse.ATTN, family.fuse_ffn }) end
  local m = setmetatable({ g = g, h = h, dev = dev, rt = rt, family = family, rows = audit(g, h, dev, rt, list), w = {},
                           fmt = {}, part = {}, fused = fused }, M)
  bind_all(m, list)
  if family.audit then family.audit(m) end
  -- the vectors and the embedding count in weight_bytes too: every byte bound, once
  local function bind_vector(name)
    local t = tensor_or_error(g, name)
    m.w[name] = dev:buffer(g:data(t.name))
    m.weight_bytes = m.weight_bytes + t.bytes
  end
  for i = 0, h.n_layer - 1 do
    for _, n in ipairs(family.norms) do bind_vector(layer_tensor(i, n)) end
  end
  bind_vector "output_norm.weight"
  local e = g:tensor "token_embd.weight"
  m.output = g:tensor "output.weight" and "output.weight" or "token_embd.weight"
  if M.tied_resident(g, e) then
    m.embd = { buf = m.w[e.name], format = e.type, resident = true }
  else
    -- a tied table with no resident row is bound twice and counted once: the second copy
    -- shows as memory over the weights
    m.embd = { buf = dev:buffer(g:data(e.name)), format = e.type }
    if m.output ~= e.name then m.weight_bytes = m.weight_bytes + e.bytes end
  end
  return m
end

-- ---- the session: buffers and bound calls --------------------------------------------------

local function f32(dev, n) return dev:buffer(4 * n) end
local function q8k(dev, n) return dev:buffer(n // 256 * Q8K) end

-- A bound call: the row for the query on the device, dispatched by run().
local function bound(t, dev, query, operands)
  local c = xpu.call { query = query, device = dev, operands = operands, receiver = { bound = true, resident = true } }
  local row = t:bind(c)
  return { row = row, call = c }
end

local function run(b) b.row:dispatch(b.call) end
M.bound, M.run = bound, run

-- The attention half's own buffers (dead once the FFN starts), from allocator d. q | k | v lie
-- in one buffer (qkv), as do the roped qr | kr (qkr) and qwen's normed qn | kn (qkn): for one
-- token each pair is the [heads, head_dim] rows of one launch (a fused mat-vec's output, one
-- RoPE over n_head + n_kv_head heads); for a batch, [n, heads, head_dim] blocks one after
-- another.
local function attention_buffers(m, n, d)
  local h = m.h
  local qd, kd = h.n_head * h.head_dim, h.n_kv_head * h.head_dim
  local b = { qkv = f32(d, n * (qd + 2 * kd)), qkr = f32(d, n * (qd + kd)), att = f32(d, n * qd), aq = q8k(d, n * qd) }
  b.q, b.k, b.v = b.qkv:slice(0, 4 * n * qd), b.qkv:slice(4 * n * qd, 4 * n * kd),
    b.qkv:slice(4 * n * (qd + kd), 4 * n * kd)
  b.qk = b.qkv:slice(0, 4 * n * (qd + kd))
  b.qr, b.kr = b.qkr:slice(0, 4 * n * qd), b.qkr:slice(4 * n * qd, 4 * n * kd)
  if m.family.qk_norm then
    b.qkn = f32(d, n * (qd + kd))
    b.qn, b.kn = b.qkn:slice(0, 4 * n * qd), b.qkn:slice(4 * n * qd, 4 * n * kd)
  end
  return b
end

-- Allocators with a device's buffer(bytes) method. sizer(): hands out stand-ins and adds up
-- the bytes; carver(buf): slices of buf, back to back. Each piece starts at a multiple of
-- 256 bytes (kernels may read any operand in 16-byte vectors).
local ALIGN = 256
local function sizer()
  local z = { bytes = 0 }
  local stand_in = { slice = function(self) return self end }
  function z:buffer(bytes)
    self.bytes = self.bytes + (bytes + ALIGN - 1) // ALIGN * ALIGN
    return stand_in
  end
  return z
end

local function carver(buf)
  local c = { at = 0 }
  function c:buffer(bytes)
    local v = buf:slice(self.at, bytes)
    self.at = self.at + (bytes + ALIGN - 1) // ALIGN * ALIGN
    return v
  end
  return c
end

-- The activations of a batch of n tokens. The residual stream, its packed norm, the
-- attention's output and the positions live through the layer; the attention half's buffers
-- and the family's FFN buffers are never live at once, so a batch of several tokens carves both
-- from one scratch buffer (the larger of the two: the 512-token prefill batch's activations
-- are most of the memory past the weights).
local function activations(m, n)
  local h, d = m.h, m.dev
  local a = { n = n, x = f32(d, n * h.n_embd), xq = q8k(d, n * h.n_embd), t = f32(d, n * h.n_embd), pos = d:buffer(4 * n) }
  local halves = { function(al) return attention_buffers(m, n, al) end,
                   function(al) return m.family.activations(m, n, al) end }
  local scratch
  if n > 1 then
    local most = 0
    for _, half in ipairs(halves) do
      local z = sizer()
      half(z)
      most = math.max(most, z.bytes)
    end
    scratch = d:buffer(most)
    a.scratch = scratch
  end
  for _, half in ipairs(halves) do
    for k, v in pairs(half(scratch and carver(scratch) or d)) do a[k] = v end
  end
  return a
end
M.f32, M.q8k = f32, q8k

local function positions(p0, n)
  local t = {}
  for i = 0, n - 1 do t[i + 1] = string.pack("<i4", p0 + i) end
  return table.concat(t)
end

-- Opens a session on the model: ctx positions of KV cache (slots), prompt batches of up to
-- batch tokens.
function M:session(opts)
  opts = opts or {}
  local h, d = self.h, self.dev
  local ctx = opts.ctx or math.min(h.ctx, 4096)
  local s = setmetatable({ m = self, ctx = ctx, batch = opts.batch or 512, pos = 0, cache = {} }, Session)
  for i = 0, h.n_layer - 1 do
    s.cache[i] = { k = d:buffer(2 * h.n_kv_head * ctx * h.head_dim), v = d:buffer(2 * h.n_kv_head * ctx * h.head_dim) }
  end
  s.kv_bytes = 2 * h.n_layer * 2 * h.n_kv_head * ctx * h.head_dim
  -- every position 0 .. ctx - 1 once, on the device: a step's position is copied from it on
  -- the stream (no host round trip), so the recorded step replays unchanged
  s.positions = d:buffer(positions(0, ctx))
  s.stream = d:default_stream()
  if opts.replay ~= false then s.stream:set_deferred(true) end
  s.one = activations(self, 1)
  s.logit_buf = f32(d, h.n_vocab)
  s.id = d:buffer(4)
  s.lq = q8k(d, h.n_embd)
  s.att_q = attention.query("attention_decode", { n_head = h.n_head, n_kv_head = h.n_kv_head, head_dim = h.head_dim,
                                                   slots = ctx, pos_buffer = true })
  s.part = d:buffer(attention.partial_bytes(s.att_q))
  s.decode = s:calls(s.one, 1)
  return s
end

-- The mat-vec (decode, one token) or GEMM (prefill, n tokens) of weight `name` into y from xq:
-- a matrix bound on its own, a fused one, or a part of a fused one (prefill: a GEMM over the
-- part's rows, a slice of the fused buffer).
function Session:matmul(name, y, xq, n)
  local m = self.m
  local w, buf = m.fmt[name], m.w[name]
  if not w then
    local p = m.part[name] or error(("session: no matrix '%s'"):format(name), 2)
    w = { format = m.fmt[p.of].format, cols = m.fmt[p.of].cols, rows = p.rows }
    buf = m.w[p.of]:slice(p.offset, p.bytes)
  end
  if n == 1 then
    return bound(m.rt.decode, m.dev, xpu.query { regime = "decode", format = w.format, in_dim = w.cols, out_dim = w.rows },
      { y = y, w = buf, x = xq })
  end
  return bound(m.rt.prefill, m.dev, gemm.query(w.format, n, w.rows, w.cols, gemm.partition(m.dev, w.format)),
    { y = y, w = buf, x = xq })
end

-- Appends to list a step entry: a bound call (or { fn = }, { attend = true }) and its kernel
-- family for the split (matmul, attention, norms, other).
local function push(list, b, fam)
  b.fam = fam
  list[#list + 1] = b
end
M.push = push

-- The projections of layer i's group (models.fuse.ATTN, a family's fuse_ffn) from xq: one
-- mat-vec into whole (the parts' outputs adjacent in it) where the group is one matrix and n
-- is 1; else a mat-vec or GEMM a part into outs.
function Session:project(list, i, group, outs, whole, xq, n)
  local fused = fuse.name(i, group)
  if n == 1 and self.m.fmt[fused] then return push(list, self:matmul(fused, whole, xq, 1), "matmul") end
  for k, p in ipairs(group.parts) do push(list, self:matmul(layer_tensor(i, p), outs[k], xq, n), "matmul") end
end

-- add_rms_norm_q8k over the n rows of a.x: a.x = a.x + a.t (the residual stream, in place),
-- then the q8_K pack of rms_norm(a.x) * weight into a.xq. One launch for the add and the norm;
-- with out, add_rms_norm_q8k_f32: the normed f32 rows into out as well.
function Session:add_norm(a, n, weight, out)
  local m = self.m
  local ops = { xq = a.xq, out = out, sum = a.x, x = a.x, residual = a.t, weight = weight, eps = m.h.eps }
  return bound(m.rt.norm, m.dev, norm.query(out and "add_rms_norm_q8k_f32" or "add_rms_norm_q8k", n, m.h.n_embd), ops)
end

-- The norm weight after layer i: the next layer's attn_norm, or the output norm.
function Session:next_norm(i)
  local m = self.m
  return i + 1 < m.h.n_layer and m.w[layer_tensor(i + 1, "attn_norm")] or m.w["output_norm.weight"]
end

-- Whether the FFN ends with the next layer's norm and pack (fused, in a family that has one:
-- llama's last add, qwen3moe's tail): then each layer leaves a.xq normed for the next, and the
-- head reads it.
function Session:tail_fused() return self.m.fused and self.m.family.fused_tail end

-- RoPE of layer calls into list: q and k in one launch over n_head + n_kv_head heads where
-- they are adjacent (fused, one token), else one launch each.
function Session:rope(list, a, n, qx, kx, qkx)
  local m, h = self.m, self.m.h
  local opts = { mode = m.family.rope_mode, n_dims = h.rope_dims }
  local function rope(heads, out, x)
    return bound(m.rt.ew, m.dev, ew.rope("f32", n, heads, h.head_dim, opts), { out = out, x = x, pos = a.pos, freq_base = h.rope_base })
  end
  if m.fused and n == 1 then return push(list, rope(h.n_head + h.n_kv_head, a.qkr, qkx), "other") end
  push(list, rope(h.n_head, a.qr, qx), "other")
  push(list, rope(h.n_kv_head, a.kr, kx), "other")
end

-- The attention half of layer i over the activations a of n tokens into list: norm1 (where the
-- layer before has not left it done), q k v, QK-norm, RoPE, the cache write, attention (for
-- one token bound here, reading its position from a.pos; for a batch bound per batch), the
-- pack, the output projection.
function Session:attention_calls(list, a, n, i)
  local m, h, d = self.m, self.m.h, self.m.dev
  local L, c, eps = function(w) return layer_tensor(i, w) end, self.cache[i], h.eps
  if not self:tail_fused() then
    push(list, bound(m.rt.norm, d, norm.query("rms_norm_q8k", n, h.n_embd), { xq = a.xq, x = a.x, weight = m.w[L "attn_norm"], eps = eps }), "norms")
  end
  self:project(list, i, fuse.ATTN, { a.q, a.k, a.v }, a.qkv, a.xq, n)
  local qx, kx, qkx = a.q, a.k, a.qk
  if m.family.qk_norm then
    push(list, bound(m.rt.norm, d, norm.query("rms_norm", n * h.n_head, h.head_dim), { out = a.qn, x = a.q, weight = m.w[L "attn_q_norm"], eps = eps }), "norms")
    push(list, bound(m.rt.norm, d, norm.query("rms_norm", n * h.n_kv_head, h.head_dim), { out = a.kn, x = a.k, weight = m.w[L "attn_k_norm"], eps = eps }), "norms")
    qx, kx, qkx = a.qn, a.kn, a.qkn
  end
  self:rope(list, a, n, qx, kx, qkx)
  push(list, bound(m.rt.kv, d, kv.query { tokens = n, n_kv_head = h.n_kv_head, head_dim = h.head_dim, slots = self.ctx },
    { kc = c.k, vc = c.v, k = a.kr, v = a.v, pos = a.pos }), "other")
  if n == 1 then
    push(list, bound(m.rt.attention, d, self.att_q, { out = a.att, part = self.part, q = a.qr, k = c.k, v = c.v, pos = a.pos }), "attention")
  else
    push(list, { attend = true }, "attention")
  end
  local p = { kernel = d:kernel "q8k_pack", xq = a.aq, x = a.att, n = n * h.n_head * h.head_dim }
  push(list, { fn = function() p.kernel:launch(nil, p.n // 256, 256, p.xq, p.x, p.n) end }, "other")
  push(list, self:matmul(L "attn_output", a.t, a.aq, n), "matmul")
end

-- The bound calls of every layer's step over the activations a of n tokens: list[i] the
-- entries of layer i in order (the attention half here, the FFN the family's:
-- family.ffn_calls), list.pre what runs before layer 0 (its norm1, where each layer's tail
-- does the next one's).
function Session:calls(a, n)
  local m, h, d = self.m, self.m.h, self.m.dev
  local list = { pre = {} }
  if self:tail_fused() then
    push(list.pre, bound(m.rt.norm, d, norm.query("rms_norm_q8k", n, h.n_embd),
      { xq = a.xq, x = a.x, weight = m.w[layer_tensor(0, "attn_norm")], eps = h.eps }), "norms")
  end
  for i = 0, h.n_layer - 1 do
    local l = {}
    self:attention_calls(l, a, n, i)
    if not m.fused then
      push(l, bound(m.rt.ew, d, ew.binary("add", "f32", n, h.n_embd), { out = a.x, a = a.x, b = a.t }), "other")
    end
    m.family.ffn_calls(self, l, a, n, i)
    list[i] = l
  end
  return list
end

-- The attention of a batch of n tokens from position p0 (a scalar: bound per batch).
function Session:attend(i, a, n, p0)
  local m, h = self.m, self.m.h
  local c = self.cache[i]
  local q = attention.query("attention_prefill", { n_head = h.n_head, n_kv_head = h.n_kv_head, head_dim = h.head_dim,
                                                    slots = self.ctx, tokens = n })
  return bound(m.rt.attention, m.dev, q, { out = a.att, q = a.qr, k = c.k, v = c.v, pos0 = p0 })
end

-- A timer for self.split (a table: seconds by kernel family, a sync after each family, for
-- reports only), or a no-op.
function Session:timer()
  local t = self.split
  if not t then return function() end end
  local stream = self.m.dev:default_stream()
  return function(key, t0)
    stream:sync()
    t[key] = (t[key] or 0) + xpu.now() - t0
  end
end

-- Runs the entries of a list in order, timing each run of one family as one (self.split);
-- returns how many ran.
function Session:run_list(list, a, n, p0, i)
  local sync, t0, ran = self:timer(), xpu.now(), 0
  for k, e in ipairs(list) do
    if e.attend then run(self:attend(i, a, n, p0)) elseif e.fn then e.fn() else run(e) end
    ran = ran + 1
    local nxt = list[k + 1]
    if not nxt or nxt.fam ~= e.fam then
      sync(e.fam, t0)
      t0 = xpu.now()
    end
  end
  return ran
end

-- One pass of every layer over the activations a (n tokens from position p0); returns the
-- calls run before layer 0 and in each layer ({ pre = , [0] = , ... }).
function Session:layers(a, calls, n, p0)
  local ran = { pre = self:run_list(calls.pre, a, n, p0) }
  for i = 0, self.m.h.n_layer - 1 do ran[i] = self:run_list(calls[i], a, n, p0, i) end
  return ran
end

-- The head over the last token: the output norm of x_row (f32, n_embd) unless the last
-- layer's tail left it packed in xq_row, the output mat-vec, argmax into the session's id
-- buffer.
function Session:head(x_row, xq_row)
  local m, h, d = self.m, self.m.h, self.m.dev
  self.head_calls = self.head_calls or setmetatable({}, { __mode = "k" })
  local key = self:tail_fused() and xq_row or x_row
  local c = self.head_calls[key]
  if not c then
    c = {}
    if not self:tail_fused() then
      push(c, bound(m.rt.norm, d, norm.query("rms_norm_q8k", 1, h.n_embd), { xq = self.lq, x = x_row, weight = m.w["output_norm.weight"], eps = h.eps }), "norms")
    end
    push(c, self:matmul(m.output, self.logit_buf, self:tail_fused() and xq_row or self.lq, 1), "matmul")
    push(c, bound(m.rt.select, d, select.argmax_query(1, h.n_vocab), { out = self.id, x = self.logit_buf }), "other")
    self.head_calls[key] = c
  end
  for _, e in ipairs(c) do run(e) end
  return #c
end

-- The embeddings of the ids in buffer `ids` (n of them) into a.x.
function Session:embed(a, ids, n)
  local m, h = self.m, self.m.h
  local key = n == 1 and "one" or "batch"
  self.embed_calls = self.embed_calls or {}
  local c = self.embed_calls[key]
  if not c or c.ids ~= ids or c.a ~= a then
    c = bound(m.rt.select, m.dev, select.get_rows_query(m.embd.format, n, h.n_vocab, h.n_embd, m.embd.resident),
      { out = a.x, table = m.embd.buf, ids = ids })
    c.ids, c.a = ids, a
    self.embed_calls[key] = c
  end
  run(c)
end

local function check_room(s, n)
  if s.pos + n > s.ctx then
    error(("session: %d more tokens at position %d run past the cache of %d"):format(n, s.pos, s.ctx), 3)
  end
end

-- The last of a's n rows: x (f32) and xq (q8_K), slices kept with a.
local function last_rows(a, n, n_embd)
  if n == 1 then return a.x, a.xq end
  a.last = a.last or a.x:slice(4 * n_embd * (n - 1), 4 * n_embd)
  a.last_q = a.last_q or a.xq:slice(n_embd // 256 * Q8K * (n - 1), n_embd // 256 * Q8K)
  return a.last, a.last_q
end

-- The prompt (a list of token ids) in batches of up to self.batch tokens; the next token's id
-- lands in the id buffer.
function Session:prefill(ids)
  local m, h = self.m, self.m.h
  if #ids == 0 then error("session:prefill: no tokens", 2) end
  check_room(self, #ids)
  local first = 1
  while first <= #ids do
    local n = math.min(self.batch, #ids - first + 1)
    local a = n == 1 and self.one or self:batch_of(n)
    local id_bytes = {}
    for i = first, first + n - 1 do
      local v = ids[i]
      if math.type(v) ~= "integer" or v < 0 or v >= h.n_vocab then
        error(("session:prefill: token %d is %s, not an id below %d"):format(i, tostring(v), h.n_vocab), 2)
      end
      id_bytes[#id_bytes + 1] = string.pack("<i4", v)
    end
    local idbuf = a.ids or m.dev:buffer(4 * n)
    a.ids = idbuf
    idbuf:upload(table.concat(id_bytes))
    self.stream:copy(a.pos, self.positions:slice(4 * self.pos, 4 * n))
    self:embed(a, idbuf, n)
    self:layers(a, n == 1 and self.decode or a.calls, n, self.pos)
    self:head(last_rows(a, n, h.n_embd))
    self.pos, first = self.pos + n, first + n
  end
end

-- The activations and calls of a prompt batch of n tokens (kept for the next batch of n).
function Session:batch_of(n)
  self.batches = self.batches or {}
  local a = self.batches[n]
  if not a then
    a = activations(self.m, n)
    a.calls = self:calls(a, n)
    self.batches[n] = a
  end
  return a
end

-- One decode token: the id the last step left in the id buffer, embedded, every layer, the head.
function Session:step()
  check_room(self, 1)
  local a = self.one
  self.stream:copy(a.pos, self.positions:slice(4 * self.pos, 4))
  self:embed(a, self.id, 1)
  local ran = self:layers(a, self.decode, 1, self.pos)
  ran.head = self:head(a.x, a.xq)
  self.ran, self.pos = ran, self.pos + 1
end

-- The bound calls the last decode step ran (each one launch of its row, or the pack's kernel),
-- counted as they ran: { total, embed (the get_rows and what runs before layer 0), layers =
-- { [0] = n, ... }, per_layer (the layers' mean), head }. An error before the first step.
function Session:launches_per_token()
  local ran = self.ran or error("session:launches_per_token: no decode step has run", 2)
  local n_layer = self.m.h.n_layer
  local r = { embed = 1 + ran.pre, layers = {}, head = ran.head }
  local sum = 0
  for i = 0, n_layer - 1 do
    r.layers[i] = ran[i]
    sum = sum + ran[i]
  end
  r.per_layer, r.total = sum / n_layer, r.embed + sum + r.head
  return r
end

-- Back to position 0 (the cache is overwritten as the positions come again).
function Session:reset()
  self.pos = 0
end

-- The id the last prefill or step chose (a host read: between steps only).
function Session:next_id()
  self.m.dev:default_stream():sync()
  return (string.unpack("<i4", self.id:download()))
end

function Session:logits()
  self.m.dev:default_stream():sync()
  return self.logit_buf:download()
end

-- Greedy generation: the prompt, then n tokens; returns the n ids.
function Session:greedy(prompt, n)
  self:prefill(prompt)
  local out = { self:next_id() }
  for _ = 2, n do
    self:step()
    out[#out + 1] = self:next_id()
  end
  return out
end

return M
