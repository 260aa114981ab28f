-- hostile_sweep.lua GROUP OUT — one group of spec/hostile_api_spec.lua's hostile calls, in a
-- process of its own so a crash, an abort or a hang names its call instead of ending busted.
-- Every function of the group is called under pcall with no arguments, nil, every wrong type,
-- edge integers and floats, a 1 MB string, a table nested 200 deep and tables of 10^5
-- entries, in each of the first argument positions (and after plausible first arguments);
-- functions that take a table are also handed each known key set to each of those values.
-- OUT gets one line per finding ("BAD call<TAB>error", "SLOW call<TAB>seconds"), "AT call"
-- before each call (so the last one names a crash) and "DONE functions calls" at the end.
-- Run from a scratch directory (paths the calls write land there); REPO names the checkout.
local xpu = require "xpu"

local group, out_path = arg[1], arg[2]
local REPO = assert(os.getenv("REPO"), "REPO: the checkout's path")
local LIMIT = tonumber(os.getenv("HOSTILE_CALL_S") or "") or 5 -- seconds one call may take
-- The ceilings write and stream a working set sized past the device's caches: their time is
-- their job (under TSan, 20-30 s on the 2-core VM), so they get more before counting as slow.
local MEASURES = { ["xpu.report.copy_ceiling"] = 12, ["xpu.report.read_ceiling"] = 12 }
local out = assert(io.open(out_path, "w"))
out:setvbuf("no")

-- ---- the hostile values ----------------------------------------------------------------

local function nested(depth)
  local t = {}
  local at = t
  for _ = 1, depth do at[1] = {}; at = at[1] end
  return t
end

local function list(n)
  local t = {}
  for i = 1, n do t[i] = i end
  return t
end

local function keyed(n)
  local t = {}
  for i = 1, n do t["k" .. i] = i end
  return t
end

local cpu = xpu.device "cpu:0"
local function other_userdata() return cpu:buffer(16) end

local VALUES = {
  { "nil", nil }, { "true", true }, { "false", false }, { "''", "" }, { "'x'", "x" }, { "'a\\0b'", "a\0b" },
  { "{}", {} }, { "function", function() end }, { "io.stdout", io.stdout },
  { "Device", cpu }, { "-1", -1 }, { "0", 0 }, { "1", 1 },
  { "mininteger", math.mininteger }, { "maxinteger", math.maxinteger }, { "2^53", 2 ^ 53 },
  { "-2^63 (float)", -2.0 ^ 63 }, { "0.5", 0.5 }, { "NaN", 0 / 0 }, { "inf", math.huge },
  { "-inf", -math.huge }, { "1 MB string", string.rep("\255", 1 << 20) },
  { "table 200 deep", nested(200) }, { "10^5-entry list", list(100000) },
  { "10^5-key table", keyed(100000) },
}
-- a userdata of another type than the receiver's: a Buffer stands in for Device methods
local BUFFER = other_userdata()

-- ---- calling ---------------------------------------------------------------------------

local calls, functions = 0, 0

-- A plausible argument as the call's line shows it: strings quoted, long ones by length.
local function show(v)
  if type(v) ~= "string" then return tostring(v) end
  if #v > 8 or v:find("[^%w_.:]") then return ("<%d-byte string>"):format(#v) end
  return ("%q"):format(v)
end

local function describe_args(args, n)
  local s = {}
  for i = 1, n do s[i] = args[i] == nil and "nil" or (args.names and args.names[i]) or tostring(args[i]) end
  return table.concat(s, ", ")
end

-- Whether an error is clean: a string (or an object that prints as one) that names the
-- function or its receiver's type, its argument (the words "bad argument", a subject before a
-- colon, or the value itself, as a file name is named) or the place in a text it read
-- ("name:line:"); no stack overflow, no Lua runtime error ("attempt to ...") out of a C
-- function, and no integer argument shown cut to 32 bits (maxinteger as -1). Functions
-- written in Lua (the library modules) need only raise something printable.
local function truncated(err, given)
  for _, a in ipairs(given) do
    if a == math.maxinteger and err:find("%f[%w%-]%-1%f[^%w]") and not err:find(tostring(a), 1, true) then
      return true -- maxinteger cast to int is -1 (mininteger and 2^53 become 0: too common to tell)
    end
  end
  return false
end

