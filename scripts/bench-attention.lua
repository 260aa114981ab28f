-- bench-attention.lua — attention over the KV cache at the contexts a model ships with:
-- attention_decode (one token; GB/s of K and V read, against the copy ceiling measured in the
-- same run), the same with the position from a buffer (decode_pos: the attention_decode_pos
-- rows, at --pos), attention_prefill (--tokens tokens ending at the context; TFLOPS) and the
-- cache write kv_write (one token, or --tokens: GB/s of rows read and halves written), each
-- through its route table, so the row that ran is named beside its figure. Bit gate first:
-- each case's output on the device == cpu:0's (prefill: its last 16 tokens, the same row and
-- cache), then timed from the stream's timer over enough caches to leave the L2 behind.
--   xpulua scripts/bench-attention.lua [--device cuda:0]
--          [--kind decode|decode_pos|prefill|kv_write|kv_write_prefill|both|all]
--          [--ctx 512,4096,16384] [--heads 32] [--kv-heads 8] [--head-dim 128] [--tokens 512]
--          [--pos -1] [--window 0] [--reps 9] [-o table|jsonl|csv]
local xpu = require "xpu"
local report = require "xpu.report"
local settle = require "xpu.settle"
local cli = require "xpu.cli"
local att = require "xpu.layers.attention"
local kv = require "xpu.layers.kv"
local ROUTES = { attention = require "routes.attention", kv = require "routes.layer_kv" }

local NAME = "bench-attention"
local opts = cli.parse(arg, {
  name = NAME,
  about = "Attention over the f16 KV cache: decode (GB/s of K/V read vs the copy ceiling) and prefill (TFLOPS), bit-gated.",
  example = "xpulua scripts/bench-attention.lua --device cpu:0 --ctx 512 --heads 8 --kv-heads 2 --tokens 16 -o jsonl",
  options = {
    { "device", "string", "cpu:0", "the device to time", value = "ID" },
    { "kind", "choice", "both", "which kernels to time (both: decode and prefill)",
      choices = { "decode", "decode_pos", "prefill", "kv_write", "kv_write_prefill", "both", "all" } },
    { "ctx", "string", "512,4096,16384", "contexts (cache positions), comma-separated", value = "N,M" },
    { "heads", "int", 32, "query heads", unit = "heads", min = 1 },
    { "kv-heads", "int", 8, "KV heads (heads a multiple of it)", unit = "heads", min = 1, key = "kv_heads" },
    { "head-dim", "int", 128, "elements per head (even, up to 256)", unit = "elements", min = 2, key = "head_dim" },
    { "tokens", "int", 512, "prefill tokens, ending at the context's last position", unit = "tokens", min = 1 },
    { "window", "int", 0, "sliding window (0: none)", unit = "positions", min = 0 },
    { "pos", "int", -1, "decode's position (-1: the context's last)", unit = "position", min = -1 },
    { "reps", "int", 9, "timed passes per case", unit = "repetitions", min = 1 },
  },
  output = true,
})

