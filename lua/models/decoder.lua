-- models.decoder — the decoder both model families share (models.llama: dense SwiGLU;
-- models.qwen3moe: QK-norm, neox RoPE and a mixture-of-experts FFN), on one device, every
-- kernel picked by a route table. A family names its FFN's tensors and builds and runs its FFN
-- calls; everything else is here:
--   open(g, device, family, opts)  audit every tensor against the tables (a tensor no row
--                              serves is an error naming it), then bind each once (resident)
--   m:session{ctx =, batch =}  the KV cache (f16, [n_kv_head, slots, head_dim] per layer),
--                              the activations, and the bound calls of the step
--   s:prefill(ids)             the prompt through the prefill GEMM and prefill attention, in
--                              batches; leaves the next token's id on the device
--   s:step()                   one decode token: the id the last step left, through every layer
--                              to the argmax, on the device; no host round trip inside it
--   s:logits()                 the last position's logits (f32s), for the specs
-- The Lua side decides which rows run; the launches are the rows' C launchers.
local xpu = require "xpu"
local hparams = require "models.hparams"
local attention = require "xpu.layers.attention"
local ew = require "xpu.layers.elementwise"
local norm = require "xpu.layers.norm"
local select = require "xpu.layers.select"
local gemm = require "xpu.layers.gemm"
local kv = require "xpu.layers.kv"

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
      error(("%s: tensor '%s' (%s): no %s row serves it on %s: %s"):format(g.path, name, q.format, regime, dev.id,
        tostring(t:why_not_picked(c))), 3)
    end
    return row
  end
  local rows = {}
  for _, w in ipairs(list) do
    if w.experts then
      local q = xpu.query { regime = "decode", format = w.format, in_dim = w.cols, out_dim = w.rows, experts = w.experts,
                            used = h.n_expert_used }
      rows[w.name] = check(rt.decode, q, w.name, "decode")
      check(rt.prefill, gemm.id_query(w.format, 64, w.rows, w.cols, w.experts, h.n_expert_used), w.name, "prefill")
    else
      local q = xpu.query { regime = "decode", format = w.format, in_dim = w.cols, out_dim = w.rows }
      rows[w.name] = check(rt.decode, q, w.name, "decode")
      check(rt.prefill, gemm.query(w.format, 64, w.rows, w.cols), w.name, "prefill")
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

