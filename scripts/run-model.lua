-- run-model.lua — a GGUF model on one device, measured as llama-bench measures it: pp<P>
-- (prompt tokens per second, the prompt through the prefill GEMM and attention) and tg<N>
-- (generated tokens per second, one decode step a token from an empty cache), each over -r
-- repetitions with mean and stddev; then one decode step split by kernel family (a sync after
-- each family: that pass is for the split only) with the launches a step runs (per layer and
-- in all), the weight bytes a token reads against the
-- read ceiling measured in the same run, and device memory against weights + KV cache.
-- With --greedy N it generates N tokens from --prompt-ids and prints their ids instead; with
-- --compare-reference it steps the prompt one token at a time beside models.reference (the
-- plain f32 CPU forward) and prints each position's logits difference (tiny models only).
--   xpulua scripts/run-model.lua MODEL.gguf [--device cuda:0] [-p 512] [-n 128] [-r 5]
--          [--prompt-ids 1,2,3 --greedy N | --compare-reference] [--ctx N] [--batch N] [--unfused]
--          [-o table|jsonl|csv]
local xpu = require "xpu"
local report = require "xpu.report"
local cli = require "xpu.cli"
local load_model = require "models.load"

local NAME = "run-model"
local opts = cli.parse(arg, {
  name = NAME,
  about = "A GGUF model's prompt and generation speed (pp / tg t/s, like llama-bench), greedy ids, or its logits "
    .. "beside the CPU reference forward.",
  example = "xpulua scripts/run-model.lua tiny-llama.gguf --device cpu:0 -p 64 -n 16 -r 2",
  options = {
    { "device", "string", "cpu:0", "the device to run on", value = "ID" },
    { "prompt", "int", 512, "prompt tokens of the pp test (0: none)", unit = "tokens", min = 0, short = "p" },
    { "gen", "int", 128, "generated tokens of the tg test (0: none)", unit = "tokens", min = 0, short = "n" },
    { "reps", "int", 5, "repetitions of each test", unit = "repetitions", min = 1, short = "r" },
    { "ctx", "int", nil, "KV cache positions", unit = "positions", default_text = "prompt + generated, at least 256" },
    { "batch", "int", 512, "prompt tokens per prefill batch", unit = "tokens" },
    { "prompt-ids", "string", nil, "the prompt of --greedy or --compare-reference as token ids", value = "1,2,3",
      key = "prompt_ids" },
    { "greedy", "int", nil, "generate this many tokens greedily and print their ids", unit = "tokens" },
    { "seed", "int", 1, "seed of the pp / tg prompt ids", unit = "seed", min = 0 },
    { "compare-reference", "flag", nil, "step the prompt (--prompt-ids, else -p seeded ids) one token at a time "
      .. "beside models.reference and print each position's logits difference", key = "compare_reference" },
    { "reference-mib", "int", 256, "the largest model --compare-reference runs: its weights as f32 in MiB",
      unit = "MiB", key = "reference_mib" },
    { "unfused", "flag", nil, "the unfused step: each projection its own mat-vec, each add and norm its own launch" },
  },
  args = { { "MODEL", "the GGUF file", required = true } },
  output = true,
})

local d, err = xpu.device(opts.device)
if not d then cli.die(NAME, "%s", err) end

