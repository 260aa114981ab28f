-- settle_spec.lua — xpu.settle: the rule that says a GPU's clocks are up (a plateau under the
-- target is the idle clock, not a settled device), and the loop around it on a real device
-- (cpu:0, forced: an integrated device is otherwise left alone). No rate is asserted.
local xpu = require "xpu"
local settle = require "xpu.settle"
local autotune = require "xpu.autotune"

describe("settle.decide", function()
  local target = settle.TARGET * 4000

  it("with a read ceiling: the idle clock's steady plateau is not settled, the rise is", function()
    local idle = { 1450, 1452, 1449, 1451, 1450 }
    assert.equal("go on", settle.decide(idle, 0.2, target, 1.0, 3.0))
    assert.equal("go on", settle.decide(idle, 2.9, target, 1.0, 3.0))
    assert.equal("give up", settle.decide(idle, 3.0, target, 1.0, 3.0))
    assert.equal("go on", settle.decide({ 1450, 2500 }, 0.35, target, 1.0, 3.0)) -- mid-ramp: 62 %
    local risen = { 1450, 1452, 3500 }
    assert.equal("settled", settle.decide(risen, 0.3, target, 1.0, 3.0))
  end)

  it("with a read ceiling: one window is not enough (the first may carry the pipeline's start)", function()
    assert.equal("go on", settle.decide({ 3900 }, 0.01, target, 1.0, 3.0))
    assert.equal("settled", settle.decide({ 3900, 3910 }, 0.02, target, 1.0, 3.0))
  end)

  it("without one: three windows in a row within 3 %, and not before min_s", function()
    local steady = { 3500, 3490, 3510 }
    assert.equal("go on", settle.decide(steady, 0.5, nil, 1.0, 3.0))
    assert.equal("settled", settle.decide(steady, 1.0, nil, 1.0, 3.0))
    assert.equal("go on", settle.decide({ 1450, 3500, 3490 }, 1.5, nil, 1.0, 3.0))
    assert.equal("go on", settle.decide({ 3500, 3490 }, 1.5, nil, 1.0, 3.0))
    assert.equal("give up", settle.decide({ 1450, 3500, 3000 }, 3.1, nil, 1.0, 3.0))
  end)
end)

describe("settle.held", function()
  it("a cold settle reads on for HOLD_S after the window that met the target, not past max_s", function()
    local h = settle.HOLD_S
    assert.is_true(h > 0)
    assert.is_true(settle.held(true, 0.35, 0.35, 3.0))           -- the window that met it
    assert.is_true(settle.held(true, 0.35, 0.35 + 0.9 * h, 3.0))
    assert.is_false(settle.held(true, 0.35, 0.35 + h, 3.0))      -- held long enough
    assert.is_false(settle.held(true, 2.9, 3.0, 3.0))            -- max_s ends it
  end)

  it("a warm settle (its first window met the target) and one that never met it are not held", function()
    assert.is_false(settle.held(false, 0.02, 0.02, 3.0))
    assert.is_false(settle.held(true, nil, 0.5, 3.0))
  end)
end)

