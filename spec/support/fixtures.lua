-- spec/support/fixtures.lua — fixtures the device specs share: values whose scale changes
-- from block to block (never all zero), packing helpers, resident weights and q8_K
-- activations, and one launch run on two devices from the same bytes.
local xpu = require "xpu"
local q = xpu.quant
local assert = require "luassert" -- busted's assert lives in the spec files' environment

local fixture = xpu.fixture

local M = {}

M.POISON = ("\255"):rep(4) -- a NaN: every element a kernel must write starts as one
M.formats = {} -- the decode formats' names, in xpu.formats()'s order
for i, f in ipairs(xpu.formats()) do M.formats[i] = f.name end

function M.lcg(seed)
  local s = seed
  return function()
    s = (s * 1103515245 + 12345) % 2147483648
    return s / 2147483648
  end
end

function M.values(n, seed)
  local r, t = M.lcg(seed), {}
  for i = 1, n do
    local g = math.sqrt(-2 * math.log(r() + 1e-12)) * math.cos(2 * math.pi * r())
    t[i] = g * (1 + ((i - 1) // 32 * 7) % 5)
  end
  return t
end

-- fx.f32s(fx.values(n, seed)), made in C (xpu.fixture.normal: the same LCG, the same bytes).
function M.f32_values(n, seed) return fixture.normal(n, seed) end

function M.f32s(t)
  local p = {}
  for i = 1, #t do p[i] = string.pack("<f", t[i]) end
  return table.concat(p)
end

function M.unf32(s) return fixture.decode("f32", s:sub(1, #s - #s % 4)) end

-- Bytes that are never all one value.
function M.pattern(n, seed)
  local t = {}
  for i = 1, n do t[i] = string.char((i * 37 + (seed or 11)) % 251 + 1) end
  return table.concat(t)
end

function M.sync(d) d:default_stream():sync() end

-- The devices named in `ids`, in that order, each { id, backend, dev, why, skip }: where one
-- does not open, dev is nil, why its reason (without the "cuda:0: " in front) and skip the line
-- a spec hands to pending: "skipped: no cuda:0 (cuda backend is not loadable: ...)".
function M.devices(ids)
  local list = {}
  for i, id in ipairs(ids) do
    local d, why = xpu.device(id)
    local e = { id = id, backend = id:match "^%a+", dev = d }
    if not d then
      e.why = tostring(why):gsub("^%a+:%d+: ", "")
      e.skip = ("skipped: no %s (%s)"):format(id, e.why)
    end
    list[i] = e
  end
  return list
end

-- A file's bytes, and bytes written to a file (returns the path).
function M.slurp(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

function M.spit(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
  return path
end

-- A word for sh, single-quoted.
function M.quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- Temporary paths that one remove() takes away (files or folders): tmpfile([text]) names a
-- fresh one, with text written to it where given.
function M.temps()
  local paths = {}
  local function tmpfile(text)
    local path = os.tmpname()
    paths[#paths + 1] = path
    if text then M.spit(path, text) end
    return path
  end
  local function remove()
    for _, p in ipairs(paths) do os.execute("rm -rf " .. M.quote(p)) end
    paths = {}
  end
  return tmpfile, remove
end

-- Resident rows x cols weights; rows differ in scale by eight orders of magnitude, the
-- smallest two so small that every format's f16 block scales there are subnormal.
-- (row r's values M.values' scaled by 10 ^ (r % 9 - 5), made in C: xpu.fixture.normal rows_of)
function M.weights(fmt, rows, cols, seed)
  local w = fixture.normal(rows * cols, seed, { rows_of = cols })
  local bpr = cols // q.info(fmt).block_elems
  return q.resident(fmt, q.quantize(fmt, w), bpr), bpr
end

function M.activation(cols, seed)
  return q.q8k_pack(fixture.normal(cols, seed))
end

-- The bit gate: == per element against the CPU's floats, NaN counted, something non-zero;
-- `what` names the case. With nan_ok a NaN must stand where the CPU has one (a bad expert
-- selection writes them). Returns the NaN count.
function M.same_floats(dev_id, want_s, got_s, what, nan_ok)
  local want, got = M.unf32(want_s), M.unf32(got_s)
  assert.equal(#want, #got, what)
  local nan, nonzero = 0, false
  for i = 1, #want do
    local both_nan = nan_ok and got[i] ~= got[i] and want[i] ~= want[i]
    if got[i] ~= got[i] then nan = nan + 1 end
    assert.is_true(both_nan or got[i] == want[i], ("%s: element %d is %.9g on %s, %.9g on the CPU"):format(
      what, i - 1, got[i], dev_id, want[i]))
    if got[i] == got[i] and got[i] ~= 0 then nonzero = true end
  end
  if not nan_ok then assert.equal(0, nan, what .. ": NaN in the output") end
  assert.is_true(nonzero, what .. ": all zero")
  return nan
end

-- == as floats, a NaN standing only where the other has one (the all-NaN rows of a bad expert
-- selection included); `what` names the case. Returns the NaN count.
function M.same_or_nan(want_s, got_s, what)
  local want, got = M.unf32(want_s), M.unf32(got_s)
  assert.equal(#want, #got, what)
  local nan = 0
  for i = 1, #want do
    if got[i] ~= got[i] then nan = nan + 1 end
    assert.is_true((want[i] ~= want[i] and got[i] ~= got[i]) or want[i] == got[i],
      ("%s: element %d is %.9g, want %.9g"):format(what, i - 1, got[i], want[i]))
  end
  return nan
end

-- The same launch on `dev` and on cpu:0 from the same bytes; returns both downloads of the
-- buffers named in `outs`. `bufs` maps names to initial contents, `args` lists names and scalars.
function M.on_both(dev, kernel, grid, block, bufs, args, outs)
  local got = {}
  for _, d in ipairs { dev, xpu.device "cpu:0" } do
    local b, a = {}, {}
    for name, init in pairs(bufs) do b[name] = d:buffer(init) end
    for i, v in ipairs(args) do a[i] = type(v) == "string" and b[v] or v end
    d:kernel(kernel):launch(nil, grid, block, table.unpack(a))
    M.sync(d)
    local r = {}
    for i, name in ipairs(outs) do r[i] = b[name]:download() end
    got[#got + 1] = r
  end
  return got[1], got[2]
end

-- Timer marks on a device with deferral: a deferred stream's marks are recorded with its
-- launches, so a 0.25 s host gap between begin and the launch is not counted; an eager
-- stream's mark is written when the host asks, so a 0.05 s gap is.
function M.deferred_marks_skip_host_time(dev)
  local n = 1 << 16
  local src, dst = dev:buffer(M.pattern(n, 3)), dev:buffer(n)
  local k = dev:kernel("stream_copy")
  local function pass(stream, host_gap)
    local m = stream:timer_begin()
    local t0 = xpu.now()
    while xpu.now() - t0 < host_gap do end -- the host busy before the launch is recorded
    k:launch(stream, 4, 256, dst, src, n)
    return stream:timer_end(m)
  end
  local s, e = dev:stream(), dev:stream()
  s:set_deferred(true)
  local quick, idle = pass(s, 0), pass(s, 0.25)
  assert.is_true(idle < 0.125, ("%s: a 0.25 s host gap counted: %.4f s (no gap: %.4f s)"):format(dev.id, idle, quick))
  assert.is_true(src:download() == dst:download(), dev.id .. ": the timed deferred copy")
  assert.is_true(pass(e, 0.05) >= 0.04, dev.id .. ": an eager stream's mark is written when the host asks")
  e:release()
  s:release()
end

-- 64 marks open on a stream, the 65th refused; a mark ended twice, or on another stream, refused.
-- The first byte where two strings differ, named.
local function same_bytes(dev, want, got, what)
  if want == got then return end
  assert.equal(#want, #got, what .. ": lengths differ")
  for i = 1, #want do
    if want:byte(i) ~= got:byte(i) then
      error(("%s: %s: byte %d is %d, want %d"):format(dev.id, what, i - 1, got:byte(i), want:byte(i)), 2)
    end
  end
end

-- A deferred launch waits for the work before it only where it must (core waits.c): the counts
-- say which launches were recorded behind a wait, the bytes that each one that needed its wait
-- had it (on a GPU that runs launches side by side, a missed wait is a race). `cpu` is cpu:0,
-- whose streams count launches and no waits.
function M.deferred_waits(dev, cpu)
  local n = 1 << 20
  local copy = dev:kernel "copy_bytes"
  local data = {}
  local function buf(i) data[i] = M.pattern(4096, 40 + i):rep(n // 4096) return dev:buffer(data[i]) end
  local a, b, c, d, e, f = buf(1), buf(2), buf(3), buf(4), buf(5), buf(6)
  local c2, x = dev:buffer(n), dev:buffer(M.POISON:rep(n // 8))
  local s = dev:stream()
  local function cp(dst, src, bytes) copy:launch(s, ((bytes or n) + 255) // 256, 256, dst, src, bytes or n) end
  local function sequence()
    cp(b, a)                      -- waits: the first of the sequence
    cp(d, c)                      -- no wait: touches nothing the first did
    cp(c2, b)                     -- waits: reads b, written above
    cp(e, a)                      -- no wait: a was only read since the last wait
    cp(a, f)                      -- waits: writes a, read since the last wait (by the line above)
    cp(x:slice(0, n // 4), c, n // 4)       -- no wait
    cp(x:slice(n // 4, n // 4), f, n // 4)  -- waits: another view of the allocation written above
  end
  s:set_deferred(true)
  assert.same({ launches = 0, waits = 0 }, s:counts())
  for rep = 1, 2 do -- the second time the sequence is replayed as recorded
    for i, src in ipairs { a, b, c, d, e, f } do src:upload(data[i]) end
    c2:upload(M.POISON:rep(n // 4)); x:upload(M.POISON:rep(n // 8))
    sequence()
    s:sync()
    assert.same({ launches = 7 * rep, waits = 4 * rep }, s:counts())
    same_bytes(dev, data[1], b:download(), "b = a")
    same_bytes(dev, data[3], d:download(), "d = c")
    same_bytes(dev, data[1], c2:download(), "c2 = b, after b = a")
    same_bytes(dev, data[1], e:download(), "e = a, before a = f")
    same_bytes(dev, data[6], a:download(), "a = f")
    same_bytes(dev, data[3]:sub(1, n // 4) .. data[6]:sub(1, n // 4), x:download(), "x's two quarters")
  end
  -- a timer mark: the launch after it waits, though it depends on nothing
  local m = s:timer_begin()
  cp(e, f)
  s:timer_end(m)
  assert.same({ launches = 15, waits = 9 }, s:counts())
  -- eager launches each wait
  s:set_deferred(false)
  cp(b, c); cp(d, e)
  s:sync()
  assert.same({ launches = 17, waits = 11 }, s:counts())
  same_bytes(dev, data[3], b:download(), "eager b = c")
  same_bytes(dev, data[6], d:download(), "eager d = e, after e = f")
  s:release()
  -- the CPU runs launches in order on the host: it counts launches and says nothing of waits
  local cs = cpu:stream()
  cpu:kernel("copy_bytes"):launch(cs, 1, 256, cpu:buffer(256), cpu:buffer(M.pattern(256, 1)), 256)
  cs:sync()
  assert.same({ launches = 1 }, cs:counts())
  cs:release()
end

-- Five deferred copies of 8 MiB, each from the one before: every one waits, and the last holds
-- the first's bytes.
function M.deferred_chain(dev)
  local n = 8 << 20
  local copy = dev:kernel "copy_bytes"
  local src = M.pattern(4096, 77):rep(n // 4096)
  local bufs = { dev:buffer(src) }
  for i = 2, 6 do bufs[i] = dev:buffer(M.POISON:rep(n // 4)) end
  local s = dev:stream()
  s:set_deferred(true)
  for i = 2, 6 do copy:launch(s, (n + 255) // 256, 256, bufs[i], bufs[i - 1], n) end
  s:sync()
  assert.same({ launches = 5, waits = 5 }, s:counts())
  same_bytes(dev, src, bufs[6]:download(), "the chain's last copy")
  s:release()
end

function M.mark_limits(dev)
  local s, other = dev:stream(), dev:stream()
  local marks = {}
  for i = 1, 64 do marks[i] = s:timer_begin() end
  local ok, err = pcall(s.timer_begin, s)
  assert.is_false(ok)
  assert.matches("more than 64 timer marks open on one stream", err, 1, true)
  for i = 64, 1, -1 do assert.is_true(s:timer_end(marks[i]) >= 0) end
  local m = s:timer_begin()
  assert.is_true(s:timer_end(m) >= 0)
  ok, err = pcall(s.timer_end, s, m)
  assert.is_false(ok)
  assert.matches("not an open timer mark of this stream", err, 1, true)
  ok, err = pcall(other.timer_end, other, s:timer_begin())
  assert.is_false(ok)
  assert.matches("not an open timer mark of this stream", err, 1, true)
  -- marks collected unended (an error between begin and end, as the one just refused) give
  -- their slots back: 64 open at a time, three times over
  for _ = 1, 3 do
    collectgarbage()
    collectgarbage()
    local open = {}
    for i = 1, 64 do open[i] = s:timer_begin() end
  end
  other:release()
  s:release()
end

-- Runs the Lua script `body` in a child xpulua with `env` (e.g. "NAME=value") set; returns
-- its stdout and stderr together. The module overrides (XPULUA_VULKAN_SPV, XPULUA_CUDA_FATBIN)
-- are cleared unless `env` sets them: a run of the specs under one of them (timing a variant)
-- leaves the children, which check xpu.kernel_hash, as the build made them.
function M.child(env, body)
  local script = os.tmpname()
  local f = assert(io.open(script, "w"))
  f:write(body)
  f:close()
  local exe = arg and arg[-1] or "build/xpulua"
  local p = io.popen("XPULUA_VULKAN_SPV= XPULUA_CUDA_FATBIN= " .. env .. " " .. exe .. " " .. script .. " 2>&1")
  local out = p:read("a")
  p:close()
  os.remove(script)
  return out
end

-- A child script (for M.child) that opens device `id`, launches triu on one 4 x 4 matrix of
-- words 1 .. 16 and prints xpu.kernel_hash, a tab and the sixteen words it wrote; where the
-- device does not open, "refused: " and the reason.
function M.triu_child(id)
  return ([[
    local xpu = require "xpu"
    local d, err = xpu.device "%s"
    if not d then print("refused: " .. err) return end
    local src, out = {}, d:buffer(("\165"):rep(64))
    for i = 1, 16 do src[i] = string.pack("<I4", i) end
    d:kernel("triu"):launch(nil, 1, 256, out, d:buffer(table.concat(src)), 1, 4, 4, 0, 4)
    local got = out:download()
    local t = {}
    for i = 0, 15 do t[#t + 1] = string.unpack("<I4", got, 4 * i + 1) end
    print(xpu.kernel_hash, table.concat(t, " "))
  ]]):format(id)
end

return M
