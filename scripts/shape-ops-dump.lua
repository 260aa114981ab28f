-- shape-ops-dump.lua — did a change alter what the shape kernels write? Dumps every output of a
-- fixed case set (each shape contract of a device's backend, every dtype it accepts, shapes
-- that reach its blocks, tiles, partial runs and borders; random bytes, so NaNs and infinities
-- too) into one file, with an index beside it (FILE.idx: kernel, dtype, case, offset, bytes),
-- and compares two dumps element by element: from two builds (before and after a change), or
-- from two devices (cpu:0 against cuda:0: the bitwise contracts must give the same bytes).
--   xpulua scripts/shape-ops-dump.lua --device cpu:0 --out before.bin [--ops a,b]
--   xpulua scripts/shape-ops-dump.lua --compare before.bin after.bin
-- --compare prints a row per case that differs: elements that differ, of those NaN on both
-- sides with other payloads (which `same_hardware_bitwise` contracts allow across builds and
-- devices), and the first other difference; then a total line. Exit 1 where an element
-- differs that is not NaN on both sides, or the two indexes do not list the same cases.
local report = require "xpu.report"

local cli = require "xpu.cli"

local NAME = "shape-ops-dump"
local opts = cli.parse(arg, {
  name = NAME,
  about = "Dumps every shape kernel's output over a fixed case set, or compares two dumps element by element.",
  example = "xpulua scripts/shape-ops-dump.lua --device cpu:0 --out before.bin --ops flip,copy  (then --compare before.bin after.bin)",
  options = {
    { "device", "string", nil, "the device whose kernels to dump (with --out)", value = "D" },
    { "out", "string", nil, "the dump file to write (its index beside it, FILE.idx)", value = "FILE" },
    { "ops", "string", nil, "the ops to dump, comma-separated", value = "a,b", default_text = "every op" },
    { "contracts", "string", cli.repo_file "contracts/shape-ops.md", "the contract file", key = "file",
      value = "FILE", default_text = "contracts/shape-ops.md" },
    { "compare", "string", nil, "compare dump A with dump B (the next argument)", value = "A B" },
  },
  args = { { "B", "with --compare: the second dump" } },
  output = true,
})
if opts.compare then
  if not opts.b then cli.fail(NAME, "--compare takes two dump files (--compare A B)") end
  opts.compare = { opts.compare, opts.b }
elseif opts.b then
  cli.fail(NAME, "unexpected argument '%s' (--help lists the options)", opts.b)
end
if not opts.compare and not (opts.device and opts.out) then
  cli.fail(NAME, "give --device D --out FILE, or --compare A B")
end
local ORDER = { "pad", "pad_backward", "flip", "roll", "cumsum", "triu", "tril", "write_slice", "write_slice_rotating", "copy", "contiguize" }
if opts.ops then
  for op in (opts.ops .. ","):gmatch("([^,]*),") do
    local known = false
    for _, k in ipairs(ORDER) do known = known or k == op end
    if not known then
      cli.fail(NAME, "--ops '%s': no op '%s' (the closest is %s; the ops: %s)", opts.ops, op, cli.closest(op, ORDER),
        table.concat(ORDER, ","))
    end
  end
end
local BYTES = { f32 = 4, f64 = 8, f16 = 2, bf16 = 2, i8 = 1, i16 = 2, i32 = 4, i64 = 8, u8 = 1, u16 = 2, u32 = 4, u64 = 8 }

-- ---- compare ------------------------------------------------------------------------------------

local function is_nan(dt, s)
  if dt == "f32" then local v = string.unpack("<f", s); return v ~= v end
  if dt == "f64" then local v = string.unpack("<d", s); return v ~= v end
  if dt ~= "f16" and dt ~= "bf16" then return false end -- integers: no NaN
  local h = string.unpack("<I2", s)
  if dt == "f16" then return h & 0x7c00 == 0x7c00 and h & 0x03ff ~= 0 end
  return h & 0x7f80 == 0x7f80 and h & 0x007f ~= 0
end

