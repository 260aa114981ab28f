-- vulkan_icd_spec.lua — where the Vulkan loader loads no driver, xpu.devices() says why in
-- words a user can act on: no manifest where it looked, or the manifest's library and
-- dlerror's reason. Children run with VK_DRIVER_FILES pointing at manifests made here; the
-- loader must exist (it is a setup package), the driver need not.
local fx = require "spec.support.fixtures"

local function vulkan_line(env)
  local out = fx.child(env, [[
    for line in tostring(require("xpu").devices()):gmatch("[^\n]+") do
      if line:find("vulkan") then print(line) end
    end
  ]])
  return out
end

local function loader_present()
  local p = io.popen("ldconfig -p 2>/dev/null | grep -c 'libvulkan.so.1 '")
  local n = tonumber(p:read("a")) or 0
  p:close()
  return n > 0
end

describe("vulkan driver diagnosis", function()
  local dir = os.tmpname()
  setup(function()
    os.remove(dir)
    os.execute("mkdir -p " .. dir)
  end)
  teardown(function() os.execute("rm -rf " .. dir) end)

  it("names the manifest list that held no manifest", function()
    if not loader_present() then return pending("skipped: no Vulkan loader (libvulkan.so.1)") end
    local line = vulkan_line("VK_DRIVER_FILES=" .. dir .. "/none.json")
    assert.matches("could load no Vulkan driver", line, 1, true)
    assert.matches("no driver manifest (ICD .json) in VK_DRIVER_FILES", line, 1, true)
    assert.matches("set VK_DRIVER_FILES", line, 1, true)
  end)

  it("names the manifest whose library does not open, with dlerror's words", function()
    if not loader_present() then return pending("skipped: no Vulkan loader (libvulkan.so.1)") end
    local manifest = dir .. "/broken_icd.json"
    local f = assert(io.open(manifest, "w"))
    f:write('{ "file_format_version": "1.0.0", "ICD": { "library_path": "libxpu_missing_icd.so.0", ',
      '"api_version": "1.3.0" } }\n')
    f:close()
    local line = vulkan_line("VK_DRIVER_FILES=" .. manifest)
    assert.matches("1 driver manifest, 0 whose library opens", line, 1, true)
    assert.matches(manifest .. ": libxpu_missing_icd.so.0: cannot open shared object file", line, 1, true)
  end)
  it("names a driver library that opens but does not start", function()
    if not loader_present() then return pending("skipped: no Vulkan loader (libvulkan.so.1)") end
    -- A driver whose entry point gives no vkCreateInstance, as NVIDIA's does where it cannot
    -- initialise: the loader itself then only says it found no driver.
    local src, lib = dir .. "/refusing.c", dir .. "/librefusing_icd.so"
    local f = assert(io.open(src, "w"))
    f:write("void *vk_icdGetInstanceProcAddr(void *i, const char *n) { (void)i; (void)n; return 0; }\n")
    f:close()
    if not os.execute("cc -shared -fPIC -o " .. lib .. " " .. src .. " 2>/dev/null") then
      return pending("skipped: no C compiler to build the refusing driver")
    end
    local manifest = dir .. "/refusing_icd.json"
    f = assert(io.open(manifest, "w"))
    f:write('{ "file_format_version": "1.0.0", "ICD": { "library_path": "', lib, '", "api_version": "1.3.0" } }\n')
    f:close()
    local line = vulkan_line("VK_DRIVER_FILES=" .. manifest)
    assert.matches("the driver " .. lib .. " (" .. manifest .. ") loaded but did not start", line, 1, true)
  end)
end)
