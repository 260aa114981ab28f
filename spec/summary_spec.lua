-- summary_spec.lua — the test runner's output (spec/summary.lua, scripts/test.sh): the five
-- slowest spec files with their seconds, slowest first, before the closing summary line; the
-- specs test.sh selects (tagged #long or not), and a set it does not know refused by name.
local BIN = arg and arg[-1] or "build/xpulua"

local function write(path, s)
  local f = assert(io.open(path, "w"))
  f:write(s)
  f:close()
end

-- Runs command (stdout and stderr), returns its output and exit status.
local function run(command)
  local p = assert(io.popen(command .. " 2>&1; echo \"exit $?\""))
  local out = p:read("a")
  p:close()
  return out:match("^(.-)exit (%d+)\n$")
end

describe("spec/summary.lua", function()
  it("names the five slowest spec files, slowest first, then the summary line last", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir " .. dir))
    local files = {}
    for i = 1, 6 do -- file i takes i * 200 ms (wall clock, which the list reports; steps wide
      -- enough that a loaded machine's fork and exec do not reorder them)
      files[i] = ("%s/f%d_spec.lua"):format(dir, i)
      write(files[i], ([[
        it("sleeps %d", function() os.execute("sleep %g") end)
        %s
      ]]):format(i, i * 0.2, i == 6 and 'pending("not yet")' or ""))
    end
    -- the busted this spec runs under (/usr/bin/busted, or the copy a GPU machine carries)
    local busted = arg and arg[0] or "/usr/bin/busted"
    local out, code = run(("%s %s --output=spec/summary.lua %s"):format(BIN, busted, table.concat(files, " ")))
    os.execute("rm -rf " .. dir)
    assert.equal("0", code, out)
    local list, last = out:match("\nslowest spec files:\n(.-)([^\n]+)\n$")
    assert.truthy(list, out)
    assert.equal("6 passed, 0 failed, 1 skipped", last)
    local names, seconds = {}, {}
    for s, name in list:gmatch(" *([%d.]+) s  ([^\n]+)\n") do
      names[#names + 1], seconds[#seconds + 1] = name, tonumber(s)
    end
    assert.same({ files[6], files[5], files[4], files[3], files[2] }, names)
    for i = 2, 5 do assert.is_true(seconds[i - 1] >= seconds[i], list) end
    assert.is_true(seconds[1] >= 1.15, list)
  end)
end)

describe("scripts/test.sh", function()
  -- `echo` for the binary: the busted command line test.sh would run, printed, nothing run
  it("runs the specs not tagged long by default, only those tagged with long, and refuses another set by name, exit 2", function()
    local out, code = run("scripts/test.sh echo")
    assert.equal("0", code)
    assert.equal("/usr/bin/busted --output=spec/summary.lua --exclude-tags=long spec/\n", out)
    out, code = run("scripts/test.sh echo long")
    assert.equal("0", code)
    assert.equal("/usr/bin/busted --output=spec/summary.lua --tags=long spec/\n", out)
    out, code = run("scripts/test.sh echo longest")
    assert.equal("2", code)
    assert.equal("test.sh: unknown set 'longest' (give none, or long)\n", out)
  end)
end)
