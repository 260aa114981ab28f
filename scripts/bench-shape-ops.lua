-- bench-shape-ops.lua — every shape-op contract of a device's backend, timed at a size past
-- the caches, its GB/s taken from the contract's own bytes_moved and quoted against the
-- device's measured copy ceiling (Autotune "bandwidth.copy_gbs", from scripts/bandwidth.lua).
-- Each kernel is checked against its CPU twin first where the device is not the CPU (the "bit
-- gate" column: ok, or for contracts held to a precision bound "bounded" where the bytes differ
-- but every element is within the contract's bound, checked element by element; DIFFERS, OUT OF
-- BOUND and UNWRITTEN fail the run, see bit_gate). The
-- column "ran" (and the records' "ran") names the kernel that ran, which may be a variant the
-- launcher took for the shape (pad_rows, pad_backward_rows, contiguize_tiles, pad_items on CUDA). "own
-- copy" (and the records' own_copy_gbs) is a copy between the op's own buffers timed right after
-- it in the same process, "of own" the op against it: where the driver puts a process's memory
-- in a slower mode (NVIDIA's Vulkan, docs/PERF.md), the op's own buffers say so.
-- --launches N times N launches back to back per sample (the host's launch cost then overlaps
-- the kernels before it) and reports one launch's share. --no-gate leaves the bit gate out
-- (its column says "not run"): at 1 GiB it costs the CPU twin's run and two downloads per op,
-- minutes where the timing takes seconds; the specs gate the same kernels. Each op's buffers
-- are released before the next op's are made. --apart times each op in a process of its own
-- (this script again, one --ops): the default on Vulkan until the slowdowns of later ops in one
-- process were found to be the clock dropping between them, which every timing now settles
-- (lua/xpu/settle.lua; docs/PERF.md, "Clocks between cells").
-- --pad-mode M sets pad's border (constant, the default, reflect or replicate; pad_backward is
-- timed with reflect's).
-- --again N (default 2): an op whose own copy ran under half the copy kernel's ceiling (the slow
-- mode, which holds for a whole process: the "slow copy:" line) is timed again in a process of
-- its own, up to N times, until one is not slow. Every attempt keeps its row, the later ones
-- named "op (again k)", and its record ("attempt": k); 0 times nothing again.
--   xpulua scripts/bench-shape-ops.lua --device cuda:0 [--mib N] [--reps N] [--launches N] [--ops a,b]
--          [--pad-mode M] [--no-gate] [-o table|jsonl|csv] [--apart] [--warm-ms N] [--run N] [--cols N] [--again N] [--stride S]
--          [--copy-path measured|kernel|driver]
-- --copy-path P (measured, the default; kernel; driver): the device's copy path (d:copy_path), which
-- the copy op and write_slice's one-run slab take. measured: autotune.copy_path, the driver's copy
-- where bandwidth.lua measured it faster than the copy kernel (cuda:0 on the H200), else the
-- kernels; the path and its reason are logged, and the records carry it ("copy_path").
-- --cols N (default 1024) sets the rows' length of every case: rows shorter than 128 items take
-- the plain kernels where whole ones take a row kernel (pad_rows, pad_backward_rows), and rows
-- that are not whole 16-byte chunks (e.g. 1023) the plain kernels, or on CUDA the item kernels
-- (pad_items ... tril_items, contiguize_tiles_odd), so their rates can be read too.
-- --run N times write_slice, write_slice_rotating and contiguize on runs of N items apart from
-- each other (the first N of every row of 2N): their item walks, where whole rows would take
-- the row kernels (write_slice_rows, contiguize_tiles) instead. write_slice and contiguize read
-- and write half the input's elements, as write_slice's plain case; the ring writes half the
-- rows of a ring of all of them (a quarter of the elements).
-- --stride S times contiguize on a view that takes every S-th item of each row (shape {R, C / S},
-- strides {C, S}): a gather along the last axis, where the default case is a transpose.
-- --warm-ms N (default 200): before its timed passes each op runs back to back for N ms of the
-- host's clock. On NVIDIA's Vulkan driver (H200, 580) a fresh process's first launches run at
-- about half the bandwidth for a few milliseconds; the warm-up takes that out of the timed
-- passes (it does not keep a process out of the slower mode the own-copy column shows;
-- docs/PERF.md).
local xpu = require "xpu"
local report = require "xpu.report"
local settle = require "xpu.settle"
local autotune = require "xpu.autotune"

local cli = require "xpu.cli"

local NAME = "bench-shape-ops"
local PAD_MODES = { constant = 0, reflect = 1, replicate = 2 }
local OPS = { "pad", "pad_backward", "flip", "roll", "cumsum", "triu", "tril", "write_slice", "write_slice_rotating",
              "copy", "contiguize" }
local opts = cli.parse(arg, {
  name = NAME,
  about = "Every shape-op contract of a device's backend, timed past the caches, GB/s against the copy ceiling.",
  example = "xpulua scripts/bench-shape-ops.lua --device cpu:0 --mib 64 --reps 3 --ops flip,copy -o jsonl",
  options = {
    { "device", "string", "cpu:0", "the device to time", value = "ID" },
    { "mib", "int", nil, "input working set", unit = "MiB", default_text = "past the caches" },
    { "reps", "int", 7, "timed passes per op", unit = "repetitions" },
    { "launches", "int", 1, "launches back to back per sample", unit = "launches" },
    { "ops", "string", nil, "the ops to time, comma-separated: " .. table.concat(OPS, ","), value = "a,b",
      default_text = "every op" },
    { "cols", "int", nil, "the rows' length of every case", unit = "columns", default_text = "1024" },
    { "run", "int", nil, "time the walks on runs of N items apart", unit = "items" },
    { "stride", "int", nil, "time contiguize on every S-th item of each row", unit = "items", min = 2, value = "S" },
    { "again", "int", 2, "times a slow-process op is timed again in a process of its own", unit = "attempts", min = 0 },
    { "attempt", "int", nil, "the attempt number for the record (a child's)", unit = "attempts" },
    { "pad-mode", "choice", "constant", "pad's border", choices = { "constant", "reflect", "replicate" } },
    { "copy-path", "choice", "measured", "the device's copy path", choices = { "measured", "kernel", "driver" } },
    { "contracts", "string", cli.repo_file "contracts/shape-ops.md", "the contract file", key = "file",
      value = "FILE", default_text = "contracts/shape-ops.md" },
    { "warm-ms", "int", 200, "back-to-back warm-up before each op's timed passes", unit = "milliseconds", min = 0 },
    { "no-gate", "flag", nil, "leave the bit gate against the CPU twin out" },
    { "apart", "flag", nil, "time each op in a process of its own" },
    { "one-process", "flag", nil, "the default (older commands in docs/PERF.md pass it)" },
    { "child", "flag", nil, "one op for a parent process: rows as ROW lines (internal)" },
  },
  output = true,
})
opts.jsonl = opts.output == "jsonl"
if opts.ops then
  local known = {}
  for _, op in ipairs(OPS) do known[op] = true end
  for op in (opts.ops .. ","):gmatch("([^,]*),") do
    if not known[op] then
      cli.fail(NAME, "--ops '%s': no op '%s' (the closest is %s; the ops: %s)", opts.ops, op, cli.closest(op, OPS),
        table.concat(OPS, ","))
    end
  end
end
if opts.stride and (opts.cols or 1024) % opts.stride ~= 0 then
  cli.fail(NAME, "--stride %d: does not divide the rows' %d columns (--cols)", opts.stride, opts.cols or 1024)
end
local d, err = xpu.device(opts.device)
if not d then cli.die(NAME, "%s", err) end
local mib = opts.mib or report.past_caches(d) >> 20
-- an op's input, its output and the bit gate's CPU twin of both must fit the device's memory
if (d.memory_bytes or 0) > 0 and (mib << 20) * 3 > d.memory_bytes then
  cli.fail(NAME, "--mib %d: an op's input, output and gate (%d MiB) do not fit %s's %d MiB; give a smaller --mib",
    mib, 3 * mib, d.id, d.memory_bytes >> 20)
end
local contracts, cerr = xpu.contracts.try_load(opts.file)
if not contracts then cli.fail(NAME, "--contracts %s: %s", opts.file, cerr) end
local w = report.writer(opts.output, d, "shape-ops", { "kernel", "shape", "format", "pad_mode", "run", "copy_path", "attempt" })
local copy_path, copy_why
if opts.copy_path == "measured" then
  copy_path, copy_why = autotune.copy_path(d)
else
  local ok, perr = pcall(d.copy_path, d, opts.copy_path)
  if not ok then cli.fail(NAME, "--copy-path %s: %s", opts.copy_path, perr) end
  copy_path, copy_why = opts.copy_path, ("%s: the %s, as --copy-path asks"):format(d.id,
    opts.copy_path == "driver" and "driver's copy" or "copy kernels")
end
if not opts.child then report.log("bench-shape-ops: copy path %s", copy_why) end

local mine, cpu_twin = {}, {}
for _, c in ipairs(contracts) do
  if d:supports(c.code_capability) then mine[#mine + 1] = c end
  if c.backend == "cpu" then cpu_twin[c.kernel] = c end
end
local wanted = {}
for op in (opts.ops or ""):gmatch("[^,]+") do wanted[op] = true end

-- The working set (input bytes) past any cache (report.past_caches: on a discrete device four
-- times the L2 and at least 1 GiB, the issue's size; on the host four times the last-level
-- cache, at least 256 MiB).
local n = (mib << 20) // 4 -- f32 elements
local C = opts.cols or 1024
local R = n // C
-- triu/tril: B square matrices of side S, C where the rows allow, else the largest power of two
-- whose square fits: never an empty batch, so the bit gate compares written triangles.
local S = C
while S * S > n and S > 1 do S = S // 2 end
local B = n // (S * S)
local ceiling = tonumber(autotune.recall(d, "bandwidth.copy_gbs"))
-- the slow mode is read from the own copy, a kernel, so against the copy kernel's own figure
-- where bandwidth.lua stored one (the ceiling may be the driver's copy: 3x the kernel on lavapipe)
local kernel_ceiling = tonumber(autotune.recall(d, "bandwidth.copy_kernel_gbs")) or ceiling
report.log("bench-shape-ops: %s (%s), f32 %dx%d (%d MiB in), copy ceiling %s", d.id, d.name, R, C, mib,
  ceiling and ("%.1f GB/s"):format(ceiling) or "unknown (run scripts/bandwidth.lua first)")

local function pattern(bytes)
  local unit = ("xpulua shape ops "):rep(64)
  return unit:rep(bytes // #unit + 1):sub(1, bytes)
end

-- A dense f32 operand of this shape.
local function f32(shape)
  local b = 4
  for _, v in ipairs(shape) do b = b * v end
  return { dtype = "f32", shape = shape, bytes = b }
end

-- Per op: inputs (name -> { dtype, shape, bytes }, or a strided view), params, output bytes.
local function cases()
  return {
    pad = { inputs = { input = f32 { R, C } }, params = { padding = { { 1, 1 }, { 16, 16 } }, mode_tag = PAD_MODES[opts.pad_mode] },
            out = (R + 2) * (C + 32) * 4 },
    pad_backward = { inputs = { upstream = f32 { R + 2, C + 32 } }, params = { padding = { { 1, 1 }, { 16, 16 } }, mode_tag = 1 },
                     out = R * C * 4 },
    flip = { inputs = { input = f32 { R, C } }, params = { axis = 1 }, out = n * 4 },
    roll = { inputs = { input = f32 { R, C } }, params = { axis = 1, shift = 7 }, out = n * 4 },
    cumsum = { inputs = { input = f32 { 256, n // 256 } }, params = { axis = 0 }, out = n * 4 },
    triu = { inputs = { input = f32 { B, S, S } }, params = {}, out = B * S * S * 4 },
    tril = { inputs = { input = f32 { B, S, S } }, params = {}, out = B * S * S * 4 },
    write_slice = { inputs = { source = f32 { R // 2, C }, dest = f32 { R, C } },
                    params = { ranges = { { R // 4, R // 4 + R // 2 }, { 0, C } } } },
    write_slice_rotating = { inputs = { source = f32 { R // 2, C }, position = { dtype = "u32", shape = { 1 }, bytes = 4, data = string.pack("<I4", 3 * R // 4) },
                                        dest = f32 { R, C } },
                             params = { axis = 0, modulus = R, ranges = { { 0, R // 2 }, { 0, C } } } },
    copy = { inputs = { src = f32 { n } }, params = {}, out = n * 4 },
    contiguize = { inputs = { input = { dtype = "f32", shape = { C, R }, strides = { 1, C }, bytes = n * 4 } }, params = {}, out = n * 4 },
  }
end

-- --run N: the walks' cases, M runs of N items, each the first half of a row of 2N.
local function run_cases(t, N)
  local M = n // (2 * N)
  t.write_slice = { inputs = { source = f32 { M, N }, dest = f32 { M, 2 * N } }, params = { ranges = { { 0, M }, { 0, N } } } }
  t.write_slice_rotating = { inputs = { source = f32 { M // 2, N }, position = { dtype = "u32", shape = { 1 }, bytes = 4, data = string.pack("<I4", 3 * M // 4) },
                                        dest = f32 { M, 2 * N } },
                             params = { axis = 0, modulus = M, ranges = { { 0, M // 2 }, { 0, N } } } }
  t.contiguize = { inputs = { input = { dtype = "f32", shape = { M, N }, strides = { 2 * N, 1 }, bytes = n * 4 } }, params = {}, out = M * N * 4 }
  return t
end

-- Buffers on device dev for a case; returns the launch spec. poison: the output starts as
-- 0xa5 bytes (the bit gate's two sides alike, so no byte compares by chance of allocation).
-- A case's operand names in a fixed order (pairs' order changes between processes).
local function names_of(inputs)
  local names = {}
  for name in pairs(inputs) do names[#names + 1] = name end
  table.sort(names)
  return names
end

-- The operand a case's record and Autotune key name by shape: its largest input (ties: the
-- first name), the same one in every process.
local function main_input(case)
  local best
  for _, name in ipairs(names_of(case.inputs)) do
    if not best or case.inputs[name].bytes > case.inputs[best].bytes then best = name end
  end
  return case.inputs[best]
end

local function spec_on(dev, case, out_bytes, poison)
  local spec = { inputs = {}, params = case.params }
  for _, name in ipairs(names_of(case.inputs)) do
    local op = case.inputs[name]
    spec.inputs[name] = { dtype = op.dtype, shape = op.shape, strides = op.strides,
                          buffer = dev:buffer(op.data or pattern(op.bytes)) }
  end
  if out_bytes then spec.out = dev:buffer(poison and ("\xa5"):rep(out_bytes) or out_bytes) end
  return spec
end

local function release(spec)
  for _, v in pairs(spec.inputs) do v.buffer:release() end
  if spec.out then spec.out:release() end
end

-- The call of a launch spec or a case (its operands and params), as c:call and c:precision take it.
local function call_of(spec)
  local t = {}
  for name, v in pairs(spec.inputs) do t[name] = { dtype = v.dtype, shape = v.shape, strides = v.strides } end
  return { inputs = t, params = spec.params }
end

local function output_of(c, spec)
  return spec.out or spec.inputs[c:call(call_of(spec)).in_place].buffer
end

-- 4-byte elements of got still at the poison where want holds something else: counted up to
-- `most` (string.find runs in C, so a fully written 1 GiB output costs one pass).
local POISON4 = ("\xa5"):rep(4)
local function unwritten(got, want, most)
  local n, at = 0, 1
  while n < most do
    local i = got:find(POISON4, at, true)
    if not i then break end
    local e = i - (i - 1) % 4 -- the element holding byte i
    if got:sub(e, e + 3) == POISON4 and want:sub(e, e + 3) ~= POISON4 then n = n + 1 end
    at = e + 4
  end
  return n
end

-- Bytes that differ, of a contract held to a precision bound: every element against the
-- contract's bound for this call (c:precision), in C (xpu.compare; outputs are up to 1 GiB), by
-- the specs' rule: |got - want| <= max_relative * the magnitude of the terms summed into the
-- element (spec/shape_ops_spec.lua). The CPU twin's element stands for the sum and its
-- magnitude: the bench's inputs are positive (ASCII bytes, sign bits clear), so the magnitude
-- of the terms is their sum. A NaN on one side only is out of bound too. "bounded" where every
-- element is within, else "OUT OF BOUND n (worst: ...)", the elements out and the furthest off.
local function bounded(c, case, got, want)
  local bound = c:precision(call_of(case))
  local r = xpu.compare(got, want, "f32", bound)
  local out = r.out_of_bound + r.nan_mismatches
  if out == 0 then return "bounded" end
  local why = {}
  if r.nan_mismatches > 0 then why[#why + 1] = ("%d NaN on one side"):format(r.nan_mismatches) end
  if r.out_of_bound > 0 then
    local w = r.worst
    why[#why + 1] = ("worst: element %d, got %.9g, want %.9g, rel %.3g > bound %.3g"):format(w.index, w.got, w.want,
      w.relative, bound.max_relative or 0)
  end
  return ("OUT OF BOUND %d (%s)"):format(out, table.concat(why, "; "))
end

-- The gate: the same case on the CPU twin. Bitwise contracts give the same bytes, else
-- "DIFFERS". The others (same_hardware_bitwise: held to a precision bound) show "ok" where the
-- bytes match, and where they do not "bounded" when every element is within the contract's
-- bound, else "OUT OF BOUND" (see bounded). Any kind fails as "UNWRITTEN" where the device left
-- an element at the poison that the CPU wrote (a walk that skipped chunks). DIFFERS, OUT OF
-- BOUND and UNWRITTEN fail the run.
local function bit_gate(c, case)
  if opts.no_gate then return "not run" end
  if d.id == "cpu:0" or not cpu_twin[c.kernel] then return "-" end
  local cpu = xpu.device "cpu:0"
  local a, b = spec_on(d, case, case.out, true), spec_on(cpu, case, case.out, true)
  c:launch(a)
  cpu_twin[c.kernel]:launch(b)
  local got, want = output_of(c, a):download(), output_of(cpu_twin[c.kernel], b):download()
  release(a)
  release(b)
  if got == want then return "ok" end
  local left = unwritten(got, want, 1000)
  if left > 0 then return ("UNWRITTEN %d%s"):format(left, left == 1000 and "+" or "") end
  if c.determinism == "bitwise" then return "DIFFERS" end
  return bounded(c, case, got, want)
end
local function gate_failed(g)
  g = tostring(g)
  return g == "DIFFERS" or g:find("^UNWRITTEN") ~= nil or g:find("^OUT OF BOUND") ~= nil
end

local rows, failed = {}, false
-- the table row by row as each op is timed (a parent's; a child hands its rows up as ROW lines)
local table_row = opts.child and function() end or w:stream {
  title = ("%s — %s, f32, %d MiB in, %d reps of %d launch(es), pad's border %s, copies by the %s%s, GB/s from each contract's bytes_moved; of copy: of the faster of the copy ceiling and its own copy"):format(
    d.id, d.name, mib, opts.reps, opts.launches, opts.pad_mode, copy_path == "driver" and "driver" or "kernels", (opts.run and (", walks on runs of %d"):format(opts.run) or "")
    .. (opts.cols and (", rows of %d"):format(C) or "") .. (opts.stride and (", contiguize every %d-th item"):format(opts.stride) or "")),
  header = { "kernel", "bytes moved", "median ms", "GB/s", "GB/s min", "GB/s max", "of copy", "bit gate", "ran", "own copy",
             "of own" },
  widths = { 20, 11, 9, 6, 8, 8, 7, 8, 16, 8, 6 },
}
local all = opts.run and run_cases(cases(), opts.run) or cases()
if opts.stride then -- every S-th item of each row: a gather along the last axis
  local S = opts.stride
  all.contiguize = { inputs = { input = { dtype = "f32", shape = { R, C // S }, strides = { C, S }, bytes = n * 4 } }, params = {},
                     out = R * (C // S) * 4 }
end
local list = {}
for _, c in ipairs(mine) do
  if all[c.kernel] and (not opts.ops or wanted[c.kernel]) then list[#list + 1] = c end
end
-- Op `kernel` timed in a process of its own (this script again, --child): its rows and records
-- from the child's ROW and JSON lines, appended to `into_rows` and written as they come; attempt (nil on
-- the first) goes to the child for its record.
local function run_child(kernel, into_rows, attempt)
  local exe, script = arg[-1] or "xpulua", arg[0]
  local cmd = { exe, script, "--device", opts.device, "--mib", mib, "--reps", opts.reps, "--launches", opts.launches,
                "--warm-ms", opts.warm_ms, "--copy-path", opts.copy_path,
                "--contracts", opts.file, "--ops", kernel, "--pad-mode", opts.pad_mode, "--child", opts.no_gate and "--no-gate" or "",
                opts.run and "--run" or "", opts.run or "", opts.cols and "--cols" or "", opts.cols or "",
                opts.stride and "--stride" or "", opts.stride or "", "-o", "jsonl", attempt and "--attempt" or "", attempt or "" }
  local p = assert(io.popen(report.command(cmd)))
  for line in p:lines() do
    if line:sub(1, 4) == "ROW\t" then
      local row = {}
      for f in (line:sub(5) .. "\t"):gmatch("([^\t]*)\t") do row[#row + 1] = tonumber(f) or f end
      if attempt then row[1] = ("%s (again %d)"):format(kernel, attempt) end
      into_rows[#into_rows + 1] = row
      table_row(row)
      failed = failed or gate_failed(row[8])
    elseif line:sub(1, 1) == "{" then
      w:record(report.decode_json(line) or { bench = "shape-ops", unreadable = line })
    end
  end
  if not p:close() then failed = true end
end

-- --apart: a process per op.
if opts.apart and #list > 1 and not opts.child then
  for _, c in ipairs(list) do run_child(c.kernel, rows) end
  list = {}
end

-- The copy between an op's own buffers (its largest input into its output), timed in the same
-- process right after the op: on NVIDIA's Vulkan driver a process, and the same buffers after
-- later allocations, can land in a slower memory mode (docs/PERF.md), so the columns "own copy"
-- and "of own" read the op against what its own buffers moved then. GB/s of the copy's read and
-- write bytes. It is the copy op, so it takes the device's copy path (--copy-path).
local copier
for _, c in ipairs(mine) do
  if c.kernel == "copy" then copier = c end
end
local function own_copy_gbs(c, case, spec, s)
  if not copier then return nil end
  local dst, src, bytes = output_of(c, spec), nil, 0
  for _, name in ipairs(names_of(case.inputs)) do
    local v = case.inputs[name]
    if spec.inputs[name].buffer ~= dst and v.bytes > bytes then src, bytes = spec.inputs[name].buffer, v.bytes end
  end
  bytes = math.min(bytes, case.out or case.inputs.dest.bytes)
  if not src or bytes == 0 then return nil end
  local from, to = src:slice(0, bytes), dst:slice(0, bytes)
  local copy = { inputs = { src = { dtype = "u8", shape = { bytes }, buffer = from } }, out = to, stream = s }
  local times = {}
  for r = 1, opts.reps + 2 do
    local m = s:timer_begin()
    copier:launch(copy)
    local sec = s:timer_end(m)
    if r > 2 then times[#times + 1] = sec end
  end
  from:release()
  to:release()
  return 2 * bytes / report.stats(times).median / 1e9
end

local s = d:default_stream()
for k, c in ipairs(list) do
  local case = all[c.kernel]
  local gate = bit_gate(c, case)
  failed = failed or gate_failed(gate)
  local spec = spec_on(d, case, case.out)
  spec.stream = s
  local times, bytes, ran = {}, 0, "-"
  settle.ensure(d)
  local t0 = xpu.now()
  repeat c:launch(spec) until xpu.now() - t0 >= opts.warm_ms / 1000 -- the queue bounds how far ahead
  s:sync()
  for r = 1, opts.reps + 2 do
    local m = s:timer_begin()
    for _ = 1, opts.launches do
      local res = c:launch(spec)
      bytes, ran = res.bytes_moved, res.kernel or "-" -- the kernel that ran (a variant, e.g. pad_rows)
    end
    local sec = s:timer_end(m) / opts.launches
    if r > 2 then times[#times + 1] = sec end -- two warm-up passes
    report.progress((k - 1) * (opts.reps + 2) + r, #list * (opts.reps + 2), c.kernel)
  end
  local st = report.stats(times)
  local gbs = bytes / st.median / 1e9
  local own = own_copy_gbs(c, case, spec, s)
  -- the ceiling the op is quoted against: the stored copy ceiling, or the copy between its own
  -- buffers just now where that ran faster (a VM's bandwidth moves with its neighbours)
  local op_ceiling = ceiling and own and math.max(ceiling, own) or ceiling
  settle.touch(d)
  -- the contract's measured cost ("judge_measured"), keyed by kernel, dtype (pad: and border
  -- mode, which changes its cost) and shape; the store itself keys it by the device
  -- fingerprint and the kernels' code hash
  local key = ("judge_measured.%s.f32"):format(c.kernel) .. (c.kernel == "pad" and "." .. opts.pad_mode or "")
  autotune.remember_for(d, key, main_input(case).shape, ("%.6g"):format(st.median))
  rows[#rows + 1] = { c.kernel, bytes, st.median * 1e3, gbs, bytes / st.max / 1e9, bytes / st.min / 1e9,
                      op_ceiling and ("%.0f%%"):format(100 * gbs / op_ceiling) or "-", gate, ran, own or "-",
                      own and ("%.0f%%"):format(100 * gbs / own) or "-" }
  table_row(rows[#rows])
  -- past the caches a rate over the copy ceiling is a stale or mismeasured ceiling (a smaller
  -- --mib may be served from the cache, which the ceiling does not bound)
  if (mib << 20) >= report.past_caches(d) then report.check_ceiling(NAME, c.kernel, gbs, op_ceiling) end
  w:record(report.with_stats({ kernel = c.kernel, backend = c.backend,
                               shape = main_input(case).shape, format = "f32",
                               bytes_moved = bytes, median_s = st.median, min_s = st.min, max_s = st.max,
                               gbs = gbs, ceiling_gbs = op_ceiling, stored_ceiling_gbs = ceiling, bit_gate = gate, ran = ran, own_copy_gbs = own,
                               pad_mode = c.kernel == "pad" and opts.pad_mode or nil, run = opts.run, copy_path = copy_path,
                               attempt = opts.attempt }, st))
  release(spec)
end

if opts.child then
  for _, r in ipairs(rows) do
    local f = {}
    for i, v in ipairs(r) do f[i] = tostring(v) end
    print("ROW\t" .. table.concat(f, "\t"))
  end
  os.exit(failed and 1 or 0)
end

-- --again: each op whose process was slow, timed again in processes of its own until one is not,
-- its rows printed as they come (after the first attempts), kept right after its first in `rows`.
if opts.again > 0 then
  local all_rows = {}
  for _, r in ipairs(rows) do
    all_rows[#all_rows + 1] = r
    local k = 0
    while k < opts.again and report.slow_share(tonumber(all_rows[#all_rows][10]), kernel_ceiling) do
      k = k + 1
      local got = #all_rows
      run_child(r[1], all_rows, k)
      if #all_rows == got then break end -- the child gave no row: its error is on stderr
    end
  end
  rows = all_rows
end

-- An op whose own copy ran under half the copy kernel's ceiling (report.slow_share; the own copy is a kernel): the device was
-- slow in that process, not the op (NVIDIA's Vulkan driver now and then, at full clock, for
-- reasons not found; docs/PERF.md). Said beside the table, so no such row passes for the op's rate.
for _, r in ipairs(rows) do
  local own = tonumber(r[10])
  local share = report.slow_share(own, kernel_ceiling)
  if share then
    w:print(("slow copy: %s: the copy between its own buffers ran at %.0f GB/s, %.0f %% of the copy kernel's ceiling; the device, not the op, set this row's pace"):format(
      r[1], own, 100 * share))
  end
end
os.exit(failed and 1 or 0)