-- Opens GGUF object g on dev for family (models.llama's or models.qwen3moe's table):
-- hyperparameters, the audit, then every tensor bound once. opts.routes: route tables to use
-- instead of the defaults (for specs).
function M.open(g, dev, family, opts)
  opts = opts or {}
  local h = hparams.read(g)
  if h.arch ~= family.arch then error(("%s: architecture %s is not %s"):format(g.path, h.arch, family.arch), 3) end
  local rt = opts.routes or tables(family)
  for k, t in pairs(family.routes or {}) do rt[k] = rt[k] or require(t) end
  local list = weights(g, h, family)
  local m = setmetatable({ g = g, h = h, dev = dev, rt = rt, family = family, rows = audit(g, h, dev, rt, list), w = {},
                           fmt = {} }, M)
  -- weight_bytes: every tensor bound (matrices here, the vectors and the embedding below);
  -- token_bytes: what one decode token reads of the matrices (an expert
  -- bank's used share)
  m.weight_bytes, m.token_bytes = 0, 0
  for _, w in ipairs(list) do
    m.w[w.name], m.fmt[w.name] = bind_matrix(g, dev, w), w
    local bytes = g:tensor(w.name).bytes
    m.weight_bytes = m.weight_bytes + bytes
    m.token_bytes = m.token_bytes + (w.experts and bytes * h.n_expert_used // w.experts or bytes)
  end
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

-- The activations of a batch of n tokens.
local function activations(m, n)
  local a = m.family.activations(m, n)
  local h, d = m.h, m.dev
  local qd, kd = h.n_head * h.head_dim, h.n_kv_head * h.head_dim
  local base = {
    n = n, x = f32(d, n * h.n_embd), xq = q8k(d, n * h.n_embd), q = f32(d, n * qd), k = f32(d, n * kd),
    v = f32(d, n * kd), qr = f32(d, n * qd), kr = f32(d, n * kd), att = f32(d, n * qd), aq = q8k(d, n * qd),
    t = f32(d, n * h.n_embd), pos = d:buffer(4 * n),
  }
  if m.family.qk_norm then base.qn, base.kn = f32(d, n * qd), f32(d, n * kd) end
  for k, v in pairs(base) do a[k] = v end
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

-- The mat-vec (decode, one token) or GEMM (prefill, n tokens) of weight `name` into y from xq.
function Session:matmul(name, y, xq, n)
  local m = self.m
  local w = m.fmt[name]
  if n == 1 then
    return bound(m.rt.decode, m.dev, xpu.query { regime = "decode", format = w.format, in_dim = w.cols, out_dim = w.rows },
      { y = y, w = m.w[name], x = xq })
  end
  return bound(m.rt.prefill, m.dev, gemm.query(w.format, n, w.rows, w.cols, gemm.partition(m.dev, w.format)),
    { y = y, w = m.w[name], x = xq })
end

-- The bound calls of every layer's step over the activations a of n tokens: the attention
-- half here (for one token, attention too: it reads its position from a.pos), the FFN half
-- the family's (family.ffn_calls).
function Session:calls(a, n)
  local m, h, d, fam = self.m, self.m.h, self.m.dev, self.m.family
  local eps, list = h.eps, {}
  local rope_opts = { mode = fam.rope_mode, n_dims = h.rope_dims }
  local qx, kx = a.q, a.k
  if fam.qk_norm then qx, kx = a.qn, a.kn end
  for i = 0, h.n_layer - 1 do
    local L, c = function(w) return layer_tensor(i, w) end, self.cache[i]
    local l = {
      norm1 = bound(m.rt.norm, d, norm.query("rms_norm_q8k", n, h.n_embd), { xq = a.xq, x = a.x, weight = m.w[L "attn_norm"], eps = eps }),
      q = self:matmul(L "attn_q", a.q, a.xq, n),
      k = self:matmul(L "attn_k", a.k, a.xq, n),
      v = self:matmul(L "attn_v", a.v, a.xq, n),
      rope_q = bound(m.rt.ew, d, ew.rope("f32", n, h.n_head, h.head_dim, rope_opts),
        { out = a.qr, x = qx, pos = a.pos, freq_base = h.rope_base }),
      rope_k = bound(m.rt.ew, d, ew.rope("f32", n, h.n_kv_head, h.head_dim, rope_opts),
        { out = a.kr, x = kx, pos = a.pos, freq_base = h.rope_base }),
      store = bound(m.rt.kv, d, kv.query { tokens = n, n_kv_head = h.n_kv_head, head_dim = h.head_dim, slots = self.ctx },
        { kc = c.k, vc = c.v, k = a.kr, v = a.v, pos = a.pos }),
      pack = { kernel = d:kernel "q8k_pack", xq = a.aq, x = a.att, n = n * h.n_head * h.head_dim },
      o = self:matmul(L "attn_output", a.t, a.aq, n),
      add1 = bound(m.rt.ew, d, ew.binary("add", "f32", n, h.n_embd), { out = a.x, a = a.x, b = a.t }),
    }
    if fam.qk_norm then
      l.qnorm = bound(m.rt.norm, d, norm.query("rms_norm", n * h.n_head, h.head_dim), { out = a.qn, x = a.q, weight = m.w[L "attn_q_norm"], eps = eps })
      l.knorm = bound(m.rt.norm, d, norm.query("rms_norm", n * h.n_kv_head, h.head_dim), { out = a.kn, x = a.k, weight = m.w[L "attn_k_norm"], eps = eps })
    end
    if n == 1 then
      l.attend = bound(m.rt.attention, d, self.att_q, { out = a.att, part = self.part, q = a.qr, k = c.k, v = c.v, pos = a.pos })
    end
    l.ffn = fam.ffn_calls(self, a, n, i)
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

local function pack(p) p.kernel:launch(nil, p.n // 256, 256, p.xq, p.x, p.n) end

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

-- One pass of every layer over the activations a (n tokens from position p0).
function Session:layers(a, calls, n, p0)
  local sync, ffn = self:timer(), self.m.family.ffn_run
  for i = 0, self.m.h.n_layer - 1 do
    local c, t0 = calls[i], xpu.now()
    run(c.norm1); sync("norms", t0); t0 = xpu.now()
    run(c.q); run(c.k); run(c.v); sync("matmul", t0); t0 = xpu.now()
    if c.qnorm then run(c.qnorm); run(c.knorm); sync("norms", t0); t0 = xpu.now() end
    run(c.rope_q); run(c.rope_k); run(c.store); sync("other", t0); t0 = xpu.now()
    run(c.attend or self:attend(i, a, n, p0)); sync("attention", t0); t0 = xpu.now()
    pack(c.pack); sync("other", t0); t0 = xpu.now()
    run(c.o); sync("matmul", t0); t0 = xpu.now()
    run(c.add1); sync("other", t0)
    ffn(self, c.ffn, sync)
  end
end

-- The head over the last token of x (f32 rows of n_embd): output norm, the output mat-vec,
-- argmax into the session's id buffer.
function Session:head(x_row)
  local m, h, d = self.m, self.m.h, self.m.dev
  self.head_calls = self.head_calls or setmetatable({}, { __mode = "k" })
  local key = x_row
  local c = self.head_calls[key]
  if not c then
    c = {
      norm = bound(m.rt.norm, d, norm.query("rms_norm_q8k", 1, h.n_embd), { xq = self.lq, x = x_row, weight = m.w["output_norm.weight"], eps = h.eps }),
      out = self:matmul(m.output, self.logit_buf, self.lq, 1),
      argmax = bound(m.rt.select, d, select.argmax_query(1, h.n_vocab), { out = self.id, x = self.logit_buf }),
    }
    self.head_calls[key] = c
  end
  run(c.norm); run(c.out); run(c.argmax)
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
    if n > 1 then a.last = a.last or a.x:slice(4 * h.n_embd * (n - 1), 4 * h.n_embd) end
    self:head(n == 1 and a.x or a.last)
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
  self:layers(a, self.decode, 1, self.pos)
  self:head(a.x)
  self.pos = self.pos + 1
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
