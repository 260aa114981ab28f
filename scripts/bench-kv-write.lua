-- bench-kv-write.lua — one decode step's KV-cache write: one token's [heads, 1, dim] f16 slab
-- into a [heads, ctx, dim] f16 cache, through the write_slice contract (a fixed position) and
-- write_slice_rotating (the position read from a device buffer, so the same launch serves
-- every step). Three figures per op, medians over --n:
--   end to end  host wall clock from the launch to the end of the stream's sync
--   eager       back-to-back launches between two timer marks, per launch
--   deferred    the same batch recorded once and replayed as one submission, per launch
-- each through c:launch (the call checked against the contract every time) and through a
-- bound launch (c:bind: checked once, then launched as it is).
-- Bit-checked first: the cache after the write == the CPU twin's. A second table times a step
-- as a decode step makes it: one token into the K cache and one into the V cache, bound and
-- deferred, 100 steps replayed: the two writes of a step touch different caches, so where a
-- backend lets independent launches overlap (s:counts()'s waits) only one of them waits; and
-- kv_write, the step as a model makes it from the f32 K and V rows: both caches, one launch.
--   xpulua scripts/bench-kv-write.lua [--device cuda:0] [--heads 32] [--ctx 4096] [--dim 128] [--n 200]
local xpu = require "xpu"
local report = require "xpu.report"
local settle = require "xpu.settle"

local cli = require "xpu.cli"

local NAME = "bench-kv-write"
local opts = cli.parse(arg, {
  name = NAME,
  about = "One decode step's KV-cache write through write_slice and write_slice_rotating, bit-checked, then timed.",
  example = "xpulua scripts/bench-kv-write.lua --device cpu:0 --heads 8 --ctx 1024 --dim 128 --n 50",
  options = {
    { "device", "string", "cpu:0", "the device to time", value = "ID" },
    { "contracts", "string", cli.repo_file "contracts/shape-ops.md", "the contract file", key = "file",
      value = "FILE", default_text = "contracts/shape-ops.md" },
    { "heads", "int", 32, "KV heads", unit = "heads" },
    { "ctx", "int", 4096, "cache positions", unit = "positions" },
    { "dim", "int", 128, "elements per head", unit = "elements" },
    { "n", "int", 200, "timed runs per figure", unit = "timed runs" },
  },
  output = true,
})
if opts.heads * opts.ctx * opts.dim * 2 > (1 << 40) then
  cli.fail(NAME, "--heads %d --ctx %d --dim %d: a cache of %d GiB is past any device", opts.heads, opts.ctx, opts.dim,
    opts.heads * opts.ctx * opts.dim * 2 >> 30)
end

local d, err = xpu.device(opts.device)
if not d then cli.die(NAME, "%s", err) end
if (d.memory_bytes or 0) > 0 and 4 * opts.heads * opts.ctx * opts.dim * 2 > d.memory_bytes then
  cli.fail(NAME, "--heads %d --ctx %d --dim %d: four f16 caches of %d MiB do not fit %s's %d MiB", opts.heads, opts.ctx,
    opts.dim, opts.heads * opts.ctx * opts.dim * 2 >> 20, d.id, d.memory_bytes >> 20)
end
local contracts, cerr = xpu.contracts.try_load(opts.file)
if not contracts then cli.fail(NAME, "--contracts %s: %s", opts.file, cerr) end
local w = report.writer(opts.output, d, "kv-write", { "op", "launch", "timing", "heads", "ctx", "dim" })
local function contract(dev, kernel)
  for _, c in ipairs(contracts) do
    if c.kernel == kernel and dev:supports(c.code_capability) then return c end
  end
end

local H, T, D = opts.heads, opts.ctx, opts.dim
local pos = T // 2 + 3
local cache_bytes, token_bytes = H * T * D * 2, H * D * 2
report.log("bench-kv-write: %s (%s), f16 cache [%d, %d, %d] (%d MiB), token [%d, 1, %d] at %d",
  d.id, d.name, H, T, D, cache_bytes >> 20, H, D, pos)

local function bytes_of(n, seed)
  local t = {}
  for k = 1, n // 2 do t[k] = (k * 7919 + seed) % 0x7bff end -- finite f16 bit patterns
  local parts = {}
  for k = 1, #t, 4096 do parts[#parts + 1] = string.pack("<" .. ("I2"):rep(math.min(4096, #t - k + 1)),
    table.unpack(t, k, math.min(#t, k + 4095))) end
  return table.concat(parts)
end
local cache0, token = bytes_of(cache_bytes, 1), bytes_of(token_bytes, 2)

-- the launch spec of op on dev: cache, token (and the position buffer), params
local function spec_of(dev, op)
  local f16 = function(shape, data) return { dtype = "f16", shape = shape, buffer = dev:buffer(data) } end
  local inputs = { source = f16({ H, 1, D }, token), dest = f16({ H, T, D }, cache0) }
  local params = { ranges = { { 0, H }, { pos, pos + 1 }, { 0, D } } }
  if op == "write_slice_rotating" then
    inputs.position = { dtype = "u32", shape = { 1 }, buffer = dev:buffer(string.pack("<I4", pos)) }
    params = { axis = 1, modulus = T, ranges = { { 0, H }, { 0, 1 }, { 0, D } } }
  end
  return { inputs = inputs, params = params }
end

local rows = {}
for _, op in ipairs { "write_slice", "write_slice_rotating" } do
  local c, cpu_c = contract(d, op), contract(xpu.device "cpu:0", op)
  if not c then
    report.log("bench-kv-write: %s has no %s contract", d.id, op)
  else
    -- gate: the whole cache after one write == the CPU twin's
    local a, b = spec_of(d, op), spec_of(xpu.device "cpu:0", op)
    c:launch(a)
    cpu_c:launch(b)
    d:default_stream():sync()
    local same = a.inputs.dest.buffer:download() == b.inputs.dest.buffer:download()
    if not same then cli.die(NAME, "%s on %s differs from the CPU", op, d.id) end

    local spec = spec_of(d, op)
    local s = d:default_stream()
    spec.stream = s
    -- host wall clock from the call to the end of the sync, median of n after 5 warm-ups
    local function end_to_end(launch)
      local t = {}
      settle.ensure(d)
      for r = 1, opts.n + 5 do
        local t0 = xpu.now()
        launch(s)
        s:sync()
        if r > 5 then t[#t + 1] = xpu.now() - t0 end
      end
      return report.stats(t)
    end
    local bound = c:bind(spec)
    local function batched(stream, launch)
      local t = {}
      settle.ensure(d)
      for r = 1, 20 + 3 do
        local m = stream:timer_begin()
        for _ = 1, 100 do launch(stream) end
        local sec = stream:timer_end(m) / 100
        if r > 3 then t[#t + 1] = sec end
      end
      return report.stats(t)
    end
    local ds = d:stream()
    ds:set_deferred(true)
    local checked = function(stream) spec.stream = stream; c:launch(spec) end
    local kept = function(stream) bound:launch(stream) end
    local figs = { { "checked", "end to end", end_to_end(checked) }, { "bound", "end to end", end_to_end(kept) },
                   { "checked", "eager", batched(s, checked) }, { "checked", "deferred", batched(ds, checked) },
                   { "bound", "eager", batched(s, kept) }, { "bound", "deferred", batched(ds, kept) } }
    local row = { op, token_bytes }
    for _, f in ipairs(figs) do
      row[#row + 1] = f[3].median * 1e6
      w:record(report.with_stats({ op = op, launch = f[1], timing = f[2], heads = H, ctx = T, dim = D,
                                   bytes_written = token_bytes }, f[3]))
    end
    rows[#rows + 1] = row
    ds:release()
    bound:release()
  end
end

-- A step's K and V writes, bound, on a deferred stream: us and waits a step, medians of 20
-- batches of 100 steps.
local pairs_rows = {}
for _, op in ipairs { "write_slice", "write_slice_rotating" } do
  local c = contract(d, op)
  if c then
    local k, v = c:bind(spec_of(d, op)), c:bind(spec_of(d, op))
    local ds = d:stream()
    ds:set_deferred(true)
    local t, waits = {}, 0
    settle.ensure(d)
    for r = 1, 20 + 3 do
      local m, w0 = ds:timer_begin(), ds:counts().waits
      for _ = 1, 100 do k:launch(ds); v:launch(ds) end
      local sec = ds:timer_end(m) / 100
      if w0 then waits = (ds:counts().waits - w0) / 100 end
      if r > 3 then t[#t + 1] = sec end
    end
    local st = report.stats(t)
    pairs_rows[#pairs_rows + 1] = { op, 2, st.median * 1e6, ds:counts().waits and ("%.2f"):format(waits) or "-" }
    w:record(report.with_stats({ op = op, launch = "bound", timing = "K and V step", heads = H, ctx = T, dim = D,
                                 waits_a_step = ds:counts().waits and waits or nil }, st))
    ds:release()
    k:release()
    v:release()
  end
end

-- The same step as the step makes it from f32 rows: kv_write (routes.layer_kv), K and V in one
-- launch, rounded to f16, the position from a buffer; gated against cpu:0 first (both caches).
do
  local kv, routes = require "xpu.layers.kv", require "routes.layer_kv"
  local att = require "xpu.layers.attention"
  local function call_of(dev, stream)
    local ops = { kc = dev:buffer(cache0), vc = dev:buffer(cache0), k = dev:buffer(att.floats(H * D, 5)),
                  v = dev:buffer(att.floats(H * D, 6)), pos = dev:buffer(string.pack("<i4", pos)) }
    return xpu.call { query = kv.query { tokens = 1, n_kv_head = H, head_dim = D, slots = T }, device = dev,
                      stream = stream, operands = ops }, ops
  end
  local cpu = xpu.device "cpu:0"
  local cc, cops = call_of(cpu)
  local gc, gops = call_of(d)
  routes:bind(cc):dispatch(cc)
  routes:bind(gc):dispatch(gc)
  cpu:default_stream():sync()
  d:default_stream():sync()
  if cops.kc:download() .. cops.vc:download() ~= gops.kc:download() .. gops.vc:download() then
    cli.die(NAME, "kv_write on %s differs from the CPU", d.id)
  end
  local ds = d:stream()
  ds:set_deferred(true)
  local c = call_of(d, ds)
  local row = routes:bind(c)
  local t, waits = {}, 0
  settle.ensure(d)
  for r = 1, 20 + 3 do
    local m, w0 = ds:timer_begin(), ds:counts().waits
    for _ = 1, 100 do row:dispatch(c) end
    local sec = ds:timer_end(m) / 100
    if w0 then waits = (ds:counts().waits - w0) / 100 end
    if r > 3 then t[#t + 1] = sec end
  end
  local st = report.stats(t)
  pairs_rows[#pairs_rows + 1] = { "kv_write (f32 rows)", 1, st.median * 1e6, ds:counts().waits and ("%.2f"):format(waits) or "-" }
  w:record(report.with_stats({ op = "kv_write", launch = "routed", timing = "K and V step", heads = H, ctx = T, dim = D,
                               waits_a_step = ds:counts().waits and waits or nil }, st))
  ds:release()
end

w:table {
  title = ("one-token KV write on %s (%s), f16 [%d, %d, %d], %s"):format(d.id, d.name, H, T, D, os.date("!%Y-%m-%d")),
  header = { "op", "bytes written", "end to end us", "bound end to end us", "eager us", "deferred us", "bound eager us",
             "bound deferred us" },
  rows = rows }
w:table {
  title = ("a decode step's K and V writes on %s, bound, deferred, 100 steps a batch"):format(d.id),
  header = { "op", "writes a step", "us a step", "waits a step" },
  rows = pairs_rows }