describe("settle on a device", function()
  local cpu = xpu.device "cpu:0"
  local dir = os.tmpname()
  local real_getenv, real_stderr = os.getenv, io.stderr
  local logged

  before_each(function()
    os.execute("rm -rf '" .. dir .. "'")
    os.getenv = function(k) if k == "XPULUA_CACHE" then return dir end return real_getenv(k) end
    logged = {}
    io.stderr = { write = function(_, ...) for _, s in ipairs { ... } do logged[#logged + 1] = s end end }
  end)
  after_each(function()
    os.getenv, io.stderr = real_getenv, real_stderr
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("leaves an integrated device alone: no window is run", function()
    assert.is_true(cpu.integrated)
    local info = settle.settle(cpu)
    assert.is_true(info.settled)
    assert.equal(0, info.windows)
  end)

  it("stops at the second window that reaches 85 % of the stored read ceiling", function()
    autotune.remember(cpu, "bandwidth.read_gbs", "0.001")
    local traced = 0
    local info = settle.settle(cpu, { force = true, max_s = 5, trace = function() traced = traced + 1 end })
    assert.is_true(info.settled)
    assert.equal(2, info.windows)
    assert.equal(2, traced)
    assert.is_true(info.gbs > 0)
    assert.near(0.00085, info.target_gbs, 1e-12)
  end)

  -- Scripted window rates against a stored ceiling of 100 GB/s (target 85): the reader's
  -- first two calls (the pipeline's first use, the first window) at `first`, every later one
  -- at 95.
  local function scripted(first)
    local calls = 0
    return function()
      calls = calls + 1
      return calls <= 2 and first or 95, 0.001
    end
  end

  it("a cold device reads on HOLD_S past the window that met the target; a warm one stops at the second", function()
    autotune.remember(cpu, "bandwidth.read_gbs", "100")
    local cold = settle.settle(cpu, { force = true, max_s = 5, read = scripted(40) })
    assert.is_true(cold.settled)
    assert.equal(40, cold.first_gbs)
    assert.is_true(cold.seconds >= settle.HOLD_S, ("held %.3f s"):format(cold.seconds))
    assert.is_true(cold.windows > 2)
    local warm = settle.settle(cpu, { force = true, max_s = 5, read = scripted(95) })
    assert.is_true(warm.settled)
    assert.equal(2, warm.windows)
    assert.is_true(warm.seconds < settle.HOLD_S)
  end)

  it("a cold device's hold ends at max_s, still settled", function()
    autotune.remember(cpu, "bandwidth.read_gbs", "100")
    local info = settle.settle(cpu, { force = true, max_s = 0.1, read = scripted(40) })
    assert.is_true(info.settled)
    assert.is_true(info.seconds >= 0.1 and info.seconds < settle.HOLD_S)
  end)

  it("ignores the stored ceiling where asked (bandwidth.lua): steady windows after min_s instead", function()
    autotune.remember(cpu, "bandwidth.read_gbs", "1e9") -- a target no window reaches
    local info = settle.settle(cpu, { force = true, ceiling = false, min_s = 0.02, max_s = 5 })
    assert.is_nil(info.target_gbs)
    assert.is_true(info.windows >= 3)
  end)

  it("gives up at max_s below the target, and says so on stderr naming the device", function()
    autotune.remember(cpu, "bandwidth.read_gbs", "1e9")
    local info = settle.settle(cpu, { force = true, max_s = 0.05 })
    assert.is_false(info.settled)
    assert.is_true(info.seconds >= 0.05)
    assert.is_true(info.windows >= 1)
    local text = table.concat(logged)
    assert.matches("settle: cpu:0 reads at %d+ GB/s after", text)
    assert.matches("under 85 %% of its read ceiling", text)
  end)

  it("ensure: nothing while settling is off (a bench's --no-settle)", function()
    settle.disabled = true
    local idle = settle.IDLE_S
    settle.IDLE_S = -1
    local info = settle.ensure(cpu, { force = true })
    settle.disabled, settle.IDLE_S = nil, idle
    assert.is_nil(info)
  end)

  it("ensure: settles again once 50 ms passed since the last touch (clocks drop that fast)", function()
    settle.touch(cpu)
    local t0 = xpu.now()
    while xpu.now() - t0 < 0.05 do end
    local ok, info = pcall(settle.ensure, cpu)
    assert.is_true(ok, tostring(info))
    assert.is_table(info) -- a settle ran (integrated: the no-op one), not skipped as recent
  end)

  it("ensure: nothing within IDLE_S of a touch, a settle after it", function()
    settle.touch(cpu)
    assert.is_nil(settle.ensure(cpu))
    local idle = settle.IDLE_S
    settle.IDLE_S = -1
    local ok, info = pcall(settle.ensure, cpu)
    settle.IDLE_S = idle
    assert.is_true(ok, tostring(info))
    assert.is_true(info.settled) -- integrated: the no-op settle
  end)
end)
