-- fuzz_found_spec.lua — what the fuzz targets (spec/fuzz/, `make fuzz`) and the review of
-- their areas found, each kept as a spec: the minimized inputs live in spec/fixtures/fuzz/
-- (named <target>-<what>), and each is fed back through the same code path the target drove.
local xpu = require "xpu"

local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read "a"
  f:close()
  return s
end

-- A row whose shape half asks its own table again; `how` is the call it makes.
local function reentrant(how)
  local t = xpu.new_routes "reenter"
  local cpu = xpu.device "cpu:0"
  local inner
  local q
  t:register { name = "self", kernel = "copy_bytes", regime = "decode", format = "q4_0", facts = { "in_dim" },
               shape = function()
                 local ok, err = pcall(how, t, q, cpu)
                 inner = inner or (ok and "no error" or tostring(err))
               end }
  q = xpu.query { format = "q4_0", regime = "decode", in_dim = 256 }
  return t, q, cpu, function() return inner end
end

describe("route tables refuse re-entry from a row's own half", function()
  local call = function(q, cpu) return xpu.call { query = q, device = cpu, receiver = {} } end
  local cases = {
    { "pick", function(t, q, cpu) return t:pick(call(q, cpu)) end },
    { "why_not_picked", function(t, q, cpu) return t:why_not_picked(call(q, cpu)) end },
    { "audit", function(t, q) return t:audit { q } end },
    { "admissible", function(t, q, cpu) return t:admissible(q, cpu) end },
    { "register", function(t) return t:register { name = "late", kernel = "copy_bytes", regime = "decode", format = "q4_0" } end },
  }
  for _, outer in ipairs { "pick", "why_not_picked", "audit" } do
    for _, c in ipairs(cases) do
      it(("t:%s inside t:%s is refused by name, once, and the outer call completes"):format(c[1], outer), function()
        local t, q, cpu, inner = reentrant(c[2])
        if outer == "pick" then t:pick(call(q, cpu))
        elseif outer == "why_not_picked" then tostring(t:why_not_picked(call(q, cpu)))
        else t:audit { q } end
        local err = inner()
        assert.truthy(err:find(("route table 'reenter': t:%s called from inside its own t:%s"):format(c[1], outer), 1, true), err)
        -- the table works again once the outer call has returned
        assert.equal("self", t:admissible(q, cpu).name)
        assert.equal(1, #t:rows())
      end)
    end
  end

  it("the script fuzz_route made that hung in t:audit now ends at once, every re-entry refused", function()
    local env = setmetatable({}, { __index = _G })
    local chunk = assert(loadfile("spec/fixtures/fuzz/route-reenter-audit.lua", "t", env))
    local t0 = os.clock()
    chunk()
    assert.is_true(os.clock() - t0 < 2, "the script took " .. (os.clock() - t0) .. " s")
    -- its table is whole afterwards: the rows it registered outside any half are there
    assert.is_true(#env.T:rows() >= 2)
  end)
end)

describe("buffers: sizes and offsets at the edges of lua_Integer", function()
  local cpu = xpu.device "cpu:0"

  -- Under UBSan (make check-asan, or build/fuzz/xpulua) the old code aborted here: the default
  -- length bytes - offset overflowed before the offset was checked.
  it("b:download / b:slice with offset math.mininteger and no length are refused as negative", function()
    local b = cpu:buffer(16)
    local ok, err = pcall(b.download, b, math.mininteger)
    assert.is_false(ok)
    assert.matches("offset is negative", err)
    ok, err = pcall(b.slice, b, math.mininteger)
    assert.is_false(ok)
    assert.matches("must not be negative", err)
    -- past the end, the default length is 0 and the range error names the offset
    ok, err = pcall(b.download, b, 20)
    assert.is_false(ok)
    assert.matches("at offset 20 is outside the 16%-byte buffer", err)
    assert.equal(12, #b:slice(4))
    assert.equal(4, #b:download(12))
  end)

  it("d:buffer refuses a size beyond the device's memory, naming the device and its memory", function()
    for _, n in ipairs { math.maxinteger, 1 << 62, cpu.memory_bytes + 1 } do
      local ok, err = pcall(cpu.buffer, cpu, n)
      assert.is_false(ok)
      assert.equal(("d:buffer(%d): %d bytes is more than cpu:0 has (%d bytes of memory)"):format(n, n, cpu.memory_bytes),
        err:gsub("^.-: d:buffer", "d:buffer"))
    end
  end)

  it("sizes and offsets of 2^31 and more print whole in __tostring and range errors", function()
    -- 4 GiB + 5 bytes, never touched: the host maps the pages only when they are written
    local big = cpu:buffer((1 << 32) + 5)
    assert.equal("buffer 4294967301 bytes at +0 on cpu:0", tostring(big))
    local view = big:slice(1 << 32)
    assert.equal("buffer 5 bytes at +4294967296 on cpu:0", tostring(view))
    local ok, err = pcall(big.download, big, 1 << 32, 10)
    assert.is_false(ok)
    assert.matches("download of 10 bytes at offset 4294967296 is outside the 4294967301%-byte buffer", err)
    view:release()
    big:release()
  end)
end)

-- The command line (fuzz_cli): a fixture holds the arguments after `xpulua`, each ended by a
-- NUL (the last one need not be), as the target splits its input.
describe("xpulua's command line", function()
  local exe = arg and arg[-1] or "build/xpulua"
  local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end
  local function run_fixture(name, stdin)
    local args = {}
    for a in (slurp("spec/fixtures/fuzz/" .. name) .. "\0"):gmatch("([^%z]*)%z") do args[#args + 1] = sh_quote(a) end
    local p = io.popen(("printf %%s %s | %s %s 2>&1; echo \"exit=$?\""):format(sh_quote(stdin), exe, table.concat(args, " ")))
    local out = p:read("a")
    p:close()
    return out
  end

  it("takes a `--` that ends the command line as no script: stdin runs, as in lua (it was read as a script at argv[argc])", function()
    -- before: the script index was argc, the arg table was made with -1 positive entries and
    -- the run stopped on "not enough memory"
    assert.equal("stdin ran\nexit=0\n", run_fixture("cli-dashdash-last", "print('stdin ran')"))
    assert.equal("e ranexit=0\n", run_fixture("cli-dashdash-after-e", "print('stdin ran')"))
  end)
end)
