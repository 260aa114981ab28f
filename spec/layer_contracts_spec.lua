-- layer_contracts_spec.lua — the layer kernels' contracts (contracts/layer-ops.md: norms,
-- selections and the KV cache write; contracts/elementwise-ops.md; contracts/workgroup-ops.md: the primitives' test
-- kernels): every block loads; each kernel launched by its contract (c:launch) on cpu:0, vulkan:0
-- and cuda:0 equals the same kernel launched through its family's route table (routes.layer_<family>,
-- routes.workgroup) byte for byte, outputs poisoned first; each contract refuses a wrong dtype,
-- rank and shape and a too-short output by its field's name. A device that is absent is reported
-- skipped with the reason.
local xpu = require "xpu"
local fx = require "spec.support.fixtures"

local FILES = { "contracts/layer-ops.md", "contracts/elementwise-ops.md", "contracts/workgroup-ops.md" }
local contracts, C = {}, {}
for _, file in ipairs(FILES) do
  for _, c in ipairs(xpu.contracts.load(file)) do
    contracts[#contracts + 1] = c
    C[c.kernel .. "." .. c.backend] = c
  end
end

local FAMILY = {
  rms_norm = "norm", add_rms_norm = "norm", rms_norm_q8k = "norm", add_rms_norm_q8k = "norm", add_rms_norm_q8k_f32 = "norm", layer_norm = "norm",
  layer_norm_bias = "norm",
  softmax = "norm",
  get_rows = "select", argmax = "select", top_k = "select", compact = "select", compact_groups = "select",
  expert_map = "select", matvec_f32 = "moe", moe_combine = "moe",
  add = "elementwise", mul = "elementwise", swiglu = "elementwise", geglu = "elementwise", rope = "elementwise",
  swiglu_q8k = "elementwise", workgroup_reduce = "workgroup", workgroup_scan = "workgroup", kv_write = "kv",
}
local BACKENDS = { "cpu", "cuda", "vulkan" }
-- A contract's entry point where it is not the kernel's own name.
local ENTRY = { compact_groups = "compact_count", layer_norm_bias = "layer_norm" }
-- Each family's query module and route table.
local function family(fam)
  if fam == "workgroup" then return require "xpu.workgroup", require "routes.workgroup" end
  return require("xpu.layers." .. fam), require("routes.layer_" .. fam)
end

local DEVICES = fx.devices { "cpu:0", "vulkan:0", "cuda:0" }

local POISON = "\255"

local function i32s(t) return string.pack("<" .. ("i4"):rep(#t), table.unpack(t)) end

-- Floats of both signs, a few octaves, with zeros (compact drops them) and a NaN where asked.
local function floats(n, seed, nan_at)
  local v = fx.values(n, seed)
  for i = 1, n, 7 do v[i] = 0 end
  if nan_at then v[nan_at] = 0 / 0 end
  return fx.f32s(v)
end

local function ids_of(n, range, seed, bad)
  local r, t = fx.lcg(seed), {}
  for i = 1, n do t[i] = math.floor(r() * range) end
  if bad then t[#t] = range end
  return i32s(t)
end

local function table_of(format, n_rows, cols, seed)
  local v = fx.values(n_rows * cols, seed)
  if format == "f32" then return fx.f32s(v) end
  if format == "f16" then return (xpu.fixture.eighths("f16", n_rows * cols, seed)) end
  return xpu.quant.quantize(format, fx.f32s(v))
end

-- Each case: the contract's inputs ({ dtype, shape, bytes }), params, outputs (bytes), the
-- family's query and its scalar operands (what the contract hands the launcher as f32 operands).
local function norm_case(kernel, rows, cols, extra)
  local x = { dtype = "f32", shape = { rows, cols }, bytes = floats(rows * cols, 3) }
  local w = { dtype = "f32", shape = { cols }, bytes = floats(cols, 5) }
  local case = { inputs = { x = x, weight = w }, params = { eps = 1e-5 }, scalars = { eps = 1e-5 },
                 outputs = { out = rows * cols * 4 }, query = function(N) return N.query(kernel, rows, cols) end }
  for k, v in pairs(extra or {}) do case[k] = v end
  return case
end

local CASES = {
  rms_norm = norm_case("rms_norm", 3, 300),
  add_rms_norm = norm_case("add_rms_norm", 2, 257, {
    outputs = { out = 2 * 257 * 4, sum = 2 * 257 * 4 },
  }),
  rms_norm_q8k = norm_case("rms_norm_q8k", 2, 512, { outputs = { xq = 2 * 2 * 320 } }),
  add_rms_norm_q8k = norm_case("add_rms_norm_q8k", 2, 512, { outputs = { xq = 2 * 2 * 320, sum = 2 * 512 * 4 } }),
  layer_norm = norm_case("layer_norm", 3, 100),
  softmax = norm_case("softmax", 4, 77, { params = { scale = 0.5, causal = 1, pos0 = 5 }, scalars = { scale = 0.5, pos0 = 5 },
    query = function(N) return N.query("softmax", 4, 77, { causal = true }) end }),
}
CASES.add_rms_norm.inputs.residual = { dtype = "f32", shape = { 2, 257 }, bytes = floats(2 * 257, 9) }
CASES.add_rms_norm.inputs.x.shape, CASES.add_rms_norm.inputs.x.bytes = { 2, 257 }, floats(2 * 257, 3)
CASES.add_rms_norm_q8k.inputs.residual = { dtype = "f32", shape = { 2, 512 }, bytes = floats(2 * 512, 10) }
CASES.softmax.inputs.weight = nil
CASES.layer_norm_bias = norm_case("layer_norm", 3, 100, { query = function(N) return N.query("layer_norm", 3, 100, { bias = true }) end })
CASES.layer_norm_bias.inputs.bias = { dtype = "f32", shape = { 100 }, bytes = floats(100, 8) }

for _, f in ipairs { "f32", "f16", "q8_0", "q4_0", "q4_K" } do
  local cols = f:find "K" and 512 or 64
  CASES["get_rows:" .. f] = {
    kernel = "get_rows",
    inputs = { table = { dtype = f, shape = { 6, cols }, bytes = table_of(f, 6, cols, 11) },
               ids = { dtype = "i32", shape = { 5 }, bytes = ids_of(5, 6, 13, true) } },
    outputs = { out = 5 * cols * 4 },
    query = function(S) return S.get_rows_query(f, 5, 6, cols) end,
  }
end
CASES.argmax = { inputs = { x = { dtype = "f32", shape = { 3, 1500 }, bytes = floats(4500, 17, 2000) } },
                 outputs = { out = 12 }, query = function(S) return S.argmax_query(3, 1500) end }
for _, norm in ipairs { 0, 1 } do
  CASES["top_k:" .. norm] = {
    kernel = "top_k", inputs = { x = { dtype = "f32", shape = { 5, 60 }, bytes = floats(300, 19 + norm) } },
    params = { k = 4, norm = norm }, outputs = { ids = 5 * 4 * 4, weights = 5 * 4 * 4 },
    query = function(S) return S.top_k_query(5, 60, 4, norm == 1 and "k" or "all") end,
  }
end
CASES.compact = { inputs = { x = { dtype = "f32", shape = { 3001 }, bytes = floats(3001, 23) } },
                  outputs = { values = 3001 * 4, indices = 3001 * 4, count = 4 },
                  query = function(S) return S.compact_query(3001) end }
-- past the one-launch form's 65536, so the family picks its three-launch row too
CASES.compact_groups = { inputs = { x = { dtype = "f32", shape = { 70001 }, bytes = floats(70001, 24) } },
                         outputs = { values = 70001 * 4, indices = 70001 * 4, count = 4, scratch = 18 * 4 },
                         query = function(S) return S.compact_query(70001) end }
CASES.expert_map = { inputs = { ids = { dtype = "i32", shape = { 37, 3 }, bytes = ids_of(111, 20, 29, true) } },
                     params = { n_expert = 20 }, outputs = { counts = 80, offsets = 80, tokens = 111 * 4, slots = 111 * 4 },
                     query = function(S) return S.expert_map_query(37, 3, 20) end }
for _, tokens in ipairs { 1, 5 } do
  CASES["matvec_f32:" .. tokens] = {
    kernel = "matvec_f32", inputs = { w = { dtype = "f32", shape = { 9, 77 }, bytes = floats(9 * 77, 40 + tokens) },
                                      x = { dtype = "f32", shape = { tokens, 77 }, bytes = floats(tokens * 77, 42, 3) } },
    outputs = { y = tokens * 9 * 4 }, query = function(M) return M.matvec_query(tokens, 9, 77) end,
  }
end
CASES.moe_combine = { inputs = { x = { dtype = "f32", shape = { 3, 50 }, bytes = floats(150, 44) },
                                 w = { dtype = "f32", shape = { 3, 4 }, bytes = floats(12, 45) },
                                 y = { dtype = "f32", shape = { 12, 50 }, bytes = floats(600, 46, 7) } },
                      outputs = { out = 150 * 4 }, query = function(M) return M.combine_query(3, 4, 50) end }

-- rms_norm's f16 row: f16 x and out, the weight f32.
CASES["rms_norm:f16"] = norm_case("rms_norm", 3, 300, {
  kernel = "rms_norm", outputs = { out = 3 * 300 * 2 },
  query = function(N) return N.query("rms_norm", 3, 300, { dtype = "f16" }) end,
})
CASES["rms_norm:f16"].inputs.x = { dtype = "f16", shape = { 3, 300 }, bytes = (xpu.fixture.eighths("f16", 900, 7)) }

-- The elementwise kernels, f32 and f16: values of dtype, a NaN among the f32 ones.
local SIZE = { f32 = 4, f16 = 2 }
local function ew_values(dtype, n, seed)
  if dtype == "f16" then return (xpu.fixture.eighths("f16", n, seed)) end
  return floats(n, seed, 3)
end
local function tensor(dtype, shape, seed)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  return { dtype = dtype, shape = shape, bytes = ew_values(dtype, n, seed) }
end

for _, dtype in ipairs { "f32", "f16" } do
  local sfx = dtype == "f32" and "" or ":f16"
  for _, k in ipairs { "add", "mul" } do
    for _, bcast in ipairs { 0, 1 } do
      CASES[k .. (bcast == 1 and ":bcast" or "") .. sfx] = {
        kernel = k, inputs = { a = tensor(dtype, { 5, 33 }, 31), b = tensor(dtype, bcast == 1 and { 33 } or { 5, 33 }, 32) },
        outputs = { out = 5 * 33 * SIZE[dtype] }, query = function(E) return E.binary(k, dtype, 5, 33, bcast) end,
      }
    end
  end
  for _, k in ipairs { "swiglu", "geglu" } do
    CASES[k .. sfx] = { kernel = k, inputs = { g = tensor(dtype, { 4, 37 }, 33), u = tensor(dtype, { 4, 37 }, 34) },
                        outputs = { out = 4 * 37 * SIZE[dtype] }, query = function(E) return E.glu(k, dtype, 4, 37) end }
  end
  for _, mode in ipairs { "normal", "neox" } do
    local scal = { freq_base = 500000.0, freq_scale = 0.25 }
    CASES["rope:" .. mode .. sfx] = {
      kernel = "rope", inputs = { x = tensor(dtype, { 3, 4, 10 }, 35), pos = { dtype = "i32", shape = { 3 }, bytes = i32s { 0, 7, 32768 } } },
      params = { n_dims = 6, mode = mode == "neox" and 1 or 0, freq_base = scal.freq_base, freq_scale = scal.freq_scale },
      scalars = scal, outputs = { out = 3 * 4 * 10 * SIZE[dtype] },
      query = function(E) return E.rope(dtype, 3, 4, 10, { n_dims = 6, mode = mode }) end,
    }
  end
end
CASES.swiglu_q8k = { inputs = { g = tensor("f32", { 2, 512 }, 36), u = tensor("f32", { 2, 512 }, 37) },
                     outputs = { xq = 2 * 2 * 320 }, query = function(E) return E.glu("swiglu_q8k", "f32", 2, 512) end }

-- kv_write: its caches are inputs written in place (outputs kc_out, vc_out alias them), poisoned;
-- 3 tokens from 6 of 8 slots (a ring that wraps), a NaN and an overflow among the rows.
local function kv_rows(n, seed)
  local v = fx.values(n, seed)
  v[2], v[5] = 0 / 0, 1e6
  return fx.f32s(v)
end
CASES.kv_write = {
  inputs = { kc = { dtype = "f16", shape = { 2, 8, 6 }, bytes = POISON:rep(2 * 8 * 6 * 2) },
             vc = { dtype = "f16", shape = { 2, 8, 6 }, bytes = ("\123"):rep(2 * 8 * 6 * 2) },
             k = { dtype = "f32", shape = { 3, 2, 6 }, bytes = kv_rows(36, 51) },
             v = { dtype = "f32", shape = { 3, 2, 6 }, bytes = kv_rows(36, 52) },
             pos = { dtype = "i32", shape = { 1 }, bytes = i32s { 6 } } },
  outputs = {}, written = { "kc", "vc" },
  query = function(K) return K.query { tokens = 3, n_kv_head = 2, head_dim = 6, slots = 8 } end,
}

-- The workgroup primitives' test kernels: a block of 64 lanes, two trips, items past the end.
local function i64s(n, seed)
  local r, t = fx.lcg(seed), {}
  for i = 1, n do t[i] = string.pack("<i8", math.floor((r() - 0.5) * 2 ^ 52) * (i % 3 + 1)) end
  return table.concat(t)
end
local WG = { reduce = { f32 = true, i64 = true }, scan = { i32 = true, i64 = true } }
for _, regime in ipairs { "reduce", "scan" } do
  for _, dtype in ipairs { "f32", "i32", "i64" } do
    if WG[regime][dtype] then
      local n, block, trips, op = 300, 64, 2, dtype == "i64" and 1 or 0
      local bytes = dtype == "i64" and i64s(n, 41) or dtype == "i32" and ids_of(n, 1000, 42) or floats(n, 43)
      local es, groups = dtype == "i64" and 8 or 4, (n + block * trips - 1) // (block * trips)
      local kernel = "workgroup_" .. regime
      CASES[kernel .. ":" .. dtype] = {
        kernel = kernel, inputs = { x = { dtype = dtype, shape = { n }, bytes = bytes } },
        params = { op = op, block = block, trips = trips },
        outputs = regime == "reduce" and { out = groups * trips * es, agree = groups * trips * 4 } or { out = n * es },
        query = function(W) return W.query(regime, dtype, op, block, trips) end,
      }
    end
  end
end

local function kernel_of(name, case) return case.kernel or name end

-- The case on d through the contract c; returns each output's bytes.
local function by_contract(c, d, case)
  local inputs, out, bufs = {}, {}, {}
  for name, t in pairs(case.inputs) do
    inputs[name] = { dtype = t.dtype, shape = t.shape, buffer = d:buffer(t.bytes) }
  end
  for name, n in pairs(case.outputs) do
    bufs[name] = d:buffer(POISON:rep(n))
    out[name] = bufs[name]
  end
  local r = c:launch { inputs = inputs, params = case.params, out = out }
  fx.sync(d)
  local got = {}
  for name, b in pairs(bufs) do got[name] = b:download() end
  for _, name in ipairs(case.written or {}) do got[name] = inputs[name].buffer:download() end
  return got, r
end

-- The same through the family's route table: its query, the operands by name.
local function by_family(kernel, d, case)
  local M, routes = family(FAMILY[kernel])
  local ops = {}
  for name, t in pairs(case.inputs) do ops[name] = d:buffer(t.bytes) end
  for name, n in pairs(case.outputs) do ops[name] = d:buffer(POISON:rep(n)) end
  for name, v in pairs(case.scalars or {}) do ops[name] = v end
  local call = xpu.call { query = case.query(M), device = d, operands = ops }
  local row = routes:bind(call)
  row:dispatch(call)
  fx.sync(d)
  local got = {}
  for name in pairs(case.outputs) do got[name] = ops[name]:download() end
  for _, name in ipairs(case.written or {}) do got[name] = ops[name]:download() end
  return got, row
end

describe("the layer contract files", function()
  it("loads one block per kernel per backend it is built for", function()
    local n = 0
    for kernel in pairs(FAMILY) do
      for _, b in ipairs(BACKENDS) do
        local c = C[kernel .. "." .. b]
        assert.is_not_nil(c, kernel .. "." .. b)
        assert.equal(ENTRY[kernel] or kernel, c.entry_point)
        n = n + 1
      end
    end
    assert.equal(n, #contracts)
  end)
end)

for _, entry in ipairs(DEVICES) do
  describe("a contract launch on " .. entry.id, function()
    local names = {}
    for name in pairs(CASES) do names[#names + 1] = name end
    table.sort(names)
    for _, name in ipairs(names) do
      local case = CASES[name]
      local kernel = kernel_of(name, case)
      it(name .. " equals its family's route, byte for byte", function()
        if not entry.dev then return pending(entry.skip) end
        local c = C[kernel .. "." .. entry.backend]
        if not c then return pending(("skipped: %s is not built for %s"):format(kernel, entry.backend)) end
        local want, row = by_family(kernel, entry.dev, case)
        local got, r = by_contract(c, entry.dev, case)
        assert.equal(ENTRY[kernel] or kernel, r.kernel)
        for out, bytes in pairs(want) do
          assert.equal(#bytes, #got[out], out)
          assert.is_true(bytes == got[out], ("%s: output '%s' differs from row %s's"):format(name, out, row.name))
          assert.is_false(bytes == POISON:rep(#bytes) and (case.outputs[out] or 5) > 4, name .. ": " .. out .. " was not written")
          if case.written then assert.is_false(bytes == case.inputs[out].bytes, name .. ": " .. out .. " was not written") end
        end
      end)
    end
  end)
end

-- A call of the case's contract, one thing changed.
local function refused(c, case, change)
  local inputs = {}
  for name, t in pairs(case.inputs) do inputs[name] = { dtype = t.dtype, shape = t.shape } end
  local params = {}
  for k, v in pairs(case.params or {}) do params[k] = v end
  change(inputs, params)
  local r, why = c:call { inputs = inputs, params = params }
  assert.is_nil(r, "admitted")
  return why
end

-- For each kernel: the input (and its wrong dtype) and the change that breaks its shape, with
-- the field that refuses it.
local BCAST_SHAPE = "accept.inputs[1].shape_constraint: (rank == 1 and dim[0] == a.dim[1]) or "
                 .. "(rank == 2 and dim[0] == a.dim[0] and dim[1] == a.dim[1]) fails"
local BAD = {
  rms_norm = { "x", "bf16", function(i) i.weight.shape = { 301 } end, "accept.inputs[1].shape_constraint: dim[0] == x.dim[1] fails" },
  ["rms_norm:f16"] = { "weight", "f16", function(i) i.x.shape = { 3, 301 }; i.weight.shape = { 301 } end,
                       "accept.op_params.fields.cols.constraint: cols % 2 == 0 or x.dtype_bytes == 4 fails" },
  add = { "b", "i32", function(i) i.b.shape = { 5, 32 } end, BCAST_SHAPE },
  ["mul:bcast:f16"] = { "a", "i32", function(i) i.b.shape = { 34 } end, BCAST_SHAPE },
  swiglu = { "u", "bf16", function(i) i.u.shape = { 4, 36 } end,
             "accept.inputs[1].shape_constraint: dim[0] == g.dim[0] and dim[1] == g.dim[1] fails" },
  geglu = { "g", "bf16", function(i) i.g.shape = { 65536, 32768 }; i.u.shape = { 65536, 32768 } end,
            "accept.op_params.fields.cols.constraint: rows * cols < 2147483648 fails" },
  ["rope:neox"] = { "pos", "i64", function(_, p) p.n_dims = 12 end,
                    "accept.op_params.fields.n_dims.constraint: n_dims >= 2 and n_dims % 2 == 0 and n_dims <= head_dim fails" },
  ["rope:normal:f16"] = { "x", "f64", function(i) i.x.shape = { 3, 4, 9 } end,
                          "accept.op_params.fields.head_dim.constraint: head_dim >= 2 and head_dim % 2 == 0 fails" },
  swiglu_q8k = { "g", "f16", function(i) i.g.shape = { 2, 500 }; i.u.shape = { 2, 500 } end,
                 "accept.op_params.fields.cols.constraint: cols % 256 == 0 fails" },
  ["workgroup_reduce:f32"] = { "x", "f16", function(_, p) p.block = 48 end,
                               "accept.op_params.fields.block.constraint: block >= 32 and block <= 1024 and block % 32 == 0 fails" },
  ["workgroup_scan:i64"] = { "x", "f32", function(_, p) p.op = 3 end, "accept.op_params.fields.op.constraint: op <= 2 fails" },
  add_rms_norm = { "residual", "f16", function(i) i.residual.shape = { 2, 256 } end,
                   "accept.inputs[1].shape_constraint: dim[0] == x.dim[0] and dim[1] == x.dim[1] fails" },
  add_rms_norm_q8k = { "residual", "f16", function(i) i.residual.shape = { 2, 256 } end,
                       "accept.inputs[1].shape_constraint: dim[0] == x.dim[0] and dim[1] == x.dim[1] fails" },
  rms_norm_q8k = { "x", "bf16", function(i) i.x.shape = { 2, 500 }; i.weight.shape = { 500 } end,
                   "accept.op_params.fields.cols.constraint: cols % 256 == 0 fails" },
  layer_norm = { "weight", "f16", function(i) i.weight.shape = { 99 } end, "accept.inputs[1].shape_constraint: dim[0] == x.dim[1] fails" },
  layer_norm_bias = { "bias", "f16", function(i) i.bias.shape = { 101 } end, "accept.inputs[2].shape_constraint: dim[0] == x.dim[1] fails" },
  softmax = { "x", "f64", function(i) i.x.shape = { 4, 0 } end,
              "accept.op_params.fields.cols.constraint: cols >= 1 and cols <= 16777216 fails" },
  ["get_rows:q4_K"] = { "ids", "i64", function(i) i.table.shape = { 6, 500 } end,
                        "accept.inputs[0].dtypes: table's rows of 500 elements are not whole Q4_K blocks (256 elements)" },
  argmax = { "x", "i32", function(i) i.x.shape = { 3, 0 } end, "accept.op_params.fields.cols.constraint: cols >= 1 fails" },
  ["top_k:1"] = { "x", "f16", function(i) i.x.shape = { 5, 300 } end,
                  "accept.op_params.fields.n_expert.constraint: n_expert >= 1 and n_expert <= 256 fails" },
  compact = { "x", "i32", function(i) i.x.shape = { 65537 } end, "accept.op_params.fields.n.constraint: n <= 65536 fails" },
  compact_groups = { "x", "f16", function(i) i.x.shape = { 2147483648 } end,
                     "accept.op_params.fields.n.constraint: n <= 2147483647 fails" },
  kv_write = { "k", "f16", function(i) i.k.shape = { 9, 2, 6 }; i.v.shape = { 9, 2, 6 } end,
               "accept.op_params.fields.tokens.constraint: tokens <= slots fails" },
  expert_map = { "ids", "f32", function(_, p) p.n_expert = 2000 end,
                 "accept.op_params.fields.n_expert.constraint: n_expert >= 1 and n_expert <= 1024 fails" },
  ["matvec_f32:5"] = { "x", "f16", function(i) i.x.shape = { 5, 76 } end,
                       "accept.inputs[1].shape_constraint: dim[1] == w.dim[1] fails" },
  moe_combine = { "w", "i32", function(i) i.w.shape = { 3, 9 }; i.y.shape = { 27, 50 } end,
                  "accept.op_params.fields.used.constraint: used >= 1 and used <= 8 and tokens * used * n < 2147483648 fails" },
}

describe("each layer contract refuses by its field's name", function()
  local names = {}
  for name in pairs(BAD) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    local case, bad = CASES[name], BAD[name]
    local kernel = kernel_of(name, case)
    local c = C[kernel .. ".cpu"]
    local k = 0
    for i, t in ipairs(c.inputs) do if t.name == bad[1] then k = i - 1 end end
    it(name .. ": a wrong dtype, rank and shape", function()
      local why = refused(c, case, function(i) i[bad[1]].dtype = bad[2] end)
      assert.truthy(why:find(("accept.inputs[%d].dtypes: %s not accepted"):format(k, bad[2]:upper()), 1, true), why)
      why = refused(c, case, function(i)
        local s = i[bad[1]].shape
        i[bad[1]].shape = { 2, table.unpack(s) }
      end)
      assert.truthy(why:find(("accept.inputs[%d].rank: rank %d outside"):format(k, #case.inputs[bad[1]].shape + 1), 1, true), why)
      assert.equal(bad[4], refused(c, case, bad[3]))
    end)
    it(name .. ": a too-short output, by the output's name", function()
      local cpu = DEVICES[1].dev
      local inputs, out = {}, {}
      -- written in place: the output is its input's buffer, refused by the input's name
      local short = case.written and case.written[#case.written]
      for n, t in pairs(case.inputs) do
        inputs[n] = { dtype = t.dtype, shape = t.shape, buffer = cpu:buffer(n == short and t.bytes:sub(5) or t.bytes) }
      end
      local first = short or c.outputs[#c.outputs].name
      local want = short and #case.inputs[short].bytes or case.outputs[first]
      for n, bytes in pairs(case.outputs) do out[n] = cpu:buffer(n == first and bytes - 4 or bytes) end
      local ok, err = pcall(c.launch, c, { inputs = inputs, params = case.params, out = #c.outputs == 1 and out[first] or out })
      assert.is_false(ok)
      assert.truthy(err:find(("contract '%s' (cpu): %s: buffer too short (%d bytes, the call needs %d)")
                             :format(kernel, first, want - 4, want), 1, true), err)
    end)
  end
end)

describe("the layer contracts' own refusals", function()
  local cpu = DEVICES[1].dev
  it("layer_norm is the bias-free form, layer_norm_bias the form with one: has_bias is tied to each", function()
    assert.equal("accept.op_params.fields.has_bias.constraint: has_bias == 0 fails",
                 refused(C["layer_norm.cpu"], CASES.layer_norm, function(_, p) p.has_bias = 1 end))
    assert.equal("accept.op_params.fields.has_bias.constraint: has_bias == 1 fails",
                 refused(C["layer_norm_bias.cpu"], CASES.layer_norm_bias, function(_, p) p.has_bias = 0 end))
  end)

  it("add: b of another dtype than a, and a broadcast that b's rank does not say, by the field", function()
    local case = CASES["add:bcast"]
    assert.equal("accept.inputs[1].shape_constraint: dtype == a.dtype fails",
                 refused(C["add.cpu"], case, function(i) i.b.dtype = "f16" end))
    assert.equal("accept.op_params.fields.broadcast.constraint: broadcast == 2 - b.rank fails",
                 refused(C["add.cpu"], case, function(_, p) p.broadcast = 0 end))
  end)

  it("rope: freq_base travels to the launcher, which refuses one not positive", function()
    local case = CASES["rope:neox"]
    local inputs = {}
    for n, t in pairs(case.inputs) do inputs[n] = { dtype = t.dtype, shape = t.shape, buffer = cpu:buffer(t.bytes) } end
    local params = { n_dims = 6, mode = 1, freq_base = -2.0 }
    local ok, err = pcall(C["rope.cpu"].launch, C["rope.cpu"], { inputs = inputs, params = params,
                                                                   out = cpu:buffer(case.outputs.out) })
    assert.is_false(ok)
    assert.truthy(err:find("operand 'freq_base' is -2; it takes a positive number", 1, true), err)
  end)

  it("workgroup_reduce: block and op are the caller's (no default), by the field", function()
    local case = CASES["workgroup_reduce:f32"]
    assert.equal("accept.op_params.fields.block: missing (the call gives none and the contract has no default)",
                 refused(C["workgroup_reduce.cpu"], case, function(_, p) p.block = nil end))
    assert.equal("accept.op_params.fields.op: missing (the call gives none and the contract has no default)",
                 refused(C["workgroup_reduce.cpu"], case, function(_, p) p.op = nil end))
  end)
end)

describe("scripts/contracts.lua --census", function()
  local exe = arg and arg[-1] or "build/xpulua"
  local function run(args)
    local p = io.popen(exe .. " scripts/contracts.lua " .. args .. " --census 2>&1; echo \"exit=$?\"")
    local out = p:read("a")
    p:close()
    return out, tonumber(out:match("exit=(%d+)%s*$"))
  end

  it("serves every row of the layer route tables from the three files, on every backend", function()
    local out, code = run(table.concat(FILES, " "))
    assert.equal(0, code, out)
    local rows = tonumber(out:match "census of the layer route tables: (%d+) rows, 0 served by no contract")
    local n = 0
    for _, t in ipairs { "layer_norm", "layer_select", "layer_elementwise", "layer_kv", "layer_moe", "workgroup" } do
      n = n + #require("routes." .. t):rows()
    end
    assert.equal(n, rows, out)
    assert.matches("layer_norm%s+rms_norm%.f16%s+rms_norm%s+f16%s+cpu, cuda, vulkan", out)
    assert.matches("layer_select%s+compact_groups%.f32%s+compact_count%s+f32%s+cpu, cuda, vulkan", out)
    assert.matches("workgroup%s+workgroup%-scan%-i64%s+workgroup_scan%s+i64%s+cpu, cuda, vulkan", out)
    assert.matches("rope f16 head_dim 127%s+0%s+.-accept.op_params.fields.head_dim.constraint", out)
    assert.matches("compact f32 65537%s+0%s+.-n <= 65536 fails", out)
    assert.matches("compact_groups f32 2%^20%s+3%s+compact_groups.cpu.f32", out)
    assert.matches("layer_kv%s+kv_write%.f16%s+kv_write%s+f16%s+cpu, cuda, vulkan", out)
    assert.matches("kv_write f16 prefill past the slots%s+0%s+.-tokens <= slots fails", out)
  end)

  it("names the rows no contract serves and exits 1 (one file read)", function()
    local out, code = run("contracts/layer-ops.md --backend cpu")
    assert.equal(1, code, out)
    assert.matches("census of the layer route tables: %d+ rows, 16 served by no contract", out) -- 11 elementwise, 5 workgroup
    assert.matches("layer_elementwise%s+swiglu%.f16%s+swiglu%s+f16%s+none", out)
    assert.matches("layer_norm%s+rms_norm%.f32%s+rms_norm%s+f32%s+cpu\n", out)
  end)
end)
