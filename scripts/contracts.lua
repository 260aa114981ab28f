-- contracts.lua — contract files' contracts, the route rows they become, and an audit of a
-- query set against those rows (the declared half: no device asked):
--   xpulua scripts/contracts.lua FILE.md [FILE.md ...] [--queries QUERIES.lua] [--backend B] [--census]
-- Each contract registers in the regime named after its kernel, so a query asks for one op.
-- The built-in queries are those of the files' ops (contracts/shape-ops.md, layer-ops.md,
-- elementwise-ops.md, workgroup-ops.md). QUERIES.lua returns a list of
-- { name = "...", regime = op, format = dtype, <facts>... }. --census lists every row of the
-- layer route tables (routes.layer_norm, layer_select, layer_moe, layer_elementwise, workgroup) with the
-- backends whose contract serves its kernel and format, and exits 1 when one is served by none.
-- A malformed file prints the reader's error (file, line, kernel, key) and exits 1.
local xpu = require "xpu"
local report = require "xpu.report"

local cli = require "xpu.cli"

local opts = cli.parse(arg, {
  name = "contracts",
  about = "Contract files' contracts, the route rows they become, an audit of a query set against them, "
    .. "and (--census) the layer route rows they serve.",
  example = "xpulua scripts/contracts.lua contracts/layer-ops.md contracts/elementwise-ops.md contracts/workgroup-ops.md --census",
  options = {
    { "queries", "string", nil, "a Lua file returning the query list", value = "QUERIES.lua",
      default_text = "the built-in queries" },
    { "backend", "string", nil, "one backend's contracts only, e.g. cpu or cuda", value = "B", default_text = "all" },
    { "census", "flag", nil, "list the layer route tables' rows and the contracts serving each" },
  },
  args = { { "FILE...", "contract files (.md), one or more", required = true, key = "file" } },
  more_args = true,
})
local paths, queries_file, backend = opts.args, opts.queries, opts.backend

-- A bad contract or query file: one line naming where and what, exit 1, never a traceback.
local function fail(msg)
  io.stderr:write("contracts: ", (tostring(msg):gsub("\n.*", "")), "\n")
  os.exit(1)
end

