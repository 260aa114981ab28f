-- bench-layer.lua — the layer kernels (norms, softmax, RoPE, the gated units, add / mul,
-- get_rows, argmax, top-k, compaction, the expert map, the router's f32 mat-vec, the experts'
-- combine) at the two sizes a model step runs them: "decode" (one token: launch-bound, quoted in microseconds per launch against the
-- device's launch floor measured in the same run, replayed from a deferred stream) and
-- "prefill" (512 tokens: memory-bound, quoted in GB/s of bytes read + written against the
-- copy ceiling measured in the same run, the working set rotated over enough operand sets to
-- leave the caches behind). Each case is built by its family's module (xpu.layers.<family>
-- bench_case) and launched through that family's route table (routes.layer_<family>), so the
-- row that ran is named beside each figure.
--   xpulua scripts/bench-layer.lua [--device cuda:0] [--size decode|prefill|both] [--kernels a,b]
--          [--reps N] [--launches N] [--hot] [-o table|jsonl|csv]
local xpu = require "xpu"
local report = require "xpu.report"
local settle = require "xpu.settle"
local cli = require "xpu.cli"

local NAME = "bench-layer"
-- kernel -> family, in the order they are timed
local FAMILIES = {
  { "norm", { "rms_norm", "layer_norm", "softmax", "add_rms_norm", "rms_norm_q8k", "add_rms_norm_q8k" } },
  { "elementwise", { "add", "mul", "swiglu", "geglu", "rope", "swiglu_q8k" } },
  { "select", { "get_rows", "argmax", "top_k", "compact", "expert_map" } },
  { "moe", { "matvec_f32", "moe_combine" } },
}
local ALL = {}
for _, f in ipairs(FAMILIES) do
  for _, k in ipairs(f[2]) do ALL[#ALL + 1] = k end
end

local opts = cli.parse(arg, {
  name = NAME,
  about = "The layer kernels at decode (us per launch vs the launch floor) and prefill (GB/s vs the copy ceiling) sizes.",
  example = "xpulua scripts/bench-layer.lua --device cpu:0 --size decode --kernels rms_norm,softmax -o jsonl",
  options = {
    { "device", "string", "cpu:0", "the device to time", value = "ID" },
    { "size", "choice", "both", "which sizes to time", choices = { "decode", "prefill", "both" } },
    { "kernels", "string", nil, "the kernels to time, comma-separated: " .. table.concat(ALL, ","), value = "a,b",
      default_text = "every kernel" },
    { "reps", "int", 9, "timed passes per case", unit = "repetitions", min = 1 },
    { "launches", "int", 100, "launches per decode pass (replayed from a deferred stream)", unit = "launches", min = 1 },
    { "hot", "flag", nil, "prefill from one operand set, resident in the last-level cache as test-backend-ops perf runs it (the anchor's regime; the % column is then of the copy ceiling all the same)" },
  },
  output = true,
})

local d, err = xpu.device(opts.device)
if not d then cli.die(NAME, "%s", err) end
local chosen = {}
if opts.kernels then
  for k in opts.kernels:gmatch("[^,]+") do
    local known = false
    for _, a in ipairs(ALL) do known = known or a == k end
    if not known then cli.die(NAME, "--kernels: '%s' is not a layer kernel (known: %s)", k, table.concat(ALL, ",")) end
    chosen[k] = true
  end
end
local sizes = opts.size == "both" and { "decode", "prefill" } or { opts.size }
local w = report.writer(opts.output, d, "layer", { "kernel", "size" })

-- ---- the device's own figures, measured now -------------------------------------------------

-- Seconds per launch of a tiny copy, replayed from a deferred stream: the floor under any launch.
local function launch_floor()
  local k = d:kernel "copy_bytes"
  local src, dst = d:buffer(("floor"):rep(52):sub(1, 256)), d:buffer(256)
  local s = d:stream()
  s:set_deferred(true)
  local times = {}
  for r = 1, opts.reps + 2 do
    local t0 = xpu.now()
    for _ = 1, opts.launches do k:launch(s, 1, 256, dst, src, 256) end
    s:sync()
    if r > 2 then times[#times + 1] = (xpu.now() - t0) / opts.launches end
  end
  s:release()
  return report.stats(times).median
end

-- ---- one case ------------------------------------------------------------------------------

local function family_of(kernel)
  for _, f in ipairs(FAMILIES) do
    for _, k in ipairs(f[2]) do
      if k == kernel then return f[1] end
    end
  end
end

local loaded = {}
local function family(name)
  if loaded[name] == nil then
    local ok_m, mod = pcall(require, "xpu.layers." .. name)
    local ok_r, routes = pcall(require, "routes.layer_" .. name)
    loaded[name] = ok_m and ok_r and { mod = mod, routes = routes } or
                   { missing = ok_m and tostring(routes) or tostring(mod) }
  end
  return loaded[name]
end

-- Operand sets of one case, enough of them that one pass over all leaves the caches behind.
local function case_sets(fam, kernel, size)
  local first = fam.mod.bench_case(kernel, d, size)
  if not first then return nil end
  local sets = { first }
  if size == "prefill" and first.bytes > 0 and not opts.hot then
    local want = math.min(16, math.ceil(report.past_caches(d) / first.bytes))
    for i = 2, want do sets[i] = fam.mod.bench_case(kernel, d, size) end
  end
  return sets
end

local function calls_of(fam, sets, s)
  local calls, row = {}, nil
  for i, c in ipairs(sets) do
    calls[i] = xpu.call { query = c.query, device = d, stream = s, operands = c.operands }
    row = fam.routes:bind(calls[i])
  end
  return calls, row
end

-- Decode: seconds per launch, the launches replayed from a deferred stream.
local function time_decode(fam, sets)
  local s = d:stream()
  s:set_deferred(true)
  local calls, row = calls_of(fam, sets, s)
  local times = {}
  for r = 1, opts.reps + 2 do
    local t0 = xpu.now()
    for i = 1, opts.launches do row:dispatch(calls[(i - 1) % #calls + 1]) end
    s:sync()
    if r > 2 then times[#times + 1] = (xpu.now() - t0) / opts.launches end
  end
  s:release()
  return report.stats(times), row
end

-- Prefill: seconds per launch from the stream's timer, one pass over every operand set.
local function time_prefill(fam, sets)
  local s = d:default_stream()
  local calls, row = calls_of(fam, sets, s)
  for _, c in ipairs(calls) do row:dispatch(c) end
  s:sync()
  local times = {}
  for r = 1, opts.reps + 2 do
    local m = s:timer_begin()
    for _, c in ipairs(calls) do row:dispatch(c) end
    local sec = s:timer_end(m) / #calls
    if r > 2 then times[#times + 1] = sec end
  end
  return report.stats(times), row
end

local function release(sets)
  for _, c in ipairs(sets) do
    for _, b in pairs(c.operands) do
      if type(b) == "userdata" and b.release then b:release() end
    end
  end
end

-- ---- the run -------------------------------------------------------------------------------

settle.ensure(d)
local floor = launch_floor()
local ceiling, copy_now, copy_stored = report.copy_ceiling(d, opts.reps)
report.log("%s: launch floor %.2f us (deferred), copy ceiling %.0f GB/s (now %.0f, stored %s)", d.id, floor * 1e6,
  ceiling, copy_now, copy_stored and ("%.0f"):format(copy_stored) or "none")

local rows, todo, done = {}, {}, 0
for _, size in ipairs(sizes) do
  for _, k in ipairs(ALL) do
    if not opts.kernels or chosen[k] then todo[#todo + 1] = { k, size } end
  end
end
for _, t in ipairs(todo) do
  local kernel, size = t[1], t[2]
  local fam = family(family_of(kernel))
  local sets, why
  if fam.missing then
    why = "module not built: " .. fam.missing:match("^[^\n]*")
  else
    local ok, res = pcall(case_sets, fam, kernel, size)
    if not ok then why = tostring(res):match("^[^\n]*") elseif not res then why = "no case at this size" else sets = res end
  end
  if sets then
    local ok, st, row = pcall(size == "decode" and time_decode or time_prefill, fam, sets)
    if not ok then
      why = tostring(st):match("^[^\n]*")
    else
      local c = sets[1]
      local gbs = c.bytes / st.median / 1e9
      local vs = size == "decode" and ("%.2f us over the floor"):format((st.median - floor) * 1e6) or
                 ("%.0f%% of copy"):format(100 * gbs / ceiling)
      rows[#rows + 1] = { kernel, size, c.note or "", row.name, st.median * 1e6, st.min * 1e6, st.max * 1e6,
                          gbs, vs }
      w:record(report.with_stats({ kernel = kernel, size = size, shape = c.note, row = row.name, bytes = c.bytes,
                                   median_us = st.median * 1e6, gbs = gbs, launch_floor_us = floor * 1e6,
                                   copy_ceiling_gbs = ceiling, sets = #sets,
                                   over_floor_us = size == "decode" and (st.median - floor) * 1e6 or nil,
                                   of_copy = size == "prefill" and gbs / ceiling or nil }, st))
    end
    release(sets)
  end
  if why then
    rows[#rows + 1] = { kernel, size, "-", "-", "-", "-", "-", "-", why }
    w:record { kernel = kernel, size = size, skipped = why }
  end
  done = done + 1
  report.progress(done, #todo, kernel .. " " .. size)
end
w:table {
  title = ("layer kernels on %s (%s): launch floor %.2f us, copy ceiling %.0f GB/s, both measured in this run%s"):format(
    d.id, d.name, floor * 1e6, ceiling, opts.hot and "; prefill hot (one operand set)" or ""),
  header = { "kernel", "size", "shape", "row", "median us", "min us", "max us", "GB/s", "against" }, rows = rows }
