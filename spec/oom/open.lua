-- open.lua — a device's first use with driver call N failing (that call alone), in a
-- process of its own (devices live for the process, pipelines are made at a kernel's first
-- launch), run by scripts/check-driver-faults.sh:
--   xpulua spec/oom/open.lua DEVICE N
-- The steps: open DEVICE, make and upload a buffer, launch copy_bytes, wait, read back. A
-- failure's message must name the call that failed; a failed open must leave no driver object
-- (the ledger: made == destroyed per kind); the failed step, retried with the driver working,
-- and the steps after it must succeed and copy the right bytes. Prints
--   open DEVICE N fired=<call> step=<k> ledger=<live objects after the buffers are released>
-- ("fired=none" when the steps make fewer than N+1 calls: the count is N; "reported=not
-- usable" when the call failed while the backend was probed: the probe's verdict is kept for
-- the process, and every later open says the backend is not usable, naming the call). Exits 1 on a
-- problem, 2 on bad usage.
local xpu = require "xpu"
local T = xpu.T

local id, n = arg[1], math.tointeger(tonumber(arg[2] or ""))
if not id or not n or n < 0 then
  io.stderr:write("usage: xpulua spec/oom/open.lua DEVICE N\n")
  os.exit(2)
end

local function live()
  local out = {}
  for kind, c in pairs(T.driver_ledger()) do
    if c.made ~= c.gone then out[#out + 1] = ("%s:%d"):format(kind, c.made - c.gone) end
  end
  table.sort(out)
  return table.concat(out, ",")
end

local function fail(what)
  print(("open %s %d FAILED: %s"):format(id, n, what))
  os.exit(1)
end

local SRC = ("xpu!"):rep(256)
local s = { d = false, src = false, dst = false, got = false }
local steps = {
  function() local d, why = xpu.device(id); if not d then error(why, 0) end; s.d = d end,
  function() s.src = s.d:buffer(SRC) end,
  function() s.dst = s.d:buffer(#SRC) end,
  function() s.d:kernel("copy_bytes"):launch(nil, #SRC // 256, 256, s.dst, s.src, #SRC) end,
  function() s.d:default_stream():sync() end,
  function() s.got = s.dst:download() end,
}

T.driver_ledger(true)
local cur = 0
collectgarbage()
local ok, err, site = T.under_fault(n, "driver", function()
  for i = 1, #steps do
    cur = i
    steps[i]()
  end
end, false)
local call = site and site:gsub("^driver: ", "") or "none"
if site and not ok then
  if not tostring(err):find(call, 1, true) then fail(("the error does not name %s: %s"):format(call, tostring(err))) end
  if cur == 1 and live() ~= "" then fail("the failed open left driver objects: " .. live()) end
  for i = cur, #steps do
    local okk, e = pcall(steps[i])
    -- a failure while the backend is probed (its instance made) is kept for the process: the
    -- backend is then reported not usable, naming the call, on every later open
    if not okk and i == 1 and tostring(e):find("not usable", 1, true) and tostring(e):find(call, 1, true) then
      print(("open %s %d fired=%s step=1 reported=not usable"):format(id, n, call))
      os.exit(0, true)
    end
    if not okk then fail(("step %d, retried after %s failed: %s"):format(i, call, tostring(e))) end
  end
elseif not ok then
  fail("failed with no fault injected: " .. tostring(err))
end
if s.got ~= SRC then fail("copy_bytes moved the wrong bytes") end
-- a stream's ring of batches (a fence and a descriptor pool each) fills over its first
-- launches, whether or not one failed: filled, the ledger compares like with like
for _ = 1, 24 do
  s.d:kernel("copy_bytes"):launch(nil, #SRC // 256, 256, s.dst, s.src, #SRC)
  s.d:default_stream():sync()
end
s.src, s.dst = false, false
collectgarbage()
collectgarbage()
print(("open %s %d fired=%s step=%d ledger=%s"):format(id, n, call, site and cur or 0, live()))
os.exit(0, true)
