-- lab_spec.lua — the lab/ scripts still run: each one's --help and refusals (one line, exit 2,
-- no traceback), and a tiny run of those that run on the CPU. Not part of `make test` (the lab
-- records experiments, it ships nothing); from the repository root:
--   build/xpulua /usr/bin/busted --output=spec/summary.lua lab/spec/lab_spec.lua
local xpu = require "xpu"

local BIN = os.getenv("XPULUA") or "build/xpulua"

-- A script's stdout (with its stderr where with_stderr) and "exit N", in a fresh Autotune cache.
local function run(args, stored, with_stderr)
  local cache = os.tmpname()
  os.remove(cache)
  if stored then
    assert(os.execute(("XPULUA_CACHE=%s %s -e 'require\"xpu.autotune\".remember(require\"xpu\".device\"cpu:0\", \"%s\", \"%s\")'"):format(
      cache, BIN, stored[1], stored[2])))
  end
  local p = assert(io.popen(("XPULUA_CACHE=%s %s %s %s; echo \"exit $?\""):format(cache, BIN, args,
    with_stderr and "2>&1" or "2>/dev/null")))
  local out = p:read("a")
  p:close()
  os.execute("rm -rf " .. cache)
  return out
end

-- stdout, stderr and the exit status of a command line (in a fresh Autotune cache).
local function run3(cmdline)
  local err, cache = os.tmpname(), os.tmpname()
  os.remove(cache)
  local p = assert(io.popen(("XPULUA_CACHE=%s %s 2>%s; echo \"exit $?\""):format(cache, cmdline, err)))
  local out = p:read("a")
  p:close()
  local f = io.open(err)
  local e = f:read("a")
  f:close()
  os.remove(err)
  os.execute("rm -rf " .. cache)
  local code = tonumber(out:match("exit (%d+)\n$"))
  return out:gsub("exit %d+\n$", ""), e, code
end

local function no_traceback(err, what)
  assert.not_matches("stack traceback", err, 1, true)
  assert.not_matches("%.lua:%d+:", err, what)
end

