-- run.lua — one failure-injection scenario (spec/oom/<name>.lua), run by scripts/check-oom.sh:
--   xpulua spec/oom/run.lua NAME [STRIDE [SITES]]
-- For N = 0, STRIDE, 2*STRIDE, ...: the scenario's steps run with the Nth counted allocation
-- of SITES (alloc,lua,yaml by default) failing and every one after it (with SITES "driver":
-- the Nth driver call alone), until an N at which nothing fails. Each failure must raise an error that names it ("out of memory", Lua's "not
-- enough memory"); the failed step, retried with allocation working, and the steps after it
-- must then succeed and give the result of a run without faults. Prints one line:
--   NAME nmax=N survived=F alloc=A lua=L yaml=Y driver=D problems=P
-- and one line per problem; exits 1 on any problem. Leaks are LeakSanitizer's, at exit.
local xpu = require "xpu"
local T = xpu.T

local name, stride, sites = arg[1], math.tointeger(tonumber(arg[2] or "1")), arg[3] or "alloc,lua,yaml"
if not name or not stride or stride < 1 then
  io.stderr:write("usage: xpulua spec/oom/run.lua NAME [STRIDE [SITES]]\n")
  os.exit(2)
end
local ok, sc = pcall(dofile, "spec/oom/" .. name .. ".lua")
if not ok then
  local skip = tostring(sc):match("^skipped: (.*)")
  if skip then                      -- the device it needs is absent: said, never a pass
    print(("%s skipped: %s"):format(name, skip))
    os.exit(3)
  end
  io.stderr:write("check-oom: scenario '", name, "': ", tostring(sc), "\n")
  os.exit(2)
end

local NAMED = { "out of memory", "not enough memory" }
local function names_failure(err, site)
  if type(err) ~= "string" then return false end
  local call = site:match("^driver: (.*)")
  if call then return err:find(call, 1, true) ~= nil end
  for _, w in ipairs(NAMED) do
    if err:find(w, 1, true) then return true end
  end
  return false
end

local function fresh() return sc.setup and sc.setup() or {} end

-- every step from `from` on, without faults; the scenario's result
local function finish(c, from)
  for i = from, #sc.steps do
    local okk, err = pcall(sc.steps[i], c)
    if not okk then return nil, ("step %d, retried: %s"):format(i, tostring(err)) end
  end
  return sc.result(c)
end

-- driver objects alive (made - destroyed, by kind): what a run leaves must not grow
local DRIVER = sites:find("driver", 1, true) ~= nil
local function live()
  collectgarbage()
  collectgarbage()
  local out = {}
  for kind, c in pairs(T.driver_ledger()) do
    if c.made ~= c.gone then out[#out + 1] = ("%s:%d"):format(kind, c.made - c.gone) end
  end
  table.sort(out)
  return table.concat(out, ",")
end
if DRIVER then T.driver_ledger(true) end

local want = assert(finish(fresh(), 1))
-- the device's rings and caches fill over the first runs (a fence and a descriptor pool per
-- ring slot, pipelines, memory blocks): the ledger is compared once it stands still
local want_live = DRIVER and live()
for _ = 1, DRIVER and 40 or 0 do
  assert(finish(fresh(), 1) == want)
  local now = live()
  if now == want_live then break end
  want_live = now
end
local problems, survived, nmax = {}, 0, nil
local by_site = { alloc = 0, lua = 0, yaml = 0, driver = 0 }
local function problem(n, what) problems[#problems + 1] = ("N=%d: %s"):format(n, what) end

local n = 0
while true do
  local c = fresh()
  local cur = 0
  collectgarbage()
  -- allocations fail from N on (Lua retries one failed allocation after a collection, so a
  -- single failure would never surface); a driver call fails alone, so the error must name it
  local okk, err, site = T.under_fault(n, sites, function()
    for i = 1, #sc.steps do
      cur = i
      sc.steps[i](c)
    end
  end, not DRIVER)
  if not site then
    if not okk then problem(n, "failed with no fault injected: " .. tostring(err)) end
    nmax = n
    break
  end
  by_site[site:match("^%a+")] = by_site[site:match("^%a+")] + 1
  local got, why
  if okk then                       -- the failure was absorbed: the result must still hold
    got, why = sc.result(c), nil
  else
    if not names_failure(err, site) then
      problem(n, ("step %d, %s fault: the error does not name it: %s"):format(cur, site, tostring(err)))
    end
    got, why = finish(c, cur)
  end
  if got == nil then
    problem(n, ("%s fault at step %d: %s"):format(site, cur, why))
  elseif got ~= want then
    problem(n, ("%s fault at step %d: the retried result differs (%s)"):format(site, cur,
      #got < 200 and got or #got .. " bytes"))
  elseif DRIVER and live() ~= want_live then
    problem(n, ("%s fault at step %d: driver objects alive %s, after a run without faults %s"):format(site, cur,
      live(), want_live))
  else
    survived = survived + 1
  end
  n = n + stride
end
if sc.cleanup then sc.cleanup() end

if DRIVER then print("ledger " .. want_live) end
print(("%s nmax=%d survived=%d alloc=%d lua=%d yaml=%d driver=%d problems=%d"):format(name, nmax, survived,
  by_site.alloc, by_site.lua, by_site.yaml, by_site.driver, #problems))
for _, p in ipairs(problems) do print("  " .. p) end
os.exit(#problems == 0 and 0 or 1, true)
