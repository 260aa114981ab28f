-- scripts_spec.lua — the experiment scripts and the Autotune store, run as a user runs them:
-- the audit of a generated GGUF, the route tables per model, Autotune's atomic file with
-- entries validated one by one.
local xpu = require "xpu"

local exe = arg and arg[-1] or "build/xpulua"

local function run(cmd)
  local p = io.popen(cmd .. " 2>&1; echo \"exit=$?\"")
  local out = p:read("a")
  p:close()
  local code = tonumber(out:match("exit=(%d+)%s*$"))
  return out, code
end

local function q4_0_rows(rows, cols)
  return ("\1\60" .. ("\x5a"):rep(16)):rep(rows * cols // 32)
end

describe("scripts/tour.lua (make run)", function()
  it("lists the devices, then bit-gates and times every decode format on the CPU, saying where the weights sat #long", function()
    local out, code = run(exe .. " scripts/tour.lua")
    assert.equal(0, code, out)
    assert.matches("cpu:0  [^\n]+, last%-level cache [%w ]+, %d+ MiB, integrated\n", out)
    assert.matches("decode mat%-vec on cpu:0, 4096x4096, two weight copies", out)
    for _, f in ipairs(xpu.formats()) do
      local fmt = f.name
      assert.matches("\n" .. fmt .. " +== +%d+ +[%d.]+ +[%d.]+\n", out)
    end
    assert.not_matches("FAIL", out)
  end)
end)

describe("scripts/audit.lua", function()
  local path = os.tmpname()
  after_each(function() os.remove(path) end)

  it("names the tensor no row serves and the row that got furthest, and exits 1", function()
    xpu.gguf.write(path, {
      meta = { { "general.architecture", "string", "llama" } },
      tensors = {
        { name = "blk.0.attn_q.weight", dims = { 256, 32 }, type = "q4_0", data = q4_0_rows(32, 256) },
        { name = "blk.0.ffn_down.weight", dims = { 256, 4 }, type = "q2_K", data = ("\7"):rep(4 * 84) },
        { name = "blk.0.ffn_up.weight", dims = { 256, 4 }, type = "q5_K", data = ("\7"):rep(4 * 176) },
        { name = "blk.0.ffn_gate.weight", dims = { 256, 4 }, type = "q5_0", data = ("\7"):rep(4 * 8 * 22) },
        { name = "blk.0.attn_norm.weight", dims = { 256 }, type = "f32", data = ("\0\0\128\63"):rep(256) },
      },
    })
    local out, code = run(exe .. " scripts/audit.lua " .. path)
    assert.equal(1, code, out)
    assert.matches("route table 'llama'", out)
    assert.matches("unserved tensors: 1", out)
    assert.matches("blk.0.ffn_down.weight", out)
    assert.matches("no row admits q2_K decode; row 'q4_0%-dot4%-wave' got furthest, refused at Format", out)
    -- 8 decode rows of absent formats + 19 bind rows (a split row per way it runs: 3 for each
    -- of the five formats with a row prefix, 2 for q4_K and q5_K)
    assert.matches("rows that never fire: 27", out)
    -- the dot4 and the plain row both serve attn_q, and the q5_K and q5_0 tensors likewise
    assert.matches("shadowed queries: 3", out)
    for _, t in ipairs { "attn_q", "ffn_up", "ffn_gate" } do
      assert.matches("\nblk%.0%." .. t .. "%.weight +2\n", out)
    end
    assert.not_matches("attn_norm", out)
  end)

  it("takes the mixture table for an expert model and serves its 3-D banks with the id rows", function()
    xpu.gguf.write(path, {
      meta = { { "general.architecture", "string", "qwen2moe" }, { "qwen2moe.expert_count", "u32", 4 } },
      tensors = {
        { name = "blk.0.ffn_up_exps.weight", dims = { 256, 8, 4 }, type = "q4_0", data = q4_0_rows(32, 256) },
        { name = "blk.0.attn_q.weight", dims = { 256, 32 }, type = "q4_0", data = q4_0_rows(32, 256) },
      },
    })
    local out, code = run(exe .. " scripts/audit.lua " .. path)
    assert.equal(0, code, out)
    assert.matches("route table 'moe'", out)
    assert.matches("unserved tensors: 0", out)
  end)

  it("refuses a file it cannot read, naming the file", function()
    local f = io.open(path, "wb")
    f:write("GGUF\3\0\0\0")
    f:close()
    local out, code = run(exe .. " scripts/audit.lua " .. path)
    assert.equal(1, code)
    assert.matches(path, out, 1, true)
    out, code = run(exe .. " scripts/audit.lua /nonexistent/model.gguf")
    assert.equal(1, code)
    assert.matches("/nonexistent/model.gguf", out, 1, true)
  end)
end)

describe("route tables per model", function()
  local common = require "routes.common"
  for _, name in ipairs { "routes.llama", "routes.moe" } do
    it(name .. ": every row fires for its own format and not for a misfit", function()
      local t = require(name)
      assert.is_true(t.frozen)
      for _, r in ipairs(t:rows()) do
        local fits = { format = r.format, regime = "decode", in_dim = 4096, out_dim = 4096 }
        local misfit = { format = r.format, regime = "decode", in_dim = 4000, out_dim = 4096 }
        if r.regime == "bind" then
          fits = { format = r.format, regime = "bind", bpr = 16, block_base = 0, blocks = 32 } -- whole rows
          misfit = { format = r.format, regime = "bind" } -- no bpr: the split cannot lay rows out
        end
        if r.name:match("%-id$") then fits.experts, misfit.experts = 8, 8 end
        if r.name:match("dot4") then assert.same({ "dot4_i8" }, r.needs) end
        local fires, refuses = t:audit_row(r, { xpu.query(fits), xpu.query(misfit) })
        assert.equal(1, fires, r.name)
        assert.equal(1, refuses, r.name)
      end
      -- per format: its decode rows (wave, dot4 wave; moe adds id and dot4 id) and its split
      -- rows (3 with a row prefix, 2 without)
      local split_rows = 0
      for _, f in ipairs(common.decode_formats) do split_rows = split_rows + (xpu.quant.info(f).scale_bytes > 0 and 3 or 2) end
      assert.equal(#common.decode_formats * (name == "routes.moe" and 4 or 2) + split_rows, #t)
    end)
  end

  it("refuses at bind until the slab is bound and resident", function()
    local t = require "routes.llama"
    local q = xpu.query { format = "q6_K", regime = "decode", in_dim = 4096, out_dim = 4096 }
    local ok, err = pcall(t.bind, t, xpu.call { query = q, receiver = { bound = true } })
    assert.is_false(ok)
    assert.matches("refused at Ready: resident layout not done", err)
    -- the CPU builds no dot4 kernel: the dot4 row is refused as Unsupported, the plain row binds
    local c = xpu.call { query = q, receiver = { bound = true, resident = true } }
    assert.equal("q6_K-int-wave", t:bind(c).name)
    local cands = t:candidates(q, xpu.device "cpu:0")
    assert.equal(1, #cands)
    assert.equal("q6_K-int-wave", cands[1].name)
  end)
end)

describe("Autotune", function()
  local autotune = require "xpu.autotune"
  local dir = os.tmpname()
  local saved = os.getenv("XPULUA_CACHE")
  local cpu = xpu.device "cpu:0"

  -- The store reads XPULUA_CACHE; specs run with a private directory.
  local real_getenv = os.getenv
  before_each(function()
    os.remove(dir)
    os.execute("rm -rf '" .. dir .. "'")
    os.getenv = function(k) if k == "XPULUA_CACHE" then return dir end return real_getenv(k) end
  end)
  after_each(function()
    os.getenv = real_getenv
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("remembers and recalls, per key and per shape, across processes", function()
    autotune.remember(cpu, "bandwidth.read_gbs", 31.5)
    autotune.remember_for(cpu, "tile", { 4096, 14336 }, "x3")
    assert.equal(31.5, autotune.recall(cpu, "bandwidth.read_gbs"))
    assert.equal("x3", autotune.recall_for(cpu, "tile", { 4096, 14336 }))
    assert.is_nil(autotune.recall_for(cpu, "tile", { 4096, 4096 }))
    local out = run("XPULUA_CACHE='" .. dir .. "' " .. exe ..
      [[ -e 'print(require"xpu.autotune".recall(require"xpu".device"cpu:0", "bandwidth.read_gbs"))']])
    assert.matches("^31.5", out)
  end)

  it("drops a malformed or stale line alone, and says so", function()
    autotune.remember(cpu, "a", 1)
    autotune.remember(cpu, "b", 2)
    local path = autotune.path(cpu)
    local f = io.open(path, "a")
    f:write("garbage without tabs\n")
    f:write("other-device|x|y|z\t", xpu.kernel_hash, "\tc\t3\n")      -- another fingerprint
    f:write(cpu:fingerprint(), "\tdeadbeef0000\td\t4\n")               -- other kernel code
    f:close()
    assert.equal(1, autotune.recall(cpu, "a"))
    assert.equal(2, autotune.recall(cpu, "b"))
    assert.is_nil(autotune.recall(cpu, "c"))
    assert.is_nil(autotune.recall(cpu, "d"))
    local out = run("XPULUA_CACHE='" .. dir .. "' " .. exe ..
      [[ -e 'print(require"xpu.autotune".recall(require"xpu".device"cpu:0", "b"))']])
    assert.matches("malformed entry ignored", out)
    assert.matches("\n2\n", "\n" .. out)
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
    for i = 1, 6 do f:write(cpu:fingerprint(), "\tbinary", i, "\tbandwidth.copy_gbs\t", 100 + i, "\n") end
    f:write("other-driver\t", xpu.kernel_hash, "\tbandwidth.copy_gbs\t7\n")
    f:close()
    autotune.remember(cpu, "mine", 2)
    assert.equal(2, autotune.recall(cpu, "mine"))
    assert.equal(nil, autotune.recall(cpu, "bandwidth.copy_gbs")) -- not this binary's to read
    f = io.open(path)
    local text = f:read("a")
    f:close()
    for i = 1, 6 do
      assert.equal(i > 2, text:find("\tbinary" .. i .. "\tbandwidth.copy_gbs\t" .. (100 + i) .. "\n", 1, true) ~= nil,
        "binary " .. i .. "'s entry")
    end
    assert.is_nil(text:find("other-driver", 1, true))
    assert.matches("\tmine\t2\n$", text)
  end)

  it("writes atomically: no temporary file is left and the file is whole", function()
    for i = 1, 20 do autotune.remember(cpu, "k" .. i, i) end
    local p = io.popen("ls '" .. dir .. "'")
    local listing = p:read("a")
    p:close()
    assert.not_matches("%.tmp", listing)
    for i = 1, 20 do assert.equal(i, autotune.recall(cpu, "k" .. i)) end
    assert.has_error(function() autotune.remember(cpu, "bad\tkey", 1) end)
  end)

  it("two processes writing at once leave a readable file", function()
    local cmd = ("XPULUA_CACHE='%s' %s -e 'local a=require\"xpu.autotune\" local d=require\"xpu\".device\"cpu:0\" for i=1,30 do a.remember(d, \"%%s\"..i, i) end'"):format(dir, exe)
    os.execute("(" .. cmd:format("p") .. " & " .. cmd:format("q") .. " & wait) >/dev/null 2>&1")
    local out = run("XPULUA_CACHE='" .. dir .. "' " .. exe ..
      [[ -e 'print(require"xpu.autotune".recall(require"xpu".device"cpu:0", "p30"), require"xpu.autotune".recall(require"xpu".device"cpu:0", "q30"))']])
    assert.not_matches("malformed", out)
    assert.matches("%d", out)
  end)
end)

describe("scripts/shape-ops-dump.lua", function()
  local a, b = os.tmpname(), os.tmpname()
  after_each(function()
    for _, p in ipairs { a, b } do os.remove(p); os.remove(p .. ".idx") end
  end)

  local function read(p) local f = assert(io.open(p, "rb")); local s = f:read("a"); f:close(); return s end
  local function write(p, s) local f = assert(io.open(p, "wb")); f:write(s); f:close() end

  it("finds two runs of a build identical, tells NaN payloads from other differences, and names the item", function()
    for _, p in ipairs { a, b } do
      local out, code = run(exe .. " scripts/shape-ops-dump.lua --device cpu:0 --ops flip,copy --out " .. p)
      assert.equal(0, code, out)
      assert.matches("outputs of cpu:0 into", out)
    end
    local out, code = run(exe .. " scripts/shape-ops-dump.lua --compare " .. a .. " " .. b)
    assert.equal(0, code, out)
    assert.matches("(%d+) cases: %1 identical, 0 NaN payloads only, 0 differ", out)
    -- the first f32 flip case: its first item a NaN on both sides, other payloads
    local at, n = read(a .. ".idx"):match("flip\tf32\t[^\t]+\t(%d+)\t(%d+)\n")
    at = tonumber(at)
    assert.is_true(tonumber(n) >= 8)
    local sa, sb = read(a), read(b)
    write(a, sa:sub(1, at) .. string.pack("<I4", 0x7fc00001) .. sa:sub(at + 5))
    write(b, sb:sub(1, at) .. string.pack("<I4", 0x7fc00002) .. sb:sub(at + 5))
    out, code = run(exe .. " scripts/shape-ops-dump.lua --compare " .. a .. " " .. b)
    assert.equal(0, code, out)
    assert.matches("flip +f32 [^\n]+ 1 +1 +NaN payloads only", out)
    assert.matches("1 NaN payloads only, 0 differ", out)
    -- its second item one bit off: a difference, named, and exit 1
    sb = read(b)
    local x = string.unpack("<I4", sb, at + 5)
    write(b, sb:sub(1, at + 4) .. string.pack("<I4", x ~ 1) .. sb:sub(at + 9))
    out, code = run(exe .. " scripts/shape-ops-dump.lua --compare " .. a .. " " .. b)
    assert.equal(1, code, out)
    assert.matches("flip +f32 [^\n]+ 2 +1 +item 1: ", out)
    assert.matches("0 NaN payloads only, 1 differ", out)
    -- an integer dtype's item: a difference too (integers have no NaN)
    local at8 = tonumber(read(b .. ".idx"):match("flip\tu8\t[^\t]+\t(%d+)\t%d+\n"))
    sb = read(b)
    write(b, sb:sub(1, at8) .. string.char(sb:byte(at8 + 1) ~ 0x80) .. sb:sub(at8 + 2))
    out, code = run(exe .. " scripts/shape-ops-dump.lua --compare " .. a .. " " .. b)
    assert.equal(1, code, out)
    assert.matches("flip +u8 [^\n]+ 1 +0 +item 0: ", out)
    assert.matches("0 NaN payloads only, 2 differ", out)
  end)

  it("refuses dumps of other cases, or a missing index, naming the file", function()
    local out, code = run(exe .. " scripts/shape-ops-dump.lua --device cpu:0 --ops flip --out " .. a)
    assert.equal(0, code, out)
    out, code = run(exe .. " scripts/shape-ops-dump.lua --device cpu:0 --ops copy --out " .. b)
    assert.equal(0, code, out)
    out, code = run(exe .. " scripts/shape-ops-dump.lua --compare " .. a .. " " .. b)
    assert.equal(1, code, out)
    assert.matches("lists %d+ cases, " .. b:gsub("%p", "%%%0") .. " %d+", out)
    os.remove(b .. ".idx")
    out, code = run(exe .. " scripts/shape-ops-dump.lua --compare " .. a .. " " .. b)
    assert.equal(1, code, out)
    assert.matches(b:gsub("%p", "%%%0") .. "%.idx", out)
  end)
end)