local function lab_files(ext)
  local list = {}
  local p = io.popen("ls lab/*." .. ext)
  for line in p:lines() do list[#list + 1] = line end
  p:close()
  return list
end

-- it() on cpu:0 and vulkan:0 (lavapipe), pending with the reason where the device is absent.
local function on_devices(title, body)
  for _, dev in ipairs { "cpu:0", "vulkan:0" } do
    it(dev .. ": " .. title, function()
      local d, why = xpu.device(dev)
      if not d then return pending("skipped: " .. tostring(why)) end
      body(dev)
    end)
  end
end

-- The JSONL records among a script's output lines.
local function records_of(out)
  local recs = {}
  for line in out:gmatch("[^\n]+") do
    if line:sub(1, 1) == "{" then recs[#recs + 1] = line end
  end
  return recs
end

describe("every lab Lua script", function()
  for _, path in ipairs(lab_files("lua")) do
    local name = path:match("([^/]+)%.lua$")
    it(name .. ": --help, an unknown option", function()
      local out, err, code = run3(BIN .. " " .. path .. " --help")
      assert.equal(0, code, err)
      assert.matches("^usage: xpulua lab/" .. name:gsub("%-", "%%-") .. "%.lua", out)
      assert.matches("\nexample:\n  %S", out)
      out, err, code = run3(BIN .. " " .. path .. " --no-such-option")
      assert.equal(2, code, err)
      assert.equal("", out)
      assert.matches("^" .. name:gsub("%-", "%%-") .. ": unknown option '%-%-no%-such%-option' %([^\n]+%)\n$", err)
      no_traceback(err, name)
    end)
  end
  for _, path in ipairs(lab_files("sh")) do
    local name = path:match("([^/]+)%.sh$")
    it(name .. ": --help", function()
      local out, err, code = run3("sh " .. path .. " --help")
      assert.equal(0, code, err)
      assert.matches("^usage: [^\n]*" .. name:gsub("%-", "%%-") .. "%.sh", out)
    end)
  end
end)

describe("lab inputs are validated before any work", function()
  local cases = {
    { "transpose-shapes.lua --cols 64,x", "--cols '64,x': 'x' is not a whole number of columns" },
    { "buffer-rates.lua --device cpu:0 --buffers 100000 --mib 1024", "do not fit cpu:0's" },
    { "pad-modes.lua --mib 100000000", "pad-modes: --mib 100000000 (upstream and gradient" },
    { "transpose-shapes.lua --device cpu:0 --mib 100000000", "more than cpu:0's" },
    { "cpu-read-pages.lua --bytes 100000000000000", "give fewer --bytes or --copies" },
    { "idle-ramp.lua --load -1", "--load '-1': not a number of seconds, 0 or more\n" },
    { "copy-order.lua xy", "copy-order: ORDER 'xy': not sd or ds\n" },
    { "cpu-matvec-probe.lua rows q9 avx2", "FMT 'q9': not a format" },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local out, err, code = run3(BIN .. " lab/" .. c[1])
      assert.equal(2, code, err)
      assert.equal("", out)
      assert.matches(c[2], err, 1, true)
      assert.equal(1, select(2, err:gsub("\n", "")), err) -- one line
      no_traceback(err, c[1])
    end)
  end
end)

describe("lab options", function()
  it("refuse an option that takes a value given none by name, exit 2", function()
    for _, script in ipairs { "idle-ramp", "buffer-rates", "read-after-churn", "transpose-shapes" } do
      local out = run(("lab/%s.lua --device"):format(script), nil, true)
      assert.equal(script .. ": --device needs a value\nexit 2\n", out, script)
      out = run(("lab/%s.lua --device --mib 1"):format(script), nil, true)
      assert.equal(script .. ": --device needs a value\nexit 2\n", out, script)
    end
  end)

  it("refuse a count that is no whole number by name", function()
    for _, c in ipairs { { "buffer-rates", "--buffers", "0", "buffers" }, { "buffer-rates", "--mib", "1.5", "MiB" } } do
      local out = run(("lab/%s.lua %s %s"):format(c[1], c[2], c[3]), nil, true)
      assert.equal(("%s: %s '%s': not a whole number of %s\nexit 2\n"):format(c[1], c[2], c[3], c[4]), out)
    end
  end)
end)

describe("pad-modes", function()
  on_devices("pad-modes: a row and a record per border mode, the kernel that ran named, bit-gated off the CPU; a bad --cols or --outer refused", function(dev)
    local gate = dev == "cpu:0" and "%-" or "ok" -- the CPU is the reference
    for _, outer in ipairs { 1, 0, 3 } do
      local out = run(("lab/pad-modes.lua --device %s --mib 1 --reps 1 --outer %d --jsonl"):format(dev, outer), nil, true)
      assert.matches("\nexit 0\n$", out)
      assert.matches("padding %(%(" .. outer .. ", " .. outer .. "%), %(16, 16%)%)", out)
      local recs = records_of(out)
      assert.equal(3, #recs, out)
      for k, mode in ipairs { "constant", "reflect", "replicate" } do
        assert.matches("\n" .. mode .. " +pad_backward[%w_]* +[%d.]+ +[%d.]+ +[%d.]+ +%d+ +%S+ +" .. gate .. "\n", out)
        assert.matches('"mode":"' .. mode .. '"', recs[k])
        assert.matches('"ran":"pad_backward', recs[k])
        assert.matches('"outer":' .. outer, recs[k])
        assert.matches('"bit_gate":"' .. gate .. '"', recs[k])
      end
    end
    local out = run(("lab/pad-modes.lua --device %s --mib 1 --reps 1 --no-gate"):format(dev))
    assert.matches("\nreflect +pad_backward[%w_]* .* not run\n", out)
    out = run(("lab/pad-modes.lua --device %s --outer -1"):format(dev), nil, true)
    assert.matches("%-%-outer '%-1': not a whole number of rows\nexit 2\n$", out)
    out = run(("lab/pad-modes.lua --device %s --cols 3"):format(dev), nil, true)
    assert.matches("%-%-cols 3: rows must be longer than the 16%-column border %(17 or more%)\nexit 2\n$", out)
    out = run(("lab/pad-modes.lua --device %s --cols x"):format(dev), nil, true)
    assert.matches("%-%-cols 'x': not a whole number of columns\nexit 2\n$", out)
  end)
end)

describe("idle-ramp", function()
  it("prints the windows' rates after the idle time and when 90 % of the settled rate came", function()
    local out = run("lab/idle-ramp.lua --device cpu:0 --idle 0 --load 0.2")
    assert.matches("\nexit 0\n$", out)
    assert.matches("read rate on cpu:0 after 0 s idle, windows of %d+ x 128 MiB; 90 %% of the last second's median %(%d+ GB/s%) first at [%d.]+ s", out)
    assert.matches("\n%d+%.%d%d%d +[%d.]+\n", out) -- a window: seconds since the load began, GB/s
    assert.matches("exit 2\n$", run("lab/idle-ramp.lua --load -1"))
    assert.matches("exit 2\n$", run("lab/idle-ramp.lua --colour 2"))
  end)
end)

describe("distinct-rows.sh", function()
  it("builds each fixture once, then times repeated and all-distinct rows a process each, three rounds", function()
    local dir = os.tmpname()
    os.remove(dir)
    local bin = BIN:sub(1, 1) == "/" and BIN or os.getenv("PWD") .. "/" .. BIN
    local p = assert(io.popen(("XPULUA_BIN=%s SHAPE=128x4096 DEVICES=cpu:0 FORMATS=q4_0 COPIES=4 FIXTURES=%s OUT=%s.out "
      .. "sh lab/distinct-rows.sh 2>&1; echo \"exit $?\""):format(bin, dir, dir)))
    local out = p:read("a")
    p:close()
    local function exists(path)
      local f = io.open(path, "rb")
      if f then f:close() end
      return f ~= nil
    end
    local built = exists(dir .. "/q4_0-128x4096.bin") and exists(dir .. "/q4_0-64x4096.bin")
    os.execute(("rm -rf %s %s.out"):format(dir, dir))
    assert.is_truthy(built, out)
    assert.matches("\nexit 0\n$", out)
    local n = 0
    for r, a, b in out:gmatch("\n(%d)\tcpu:0\tq4_0_q8k_wave\t128x4096\t([%d.]+)\t([%d.]+)") do
      n = n + 1
      assert.equal(n, tonumber(r))
      assert.is_true(tonumber(a) > 0 and tonumber(b) > 0, out)
    end
    assert.equal(3, n, out)
  end)
end)

describe("read-after-churn", function()
  it("reads the buffers made before and after the churn, a row per half second, and refuses a bad count", function()
    local out = run("lab/read-after-churn.lua --device cpu:0 --churn 1 --seconds 0.6 --mib 8")
    assert.matches("\nexit 0\n$", out)
    assert.matches("streaming reads on cpu:0 %b() after 1 GiB of churn, 8 MiB buffers", out)
    for _, t in ipairs { "0.0", "0.5" } do assert.matches("\n" .. t .. " +%d+ +%d+ +%d+ +%d+\n", out) end
    assert.matches("exit 2\n$", run("lab/read-after-churn.lua --churn -1"))
    assert.matches("exit 2\n$", run("lab/read-after-churn.lua --mib 4"))
  end)
end)

describe("transpose-shapes", function()
  it("times each shape beside a copy, says which kernel ran, and leaves out a shape that does not divide", function()
    local out = run("lab/transpose-shapes.lua --device cpu:0 --mib 1 --reps 1 --cols 64,1024,3", nil, true)
    assert.matches("\nexit 0\n$", out)
    assert.matches("\n4096x64 +256 +16384 +%d+ +%d+ +%d+%% +contiguize", out)
    assert.matches("\n256x1024 +4096 +1024 +%d+ +%d+ +%d+%% +contiguize", out)
    assert.matches("3 columns do not divide 262144 elements; shape left out", out)
    assert.matches("exit 2\n$", run("lab/transpose-shapes.lua --mib x"))
  end)
end)

describe("cpu-read-pages", function()
  it("times repeated-pattern and unique-page copies round by round, and refuses an unknown argument", function()
    local out = run("lab/cpu-read-pages.lua --bytes 262144 --copies 2 --rounds 2 --sleep 0")
    assert.matches("\nexit 0\n$", out)
    for r = 1, 2 do assert.matches("\n +" .. r .. " +[%d.]+ +[%d.]+\n", out) end
    assert.matches("exit 2\n$", run("lab/cpu-read-pages.lua --rounds"))
    assert.matches("exit 2\n$", run("lab/cpu-read-pages.lua --colour 3"))
  end)
end)

describe("buffer-rates", function()
  it("reads each buffer twice over, a row per pass and buffer, and refuses a bad count", function()
    local out = run("lab/buffer-rates.lua --device cpu:0 --buffers 2 --mib 2")
    assert.matches("\nexit 0\n$", out)
    for pass = 1, 2 do
      for b = 1, 2 do assert.matches("\n +" .. pass .. " +" .. b .. " +2097152 +[%d.]+ +[%d.]+", out) end
    end
    local copy = run("lab/buffer-rates.lua --device cpu:0 --buffers 2 --mib 2 --copy")
    assert.matches("\nexit 0\n$", copy)
    assert.matches("copy of each buffer into the next", copy)
    assert.matches("\n +2 +2 +4194304 +[%d.]+ +[%d.]+", copy)
    assert.matches("exit 2\n$", run("lab/buffer-rates.lua --buffers 0"))
    assert.matches("exit 2\n$", run("lab/buffer-rates.lua --size 3"))
  end)
end)

describe("a script run from another directory", function()
  it("finds the contract file beside its lab/ directory", function()
    local here = io.popen("pwd"):read("l")
    local bin = BIN:sub(1, 1) == "/" and BIN or here .. "/" .. BIN
    local out, err, code = run3(("cd /tmp && %s %s/lab/transpose-shapes.lua --device cpu:0 --mib 1 --reps 1 --cols 64"):format(
      bin, here))
    assert.equal(0, code, err)
    assert.matches("contiguize of a transposed f32 view on cpu:0", out)
    no_traceback(err, "transpose-shapes")
  end)
end)