local function clean(err, names, given, lua_fn)
  if type(err) ~= "string" then
    local mt = getmetatable(err)
    if not (mt and mt.__tostring) then return false, "error is a " .. type(err) end
    err = tostring(err)
  end
  if err:find("stack overflow", 1, true) then return false, err end
  if lua_fn then return true end
  if err:find("attempt to ", 1, true) then return false, err end
  -- a check of a value on the stack by relative index: the number names no argument
  if err:find("bad argument #-", 1, true) then return false, err end
  if truncated(err, given) then return false, "an edge integer shown cut to 32 bits: " .. err end
  if err:find("bad argument", 1, true) or err:match("^[^\n]-:%d+:") then return true end
  local subject = err:match("^([^:\n]+): ")
  if subject and #subject <= 200 then return true end
  local lower = err:lower()
  for _, name in ipairs(names) do
    if lower:find(name:lower(), 1, true) then return true end
  end
  for _, a in ipairs(given) do
    if (type(a) == "string" and #a > 0 or type(a) == "number") and err:find(tostring(a), 1, true) then
      return true
    end
    if math.tointeger(a) and err:find(tostring(math.tointeger(a)), 1, true) then return true end
    if type(a) == "string" and #a > 64 and err:find(a:sub(1, 64), 1, true) then return true end
  end
  return false, err
end

-- The hook bounds Lua code; a C function that never returns is bounded by the spec's timeout.
local deadline, limit = math.huge, LIMIT
local function hook()
  if xpu.now() > deadline then
    debug.sethook()
    error("hostile: call still running after " .. limit .. " s", 2)
  end
end

local RESET = {} -- per function: what to undo after each call
local TEMPLATES

local function call(name, names, fn, args, n, field)
  local given = {}
  for i = 1, n do if args[i] ~= nil then given[#given + 1] = args[i] end end
  if field ~= nil then given[#given + 1] = field end
  local lua_fn = debug.getinfo(fn, "S").what == "Lua"
  calls = calls + 1
  local desc = name .. "(" .. describe_args(args, n) .. ")"
  out:write("AT ", desc, "\n")
  local t0 = xpu.now()
  limit = LIMIT * (MEASURES[name] or 1)
  deadline = t0 + limit
  debug.sethook(hook, "", 100000)
  local ok, err = pcall(fn, table.unpack(args, 1, n))
  debug.sethook()
  local dt = xpu.now() - t0
  if RESET[name] then RESET[name]() end
  if dt > limit then out:write(("SLOW %s\t%.2f\n"):format(desc, dt)) end
  if not ok then
    local fine, why = clean(err, names, given, lua_fn)
    if not fine then out:write("BAD ", desc, "\t", (tostring(why):sub(1, 300):gsub("\n", " | ")), "\n") end
  end
end

local function named(vals)
  local args, names = {}, {}
  for i, v in ipairs(vals) do args[i], names[i] = v[2], v[1] end
  args.names = names
  return args, #vals
end

-- Every pattern for one function. prefix: the receiver (a method) or nothing; goods: lists
-- of plausible leading arguments; keys: the fields of a table argument at position 1.
local function sweep(name, names, fn, prefix, goods, keys)
  functions = functions + 1
  local started = xpu.now()
  out:write("FN ", name, "\n")
  local fresh = prefix or function() return {} end
  local first, nfirst = named(fresh())
  call(name, names, fn, first, nfirst)
  for _, v in ipairs(VALUES) do
    if prefix then call(name, names, fn, named { v }, 1) end -- wrong receiver
    local patterns = { { v }, { { "nil", nil }, v }, { { "nil", nil }, { "nil", nil }, v } }
    if debug.getinfo(fn, "S").what == "C" then table.insert(patterns, 2, { v, v }) end
    for _, good in ipairs(goods or {}) do
      local p = {}
      for i, g in ipairs(good) do p[i] = { show(g), g } end
      p[#p + 1] = v
      patterns[#patterns + 1] = p
    end
    for _, make_args in ipairs(TEMPLATES[name:gsub("@.*", "")] or {}) do
      local t = make_args(v[2])
      local p = { field = v[2] }
      for i, a in ipairs(t) do p[i] = { i == #t and ("<" .. v[1] .. " deep inside>") or show(a), a } end
      patterns[#patterns + 1] = p
    end
    for _, key in ipairs(keys or {}) do
      local t = { [key] = v[2] }
      patterns[#patterns + 1] = { key = key, field = v[2], { "{" .. key .. " = " .. v[1] .. "}", t } }
    end
    for _, p in ipairs(patterns) do
      local head = fresh()
      for _, a in ipairs(p) do head[#head + 1] = a end
      local args, n = named(head)
      call(name, p.key and { p.key, table.unpack(names) } or names, fn, args, n, p.field)
    end
  end
  if prefix then call(name, names, fn, named { { "Buffer", BUFFER } }, 1) end
  out:write(("TIME %s\t%.3f\n"):format(name, xpu.now() - started))
end

-- ---- what is skipped, and why ----------------------------------------------------------

local SKIP = {
  -- prints the whole API to stdout once per call: covered by spec/api_doc_spec.lua, and
  -- its argument checks are swept through xpu.api, which reads the same entries
  ["xpu.help"] = "prints; its lookup is xpu.api's",
  -- runs a GPU at full load for seconds to settle its clocks: unbounded by design
  ["xpu.settle.settle"] = "loads the device for seconds",
  ["xpu.settle.ensure"] = "settles the device (loads it for seconds) unless done already",
  ["xpu.settle.touch"] = "loads the device to wake it",
  -- builds n floats in Lua: with n = maxinteger it runs until the memory is gone, as asked
  ["xpu.decode.floats"] = "n floats for any n, by design",
  -- times every format's kernels on the device it is handed: a benchmark, for seconds
  ["xpu.decode.tour"] = "a benchmark tour of every format",
}

-- xpu.T.fail_after(n) makes the allocation after n more fail: undone after every call so
-- the sweep goes on allocating.
RESET["xpu.T.fail_after"] = function() xpu.T.fail_after() end

-- Plausible leading arguments, so the checks after the first argument are reached too.
local GOODS = {
  ["xpu.format"] = {}, ["xpu.quant.info"] = {},
  ["xpu.quant.row_bytes"] = { { "q4_0" } },
  ["xpu.quant.quantize"] = { { "q4_0" } }, ["xpu.quant.dequantize"] = { { "q4_0" } },
  ["xpu.quant.resident"] = { { "q4_0" }, { "q4_0", string.rep("\1", 18) } },
  ["xpu.quant.from_resident"] = { { "q4_0" }, { "q4_0", string.rep("\1", 20) } },
  ["xpu.quant.dot_reference"] = { { "q4_0" }, { "q4_0", string.rep("\1", 20) } },
  ["xpu.quant.matvec_host"] = { { "q4_0" }, { "q4_0", string.rep("\1", 20) },
                                { "q4_0", string.rep("\1", 20), string.rep("\1", 320) },
                                { "q4_0", string.rep("\1", 20), string.rep("\1", 320), 1 },
                                { "q4_0", string.rep("\1", 20), string.rep("\1", 320), 1, 32 } },
  ["xpu.fixture.bytes"] = { { 16 } }, ["xpu.fixture.eighths"] = { { "f32" }, { "f32", 16 } },
  ["xpu.fixture.normal"] = { { 16 }, { 16, 1 } }, ["xpu.fixture.decode"] = { { "f32" } },
  ["xpu.compare"] = { { "\0\0\0\0" }, { "\0\0\0\0", "\0\0\0\0" }, { "\0\0\0\0", "\0\0\0\0", "f32" } },
  ["xpu.gguf.write"] = { { "w.gguf" } }, ["xpu.amdgpu_notes"] = { { "\127ELF" } },
  ["xpu.contracts.parse"] = { { "" } },
  ["xpu.T.time_pick"] = {},
}
-- Arguments with the hostile value v deep inside a table argument (the last one).
local function rotating(field, v)
  local source = { dtype = "f16", shape = { 2, 1, 64 } }
  source[field] = v
  return { { inputs = { source = source } } }
end
local function contract_templates()
  local list = {}
  for _, f in ipairs { "dtype", "shape", "strides", "offset", "buffer" } do
    list[#list + 1] = function(v) return rotating(f, v) end
  end
  list[#list + 1] = function(v) return { { inputs = {}, params = { axis = v } } } end
  list[#list + 1] = function(v) return { { inputs = {}, params = { ranges = { v } } } } end
  list[#list + 1] = function(v) return { { inputs = { v } } } end
  return list
end
TEMPLATES = {
  ["xpu.gguf.write"] = {
    function(v) return { "w.gguf", { alignment = v } } end,
    function(v) return { "w.gguf", { version = v } } end,
    function(v) return { "w.gguf", { meta = { v } } } end,
    function(v) return { "w.gguf", { meta = { { "k", "u32", v } } } } end,
    function(v) return { "w.gguf", { meta = { { "k", v, 1 } } } } end,
    function(v) return { "w.gguf", { tensors = { v } } } end,
    function(v) return { "w.gguf", { tensors = { { name = "t", dims = v, type = "f32", data = "" } } } } end,
    function(v) return { "w.gguf", { tensors = { { name = "t", dims = { v }, type = "f32", data = "" } } } } end,
    function(v) return { "w.gguf", { tensors = { { name = "t", dims = { 1 }, type = v, data = "" } } } } end,
    function(v) return { "w.gguf", { tensors = { { name = "t", dims = { 1 }, type = "f32", data = v } } } } end,
  },
  ["xpu.call"] = {
    function(v) return { { query = xpu.query { format = "q4_0", regime = "decode" }, operands = { y = v } } } end,
    function(v) return { { query = xpu.query { format = "q4_0", regime = "decode" }, receiver = { v } } } end,
  },
  ["xpu.query"] = { function(v) return { { format = "q4_0", regime = "decode", in_dim = v } } end },
  ["xpu.fixture.normal"] = { function(v) return { 16, 1, { rows_of = v } } end,
                             function(v) return { 16, 1, { nan_every = v } } end },
  ["RouteTable:register"] = {
    function(v) return { { name = "n", regime = "decode", format = "q4_0", kernel = "copy_bytes", needs = { v } } } end,
    function(v) return { { name = "n", regime = "decode", format = "q4_0", kernel = "copy_bytes", facts = { v } } } end,
  },
  ["RouteTable:register_c"] = {
    function(v) return { { name = "n", regime = "decode", format = "q4_0", kernel = "copy_bytes", multiple = { in_dim = v } } } end,
    function(v) return { { name = "n", regime = "decode", format = "q4_0", kernel = "copy_bytes", ready_when = { v } } } end,
  },
  ["RouteTable:audit"] = { function(v) return { { v } } end },
  ["Contract:call"] = contract_templates(), ["Contract:launch"] = contract_templates(),
  ["Contract:bind"] = contract_templates(), ["Contract:precision"] = contract_templates(),
  ["xpu.contracts.plan"] = {
    function(v) return { {}, { op = "flip", inputs = { v } } } end,
    function(v) return { { v }, { op = "flip" } } end,
  },
}
local KEYS = {
  ["xpu.query"] = { "format", "regime", "in_dim", "x" },
  ["xpu.call"] = { "query", "device", "stream", "receiver", "operands" },
}

-- ---- the groups ------------------------------------------------------------------------

local function walk(t, prefix, seen, found)
  seen[t] = true
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(keys) do
    local v, name = t[k], prefix .. tostring(k)
    if type(v) == "function" then
      found[#found + 1] = { name = name, fn = v }
    elseif type(v) == "table" and not seen[v] then
      walk(v, name .. ".", seen, found)
    end
  end
  return found
end

local function sweep_functions(found)
  for _, f in ipairs(found) do
    if not SKIP[f.name] then
      local short = f.name:match("([^.]+)$")
      local module = f.name:match("^(.-)%.[^.]+$") or f.name
      sweep(f.name, { f.name, short, module }, f.fn, nil, GOODS[f.name], KEYS[f.name])
    else
      out:write("SKIP ", f.name, "\t", SKIP[f.name], "\n")
    end
  end
end

-- The Lua modules of the xpu library (lua/xpu/*.lua), each required and walked.
local function lua_modules()
  local mods = {}
  local p = assert(io.popen("ls " .. REPO .. "/lua/xpu/"))
  for file in p:lines() do
    local m = file:match("^(.-)%.lua$")
    if m then mods[#mods + 1] = "xpu." .. m end
  end
  p:close()
  return mods
end

-- Instances on a device: fresh ones for each method, as a method may release its receiver.
local function devices()
  local list = { cpu }
  local ok, vk = pcall(xpu.device, "vulkan:0")
  if ok and vk then list[#list + 1] = vk end
  return list
end

local function contracts_for(d)
  local backend = d:fingerprint():match("^(%a+)")
  local all = xpu.contracts.load(REPO .. "/contracts/shape-ops.md")
  for _, c in ipairs(all) do
    if c.kernel == "write_slice_rotating" and c.backend == backend then return c end
  end
end

local function rotating_call(d)
  local f16 = string.rep("\0\60", 2 * 64)
  return { inputs = { source = { dtype = "f16", shape = { 2, 1, 64 }, buffer = d:buffer(f16) },
                      position = { dtype = "u32", shape = { 1 }, buffer = d:buffer(string.pack("<I4", 5)) },
                      dest = { dtype = "f16", shape = { 2, 8, 64 }, buffer = d:buffer(2 * 8 * 64 * 2) } },
           params = { axis = 1, modulus = 8, ranges = { { 0, 2 }, { 0, 1 }, { 0, 64 } } } }
end

local FACTS = { "in_dim", "out_dim" }
local function table_with_row(d)
  local t = xpu.new_routes("hostile")
  local view
  t:register { name = "hostile-row", regime = "decode", format = "q4_0", kernel = "copy_bytes",
               facts = FACTS, shape = function(q) view = q end }
  local q = xpu.query { format = "q4_0", regime = "decode", in_dim = 256, out_dim = 32 }
  local c = xpu.call { query = q, device = d, receiver = {} }
  t:admissible(q)
  return t, q, c, view
end

local function gguf_file()
  local path = os.tmpname()
  xpu.gguf.write(path, { meta = { { "general.name", "string", "hostile" } },
                         tensors = { { name = "w", dims = { 4 }, type = "f32", data = string.rep("\0", 16) } } })
  local g = xpu.gguf.open(path)
  os.remove(path)
  return g
end

-- Factories per type name: each returns a fresh instance (nil where the device has none).
local locks = 0 -- FileLocks made, in the group's scratch directory
local MAKE = {
  Device = function(d) return d end,
  DeviceList = function() return xpu.devices() end,
  Buffer = function(d) return d:buffer(64) end,
  Stream = function(d) return d:stream() end,
  mark = function(d) return d:default_stream():timer_begin() end,
  Kernel = function(d) return d:kernel("copy_bytes") end,
  RouteTable = function(d) return (table_with_row(d)) end,
  Row = function(d) local t = table_with_row(d); return t:rows()[1] end,
  Query = function(d) local _, q = table_with_row(d); return q end,
  QueryView = function(d) local _, _, _, v = table_with_row(d); return v end,
  Call = function(d) local _, _, c = table_with_row(d); return c end,
  Refusal = function(d)
    local t = table_with_row(d)
    return t:why_not_admissible(xpu.query { format = "q8_0", regime = "decode" })
  end,
  Audit = function(d)
    local t, q = table_with_row(d)
    return t:audit { q }
  end,
  Contract = function(d) return contracts_for(d) end,
  BoundLaunch = function(d) return (contracts_for(d):bind(rotating_call(d))) end,
  GGUF = function() return gguf_file() end,
  FileLock = function() -- a file of its own each (a second lock on one file would wait)
    locks = locks + 1
    return assert(xpu.file.lock(("hostile-%d.lock"):format(locks), 0))
  end,
}
-- Types the API never hands to a script (held only on the C stack while a call runs).
local INTERNAL = {
  ["xpu.ContractFile"] = "holds a contract file while its objects are made (l_contract.c)",
  ["xpu.GGUFWriter"] = "holds a writer while xpu.gguf.write runs (l_gguf.c)",
  ["xpu.AMDGPUCode"] = "holds a code object while xpu.amdgpu_notes reads it (l_hip.c)",
}

-- Methods of a type: its metatable's methods table (or __index when that is a table) and
-- its metamethods.
local function methods_of(obj)
  local mt = getmetatable(obj)
  local found, seen = {}, {}
  local index = type(mt.__index) == "table" and mt.__index or mt.methods
  if not index and type(mt.__index) == "function" then -- an __index closing over its methods
    local _, up = debug.getupvalue(mt.__index, 1)
    index = type(up) == "table" and up
  end
  index = index or {}
  for k, v in pairs(index) do
    if type(v) == "function" then found[#found + 1] = k; seen[k] = v end
  end
  for k, v in pairs(mt) do
    if type(k) == "string" and k:sub(1, 2) == "__" and type(v) == "function" and not seen[k] then
      found[#found + 1] = k; seen[k] = v
    end
  end
  table.sort(found)
  return found, seen
end

local METHOD_GOODS = {
  ["Buffer:upload"] = { { "abcd" } }, ["Buffer:download"] = { { 0 } }, ["Buffer:slice"] = { { 0 } },
  ["Stream:copy"] = {}, ["Audit:clause"] = { { 1 } }, ["Audit:need_at"] = { { 1 } },
  ["GGUF:data"] = { { "w" }, { "w", 0 } },
  ["RouteTable:audit_row"] = { { "hostile-row" } },
  ["RouteTable:pin"] = { { "hostile-row" } },
  ["Kernel:launch"] = { { false }, { false, { 1 } }, { false, { 1 }, { 1 } } },
  ["Device:buffer"] = {},
}
local METHOD_KEYS = {
  ["RouteTable:register"] = { "name", "regime", "format", "priority", "needs", "kernel", "facts",
                              "shape", "ready", "x" },
  ["RouteTable:register_c"] = { "name", "regime", "format", "priority", "needs", "kernel",
                                "facts", "multiple", "ready_when", "x" },
  ["Contract:call"] = { "inputs", "params", "out", "stream", "x" },
  ["Contract:precision"] = { "inputs", "params", "x" },
  ["Contract:launch"] = { "inputs", "params", "out", "stream", "x" },
  ["Contract:bind"] = { "inputs", "params", "out", "stream", "x" },
}

-- the words a type's own messages use for it, where they are not its name
local ALIAS = { Contract = { "operand", "param" }, QueryView = { "query" }, Call = { "query" },
                mark = { "timer mark" }, RouteTable = { "route table" }, BoundLaunch = { "bound launch" },
                DeviceList = { "device" } }

local function sweep_type(tname)
  local make = MAKE[tname]
  for _, d in ipairs(devices()) do
    local probe = make(d)
    if probe ~= nil then
      local dev = d:fingerprint():match("^(%a+)")
      local names, fns = methods_of(probe)
      for _, m in ipairs(names) do
        local full = tname .. ":" .. m
        local short = m:gsub("^__", "")
        -- one receiver for all the method's calls: where the method ends it (release, __gc),
        -- every call after the first is one on an ended receiver, which must be refused too
        local shared = make(d)
        local function receiver() return { { tname, shared } } end
        sweep(full .. "@" .. dev, { m, short, tname, table.unpack(ALIAS[tname] or {}) }, fns[m], receiver,
              METHOD_GOODS[full], METHOD_KEYS[full])
      end
    end
    if tname == "DeviceList" or tname == "GGUF" or tname == "FileLock" then break end -- not per device
    collectgarbage()
  end
end

-- ---- main ------------------------------------------------------------------------------

if group == "types" then -- every xpu.* metatable: swept here, or internal with the reason
  for k, v in pairs(debug.getregistry()) do
    if type(k) == "string" and k:match("^xpu%.[%a]+$") and type(v) == "table" and v.__name == k then
      local t = k:sub(5)
      out:write(MAKE[t] and "TYPE " or INTERNAL[k] and "INTERNAL " or "UNSWEPT ", t, "\n")
    end
  end
elseif group == "xpu" then
  sweep_functions(walk(xpu, "xpu.", {}, {}))
elseif group == "modules" then
  -- the scripts' helpers end the process on bad input (a one-line message, exit 2): here
  -- that exit raises instead, so the sweep goes on and the message is still checked
  os.exit = function(code) error("os.exit(" .. tostring(code) .. ")", 2) end
  for _, m in ipairs(lua_modules()) do
    local ok, mod = pcall(require, m)
    if ok and type(mod) == "table" then sweep_functions(walk(mod, m .. ".", { [xpu] = true }, {}))
    else out:write("BAD require ", m, "\t", tostring(mod), "\n") end
  end
elseif MAKE[group] then
  sweep_type(group)
else
  error("hostile_sweep: unknown group '" .. tostring(group) .. "'")
end
collectgarbage()
out:write(("DONE %d %d\n"):format(functions, calls))
out:close()