local function ids_of(s)
  local ids = {}
  for v in s:gmatch("[^,]+") do
    local n = math.tointeger(tonumber(v))
    if not n or n < 0 then cli.fail(NAME, "--prompt-ids: '%s' is not a token id", v) end
    ids[#ids + 1] = n
  end
  if #ids == 0 then cli.fail(NAME, "--prompt-ids: no ids given") end
  return ids
end

local prompt = opts.prompt_ids and ids_of(opts.prompt_ids)
if opts.greedy and not prompt then cli.fail(NAME, "--greedy needs --prompt-ids") end
if opts.greedy and opts.compare_reference then cli.fail(NAME, "--greedy and --compare-reference: one or the other") end
if opts.compare_reference and not prompt and opts.prompt == 0 then
  cli.fail(NAME, "--compare-reference needs a prompt: --prompt-ids or -p above 0")
end

-- models.reference dequantizes every weight to f32 and runs the forward in Lua: refused, before
-- anything is loaded, for a model whose f32 weights pass --reference-mib.
if opts.compare_reference then
  local g, gerr = xpu.gguf.try_open(opts.model)
  if not g then cli.die(NAME, "%s", tostring(gerr)) end
  local elems = 0
  for _, t in ipairs(g:tensors()) do elems = elems + t.elements end
  if 4 * elems > opts.reference_mib << 20 then
    cli.fail(NAME, "--compare-reference: %s's weights are %d MiB as f32, over the limit of %d MiB (--reference-mib): "
      .. "models.reference is for tiny models (make-model's tiny presets)", opts.model, (4 * elems) >> 20,
      opts.reference_mib)
  end
end

local free0, buffers0 = d:free_memory_bytes(), d:buffer_bytes()
local t0 = xpu.now()
local ok, m = pcall(load_model, opts.model, d, { fuse = not opts.unfused })
if not ok then cli.die(NAME, "%s", tostring(m)) end
report.log("%s: %s on %s, %d layers, %.2f GiB of weights, loaded in %.1f s", NAME, m.h.arch, d.id, m.h.n_layer,
  m.weight_bytes / 2 ^ 30, xpu.now() - t0)

local need = opts.greedy and #prompt + opts.greedy or opts.compare_reference and (prompt and #prompt or opts.prompt)
  or math.max(opts.prompt, opts.gen)
local ctx = opts.ctx or math.max(256, need)
if need > ctx then cli.fail(NAME, "--ctx %d holds fewer than the %d positions the run needs", ctx, need) end
local s = m:session { ctx = ctx, batch = opts.batch }

local w = report.writer(opts.output, d, "run-model", { "test" })

-- Seeded prompt ids below the vocabulary (an LCG: the same run gives the same ids).
local function random_ids(n, seed)
  local ids, x = {}, seed * 2654435761 % 4294967296
  for i = 1, n do
    x = (x * 1103515245 + 12345) % 2147483648
    ids[i] = x % m.h.n_vocab
  end
  return ids
end

for _, id in ipairs(prompt or {}) do
  if id >= m.h.n_vocab then cli.fail(NAME, "--prompt-ids: %d is not below the vocabulary's %d", id, m.h.n_vocab) end
end

if opts.greedy then
  local ids = s:greedy(prompt, opts.greedy)
  w:record { test = "greedy", model = opts.model, prompt = prompt, ids = ids }
  if opts.output == "table" then print(table.concat(ids, ",")) end
  return
end

if opts.compare_reference then
  local ids = prompt or random_ids(opts.prompt, opts.seed)
  local t0 = xpu.now()
  local rows, top = {}, { rms_rel = 0, worst_rel = 0, nan = 0 }
  for _, r in ipairs(require("models.compare").run(opts.model, s, ids)) do
    w:record { test = "compare", model = opts.model, path = r.path, position = r.position, token = r.token,
               rms = r.rms, rms_rel = r.rms_rel, worst_rel = r.worst_rel, nan = r.nan }
    rows[#rows + 1] = { r.path, r.position, r.token, ("%.2f"):format(100 * r.rms_rel), ("%.2f"):format(100 * r.worst_rel),
                        r.nan }
    for _, k in ipairs { "rms_rel", "worst_rel", "nan" } do top[k] = math.max(top[k], r[k]) end
  end
  report.log("%s: %d positions beside models.reference in %.1f s; at most %.2f %% RMS, %.2f %% worst, %d NaN", NAME,
    #ids, xpu.now() - t0, 100 * top.rms_rel, 100 * top.worst_rel, top.nan)
  w:table {
    title = ("%s on %s (%s): logits against models.reference (plain f32 on the CPU), as %% of its RMS; step: one "
      .. "token at a time, batch: the prompt in batches of %d"):format(opts.model, d.id, d.name, opts.batch),
    header = { "path", "position", "token", "rms rel %", "worst rel %", "NaN" },
    rows = rows,
  }
  return
end


local function sync() d:default_stream():sync() end

-- Tokens per second of each repetition of fn (after one warm-up).
local function rates(tokens, fn, what)
  local r = {}
  fn()
  sync()
  for i = 1, opts.reps do
    local t = xpu.now()
    fn()
    sync()
    r[i] = tokens / (xpu.now() - t)
    report.progress(i, opts.reps, what)
  end
  return r
end

local function mean_sd(xs)
  local sum, sq = 0, 0
  for _, v in ipairs(xs) do sum = sum + v end
  local mean = sum / #xs
  for _, v in ipairs(xs) do sq = sq + (v - mean) ^ 2 end
  return mean, #xs > 1 and math.sqrt(sq / (#xs - 1)) or 0
end

local read_gbs = report.read_ceiling(d, 3)
local rows = {}
local function result(test, tokens, r, extra)
  local mean, sd = mean_sd(r)
  local rec = { test = test, model = opts.model, tokens = tokens, ts = mean, ts_stddev = sd, reps = #r, samples = r }
  for k, v in pairs(extra or {}) do rec[k] = v end
  w:record(rec)
  rows[#rows + 1] = { test, tokens, ("%.2f ± %.2f"):format(mean, sd), extra and extra.note or "" }
  return mean
end

if opts.prompt > 0 then
  local ids = random_ids(opts.prompt, opts.seed)
  local r = rates(opts.prompt, function() s:reset(); s:prefill(ids) end, "pp" .. opts.prompt)
  result("pp" .. opts.prompt, opts.prompt, r)
end

if opts.gen > 0 then
  local first = random_ids(1, opts.seed + 1)
  local function gen()
    s:reset()
    s:prefill(first)
    for _ = 2, opts.gen do s:step() end
  end
  local r = rates(opts.gen, gen, "tg" .. opts.gen)
  local mean = result("tg" .. opts.gen, opts.gen, r, {
    token_bytes = m.token_bytes, read_ceiling_gbs = read_gbs,
    of_read = m.token_bytes * mean_sd(r) / 1e9 / read_gbs,
  })
  rows[#rows][4] = ("weights read %.1f%% of the %.0f GB/s read ceiling"):format(100 * m.token_bytes * mean / 1e9 / read_gbs,
    read_gbs)
  -- one more pass of decode steps, a sync after each family: where a step's time goes
  s:reset()
  s:prefill(first)
  sync()
  s.split = {}
  local steps = math.min(opts.gen, 16)
  local t = xpu.now()
  for _ = 1, steps do s:step() end
  sync()
  local wall = (xpu.now() - t) / steps
  local split = s.split
  s.split = nil
  local fams, timed = { "matmul", "attention", "norms", "other" }, 0
  local launches = s:launches_per_token()
  local rec = { test = "split", steps = steps, step_us = wall * 1e6, launches_per_token = launches.total,
                launches_per_layer = launches.per_layer, fused = m.fused }
  for _, f in ipairs(fams) do
    local us = (split[f] or 0) / steps * 1e6
    rec[f .. "_us"], timed = us, timed + us
  end
  rec.launch_gaps_us = wall * 1e6 - timed
  w:record(rec)
  local parts = {}
  for _, f in ipairs(fams) do parts[#parts + 1] = ("%s %.0f"):format(f, rec[f .. "_us"]) end
  rows[#rows + 1] = { "split", 1, ("%.0f us/step"):format(wall * 1e6),
                      table.concat(parts, ", ") .. (", launch/gaps %.0f us (synced pass); %d launches a token, %.4g a layer (%s)")
                        :format(rec.launch_gaps_us, launches.total, launches.per_layer, m.fused and "fused" or "unfused") }
end

-- After the runs, so the prompt batches' activations count: the buffers this process holds
-- on the device (its own ledger, exact on every device) and what the driver reports used
-- (with its context, modules and graphs; on the CPU the host's page cache moves it too).
local resident = m.weight_bytes + s.kv_bytes
local free1 = free0 and d:free_memory_bytes()
local used, buffers = free1 and free0 - free1 or nil, d:buffer_bytes() - buffers0
w:record { test = "memory", device_bytes = used, buffer_bytes = buffers, weight_bytes = m.weight_bytes,
           kv_bytes = s.kv_bytes, of_resident = used and used / resident or nil, buffers_of_resident = buffers / resident }
rows[#rows + 1] = { "memory", "-", ("%.2f GiB"):format(buffers / 2 ^ 30),
                    ("buffers %.3fx weights %.2f GiB + KV %.2f GiB; the driver reports %s used"):format(buffers / resident,
                      m.weight_bytes / 2 ^ 30, s.kv_bytes / 2 ^ 30, used and ("%.2f GiB (%.3fx)"):format(used / 2 ^ 30,
                      used / resident) or "nothing") }

w:table {
  title = ("%s on %s (%s), %s, ctx %d; read ceiling %.0f GB/s measured in this run"):format(opts.model, d.id, d.name,
    m.h.arch, ctx, read_gbs),
  header = { "test", "tokens", "t/s", "note" },
  rows = rows,
}
