-- exports_spec.lua — build/xpu.so, the module for stock lua5.4, exports luaopen_xpu and
-- nothing else (src/lua/xpu.map): every other name of ours stays inside it, so it cannot bind
-- to, or be bound by, another module's symbols of the same name. Reads the dynamic symbol table
-- with nm; skipped, with the reason, where nm or the module is missing.
local BIN = os.getenv("XPULUA") or "build/xpulua"
local MODULE = (BIN:match("^(.*)/[^/]+$") or ".") .. "/xpu.so"

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

local function has_command(name)
  return os.execute("command -v " .. name .. " >/dev/null 2>&1") == true
end

-- The defined dynamic symbols of a shared object: { name = type letter }, and nm's output.
local function dynamic_symbols(path)
  local p = assert(io.popen("nm -D --defined-only " .. path .. " 2>&1"))
  local out = p:read("a")
  p:close()
  local syms = {}
  for kind, name in out:gmatch("%x* ?(%a) ([%w_.@]+)\n") do syms[name] = kind end
  return syms, out
end

-- Why the spec cannot run here, or nil.
local function missing()
  if not has_command("nm") then return "skipped: nm is not installed (Debian package binutils)" end
  if not exists(MODULE) then return "skipped: no " .. MODULE .. " beside " .. BIN .. " (make builds it)" end
end

describe("xpu.so's exports", function()
  it("are luaopen_xpu alone", function()
    local why = missing()
    if why then return pending(why) end
    local syms, out = dynamic_symbols(MODULE)
    assert.equal("T", syms.luaopen_xpu, out)
    local others = {}
    for name, kind in pairs(syms) do
      if name ~= "luaopen_xpu" then others[#others + 1] = kind .. " " .. name end
    end
    table.sort(others)
    assert.same({}, others)
  end)

  it("opens under stock lua5.4, a device and the formats reachable, and unloads at exit cleanly", function()
    local why = missing()
    if why then return pending(why) end
    if not has_command("lua5.4") then return pending("skipped: no lua5.4 to load the module into") end
    local dir = MODULE:match("^(.*)/[^/]+$")
    local code = ("package.cpath = %q .. '/?.so;' .. package.cpath local x = require 'xpu' "
      .. "io.write(x.device('cpu:0').id, ' ', #x.formats())"):format(dir)
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write(code)
    f:close()
    -- ten runs: lua_close unloads the module while the CPU pool's workers are parked in it,
    -- which crashed about one exit in three until the module was linked -z nodelete
    for _ = 1, 10 do
      local p = assert(io.popen("lua5.4 " .. script .. " 2>&1"))
      local out = p:read("a")
      local ok, how, code = p:close()
      assert.matches("^cpu:0 %d+$", out)
      assert.is_true(ok, ("lua5.4 ended by %s %s"):format(tostring(how), tostring(code)))
    end
    os.remove(script)
  end)
end)
