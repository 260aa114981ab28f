-- scripts_spec.lua — the experiment scripts, run as a user runs them: the audit of a generated
-- GGUF, the route tables per model (the Autotune store's specs are in autotune_spec.lua).
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
        if r.regime == "moe_tail" or r.regime == "moe_tail_norm" then -- the down bank's one-token query
          for _, q in ipairs { fits, misfit } do q.regime, q.experts, q.used = r.regime, 8, 8 end
        end
        if r.format == "f32" then misfit.experts = 8 end -- the router's f32 mat-vec takes any width, no bank
        if r.name:match("dot4") then assert.same({ "dot4_i8" }, r.needs) end
        local fires, refuses = t:audit_row(r, { xpu.query(fits), xpu.query(misfit) })
        assert.equal(1, fires, r.name)
        assert.equal(1, refuses, r.name)
      end
      -- per format: its decode rows (wave, dot4 wave; moe adds id, dot4 id, the two tails and the two
      -- tails-and-norm) and its split
      -- rows (3 with a row prefix, 2 without); moe adds the router's f32 mat-vec
      local split_rows = 0
      for _, f in ipairs(common.decode_formats) do split_rows = split_rows + (xpu.quant.info(f).scale_bytes > 0 and 3 or 2) end
      assert.equal(#common.decode_formats * (name == "routes.moe" and 8 or 2) + split_rows + (name == "routes.moe" and 1 or 0),
        #t)
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
