-- hostile_api_spec.lua — every function of `require "xpu"` (its tables, its Lua modules) and
-- every method and metamethod of every object type it hands out (on cpu:0 and, where present,
-- vulkan:0) called with no arguments, nil, every wrong type, edge integers and floats, a 1 MB
-- string, a table nested 200 deep and tables of 10^5 entries. Each call works or raises a
-- clean error: a string naming the function or the argument, no stack overflow, no crash,
-- abort or hang. Each group runs in a process of its own (spec/support/hostile_sweep.lua),
-- bounded in time, so a crash names its call. The cases found and fixed are kept below.
local xpu = require "xpu"

local REPO = os.getenv("PWD")
local BIN = arg and arg[-1] or "build/xpulua"
if BIN:sub(1, 1) ~= "/" then BIN = REPO .. "/" .. BIN end -- the groups run elsewhere
local SWEEP = REPO .. "/spec/support/hostile_sweep.lua"
-- seconds for a whole group; the sanitizer builds run several times slower
local GROUP_S = tonumber(os.getenv("HOSTILE_GROUP_S") or "") or 240

local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- Runs one group in a scratch directory; returns its lines and the exit status.
local function run_group(group)
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. sh_quote(dir)))
  local out = dir .. "/result"
  local cmd = ("cd %s && REPO=%s XDG_CACHE_HOME=%s XPULUA_CACHE=%s timeout -s KILL %d %s %s %s %s >/dev/null 2>%s/stderr")
      :format(sh_quote(dir), sh_quote(REPO), sh_quote(dir), sh_quote(dir .. "/cache"), GROUP_S,
              sh_quote(BIN), sh_quote(SWEEP), group, sh_quote(out), sh_quote(dir))
  local ok, how, code = os.execute(cmd)
  local lines = {}
  local f = io.open(out)
  if f then for l in f:lines() do lines[#lines + 1] = l end f:close() end
  local ef = io.open(dir .. "/stderr")
  local stderr = ef and ef:read("a") or ""
  if ef then ef:close() end
  os.execute("rm -rf " .. sh_quote(dir))
  return lines, ok, how, code, stderr
end

local function check_group(group)
  local lines, ok, how, code, stderr = run_group(group)
  local last, done, bad = nil, nil, {}
  for _, l in ipairs(lines) do
    if l:sub(1, 3) == "AT " then last = l:sub(4)
    elseif l:sub(1, 5) == "DONE " then done = l
    elseif l:match("^BAD ") or l:match("^SLOW ") then bad[#bad + 1] = l end
  end
  if not done then
    error(("group %s ended (%s %s) during %s\n%s"):format(group, tostring(how), tostring(code),
          tostring(last), stderr:sub(1, 2000)), 0)
  end
  assert(ok, "group " .. group .. " exited " .. tostring(code) .. ": " .. stderr:sub(1, 2000))
  if #bad > 0 then
    error(("%d unclean call(s) in %s:\n%s"):format(#bad, group, table.concat(bad, "\n", 1, math.min(#bad, 40))), 0)
  end
  local fns, calls = done:match("^DONE (%d+) (%d+)")
  return tonumber(fns), tonumber(calls), lines
end

local GROUPS = { "xpu", "modules", "Device", "DeviceList", "Buffer", "Stream", "mark", "Kernel",
                 "RouteTable", "Row", "Query", "QueryView", "Call", "Refusal", "Audit",
                 "Contract", "BoundLaunch", "GGUF", "FileLock" }

describe("hostile calls to the xpu API", function()
  it("every xpu.* type a script can hold is swept", function()
    local _, _, lines = check_group("types")
    local swept = {}
    for _, g in ipairs(GROUPS) do swept[g] = true end
    local n = 0
    for _, l in ipairs(lines) do
      local t = l:match("^TYPE (.+)")
      if t then n = n + 1; assert.is_true(swept[t], "type " .. t .. " has a factory but no group") end
      assert.is_nil(l:match("^UNSWEPT (.+)"), "an xpu type with no factory in hostile_sweep.lua")
    end
    assert.is_true(n >= 15)
  end)

  local total_fns, total_calls = 0, 0
  for _, g in ipairs(GROUPS) do
    it(g .. ": every call works or raises a clean error", function()
      local fns, calls = check_group(g)
      assert.is_true(fns > 0, "no function enumerated in " .. g)
      total_fns, total_calls = total_fns + fns, total_calls + calls
    end)
  end

  it("figures", function()
    -- printed for docs/RELIABILITY.md; zero would mean the groups above ran nothing
    assert.is_true(total_fns > 100 and total_calls > 10000, total_fns .. " functions, " .. total_calls .. " calls")
    io.stderr:write(("hostile_api: %d functions and methods, %d calls\n"):format(total_fns, total_calls))
  end)
end)

-- Each case the sweep found, kept as a spec of its own (each fails on the code before its fix).
describe("hostile calls found and fixed", function()
  local cpu = xpu.device "cpu:0"

  -- Runs a chunk in a process of its own (a case that crashed would end busted otherwise).
  local function child(code)
    local p = assert(io.popen(("%s -e %s 2>&1; echo \"exit=$?\""):format(BIN, sh_quote(code))))
    local out = p:read("a")
    p:close()
    return out
  end

  local function raises(pattern, fn, ...)
    local ok, err = pcall(fn, ...)
    assert.is_false(ok, "no error; wanted one matching " .. pattern)
    assert.is_truthy(tostring(err):find(pattern), tostring(err))
    assert.is_falsy(tostring(err):find("bad argument #-", 1, true), tostring(err))
  end

  it("a device list that prints past 1 KiB (40 devices), and __tostring of a non-list", function()
    -- the buffer's storage moved onto the stack and a pop took it: a segfault
    local out = child([[local xpu = require "xpu"
      local l = xpu.devices(); for i = 1, 40 do l[i] = l[1] end
      local s = tostring(l); local _, lines = s:gsub("\n", "")
      print(lines >= 40, pcall(getmetatable(l).__tostring, string.rep("x", 4096)))]])
    assert.truthy(out:find("^true\tfalse\t[^\n]*table expected, got string"), out)
    assert.truthy(out:find("exit=0", 1, true), out)
  end)

  it("a timer mark's __gc called with no mark", function()
    local out = child([[local xpu = require "xpu"
      local m = xpu.device():default_stream():timer_begin()
      print(pcall(getmetatable(m).__gc))]])
    assert.truthy(out:find("^false\t[^\n]*xpu.mark expected", 1), out)
  end)

  it("a format or regime id beyond 32 bits is refused, not taken modulo 2^32", function()
    raises("no format has id 4294967297", xpu.format, 2 ^ 32 + 1)
    raises("no regime has id 9223372036854775807", xpu.regime, math.maxinteger)
    raises("no format has id 4294967297", xpu.query, { format = 2 ^ 32 + 1, regime = "decode" })
  end)

  it("audit and launch indices print as given, not cut to 32 bits", function()
    local t = xpu.new_routes("hostile-audit")
    t:register { name = "r", regime = "decode", format = "q4_0", kernel = "copy_bytes" }
    local a = t:audit { xpu.query { format = "q4_0", regime = "decode" } }
    raises("query index %-9223372036854775808 is outside 1..1", a.served, a, math.mininteger)
    raises("row index 9223372036854775807 is outside 1..1", a.fires, a, math.maxinteger)
    raises("grid 9223372036854775807 is out of range", cpu:kernel("copy_bytes").launch,
           cpu:kernel("copy_bytes"), nil, math.maxinteger, 1)
  end)

  it("file names: empty, with a NUL byte, or past PATH_MAX are refused by name", function()
    local path = os.tmpname()
    xpu.gguf.write(path, { meta = { { "general.name", "string", "n" } } })
    raises("bad argument #1 to '%?' %(the path holds a NUL byte%)", xpu.gguf.open, path .. "\0junk")
    raises("the path holds a NUL byte", xpu.gguf.try_open, path .. "\0junk")
    raises("bad argument #1 to '%?' %(the path is empty%)", xpu.gguf.write, "", {})
    raises("bad argument #1 to '%?' %(the path is empty%)", xpu.contracts.load, "")
    raises("the path is 5000 bytes long", xpu.contracts.try_load, string.rep("a", 5000))
    os.remove(path)
  end)

  it("a table field of the wrong type is named, not reported as argument #-1", function()
    raises("call: 'query' must be an xpu.Query, got number", xpu.call, { query = 1 })
    local q = xpu.query { format = "q4_0", regime = "decode" }
    raises("call: 'device' must be a Device", xpu.call, { query = q, device = true })
    raises("call: 'stream' must be an xpu.Stream, got string", xpu.call, { query = q, stream = "s" })
    raises("call: 'operands' must be a table", xpu.call, { query = q, operands = 1 })
    raises("'rows_of' must be an integer, got boolean", xpu.fixture.normal, 16, 1, { rows_of = true })
    raises("'alignment' must be an integer, got string", xpu.gguf.write, os.tmpname(), { alignment = "x" })
    raises("'version' must be an integer, got number", xpu.gguf.write, os.tmpname(), { version = 0.5 })
    local cs = xpu.contracts.load("contracts/shape-ops.md")
    raises("plan: 'op' must be an op name, got table", xpu.contracts.plan, cs, { op = {} })
    local flip
    for _, c in ipairs(cs) do if c.kernel == "flip" and c.backend == "cpu" then flip = c end end
    local x = { dtype = "f32", shape = { 4 } }
    raises("call: 'params' must be a table", flip.call, flip, { inputs = { x }, params = true })
    -- an input index beyond 32 bits is no input (it was taken as input 1), named as given
    raises("has no operand at index 4294967297", flip.call, flip, { inputs = { [2 ^ 32 + 1] = x } })
    raises("has no operand at index 2$", flip.call, flip, { inputs = { x, x } })
    x.buffer = true
    raises("operand '[^']+': 'buffer' must be an xpu.Buffer, got boolean", flip.launch, flip,
           { inputs = { x }, params = { axis = 0 } })
  end)

  it("a gguf tensor type or a contract row's priority beyond 32 bits is refused", function()
    local tensor = { name = "t", dims = { 1 }, type = 1 << 32, data = string.rep("\0", 4) }
    raises("type 4294967296 is not a type id", xpu.gguf.write, os.tmpname(), { tensors = { tensor } })
    local c = xpu.contracts.load("contracts/shape-ops.md")[1]
    raises("priority 4294967297 is beyond 32 bits", c.register, c, xpu.new_routes("p"), nil, { priority = (1 << 32) + 1 })
  end)
end)