local contracts, where = {}, {}
for _, path in ipairs(paths) do
  local cs, err = xpu.contracts.try_load(path)
  if not cs then fail(err) end
  for _, c in ipairs(cs) do
    contracts[#contracts + 1] = c
    where[c] = #paths > 1 and ("%s:%d"):format(path:match "[^/]*$", c.line) or c.line
  end
end

-- The built-in query set: each op served, and the refusals a planner meets most.
local function q(name, regime, format, facts)
  facts.name, facts.regime, facts.format = name, regime, format
  return facts
end
local DEFAULT_QUERIES = {
  q("pad f32 3x4 reflect", "pad", "f32", { rank = 2, dim0 = 3, dim1 = 4, ["padding0.0"] = 1, ["padding0.1"] = 1,
    ["padding1.0"] = 2, ["padding1.1"] = 0, mode_tag = 1 }),
  q("pad bf16 2x2 reflect 2", "pad", "bf16", { rank = 2, dim0 = 2, dim1 = 2, ["padding0.0"] = 2, ["padding0.1"] = 0,
    ["padding1.0"] = 0, ["padding1.1"] = 0, mode_tag = 1 }),
  q("pad_backward f16 8", "pad_backward", "f16", { rank = 1, dim0 = 8, ["padding0.0"] = 2, ["padding0.1"] = 2, mode_tag = 2 }),
  q("pad_backward i32 8", "pad_backward", "i32", { rank = 1, dim0 = 8 }),
  q("flip f32 4x6 axis 1", "flip", "f32", { rank = 2, dim0 = 4, dim1 = 6, axis = 1 }),
  q("flip u8 strided", "flip", "u8", { rank = 2, dim0 = 4, dim1 = 6, stride0 = 1, stride1 = 4, axis = 0 }),
  q("roll i64 axis 0", "roll", "i64", { rank = 3, dim0 = 2, dim1 = 3, dim2 = 4, axis = 0, shift = -3 }),
  q("roll f32 axis 3 of 2", "roll", "f32", { rank = 2, dim0 = 2, dim1 = 3, axis = 3, shift = 1 }),
  q("cumsum bf16 axis 1", "cumsum", "bf16", { rank = 2, dim0 = 16, dim1 = 128, axis = 1 }),
  q("cumsum i32", "cumsum", "i32", { rank = 1, dim0 = 16, axis = 0 }),
  q("triu f32 8x8", "triu", "f32", { rank = 2, dim0 = 8, dim1 = 8 }),
  q("triu f32 rank 1", "triu", "f32", { rank = 1, dim0 = 8 }),
  q("tril f64 batch 2x3x3", "tril", "f64", { rank = 3, dim0 = 2, dim1 = 3, dim2 = 3, diagonal = -1 }),
  q("write_slice f16 slab", "write_slice", "f16", { ["source.rank"] = 2, ["source.dim0"] = 1, ["source.dim1"] = 64,
    ["dest.rank"] = 2, ["dest.dim0"] = 128, ["dest.dim1"] = 64, ["ranges0.0"] = 5, ["ranges0.1"] = 6,
    ["ranges1.0"] = 0, ["ranges1.1"] = 64 }),
  q("write_slice f32 past the end", "write_slice", "f32", { ["dest.rank"] = 1, ["dest.dim0"] = 8, ["ranges0.0"] = 6,
    ["ranges0.1"] = 9 }),
  q("write_slice_rotating bf16 ring", "write_slice_rotating", "bf16", { ["dest.rank"] = 2, ["dest.dim0"] = 64,
    ["dest.dim1"] = 32, axis = 0, modulus = 64, ["ranges0.0"] = 0, ["ranges0.1"] = 1, ["ranges1.0"] = 0, ["ranges1.1"] = 32 }),
  q("copy u8 4096", "copy", "u8", { rank = 1, dim0 = 4096 }),
  q("contiguize f32 transposed", "contiguize", "f32", { rank = 2, dim0 = 4, dim1 = 6, stride0 = 1, stride1 = 4 }),
  -- the layer kernels (contracts/layer-ops.md): a decode and a prefill shape, and a refusal each family meets
  q("rms_norm f32 1x4096", "rms_norm", "f32", { rank = 2, dim0 = 1, dim1 = 4096, ["weight.rank"] = 1, ["weight.dim0"] = 4096 }),
  q("rms_norm f32 weight of 4095", "rms_norm", "f32", { rank = 2, dim0 = 1, dim1 = 4096, ["weight.rank"] = 1,
    ["weight.dim0"] = 4095 }),
  q("add_rms_norm f32 512x4096", "add_rms_norm", "f32", { rank = 2, dim0 = 512, dim1 = 4096, ["residual.rank"] = 2,
    ["residual.dim0"] = 512, ["residual.dim1"] = 4096, ["weight.rank"] = 1, ["weight.dim0"] = 4096 }),
  q("rms_norm_q8k f32 cols 4000", "rms_norm_q8k", "f32", { rank = 2, dim0 = 1, dim1 = 4000, ["weight.rank"] = 1,
    ["weight.dim0"] = 4000 }),
  q("layer_norm f32 512x4096", "layer_norm", "f32", { rank = 2, dim0 = 512, dim1 = 4096, ["weight.rank"] = 1,
    ["weight.dim0"] = 4096 }),
  q("layer_norm_bias f32 512x4096", "layer_norm_bias", "f32", { rank = 2, dim0 = 512, dim1 = 4096, ["weight.rank"] = 1,
    ["weight.dim0"] = 4096, ["bias.rank"] = 1, ["bias.dim0"] = 4096 }),
  q("softmax f32 causal 32x512", "softmax", "f32", { rank = 2, dim0 = 32, dim1 = 512, causal = 1 }),
  q("get_rows q4_K 8 of 4096", "get_rows", "q4_K", { rank = 2, dim0 = 32000, dim1 = 4096, ["ids.rank"] = 1, ["ids.dim0"] = 8 }),
  q("get_rows q4_0 rows of 100", "get_rows", "q4_0", { rank = 2, dim0 = 16, dim1 = 100, ["ids.rank"] = 1, ["ids.dim0"] = 1 }),
  q("argmax f32 1x151936", "argmax", "f32", { rank = 2, dim0 = 1, dim1 = 151936 }),
  q("top_k f32 512x128 k 8", "top_k", "f32", { rank = 2, dim0 = 512, dim1 = 128, k = 8 }),
  q("top_k f32 k 9", "top_k", "f32", { rank = 2, dim0 = 1, dim1 = 128, k = 9 }),
  q("compact f32 4096", "compact", "f32", { rank = 1, dim0 = 4096 }),
  q("compact f32 65537", "compact", "f32", { rank = 1, dim0 = 65537 }),
  q("compact_groups f32 2^20", "compact_groups", "f32", { rank = 1, dim0 = 1048576 }),
  q("expert_map i32 512x8 of 128", "expert_map", "i32", { rank = 2, dim0 = 512, dim1 = 8, n_expert = 128 }),
  q("kv_write f16 decode 8x4096x128", "kv_write", "f16", { rank = 3, dim0 = 8, dim1 = 4096, dim2 = 128,
    ["vc.rank"] = 3, ["vc.dim0"] = 8, ["vc.dim1"] = 4096, ["vc.dim2"] = 128, ["k.rank"] = 3, ["k.dim0"] = 1,
    ["k.dim1"] = 8, ["k.dim2"] = 128, ["v.rank"] = 3, ["v.dim0"] = 1, ["v.dim1"] = 8, ["v.dim2"] = 128,
    ["pos.rank"] = 1, ["pos.dim0"] = 1 }),
  q("kv_write f16 prefill past the slots", "kv_write", "f16", { rank = 3, dim0 = 8, dim1 = 256, dim2 = 128,
    ["vc.rank"] = 3, ["vc.dim0"] = 8, ["vc.dim1"] = 256, ["vc.dim2"] = 128, ["k.rank"] = 3, ["k.dim0"] = 512,
    ["k.dim1"] = 8, ["k.dim2"] = 128, ["v.rank"] = 3, ["v.dim0"] = 512, ["v.dim1"] = 8, ["v.dim2"] = 128,
    ["pos.rank"] = 1, ["pos.dim0"] = 1 }),
  q("matvec_f32 router 128x2048", "matvec_f32", "f32", { rank = 2, dim0 = 128, dim1 = 2048, ["x.rank"] = 2,
    ["x.dim0"] = 1, ["x.dim1"] = 2048 }),
  q("matvec_f32 x of 2047", "matvec_f32", "f32", { rank = 2, dim0 = 128, dim1 = 2048, ["x.rank"] = 2,
    ["x.dim0"] = 1, ["x.dim1"] = 2047 }),
  q("moe_combine f32 512 x 8 of 2048", "moe_combine", "f32", { rank = 2, dim0 = 512, dim1 = 2048, ["w.rank"] = 2,
    ["w.dim0"] = 512, ["w.dim1"] = 8, ["y.rank"] = 2, ["y.dim0"] = 4096, ["y.dim1"] = 2048 }),
  q("moe_combine f32 used 9", "moe_combine", "f32", { rank = 2, dim0 = 1, dim1 = 2048, ["w.rank"] = 2,
    ["w.dim0"] = 1, ["w.dim1"] = 9, ["y.rank"] = 2, ["y.dim0"] = 9, ["y.dim1"] = 2048 }),
  q("rms_norm f16 1x4096", "rms_norm", "f16", { rank = 2, dim0 = 1, dim1 = 4096, ["weight.rank"] = 1, ["weight.dim0"] = 4096 }),
  q("rms_norm f16 cols 4095", "rms_norm", "f16", { rank = 2, dim0 = 1, dim1 = 4095, ["weight.rank"] = 1,
    ["weight.dim0"] = 4095 }),
  -- the elementwise kernels (contracts/elementwise-ops.md) and the primitives' test kernels (workgroup-ops.md)
  q("add f32 512x4096", "add", "f32", { rank = 2, dim0 = 512, dim1 = 4096, ["b.rank"] = 2, ["b.dim0"] = 512,
    ["b.dim1"] = 4096 }),
  q("add f16 1x4096 row broadcast", "add", "f16", { rank = 2, dim0 = 1, dim1 = 4096, ["b.rank"] = 1, ["b.dim0"] = 4096 }),
  q("mul f32 broadcast of 4095", "mul", "f32", { rank = 2, dim0 = 8, dim1 = 4096, ["b.rank"] = 1, ["b.dim0"] = 4095 }),
  q("swiglu f16 1x14336", "swiglu", "f16", { rank = 2, dim0 = 1, dim1 = 14336, ["u.rank"] = 2, ["u.dim0"] = 1,
    ["u.dim1"] = 14336 }),
  q("geglu f32 512x14336", "geglu", "f32", { rank = 2, dim0 = 512, dim1 = 14336, ["u.rank"] = 2, ["u.dim0"] = 512,
    ["u.dim1"] = 14336 }),
  q("rope f32 512x32x128 neox", "rope", "f32", { rank = 3, dim0 = 512, dim1 = 32, dim2 = 128, ["pos.rank"] = 1,
    ["pos.dim0"] = 512, mode = 1 }),
  q("rope f16 head_dim 127", "rope", "f16", { rank = 3, dim0 = 1, dim1 = 32, dim2 = 127, ["pos.rank"] = 1, ["pos.dim0"] = 1 }),
  q("swiglu_q8k f32 1x14336", "swiglu_q8k", "f32", { rank = 2, dim0 = 1, dim1 = 14336, ["u.rank"] = 2, ["u.dim0"] = 1,
    ["u.dim1"] = 14336 }),
  q("swiglu_q8k f16", "swiglu_q8k", "f16", { rank = 2, dim0 = 1, dim1 = 256 }),
  q("workgroup_reduce f32 add 256", "workgroup_reduce", "f32", { rank = 1, dim0 = 65536, op = 0, block = 256 }),
  q("workgroup_scan i64 min 1024 x 4", "workgroup_scan", "i64", { rank = 1, dim0 = 65536, op = 2, block = 1024, trips = 4 }),
  q("workgroup_scan f32", "workgroup_scan", "f32", { rank = 1, dim0 = 64, op = 0, block = 64 }),
}

-- The built-in queries of the ops this file has contracts for (any backend).
local served = {}
for _, c in ipairs(contracts) do served[c.kernel] = true end
local queries = {}
for _, qq in ipairs(DEFAULT_QUERIES) do
  if served[qq.regime] then queries[#queries + 1] = qq end
end
if queries_file then
  local ok, qs = pcall(dofile, queries_file)
  if not ok or type(qs) ~= "table" then fail(queries_file .. ": " .. tostring(qs)) end
  queries = qs
end

-- Contracts and their rows: one route table per op (the kernel a contract is for), so a
-- refusal only ever speaks of the candidates for the op that was asked.
local tables, nrows = {}, 0
local crow = {}
for _, c in ipairs(contracts) do
  if not backend or c.backend == backend then
    tables[c.kernel] = tables[c.kernel] or xpu.new_routes(c.kernel)
    local ok, rows = pcall(c.register, c, tables[c.kernel], c.kernel)
    if not ok then fail(rows) end
    nrows = nrows + #rows
    -- a row per dtype and per variant of the op (`<op>.<backend>.<dtype>:<kernel>`)
    local formats, variants, seen = {}, {}, {}
    for _, r in ipairs(rows) do
      local variant = r.name:match(":(.+)$")
      if not seen[r.format] then formats[#formats + 1], seen[r.format] = r.format, true end
      if variant and not seen[":" .. variant] then variants[#variants + 1], seen[":" .. variant] = variant, true end
    end
    local shown = ("%s.%s.<%s>"):format(c.kernel, c.backend, table.concat(formats, "|"))
    if #variants > 0 then shown = shown .. "[:" .. table.concat(variants, "|:") .. "]" end
    crow[#crow + 1] = { c.kernel, c.backend, c.entry_point, where[c], c.determinism, c.bytes_moved, shown,
                        table.concat(rows[1].needs, ",") }
  end
end
print(report.table {
  title = ("%s: %d contracts, %d rows"):format(table.concat(paths, ", "), #crow, nrows),
  header = { "kernel", "backend", "entry", "line", "determinism", "bytes_moved", "rows", "needs" },
  rows = crow,
})

local ops = {}
for op in pairs(tables) do ops[#ops + 1] = op end
table.sort(ops)

-- The audit: per query, the rows of its op's table that serve it, or the refusal of the row
-- that got furthest.
local arows, unserved, never, fired = {}, 0, 0, {}
for k, spec in ipairs(queries) do
  local facts = {}
  for key, v in pairs(spec) do
    if key ~= "name" then facts[key] = v end
  end
  local ok, query = pcall(xpu.query, facts)
  if not ok then fail(("%s: queries[%d] (%s): %s"):format(queries_file or "built-in queries", k,
                                                           tostring(spec.name), tostring(query))) end
  local t = tables[spec.regime]
  local name = spec.name or tostring(query)
  if not t then
    unserved = unserved + 1
    arows[#arows + 1] = { name, 0, ("no contract for op '%s' (ops: %s)"):format(tostring(spec.regime),
                                                                                 table.concat(ops, ", ")) }
  else
    local a = t:audit { query }
    local serving = {}
    for ri = 1, a.nrows do
      if a:clause(1, ri) == "Admitted" then
        serving[#serving + 1] = a:row_name(ri)
        fired[a:row_name(ri)] = true
      end
    end
    if #serving == 0 then unserved = unserved + 1 end
    local answer = #serving > 0 and table.concat(serving, ", ") or tostring(t:why_not_admissible(query, false))
    arows[#arows + 1] = { name, #serving, answer }
  end
end
for _, op in ipairs(ops) do
  for _, r in ipairs(tables[op]:rows()) do
    if not fired[r.name] then never = never + 1 end
  end
end
print()
print(report.table { title = ("audit of %d queries: %d unserved"):format(#queries, unserved),
                     header = { "query", "rows", "served by / refusal" }, rows = arows })
print()
print(("rows that never fire: %d of %d"):format(never, nrows))

-- The census: every row of the layer route tables, and the backends whose contract (among the
-- files read) has a row launching its kernel in its format. With --census, a row none serves exits 1.
if opts.census then
  local served_by = {}
  for _, op in ipairs(ops) do
    for _, r in ipairs(tables[op]:rows()) do
      local b = r.name:match "^[%w_]+%.(%a+)%."
      local key = r.kernel .. "/" .. r.format -- the kernel the row launches: a contract's entry point
      served_by[key] = served_by[key] or {}
      served_by[key][b] = true
    end
  end
  local crows, none = {}, 0
  for _, tname in ipairs { "layer_norm", "layer_select", "layer_elementwise", "layer_kv", "layer_moe", "workgroup" } do
    for _, r in ipairs(require("routes." .. tname):rows()) do
      local bs = {}
      for b in pairs(served_by[r.kernel .. "/" .. r.format] or {}) do bs[#bs + 1] = b end
      table.sort(bs)
      if #bs == 0 then none = none + 1 end
      crows[#crows + 1] = { tname, r.name, r.kernel, r.format, #bs > 0 and table.concat(bs, ", ") or "none" }
    end
  end
  print()
  print(report.table { title = ("census of the layer route tables: %d rows, %d served by no contract"):format(#crows, none),
                       header = { "table", "row", "kernel", "format", "contracts (backends)" }, rows = crows })
  if none > 0 then os.exit(1) end
end
