-- fault_spec.lua — failure injection (src/core/fault.c, xpu.T.under_fault): what fails, what
-- is reported, that nothing stays armed; and the faults `make check-oom` and
-- `make check-driver-faults` found, kept here so the ordinary suite fails if they return.
local xpu = require "xpu"
local T = xpu.T

local cpu = xpu.device "cpu:0"

describe("xpu.T.under_fault", function()
  it("fails the Nth allocation of the sites asked for, says which, and disarms after", function()
    local n, device_memory = 0, false
    while true do
      local ok, err, site, calls = T.under_fault(n, "alloc", function() return cpu:buffer(64) end)
      if not site then break end
      assert.is_false(ok)
      assert.equal("alloc", site)
      assert.is_true(calls > n)
      if err:find("cpu: out of host memory for a 64-byte buffer", 1, true) then
        device_memory = true
      else
        assert.truthy(err:find("out of memory (injected fault)", 1, true), err)
      end
      assert.equal(64, #cpu:buffer(64):download())   -- nothing stays armed
      n = n + 1
    end
    assert.is_true(device_memory, "the CPU device's memory was never failed")
  end)

  it("makes Lua raise 'not enough memory' when its allocations fail from N on", function()
    local ok, err, site = T.under_fault(0, "lua", function() local t = {} for i = 1, 100 do t[i] = {} end end)
    assert.is_false(ok)
    assert.equal("lua", site)
    assert.equal("not enough memory", err)
  end)

  it("reports no site when fn makes fewer calls than N, and returns fn's value", function()
    local ok, v, site, calls = T.under_fault(1000000, "alloc,lua", function() return 42 end)
    assert.is_true(ok)
    assert.equal(42, v)
    assert.is_nil(site)
    assert.is_true(calls < 1000000)
  end)

  it("fails call N alone when every_after is false", function()
    local n = 0
    local ok, _, site = T.under_fault(0, "alloc", function()
      for _ = 1, 3 do
        if pcall(cpu.buffer, cpu, 16) then n = n + 1 end
      end
    end, false)
    assert.is_true(ok)
    assert.equal("alloc", site)
    assert.equal(2, n)
  end)

  it("refuses a site it does not know, naming it and the ones it takes", function()
    local ok, err = pcall(T.under_fault, 0, "alloc,heap", function() end)
    assert.is_false(ok)
    assert.truthy(err:find("site 'heap' is not one of alloc, lua, yaml, driver, all", 1, true), err)
  end)
end)

describe("faults found by check-oom", function()
  -- Lua running out of memory while t:register made the row object (after the row had
  -- joined the table) left the row in: the call raised, and its retry said the name was taken.
  it("t:register under any Lua or core allocation failure leaves the table as it was", function()
    local t = xpu.new_routes "fault-register"
    local spec = function(name)
      return { name = name, regime = "decode", format = "q4_0", kernel = "copy_bytes",
               facts = { "in_dim" }, shape = function() end, ready = function() end }
    end
    local n, failures = 0, 0
    while true do
      local before = #t
      local ok, err, site = T.under_fault(n, "alloc,lua", function() return t:register(spec("r" .. n)) end)
      if not site then break end
      failures = failures + 1
      assert.is_false(ok)
      assert.truthy(err:find("not enough memory", 1, true) or err:find("out of memory", 1, true), err)
      assert.equal(before, #t, "N=" .. n .. ": the failed register left a row")
      assert.is_nil(t:row("r" .. n))
      assert.truthy(t:register(spec("r" .. n)), "N=" .. n .. ": the retried register failed")
      n = n + 1
    end
    assert.is_true(failures > 10, "too few allocations failed: " .. failures)
  end)
end)

describe("faults found by check-driver-faults", function()
  local vk = xpu.device "vulkan:0"
  -- A kernel's first launch whose descriptor set layout (or pipeline layout) failed made its
  -- shader module again at the next launch, and the first one was never destroyed.
  it("vulkan:0: a kernel's first launch failing at any driver call makes each object once", function()
    if not vk then return pending("skipped: no vulkan:0") end
    T.driver_ledger(true)
    local function alive(kind)
      local c = T.driver_ledger()[kind]
      return c and c.made - c.gone or 0
    end
    local src, dst = vk:buffer(("ab"):rep(2048)), vk:buffer(4096)
    local k = vk:kernel "stream_copy"
    local before = { alive("ShaderModule"), alive("DescriptorSetLayout"), alive("PipelineLayout") }
    local n, launched = 0, false
    while not launched do
      local ok, err, site = T.under_fault(n, "driver", function()
        k:launch(nil, 1, 256, dst, src, 4096)
        vk:default_stream():sync()
      end, false)
      if not site then
        launched = true
      elseif not ok then
        assert.truthy(err:find(site:match("^driver: (.*)"), 1, true), err)
      end
      n = n + 1
    end
    if alive("ShaderModule") == before[1] then
      return pending("stream_copy was launched on vulkan:0 before this spec: its first launch is not here to fail")
    end
    assert.is_true(n > 3, "the first launch made too few driver calls: " .. n)
    assert.equal(before[1] + 1, alive("ShaderModule"))
    assert.equal(before[2] + 1, alive("DescriptorSetLayout"))
    assert.equal(before[3] + 1, alive("PipelineLayout"))
    assert.equal(("ab"):rep(2048), dst:download())
  end)
end)
