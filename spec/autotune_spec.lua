-- autotune_spec.lua — the Autotune store (lua/xpu/autotune.lua, src/core/durable.c): settings
-- kept per device across processes, entries validated one by one by their checksum, writes
-- under a lock and through a synced rename, and every store that cannot be read or written
-- (a directory, read-only, missing, a full disk, garbage) said once on stderr, the run going on
-- untuned. The SIGKILL soak (scripts/autotune-soak.lua) is #long.
local xpu = require "xpu"
local autotune = require "xpu.autotune"

local exe = arg and arg[-1] or "build/xpulua"
if exe:sub(1, 1) ~= "/" then exe = os.getenv("PWD") .. "/" .. exe end -- some children run elsewhere
local cpu = xpu.device "cpu:0"

local function run(cmd)
  local p = io.popen(cmd .. " 2>&1; echo \"exit=$?\"")
  local out = p:read("a")
  p:close()
  return out, tonumber(out:match("exit=(%d+)%s*$"))
end

local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function slurp(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

local function spit(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

local function listing(dir)
  local p = io.popen("ls -a " .. sh_quote(dir) .. " 2>/dev/null")
  local s = p:read("a")
  p:close()
  return s
end

local function count(s, pattern, plain)
  local n, at = 0, 1
  while true do
    local i, j = s:find(pattern, at, plain)
    if not i then return n end
    n, at = n + 1, j + 1
  end
end

-- Whether this process can mount a tmpfs (root with the capability), and a root that modes
-- cannot stop (chmod makes nothing read-only for it).
local is_root = run("id -u"):match("^0\n") ~= nil
local function mount_tmpfs(dir, opts)
  os.execute("mkdir -p " .. sh_quote(dir))
  local _, code = run("mount -t tmpfs -o " .. opts .. " tmpfs " .. sh_quote(dir))
  return code == 0
end
local function umount(dir) os.execute("umount " .. sh_quote(dir) .. " 2>/dev/null") end

-- A child xpulua on the store dir: `lua` is the chunk's text.
local function child(dir, lua, env)
  return run(("%sXPULUA_CACHE=%s %s -e %s"):format(env or "", sh_quote(dir), exe, sh_quote(
    "local a, d = require'xpu.autotune', require'xpu'.device'cpu:0' " .. lua)))
end

describe("Autotune", function()
  local dir = os.tmpname()

  before_each(function()
    os.remove(dir)
    os.execute("rm -rf " .. sh_quote(dir))
    autotune.cache_dir = dir
  end)
  after_each(function()
    autotune.cache_dir = nil
    xpu.T.fail_write_after()
    os.execute("chmod -R u+w " .. sh_quote(dir) .. " 2>/dev/null; rm -rf " .. sh_quote(dir))
  end)

  it("remembers and recalls, per key and per shape, across processes", function()
    assert.is_true(autotune.remember(cpu, "bandwidth.read_gbs", 31.5))
    assert.is_true(autotune.remember_for(cpu, "tile", { 4096, 14336 }, "x3"))
    assert.equal(31.5, autotune.recall(cpu, "bandwidth.read_gbs"))
    assert.equal("x3", autotune.recall_for(cpu, "tile", { 4096, 14336 }))
    assert.is_nil(autotune.recall_for(cpu, "tile", { 4096, 4096 }))
    local out = child(dir, [[print(a.recall(d, "bandwidth.read_gbs"))]])
    assert.matches("^31.5", out)
  end)

  it("drops a malformed or stale line alone, and says so once, naming the file and the line", function()
    autotune.remember(cpu, "a", 1)
    autotune.remember(cpu, "b", 2)
    local path = autotune.path(cpu)
    local f = io.open(path, "a")
    f:write("garbage without tabs\n")                                                     -- line 4
    f:write(autotune.entry_line("other-device|x|y|z", xpu.kernel_hash, "c", 3), "\n")    -- another fingerprint
    f:write(autotune.entry_line(cpu:fingerprint(), "deadbeef0000", "d", 4), "\n")         -- other kernel code
    f:close()
    assert.equal(1, autotune.recall(cpu, "a"))
    assert.equal(2, autotune.recall(cpu, "b"))
    assert.is_nil(autotune.recall(cpu, "c"))
    assert.is_nil(autotune.recall(cpu, "d"))
    local out = child(dir, [[print(a.recall(d, "b"), a.recall(d, "a"))]])
    assert.equal(1, count(out, path .. ":4: entry dropped: no checksum", true), out)
    assert.equal(1, count(out, "autotune:", true), out) -- two reads, one warning
    assert.matches("\n2\t1\n", "\n" .. out)
  end)

  it("refuses a value cut in the middle or edited, rather than reading a shorter number", function()
    autotune.remember(cpu, "bandwidth.read_gbs", "31.5")
    autotune.remember(cpu, "bandwidth.copy_gbs", "12.25")
    local path = autotune.path(cpu)
    local text = slurp(path)
    -- the first entry cut inside its value (the file's tail lost), the second edited
    local cut = text:gsub("(\tbandwidth%.read_gbs\t31)%.5\t%x+\n", "%1\n")
    cut = cut:gsub("(\tbandwidth%.copy_gbs\t)12%.25", "%112.75")
    assert.not_equal(text, cut)
    spit(path, cut)
    local entries, problems = autotune.inspect(cpu)
    assert.is_nil(entries["bandwidth.read_gbs"])
    assert.is_nil(entries["bandwidth.copy_gbs"])
    assert.equal(2, #problems)
    assert.matches(":2: entry dropped: no checksum", problems[1], 1, true)
    assert.matches(":3: entry dropped: checksum does not match", problems[2], 1, true)
    local out = child(dir, [[print(a.recall(d, "bandwidth.read_gbs"), a.recall(d, "bandwidth.copy_gbs"))]])
    assert.matches("\nnil\tnil\n", "\n" .. out)
    assert.matches(path .. ":2: entry dropped", out, 1, true)
  end)

  it("reads a store written before checksums, and writes it back with them", function()
    os.execute("mkdir -p " .. sh_quote(dir))
    local path = autotune.path(cpu)
    spit(path, "# xpulua autotune: fingerprint, kernel code hash, key, value\n" ..
      table.concat({ cpu:fingerprint(), xpu.kernel_hash, "bandwidth.read_gbs", "40" }, "\t") .. "\n")
    assert.equal(40, autotune.recall(cpu, "bandwidth.read_gbs"))
    assert.is_true(autotune.remember(cpu, "x", 1))
    local text = slurp(path)
    assert.matches("^# xpulua autotune 2:", text)
    assert.truthy(text:find(autotune.entry_line(cpu:fingerprint(), xpu.kernel_hash, "bandwidth.read_gbs", "40"), 1, true))
    assert.equal(40, autotune.recall(cpu, "bandwidth.read_gbs"))
  end)

  it("sets a device's copy path from the two copies measured on it, and says why", function()
    local path, why = autotune.copy_path(cpu)
    assert.equal("kernel", path)
    assert.equal("kernel", cpu:copy_path())
    assert.matches("cpu:0: the copy kernels; the two copies are not measured here", why, 1, true)
    autotune.remember(cpu, "bandwidth.copy_kernel_gbs", "9.50")
    autotune.remember(cpu, "bandwidth.copy_driver_gbs", "25.25")
    path, why = autotune.copy_path(cpu)
    assert.equal("driver", path)
    assert.equal("driver", cpu:copy_path())
    assert.equal("cpu:0: the driver's copy, measured 25 GB/s against the copy kernel's 10", why)
    autotune.remember(cpu, "bandwidth.copy_driver_gbs", "8.75")
    path, why = autotune.copy_path(cpu)
    assert.equal("kernel", path)
    assert.equal("kernel", cpu:copy_path())
    assert.equal("cpu:0: the copy kernels, measured 10 GB/s against the driver's copy's 9", why)
  end)

  it("keeps the entries of the last four other binaries on this driver, unread; drops another driver's", function()
    autotune.remember(cpu, "mine", 1)
    local path = autotune.path(cpu)
    local f = io.open(path, "a")
    for i = 1, 6 do f:write(autotune.entry_line(cpu:fingerprint(), "binary" .. i, "bandwidth.copy_gbs", 100 + i), "\n") end
    f:write(autotune.entry_line("other-driver", xpu.kernel_hash, "bandwidth.copy_gbs", 7), "\n")
    f:close()
    autotune.remember(cpu, "mine", 2)
    assert.equal(2, autotune.recall(cpu, "mine"))
    assert.equal(nil, autotune.recall(cpu, "bandwidth.copy_gbs")) -- not this binary's to read
    local text = slurp(path)
    for i = 1, 6 do
      local line = autotune.entry_line(cpu:fingerprint(), "binary" .. i, "bandwidth.copy_gbs", 100 + i)
      assert.equal(i > 2, text:find(line .. "\n", 1, true) ~= nil, "binary " .. i .. "'s entry")
    end
    assert.is_nil(text:find("other-driver", 1, true))
    assert.matches("\tmine\t2\t%x+\n$", text)
  end)

  it("writes atomically: no temporary file is left and the file is whole", function()
    for i = 1, 20 do autotune.remember(cpu, "k" .. i, i) end
    assert.not_matches("%.tmp", listing(dir))
    for i = 1, 20 do assert.equal(i, autotune.recall(cpu, "k" .. i)) end
    assert.has_error(function() autotune.remember(cpu, "bad\tkey", 1) end)
  end)

  it("loses no entry of two processes writing at once (the lock spans read, change and write)", function()
    local cmd = ("XPULUA_CACHE=%s %s -e %s"):format(sh_quote(dir), exe, sh_quote(
      "local a=require'xpu.autotune' local d=require'xpu'.device'cpu:0' " ..
      "for i=1,60 do assert(a.remember(d, '%s'..i, i)) end"))
    local out = run("(" .. cmd:format("p") .. " & " .. cmd:format("q") .. " & wait)")
    assert.not_matches("autotune:", out)
    local entries, problems = autotune.inspect(cpu)
    assert.same({}, problems)
    local missing = {}
    for _, who in ipairs { "p", "q" } do
      for i = 1, 60 do
        if entries[who .. i] ~= tostring(i) then missing[#missing + 1] = who .. i end
      end
    end
    assert.same({}, missing)
  end)

  it("removes the temporaries of a killed writer, not those of a live one", function()
    assert.is_true(autotune.remember(cpu, "a", 1))
    local path = autotune.path(cpu)
    local dead = tonumber(run("sh -c 'echo $$'"):match("^(%d+)"))
    local p = io.popen("sleep 30 & echo $!")
    local live = tonumber(p:read("l"))
    p:close()
    spit(("%s.%d.0.tmp"):format(path, dead), "half a store")
    spit(("%s.%d.3.tmp"):format(path, live), "a store being written")
    spit(path .. ".notatemporary.tmp", "someone else's")
    assert.is_true(autotune.remember(cpu, "b", 2))
    local names = listing(dir)
    os.execute("kill " .. live)
    assert.is_nil(names:find(("%d.0.tmp"):format(dead), 1, true))
    assert.truthy(names:find(("%d.3.tmp"):format(live), 1, true))
    assert.truthy(names:find("notatemporary.tmp", 1, true))
    assert.equal(1, autotune.recall(cpu, "a"))
  end)

  it("makes its directories without a shell: a path starting with '-', no PATH, 200 writes", function()
    local cwd = dir .. "/cwd"
    os.execute("mkdir -p " .. sh_quote(cwd))
    local out, code = run(("cd %s && PATH=/nonexistent XPULUA_CACHE=-store/x %s -e %s"):format(sh_quote(cwd),
      exe, sh_quote("local a, d = require'xpu.autotune', require'xpu'.device'cpu:0' " ..
        "for i = 1, 200 do assert(a.remember(d, 'k'..i, i)) end print(a.recall(d, 'k200'))")))
    assert.equal(0, code, out)
    assert.matches("^200\n", out)
    assert.truthy(listing(cwd .. "/-store/x"):find("autotune-", 1, true))
  end)

  describe("a store it cannot use: one warning naming the path and why, the run goes on", function()
    -- the child recalls twice, remembers twice, then says it is still running
    local probe = [[print(a.recall(d, "k"), a.recall(d, "k")) print((a.remember(d, "k", 1))) ]] ..
      [[print((a.remember(d, "j", 2))) print("still running")]]

    local function one_warning(out, path, why)
      assert.matches("still running\n", out)
      assert.equal(1, count(out, "autotune:", true), out)
      assert.truthy(out:find(path, 1, true), out)
      assert.matches(why, out)
    end

    it("the store's path is a directory", function()
      os.execute("mkdir -p " .. sh_quote(autotune.path(cpu)))
      local out, code = child(dir, probe)
      assert.equal(0, code, out)
      one_warning(out, autotune.path(cpu), "Is a directory; its settings are not used and none are kept")
      assert.matches("\nnil\tnil\nnil\nnil\n", "\n" .. out)
      out, code = child(dir, [[print((a.remember(d, "k", 1))) print((a.remember(d, "j", 2))) print("still running")]])
      assert.equal(0, code, out)
      one_warning(out, autotune.path(cpu), "Is a directory %(left as it is, so none of it is lost%); settings measured now are not kept")
      assert.not_matches("%.tmp", listing(dir))
    end)

    it("the directory's parent is a file", function()
      spit(dir, "a file")
      local out, code = child(dir .. "/sub", probe)
      assert.equal(0, code, out)
      one_warning(out, dir, "Not a directory; its settings are not used and none are kept")
      os.remove(dir)
    end)

    it("the directory is read-only", function()
      autotune.remember(cpu, "k", 7)
      local mounted = false
      if is_root then
        local ro = dir .. "-ro"
        mounted = mount_tmpfs(ro, "size=64k")
        if not mounted then
          pending("root ignores file modes and cannot mount a tmpfs here: no read-only directory to try")
          return
        end
        os.execute(("cp -p %s/* %s/"):format(sh_quote(dir), sh_quote(ro)))
        run("mount -o remount,ro " .. sh_quote(ro))
        autotune.cache_dir = ro
      else
        os.execute("chmod a-w " .. sh_quote(dir))
      end
      local ro = autotune.cache_dir
      local out, code = child(ro, probe)
      if mounted then umount(ro); os.remove(ro) end
      assert.equal(0, code, out)
      assert.matches("^7\t7\n", out)
      one_warning(out, ro, (mounted and "Read%-only file system" or "Permission denied") .. "; settings measured now are not kept")
    end)

    it("the disk is full (an injected write failure): the old file is kept, no temporary is left", function()
      assert.is_true(autotune.remember(cpu, "k", 7))
      xpu.T.fail_write_after(0)
      local ok, err = autotune.remember(cpu, "j", 8)
      assert.is_nil(ok)
      assert.matches("cannot write " .. autotune.path(cpu):gsub("%p", "%%%0") .. ": No space left on device", err)
      assert.equal(7, autotune.recall(cpu, "k"))
      assert.is_nil(autotune.recall(cpu, "j"))
      assert.not_matches("%.tmp", listing(dir))
    end)

    it("the disk is full (a 64 KiB tmpfs filled up)", function()
      local small = dir .. "-full"
      if not (is_root and mount_tmpfs(small, "size=64k")) then
        pending("cannot mount a tmpfs here (root only); the injected write failure above stands in")
        return
      end
      autotune.cache_dir = small
      assert.is_true(autotune.remember(cpu, "k", 7))
      os.execute(("dd if=/dev/zero of=%s/fill bs=4k 2>/dev/null"):format(sh_quote(small)))
      local out, code = child(small, [[print((a.remember(d, "j", ("8"):rep(9000)))) print(a.recall(d, "k")) print("still running")]])
      local names = listing(small)
      umount(small)
      os.remove(small)
      assert.equal(0, code, out)
      one_warning(out, small, "No space left on device.*not kept")
      assert.matches("\n7\nstill running", out)
      assert.not_matches("%.tmp", names)
    end)

    it("the file holds garbage: named line by line up to five, then counted; a write replaces it", function()
      os.execute("mkdir -p " .. sh_quote(dir))
      local junk = {}
      for i = 1, 40 do junk[i] = ("\0\255junk\t%d\tmore\t\t\1"):format(i) end
      spit(autotune.path(cpu), table.concat(junk, "\n"))
      local out, code = child(dir, [[print(a.recall(d, "k"), a.recall(d, "k")) print("still running")]])
      assert.equal(0, code, out)
      assert.matches("still running\n", out)
      assert.equal(6, count(out, "autotune:", true), out)
      assert.matches(autotune.path(cpu):gsub("%p", "%%%0") .. ":5: entry dropped", out)
      assert.matches("35 more lines dropped", out)
      assert.is_true(autotune.remember(cpu, "k", 3))
      local _, problems = autotune.inspect(cpu)
      assert.same({}, problems)
      assert.equal(3, autotune.recall(cpu, "k"))
    end)

    it("a lock held elsewhere for too long is named, not waited on forever", function()
      os.execute("mkdir -p " .. sh_quote(dir))
      local lock = assert(xpu.file.lock(autotune.path(cpu) .. ".lock"))
      local out, code = child(dir, [[print(require"xpu".file.lock(a.path(d) .. ".lock", 50))]])
      lock:release()
      assert.equal(0, code, out)
      assert.matches("another process has held it for 50 ms", out)
      assert.is_true(autotune.remember(cpu, "k", 1))
    end)
  end)

  it("survives 200 SIGKILLs of a writer (scripts/autotune-soak.lua) #long", function()
    local out, code = run(exe .. " scripts/autotune-soak.lua --kills 200")
    assert.equal(0, code, out)
    assert.matches("200 kills survived", out)
    print(out)
  end)
end)