local ctxs = {}
for v in opts.ctx:gmatch("[^,]+") do
  local n = math.tointeger(tonumber(v))
  if not n or n < 1 or n > att.MAX_SLOTS then cli.fail(NAME, "--ctx: '%s' is not a context 1 .. %d", v, att.MAX_SLOTS) end
  ctxs[#ctxs + 1] = n
end
if #ctxs == 0 then cli.fail(NAME, "--ctx: no context given") end
if opts.heads % opts.kv_heads ~= 0 then
  cli.fail(NAME, "--heads %d is not a multiple of --kv-heads %d", opts.heads, opts.kv_heads)
end

local d, err = xpu.device(opts.device)
if not d then cli.die(NAME, "%s", err) end
local cpu = xpu.device "cpu:0"
-- Each kind: its bench case's kernel, its route table, what its figure is against.
local KINDS = {
  decode = { kernel = "attention_decode", routes = "attention" },
  decode_pos = { kernel = "attention_decode", routes = "attention", pos_buffer = true },
  prefill = { kernel = "attention_prefill", routes = "attention", tflops = true },
  kv_write = { kernel = "kv_write", routes = "kv", tokens = 1 },
  kv_write_prefill = { kernel = "kv_write", routes = "kv" },
}
local kinds = opts.kind == "both" and { "decode", "prefill" }
  or opts.kind == "all" and { "decode", "decode_pos", "prefill", "kv_write", "kv_write_prefill" } or { opts.kind }
local w = report.writer(opts.output, d, "attention", { "kernel", "kind", "ctx", "heads", "kv_heads", "head_dim", "tokens" })

local function tokens_of(k, ctx, tokens)
  if k.kernel == "attention_decode" then return 1 end
  return math.min(k.tokens or tokens, ctx)
end

local function shape_of(kind, ctx, tokens)
  local k = KINDS[kind]
  local pos = k.kernel == "attention_decode" and opts.pos >= 0 and math.min(opts.pos, ctx - 1) or nil
  return { n_head = opts.heads, n_kv_head = opts.kv_heads, head_dim = opts.head_dim, slots = ctx, window = opts.window,
           tokens = k.kernel ~= "attention_decode" and tokens_of(k, ctx, tokens) or nil, pos_buffer = k.pos_buffer,
           pos = pos }
end

local function case_of(kind, dev, s)
  local k = KINDS[kind]
  if k.kernel == "kv_write" then return kv.bench_case(dev, s) end
  return att.bench_case(k.kernel, dev, s)
end

-- The case's result: attention's out; kv_write's two caches.
local function result(case)
  local o = case.operands
  if o.out then return o.out:download(), "f32" end
  return o.kc:download() .. o.vc:download(), "f16"
end

local function run(kind, dev, case)
  local c = xpu.call { query = case.query, device = dev, operands = case.operands }
  local row = ROUTES[KINDS[kind].routes]:bind(c)
  row:dispatch(c)
  dev:default_stream():sync()
  return result(case), row
end

-- The gate: the device's output == cpu:0's for the same seeded case (prefill: 16 tokens).
local function gate(kind, ctx)
  local s = shape_of(kind, ctx, 16)
  local want = run(kind, cpu, case_of(kind, cpu, s))
  local c = case_of(kind, d, s)
  local got, row = run(kind, d, c)
  local nan = 0
  if select(2, result(c)) == "f32" then
    for _, v in ipairs(xpu.fixture.decode("f32", got)) do if v ~= v then nan = nan + 1 end end
  end
  return want == got and nan == 0 and "==" or ("differs (%d NaN)"):format(nan), row.name
end

-- Seconds per call (decode: both launches) over enough caches to leave the L2 behind.
local function time_case(kind, ctx)
  local first = case_of(kind, d, shape_of(kind, ctx, opts.tokens))
  local sets = { first }
  local want = math.max(1, math.min(64, math.ceil(4 * (d.l2_bytes or 0) / first.bytes)))
  for i = 2, want do sets[i] = case_of(kind, d, shape_of(kind, ctx, opts.tokens)) end
  local s, calls, row = d:default_stream(), {}, nil
  for i, c in ipairs(sets) do
    calls[i] = xpu.call { query = c.query, device = d, stream = s, operands = c.operands }
    row = ROUTES[KINDS[kind].routes]:bind(calls[i])
  end
  for _, c in ipairs(calls) do row:dispatch(c) end
  s:sync()
  local times = {}
  for r = 1, opts.reps + 2 do
    local m = s:timer_begin()
    for _, c in ipairs(calls) do row:dispatch(c) end
    if r > 2 then times[#times + 1] = s:timer_end(m) / #calls else s:timer_end(m) end
  end
  for _, c in ipairs(sets) do
    for _, b in pairs(c.operands) do if type(b) == "userdata" then b:release() end end
  end
  return report.stats(times), row, first, #sets
end

settle.ensure(d)
local ceiling, copy_now, copy_stored = report.copy_ceiling(d, opts.reps)
report.log("%s: copy ceiling %.0f GB/s (now %.0f, stored %s); %d/%d heads, head_dim %d, window %d", d.id, ceiling,
  copy_now, copy_stored and ("%.0f"):format(copy_stored) or "none", opts.heads, opts.kv_heads, opts.head_dim, opts.window)

local rows, done = {}, 0
for _, kind in ipairs(kinds) do
  local kernel = KINDS[kind].kernel
  for _, ctx in ipairs(ctxs) do
    local ok, g, grow = pcall(gate, kind, ctx)
    local why = not ok and tostring(g):match("^[^\n]*") or nil
    local st, row, c, nsets
    if ok then
      ok, st, row, c, nsets = pcall(time_case, kind, ctx)
      if not ok then why = tostring(st):match("^[^\n]*") end
    end
    local tokens = tokens_of(KINDS[kind], ctx, opts.tokens)
    if why then
      rows[#rows + 1] = { kind, ctx, tokens, "-", "-", "-", "-", "-", "-", "-", why }
      w:record { kernel = kernel, kind = kind, ctx = ctx, heads = opts.heads, kv_heads = opts.kv_heads, head_dim = opts.head_dim,
                 tokens = tokens, skipped = why }
    else
      local gbs, tflops = c.bytes / st.median / 1e9, (c.flops or 0) / st.median / 1e12
      local against = KINDS[kind].tflops and ("%.2f TFLOPS"):format(tflops) or
                      ("%.0f%% of copy"):format(100 * gbs / ceiling)
      rows[#rows + 1] = { kind, ctx, tokens, row.name, g, st.median * 1e6, st.min * 1e6, st.max * 1e6, gbs, tflops,
                          against }
      w:record(report.with_stats({ kernel = kernel, kind = kind, ctx = ctx, heads = opts.heads, kv_heads = opts.kv_heads,
                                   head_dim = opts.head_dim, window = opts.window, tokens = tokens, row = row.name,
                                   gate = g, gate_row = grow, kv_bytes = c.bytes, flops = c.flops, caches = nsets,
                                   median_us = st.median * 1e6, gbs = gbs, tflops = tflops, copy_ceiling_gbs = ceiling,
                                   of_copy = gbs / ceiling }, st))
    end
    done = done + 1
    report.progress(done, #kinds * #ctxs, ("%s ctx %d"):format(kernel, ctx))
  end
end
w:table {
  title = ("attention on %s (%s): %d/%d heads, head_dim %d, window %d; copy ceiling %.0f GB/s measured in this run"):format(
    d.id, d.name, opts.heads, opts.kv_heads, opts.head_dim, opts.window, ceiling),
  header = { "kind", "ctx", "tokens", "row", "gate", "median us", "min us", "max us", "GB/s", "TFLOPS", "against" },
  rows = rows }
