-- threads_spec.lua — one device used by several threads at once (xpu.T.threads, src/lua/
-- l_threads.c): each thread on a stream of its own makes buffers, uploads, copies on the
-- device, launches copy_bytes, syncs, reads back and checks every byte. In the release build
-- this checks the results; inside build/tsan (make check-tsan) ThreadSanitizer also watches
-- the backends' locks and the CPU pool under contention.
local xpu = require "xpu"

local function device_or_skip(id)
  local d, why = xpu.device(id)
  if not d then pending("skipped: " .. tostring(why)) end
  return d
end

for _, id in ipairs{ "cpu:0", "vulkan:0" } do
  describe(id .. " from several threads", function()
    it("4 threads x 40 rounds, every byte read back as written", function()
      local d = device_or_skip(id)
      if not d then return end
      local n, err = xpu.T.threads(d, 4, 40, 8192)
      assert.equal(160, n, err)
    end)

    it("16 threads x 8 rounds of sizes that are not whole blocks", function()
      local d = device_or_skip(id)
      if not d then return end
      for _, bytes in ipairs{ 1, 255, 257, 70001 } do
        local n, err = xpu.T.threads(d, 16, 8, bytes)
        assert.equal(128, n, bytes .. " bytes: " .. tostring(err))
      end
    end)
  end)
end

describe("xpu.T.threads refuses", function()
  local cpu = xpu.device "cpu:0"
  local function refused(pattern, ...)
    local ok, err = pcall(xpu.T.threads, ...)
    assert.is_false(ok)
    assert.matches(pattern, tostring(err))
  end

  it("a device that is not one, a thread count, round count or size out of range, naming each", function()
    refused("bad argument #2 .*threads must be 1 to 16", cpu, 0, 1)
    refused("bad argument #2 .*threads must be 1 to 16", cpu, 17, 1)
    refused("bad argument #3 .*rounds must be 1 to 100000", cpu, 1, 0)
    refused("bad argument #4 .*bytes must be 1 to 16 MiB", cpu, 1, 1, 0)
    refused("bad argument #4 .*bytes must be 1 to 16 MiB", cpu, 1, 1, (1 << 24) + 1)
    refused("bad argument #1 .*xpu.Device expected, got number", 42, 1, 1)
    refused("device 'nope:3': no backend named 'nope'", "nope:3", 1, 1)
  end)
end)
