-- device_spec.lua — devices and backends (three states with reasons), geometry, buffers and
-- views, streams, and the launch path: signatures checked before anything runs.
local xpu = require "xpu"

local cpu = xpu.device "cpu:0"

-- Bytes that are never all one value.
local function pattern(n, seed)
  local t = {}
  for i = 1, n do t[i] = string.char((i * 37 + (seed or 11)) % 251 + 1) end
  return table.concat(t)
end

describe("devices", function()
  it("always lists the CPU, and every other backend in one of three states with a reason", function()
    local ds = xpu.devices()
    assert.equal("cpu:0", ds[1].id)
    assert.matches("cpu:0", tostring(ds))
    local states = { ["not built"] = true, ["not loadable"] = true, ["not usable"] = true, usable = true }
    local names = {}
    for _, b in ipairs(xpu.backends()) do
      names[b.name] = b
      assert.is_true(states[b.state], b.name .. " has state " .. tostring(b.state))
      assert.is_true(#b.reason > 0, b.name .. " has no reason")
      if b.state ~= "usable" then
        assert.matches(b.name .. ": " .. b.state, tostring(ds), 1, true)
      end
    end
    assert.equal("usable", names.cpu.state)
    for _, name in ipairs { "cuda", "vulkan", "hip" } do assert.truthy(names[name], name) end
  end)

  it("answers nil and the reason for a device that is not there", function()
    local d, err = xpu.device "tpu:0"
    assert.is_nil(d)
    assert.matches("no backend named 'tpu'", err)
    d, err = xpu.device "cpu:3"
    assert.is_nil(d)
    assert.matches("cpu:3: no such device", err)
    d, err = xpu.device "cpu:x"
    assert.matches("'x' is not a device index", err)
  end)

  it("reports geometry from the host", function()
    assert.is_true(cpu.simd_count >= 1)
    assert.is_true(cpu.wave_size == 4 or cpu.wave_size == 8 or cpu.wave_size == 16)
    assert.is_true(cpu.memory_bytes > 0)
    local free = cpu:free_memory_bytes()
    assert.is_true(free > 0 and free <= cpu.memory_bytes)
    assert.is_true(cpu.integrated)
    assert.is_true(cpu:dispatch_blocks(1) >= 1)
    assert.matches("^cpu|", cpu:fingerprint())
    assert.equal(cpu, xpu.device "cpu:0")
  end)

  it("counts the bytes its live buffers hold: once per allocation, a view adding nothing", function()
    local devs = { cpu }
    local vk = xpu.device "vulkan:0"
    if vk then devs[2] = vk end
    for _, d in ipairs(devs) do
      collectgarbage()
      local before = d:buffer_bytes()
      local a = d:buffer(1000)
      local b = d:buffer(("x"):rep(24))
      assert.equal(before + 1024, d:buffer_bytes(), d.id)
      local v = a:slice(100, 200)
      assert.equal(before + 1024, d:buffer_bytes(), d.id .. ": a view")
      a:release()
      assert.equal(before + 1024, d:buffer_bytes(), d.id .. ": the view keeps the allocation")
      v:release()
      assert.equal(before + 24, d:buffer_bytes(), d.id .. ": the last view gone")
      b:release()
      assert.equal(before, d:buffer_bytes(), d.id)
    end
  end)

  it("gives the host's last-level cache as l2_bytes: the highest level sysfs lists, not L2", function()
    local function read(path)
      local f = io.open(path)
      if not f then return nil end
      local s = f:read("l")
      f:close()
      return s
    end
    local top, size = 0, nil
    for i = 0, 7 do
      local dir = "/sys/devices/system/cpu/cpu0/cache/index" .. i .. "/"
      local level = tonumber(read(dir .. "level") or "")
      if level and level > top then top, size = level, read(dir .. "size") end
    end
    if top == 0 then
      assert.equal(0, cpu.l2_bytes) -- sysfs says nothing: unknown stays 0, never guessed
      return
    end
    local n, unit = size:match("^(%d+)([KMG]?)$")
    local want = tonumber(n) << (({ [""] = 0, K = 10, M = 20, G = 30 })[unit])
    assert.equal(want, cpu.l2_bytes)
    assert.matches("last%-level cache " .. (want >> 10) .. " KiB", tostring(cpu))
  end)

  it("answers capability questions by name, never by backend", function()
    assert.is_true(cpu:supports "code.host")
    assert.is_false(cpu:supports "code.ptx")
    assert.is_false(cpu:supports "cpu")
    assert.is_false(cpu:supports "no.such.capability")
    local listed = {}
    for _, c in ipairs(cpu.capabilities) do listed[c] = true end
    assert.equal(listed["dot4_i8"] == true, cpu:supports "dot4_i8")
  end)

  it("is turned off by XPULUA_DISABLE_<NAME> with that reason", function()
    local exe = arg and arg[-1] or "build/xpulua"
    local p = io.popen("XPULUA_DISABLE_CUDA=1 " .. exe ..
      [[ -e 'for _, b in ipairs(require"xpu".backends()) do print(b.name, b.state, b.reason) end']])
    local out = p:read("a")
    p:close()
    assert.matches("cuda\tnot %a+\t", out)
    if not out:match("cuda\tnot built") then
      assert.matches("cuda\tnot loadable\tdisabled by XPULUA_DISABLE", out)
    end
  end)
end)

describe("buffers", function()
  it("round-trip bytes and refuse transfers outside the buffer", function()
    local data = pattern(1000)
    local b = cpu:buffer(1000)
    b:upload(data)
    assert.equal(data, b:download())
    assert.equal(data:sub(11, 20), b:download(10, 10))
    local ok, err = pcall(b.upload, b, "xx", 999)
    assert.is_false(ok)
    assert.matches("upload of 2 bytes at offset 999 is outside the 1000%-byte buffer", err)
    ok, err = pcall(b.download, b, 990, 20)
    assert.matches("outside the 1000%-byte buffer", err)
    assert.equal(1000, #b)
  end)

  it("keeps the allocation alive while a view lives", function()
    local data = pattern(256, 3)
    local b = cpu:buffer(data)
    local v = b:slice(64, 32)
    b:release()
    assert.has_error(function() b:download() end)
    collectgarbage()
    assert.equal(data:sub(65, 96), v:download())
    assert.equal(64, v.offset)
    local ok, err = pcall(v.slice, v, 16, 32)
    assert.matches("outside the 32%-byte buffer", err)
  end)

  it("gives word views only on aligned whole words", function()
    local b = cpu:buffer(64)
    assert.equal(64, #b:words())
    local ok, err = pcall(function() return b:slice(2, 8):words() end)
    assert.matches("base not aligned", err)
    ok, err = pcall(function() return b:slice(4, 6):words() end)
    assert.matches("not a whole number of words", err)
  end)
end)

describe("launches", function()
  it("copy_bytes moves every byte and counts its launches", function()
    local src = cpu:buffer(pattern(100000))
    local dst = cpu:buffer(100000)
    dst:upload(("\255"):rep(100000))
    local k = cpu:kernel "copy_bytes"
    local before = k.launches
    k:launch(nil, (100000 + 255) // 256, 256, dst, src, 100000)
    cpu:default_stream():sync()
    assert.equal(src:download(), dst:download())
    assert.equal(before + 1, k.launches)
  end)

  it("fill_strided writes elements a stride apart and nothing else", function()
    local dst = cpu:buffer(("\0"):rep(64))
    local value = cpu:buffer(string.pack("<I2", 0xBEEF))
    cpu:kernel("fill_strided"):launch(nil, 1, 256, dst, value, 5, 3, 2)
    local got = dst:download()
    for i = 0, 31 do
      local v = string.unpack("<I2", got, i * 2 + 1)
      if i % 3 == 0 and i // 3 < 5 then
        assert.equal(0xBEEF, v, "element " .. i)
      else
        assert.equal(0, v, "element " .. i)
      end
    end
  end)

  it("stream_read sums each group's chunk and stream_copy copies it", function()
    local n = 4096
    local src = cpu:buffer(pattern(n, 5))
    local out = cpu:buffer(4 * 4)
    cpu:kernel("stream_read"):launch(nil, 4, 256, out, src, n, 4)
    local data = src:download()
    for g = 0, 3 do
      local sum = 0
      for i = g * 1024, g * 1024 + 1020, 4 do sum = (sum + string.unpack("<I4", data, i + 1)) & 0xffffffff end
      assert.equal(sum, string.unpack("<I4", out:download(), g * 4 + 1))
    end
    local dst = cpu:buffer(n)
    cpu:kernel("stream_copy"):launch(nil, 3, 256, dst, src, n)
    assert.equal(data, dst:download())
  end)

  it("refuses a bad argument list before anything runs, naming kernel and argument", function()
    local k = cpu:kernel "copy_bytes"
    local a, b = cpu:buffer(64), cpu:buffer(32)
    local function refused(pat, ...)
      local before = k.launches
      local ok, err = pcall(k.launch, k, ...)
      assert.is_false(ok)
      assert.matches(pat, err)
      assert.equal(before, k.launches)
    end
    refused("takes 3 arguments", nil, 1, 256, a, b)
    refused("argument 2 'src': expected a buffer, got number", nil, 1, 256, a, 5, 32)
    refused("argument 3 'n': expected an integer", nil, 1, 256, a, b, "32")
    refused("argument 2 'src': buffer too short %(32 bytes, needs 64%)", nil, 1, 256, a, b, 64)
    refused("built for a block of 256 threads, launched with 128", nil, 1, 128, a, b, 32)
    refused("grid%[2%] is not a positive integer", nil, { 1, 0 }, 256, a, b, 32)
    local sc = cpu:kernel "stream_copy"
    local big = cpu:buffer(256)
    local ok, err = pcall(sc.launch, sc, nil, 1, 256, big:slice(4, 128), big:slice(128, 128), 112)
    assert.is_false(ok)
    assert.matches("kernel 'stream_copy' argument 1 'dst': base not aligned %(offset 4 is not a multiple of 16", err)
    ok, err = pcall(sc.launch, sc, nil, 1, 256, big, big, 100)
    assert.matches("'n': 100 bytes is not a multiple of 16", err)
  end)

  it("gives the same results on a deferred stream", function()
    local s = cpu:stream()
    s:set_deferred(true)
    assert.is_true(s.deferred)
    local src = cpu:buffer(pattern(512, 9))
    local dst = cpu:buffer(512)
    for _ = 1, 3 do cpu:kernel("copy_bytes"):launch(s, 2, 256, dst, src, 512) end
    s:sync()
    assert.equal(src:download(), dst:download())
  end)

  it("has a manifest that says what the host compiler does not measure", function()
    local m = cpu:kernel("copy_bytes").manifest
    assert.equal(256, m.launch_block)
    assert.is_nil(m.registers)
    assert.matches("host code", m.note)
    local ok, err = pcall(cpu.kernel, cpu, "no_such")
    assert.matches("no kernel named 'no_such'", err)
  end)
end)

-- A device copy (stream:copy, the driver's own copy) on every backend present: the bytes of
-- the source view land at the destination view's start and nothing else moves, in the
-- stream's order after deferred launches, timed by the stream's marks; bad pairs are refused
-- before anything runs. A GPU backend that is not there reports itself skipped with why.
describe("device copies", function()
  for _, backend in ipairs { "cpu", "vulkan", "cuda", "hip" } do
    it(backend .. ": copies a view into a view, in the stream's order, and nothing past it", function()
      local d, why = xpu.device(backend .. ":0") -- why names the backend's state and its reason
      if not d then return pending("skipped: " .. why) end
      local n = 3 * 65536 + 52 -- not a whole number of any vector the driver may use
      local data = pattern(n, 5)
      local src = d:buffer(("\0"):rep(16) .. data .. ("\0"):rep(16))
      local dst = d:buffer(("\165"):rep(n + 64))
      local s = d:stream()
      s:copy(dst:slice(20, n), src:slice(16, n))
      s:sync()
      local got = dst:download()
      assert.equal(("\165"):rep(20), got:sub(1, 20))
      assert.is_true(data == got:sub(21, 20 + n), "the copied bytes")
      assert.equal(("\165"):rep(44), got:sub(21 + n))
      -- after a deferred launch on the same stream: the copy sees what the launch wrote
      local mid, out = d:buffer(("\90"):rep(4096)), d:buffer(("\165"):rep(4096))
      s:set_deferred(true)
      d:kernel("copy_bytes"):launch(s, 16, 256, mid, src:slice(16, 4096), 4096)
      local m = s:timer_begin()
      s:copy(out, mid)
      assert.is_true(s:timer_end(m) > 0)
      s:sync()
      assert.is_true(data:sub(1, 4096) == out:download(), "the copy after a deferred launch")
      s:copy(out:slice(0, 0), src:slice(0, 0)) -- nothing to copy: nothing moves
      s:sync()
      assert.is_true(data:sub(1, 4096) == out:download())
    end)
  end

  it("refuses overlapping views, a destination too short, another device's buffer, a released view", function()
    local s = cpu:default_stream()
    local b = cpu:buffer(pattern(1000))
    local ok, err = pcall(s.copy, s, b:slice(0, 100), b:slice(50, 100))
    assert.is_false(ok)
    assert.matches("copy: dst %[0, %+100%) and src %[50, %+100%) of one allocation overlap", err)
    ok, err = pcall(s.copy, s, b:slice(0, 10), b:slice(500, 100))
    assert.matches("copy: dst holds 10 bytes, src 100", err)
    local other = xpu.device "vulkan:0" or xpu.device "cuda:0"
    if other then
      ok, err = pcall(s.copy, s, other:buffer(8), cpu:buffer(8))
      assert.matches("copy: the stream is on cpu:0, dst on " .. other.id .. ", src on cpu:0", err, 1, true)
    end
    local gone = cpu:buffer(8)
    gone:release()
    ok, err = pcall(s.copy, s, cpu:buffer(8), gone)
    assert.matches("buffer was released", err)
    ok, err = pcall(s.copy, s, cpu:buffer(8), "bytes")
    assert.is_false(ok)
    assert.equal(pattern(1000), b:download()) -- nothing half-applied
  end)
end)

describe("timer marks", function()
  it("time a stream on the CPU, once per mark, on the mark's own stream", function()
    local d = xpu.device "cpu:0"
    local s, other = d:stream(), d:stream()
    local m = s:timer_begin()
    local sec = s:timer_end(m)
    assert.is_true(sec >= 0 and sec < 60)
    local ok, err = pcall(s.timer_end, s, m)
    assert.is_false(ok)
    assert.matches("not an open timer mark of this stream", err, 1, true)
    ok, err = pcall(other.timer_end, other, s:timer_begin())
    assert.is_false(ok)
    assert.matches("not an open timer mark of this stream", err, 1, true)
    ok, err = pcall(s.timer_end, s, "a mark")
    assert.is_false(ok)
    assert.matches("xpu.mark expected", err, 1, true)
    other:release()
    s:release()
  end)
end)