local function read_index(path)
  local f, err = io.open(path .. ".idx")
  if not f then io.stderr:write("shape-ops-dump: ", err, "\n"); os.exit(1) end
  local list = {}
  for line in f:lines() do
    local k, dt, case, off, n = line:match("^(%S+)\t(%S+)\t(.-)\t(%d+)\t(%d+)$")
    if not k then io.stderr:write(("shape-ops-dump: %s.idx: a line that is not kernel, dtype, case, offset, bytes: %q\n"):format(path, line)); os.exit(1) end
    list[#list + 1] = { kernel = k, dtype = dt, case = case, off = tonumber(off), n = tonumber(n) }
  end
  f:close()
  return list
end

local function read_all(path)
  local f, err = io.open(path, "rb")
  if not f then io.stderr:write("shape-ops-dump: ", err, "\n"); os.exit(1) end
  local s = f:read("a")
  f:close()
  return s
end

local function compare(pa, pb)
  local ia, ib = read_index(pa), read_index(pb)
  local a, b = read_all(pa), read_all(pb)
  local rows, bad, nan_only, same = {}, false, 0, 0
  local w = report.writer(opts.output, nil, "shape-ops-dump", { "kernel", "dtype", "case" })
  if #ia ~= #ib then
    io.stderr:write(("shape-ops-dump: %s lists %d cases, %s %d\n"):format(pa, #ia, pb, #ib))
    os.exit(1)
  end
  for c, x in ipairs(ia) do
    local y = ib[c]
    if x.kernel ~= y.kernel or x.dtype ~= y.dtype or x.case ~= y.case or x.n ~= y.n then
      io.stderr:write(("shape-ops-dump: case %d is %s %s %s in %s, %s %s %s in %s\n"):format(c, x.kernel, x.dtype, x.case, pa,
        y.kernel, y.dtype, y.case, pb))
      os.exit(1)
    end
    local sa, sb = a:sub(x.off + 1, x.off + x.n), b:sub(y.off + 1, y.off + y.n)
    if #sa ~= x.n or #sb ~= y.n then
      io.stderr:write(("shape-ops-dump: %s %s %s: a dump is shorter than its index says\n"):format(x.kernel, x.dtype, x.case))
      os.exit(1)
    end
    if sa == sb then
      same = same + 1
    else
      local e, differ, nans, first = BYTES[x.dtype], 0, 0, nil
      for at = 1, x.n, e do
        local ea, eb = sa:sub(at, at + e - 1), sb:sub(at, at + e - 1)
        if ea ~= eb then
          differ = differ + 1
          if is_nan(x.dtype, ea) and is_nan(x.dtype, eb) then nans = nans + 1
          elseif not first then first = ("item %d: %s / %s"):format((at - 1) // e, ea:reverse():gsub(".", function(ch) return ("%02x"):format(ch:byte()) end),
            (eb:reverse():gsub(".", function(ch) return ("%02x"):format(ch:byte()) end))) end
        end
      end
      if first then bad = true else nan_only = nan_only + 1 end
      rows[#rows + 1] = { x.kernel, x.dtype, x.case, differ, nans, first or "NaN payloads only" }
      w:record { kernel = x.kernel, dtype = x.dtype, case = x.case, items_differ = differ, nan_both = nans,
                 first_other = first, a = pa, b = pb }
    end
  end
  if #rows > 0 then
    w:table { title = ("%s against %s: the cases that differ"):format(pa, pb),
      header = { "kernel", "dtype", "case", "items differ", "NaN both", "first other difference" }, rows = rows }
  end
  w:print(("%d cases: %d identical, %d NaN payloads only, %d differ"):format(#ia, same, nan_only, #rows - nan_only))
  os.exit(bad and 1 or 0)
end

if opts.compare then compare(opts.compare[1], opts.compare[2]) end

-- ---- dump ----------------------------------------------------------------------------------------

local xpu = require "xpu"
local d, derr = xpu.device(opts.device)
if not d then io.stderr:write("shape-ops-dump: ", derr, "\n"); os.exit(1) end
local contracts, cerr = xpu.contracts.try_load(opts.file)
if not contracts then cli.fail(NAME, "--contracts %s: %s", opts.file, cerr) end
local wanted
if opts.ops then
  wanted = {}
  for k in opts.ops:gmatch("[^,]+") do wanted[k] = true end
end

local seed
local function random_bytes(n) -- a fixed sequence per case, every byte value
  local t = {}
  for k = 1, n do
    seed = (seed * 1103515245 + 12345) % 2147483648
    t[k] = string.char((seed >> 16) & 0xff)
  end
  return table.concat(t)
end
local function prod(s) local p = 1 for _, v in ipairs(s) do p = p * v end return p end
local function padded(shape, padding)
  local o = {}
  for k = 1, #shape do o[k] = shape[k] + padding[k][1] + padding[k][2] end
  return o
end
local function list(t) return "{" .. table.concat(t, ",") .. "}" end
local function pads(padding)
  local s = {}
  for k, v in ipairs(padding) do s[k] = v[1] .. ":" .. v[2] end
  return list(s)
end

-- Each kernel's cases: { name, inputs = { operand = { shape, strides?, offset?, elements? } },
-- params, out = output elements (nil: in place into `dest`) }.
local PADS = {
  { { 5, 300 }, { { 1, 2 }, { 3, 4 } } }, { { 4, 3 }, { { 0, 2 }, { 1, 0 } } },
  { { 3, 4, 160 }, { { 1, 1 }, { 1, 2 }, { 16, 16 } } }, { { 2, 19, 132 }, { { 1, 0 }, { 3, 3 }, { 4, 4 } } },
  { { 3, 128 }, { { 1, 1 }, { 120, 120 } } }, { { 300 }, { { 7, 9 } } }, { { 6, 1 }, { { 2, 1 }, { 0, 0 } } },
  { { 64, 2000 }, { { 1, 1 }, { 16, 16 } } }, { { 9, 45 }, { { 1, 2 }, { 3, 4 } } },
}
local CASES = {}
function CASES.pad()
  local t = {}
  for _, p in ipairs(PADS) do
    for mode = 0, 2 do
      t[#t + 1] = { ("%s pad %s mode %d"):format(list(p[1]), pads(p[2]), mode),
        inputs = { input = { shape = p[1] } }, params = { padding = p[2], mode_tag = mode, fill_bits = 0x5a }, out = prod(padded(p[1], p[2])) }
    end
  end
  return t
end
function CASES.pad_backward()
  local t = {}
  for _, p in ipairs(PADS) do
    for mode = 0, 2 do
      t[#t + 1] = { ("%s pad %s mode %d"):format(list(padded(p[1], p[2])), pads(p[2]), mode), inputs = { upstream = { shape = padded(p[1], p[2]) } },
        params = { padding = p[2], mode_tag = mode }, out = prod(p[1]) }
    end
  end
  return t
end
local function along_axes(shapes)
  local t = {}
  for _, s in ipairs(shapes) do
    for axis = 0, #s - 1 do t[#t + 1] = { ("%s axis %d"):format(list(s), axis), inputs = { input = { shape = s } }, params = { axis = axis }, out = prod(s) } end
  end
  return t
end
function CASES.flip() return along_axes { { 7, 1000 }, { 3, 5, 9 }, { 50000 }, { 2, 4099, 3 } } end
function CASES.roll()
  local t = along_axes { { 7, 1000 }, { 3, 5, 9 }, { 50000 } }
  for k, c in ipairs(t) do c.params.shift = k * 7 - 20; c[1] = c[1] .. " shift " .. c.params.shift end
  return t
end
function CASES.cumsum() return along_axes { { 2, 140001 }, { 5, 7, 4099 }, { 300, 17 }, { 9, 2000, 2 } } end
local function triangles()
  local t = {}
  for _, s in ipairs { { 3, 70, 90 }, { 130, 40 }, { 2, 1024, 1024 } } do
    for _, diag in ipairs { -3, 0, 5 } do
      t[#t + 1] = { ("%s diagonal %d"):format(list(s), diag), inputs = { input = { shape = s } }, params = { diagonal = diag }, out = prod(s) }
    end
  end
  return t
end
CASES.triu, CASES.tril = triangles, triangles
function CASES.write_slice()
  local t = {}
  for _, c in ipairs {
    { { 4, 6, 5 }, { { 1, 3 }, { 2, 6 }, { 0, 5 } } }, { { 2, 8, 32 }, { { 0, 2 }, { 5, 6 }, { 0, 32 } } },
    { { 12, 1000 }, { { 2, 11 }, { 0, 1000 } } }, { { 6, 1028 }, { { 0, 6 }, { 1, 1025 } } }, { { 3000, 4 }, { { 0, 3000 }, { 1, 3 } } },
  } do
    local w = {}
    for k, r in ipairs(c[2]) do w[k] = r[2] - r[1] end
    t[#t + 1] = { ("%s into %s"):format(list(w), list(c[1])), inputs = { source = { shape = w }, dest = { shape = c[1] } }, params = { ranges = c[2] } }
  end
  return t
end
function CASES.write_slice_rotating()
  local t = {}
  for _, c in ipairs {
    { { 6, 4 }, 0, 5, { { 0, 3 }, { 0, 4 } }, 3 }, { { 3, 8 }, 1, 8, { { 1, 3 }, { 0, 5 } }, 6 },
    { { 2, 8, 32 }, 1, 7, { { 0, 2 }, { 0, 1 }, { 0, 32 } }, 13 }, { { 40, 300 }, 0, 37, { { 0, 30 }, { 0, 300 } }, 20 },
    { { 2600, 4 }, 0, 2500, { { 0, 2400 }, { 1, 3 } }, 2000 },
  } do
    local w = {}
    for k, r in ipairs(c[4]) do w[k] = r[2] - r[1] end
    t[#t + 1] = { ("%s into %s axis %d ring %d at %d"):format(list(w), list(c[1]), c[2], c[3], c[5]),
      inputs = { source = { shape = w }, dest = { shape = c[1] }, position = { dtype = "u32", shape = { 1 }, data = string.pack("<I4", c[5]) } },
      params = { axis = c[2], modulus = c[3], ranges = c[4] } }
  end
  return t
end
function CASES.copy() return { { "{1000, 37}", inputs = { src = { shape = { 1000, 37 } } }, params = {}, out = 37000 } } end
function CASES.contiguize()
  local t = {}
  for _, v in ipairs {
    { { 1024, 80 }, { 1, 1024 }, 0 }, { { 130, 300 }, { 1, 130 }, 5 }, { { 3, 70, 90 }, { 6300, 1, 70 }, 0 },
    { { 20, 3, 90 }, { 1, 1800, 20 }, 0 }, { { 100, 100 }, { 1, -100 }, 9900 }, { { 300, 200 }, { 1, 300 }, 7 },
    { { 2, 1000 }, { 1, 2 }, 0 }, { { 4, 9 }, { 5, 0 }, 2 }, { { 50, 37 }, { 150, 3 }, 1 }, { { 6, 48 }, { 64, 1 }, 3 },
  } do
    t[#t + 1] = { ("%s strides %s offset %d"):format(list(v[1]), list(v[2]), v[3]),
      inputs = { input = { shape = v[1], strides = v[2], offset = v[3], elements = 100000 } }, params = {}, out = prod(v[1]) }
  end
  return t
end

local backend = d.backend
local by_kernel = {}
for _, c in ipairs(contracts) do
  if c.backend == backend then by_kernel[c.kernel] = c end
end

local out, oerr = io.open(opts.out, "wb")
if not out then io.stderr:write("shape-ops-dump: ", oerr, "\n"); os.exit(1) end
local idx = assert(io.open(opts.out .. ".idx", "w"))
local jobs = {}
for _, k in ipairs(ORDER) do
  local c = by_kernel[k]
  if c and CASES[k] and (not wanted or wanted[k]) then
    for _, dt in ipairs(c.dtypes) do
      for _, case in ipairs(CASES[k]()) do jobs[#jobs + 1] = { c = c, dt = dt, case = case } end
    end
  end
end
if #jobs == 0 then io.stderr:write("shape-ops-dump: no shape contract of ", d.id, "'s backend matches\n"); os.exit(1) end
for n, job in ipairs(jobs) do
  local c, dt, case, e = job.c, job.dt, job.case, BYTES[job.dt]
  seed = 7
  for ch in (c.kernel .. dt .. case[1]):gmatch(".") do seed = (seed * 31 + ch:byte()) % 2147483648 end
  local spec, bufs = { inputs = {}, params = case.params }, {}
  local names = {}
  for name in pairs(case.inputs) do names[#names + 1] = name end
  table.sort(names) -- the data in one order: pairs' order changes from process to process
  for _, name in ipairs(names) do
    local op = case.inputs[name]
    local data = op.data or random_bytes((op.elements or prod(op.shape)) * e)
    bufs[name] = d:buffer(data)
    spec.inputs[name] = { dtype = op.dtype or dt, shape = op.shape, strides = op.strides, offset = op.offset, buffer = bufs[name] }
  end
  local o = bufs.dest
  if case.out then
    o = d:buffer(("\xa5"):rep(case.out * e))
    spec.out = o
  end
  local ok, err = pcall(c.launch, c, spec)
  if not ok then io.stderr:write(("shape-ops-dump: %s %s %s: %s\n"):format(c.kernel, dt, case[1], err)); os.exit(1) end
  local bytes = o:download()
  idx:write(("%s\t%s\t%s\t%d\t%d\n"):format(c.kernel, dt, case[1], out:seek(), #bytes))
  out:write(bytes)
  report.progress(n, #jobs, c.kernel .. " " .. dt)
end
out:close()
idx:close()
report.log("shape-ops-dump: %d outputs of %s into %s (index %s.idx)", #jobs, d.id, opts.out, opts.out)
