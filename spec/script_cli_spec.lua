-- script_cli_spec.lua — every script under scripts/ as a command-line tool: --help (usage, the
-- options with their defaults, an example, exit 0), an unknown option and a missing value
-- refused in one line with exit 2 and no traceback; the inputs validated before any work; the
-- option parser (xpu.cli) and the records' reader (report.decode_json) on their own.
local cli = require "xpu.cli"
local report = require "xpu.report"

local BIN = os.getenv("XPULUA") or "build/xpulua"

-- stdout, stderr and the exit status of a command line (in a fresh Autotune cache).
local function run(cmdline)
  local err, cache = os.tmpname(), os.tmpname()
  os.remove(cache)
  local p = assert(io.popen(("XPULUA_CACHE=%s %s 2>%s; echo \"exit $?\""):format(cache, cmdline, err)))
  local out = p:read("a")
  p:close()
  local f = io.open(err)
  local e = f:read("a")
  f:close()
  os.remove(err)
  os.execute("rm -rf " .. cache)
  local code = tonumber(out:match("exit (%d+)\n$"))
  return out:gsub("exit %d+\n$", ""), e, code
end

local function scripts(ext)
  local list = {}
  local p = io.popen("ls scripts/*." .. ext)
  for line in p:lines() do list[#list + 1] = line end
  p:close()
  return list
end

local function no_traceback(err, what)
  assert.not_matches("stack traceback", err, 1, true)
  assert.not_matches("%.lua:%d+:", err, what)
end

describe("every Lua script", function()
  for _, path in ipairs(scripts("lua")) do
    local name = path:match("([^/]+)%.lua$")
    it(name .. ": --help, an unknown option, a missing value", function()
      local out, err, code = run(BIN .. " " .. path .. " --help")
      assert.equal(0, code, err)
      assert.matches("^usage: xpulua scripts/" .. name:gsub("%-", "%%-") .. "%.lua", out)
      assert.matches("\noptions:\n", out)
      assert.matches("\n  %-h, %-%-help ", out)
      assert.matches("\nexample:\n  %S", out)
      for line in out:gmatch("\n  (%-%-[%w-]+ %S+)") do -- an option that takes a value names its default
        local opt = line:match("^%-%-[%w-]+")
        local help = out:match("\n  " .. opt:gsub("%-", "%%-") .. " [^\n]*\n?[^\n]*")
        assert.matches("default ", help, 1, true)
      end
      out, err, code = run(BIN .. " " .. path .. " --no-such-option")
      assert.equal(2, code, err)
      assert.equal("", out)
      assert.matches("^" .. name:gsub("%-", "%%-") .. ": unknown option '%-%-no%-such%-option' %([^\n]+%)\n$", err)
      no_traceback(err, name)
      -- the first option that takes a value, given none
      local _, _, _ = nil, nil, nil
      local help = run(BIN .. " " .. path .. " --help")
      local opt = help:match("\n  (%-%-[%w-]+) [^%s%-]")
      if opt then
        out, err, code = run(BIN .. " " .. path .. " " .. opt)
        assert.equal(2, code, err)
        assert.equal(name .. ": " .. opt .. " needs a value\n", err)
        no_traceback(err, name)
      end
    end)
  end
end)

describe("every shell script", function()
  for _, path in ipairs(scripts("sh")) do
    local name = path:match("([^/]+)%.sh$")
    it(name .. ": --help", function()
      local out, err, code = run("sh " .. path .. " --help")
      assert.equal(0, code, err)
      assert.matches("^usage: [^\n]*" .. name:gsub("%-", "%%-") .. "%.sh", out)
    end)
  end
end)

-- "a, b or c": the served formats as a refused --format lists them
local function format_choices()
  local names = {}
  for i, f in ipairs(require("xpu").formats()) do names[i] = f.name end
  return table.concat(names, ", ", 1, #names - 1) .. " or " .. names[#names]
end

describe("inputs are validated before any work", function()
  local cases = {
    { "bench-decode.lua --rows 64", "bench-decode: --rows without --cols: give both" },
    { "bench-decode.lua --cols 512", "bench-decode: --cols without --rows" },
    { "bench-decode.lua --format q9_9", "bench-decode: --format 'q9_9': not " .. format_choices() .. "\n" },
    { "bench-decode.lua --format q4_K --rows 64 --cols 128", "--cols 128: not a multiple of 256" },
    { "bench-decode.lua --format q4_0 --rows 1000000000 --cols 4096", "do not fit half of cpu:0's" },
    { "bench-decode.lua --grid lots", "--grid 'lots': not launcher, rows, resident or a whole number" },
    { "bench-shape-ops.lua --ops flipp", "--ops 'flipp': no op 'flipp' (the closest is flip;" },
    { "bench-shape-ops.lua --ops flip,,copy", "no op ''" },
    { "bench-shape-ops.lua --mib 100000000", "--mib 100000000: an op's input, output and gate" },
    { "bench-shape-ops.lua --pad-mode mirror", "--pad-mode 'mirror': not constant, reflect or replicate\n" },
    { "bench-id.lua --experts 4 --used 8", "--used 8: more than the bank's 4 --experts" },
    { "bench-id.lua --format q4_0 --cols 300", "--cols 300: not a multiple of 256" },
    { "bench-prefill.lua --experts 4 --used 8", "bench-prefill: --used 8: more than the bank's 4 --experts" },
    { "bench-prefill.lua --format q4_0,q9_9", "bench-prefill: --format: 'q9_9' is not a served format" },
    { "bench-prefill.lua --format q4_K --cols 384", "--cols 384: not a multiple of 256" },
    { "bench-matvec-kernel.lua --shape 64x300", "--shape '64x300': not ROWSxCOLS" },
    { "bench-matvec-kernel.lua --kernel nosuch_kernel", "--kernel 'nosuch_kernel': cpu:0 has no such kernel" },
    { "shape-ops-dump.lua --device cpu:0 --out /dev/null --ops cumsun", "--ops 'cumsun': no op 'cumsun' (the closest is cumsum;" },
    { "shape-ops-dump.lua --compare a.bin", "--compare takes two dump files" },
    { "bandwidth.lua --mib 100000000", "bandwidth: --mib 100000000 (a source and a destination): needs 200000000 MiB, more than cpu:0's" },
    { "audit.lua", "audit: MODEL is missing" },
    { "audit.lua a.gguf b c", "unexpected argument 'c'" },
    { "bandwidth.lua --mib=1.5", "bandwidth: --mib '1.5': not a whole number of MiB\n" },
    { "bench-launch.lua --jsonl=yes", "--jsonl takes no value" },
    { "bench-shape-ops.lua --contracts /nonexistent/c.md", "--contracts /nonexistent/c.md: " },
    { "bench-kv-write.lua --contracts /nonexistent/c.md", "--contracts /nonexistent/c.md: " },
    { "bench-decode.lua -o xml", "--output 'xml': not table, jsonl or csv\n" },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local out, err, code = run(BIN .. " scripts/" .. c[1])
      assert.equal(2, code, err)
      assert.equal("", out)
      assert.matches(c[2], err, 1, true)
      assert.equal(1, select(2, err:gsub("\n", "")), err) -- one line
      no_traceback(err, c[1])
    end)
  end
end)

describe("xpu.cli", function()
  local spec = {
    name = "t",
    options = {
      { "n", "int", 3, "count", unit = "runs" },
      { "rate", "number", nil, "rate", unit = "GB/s", min = 0 },
      { "mode", "choice", "a", "mode", choices = { "a", "b" } },
      { "dev", "string", nil, "device", key = "devices", repeatable = true },
      { "fast", "flag", nil, "fast" },
    },
    args = { { "FILE", "file" } },
    output = true,
  }
  it("fills defaults, converts values, collects repeated ones, takes --name=value and positionals", function()
    local o = cli.parse({ "--dev", "x", "--dev=y", "--rate", "2.5", "--fast", "f.txt", "-o", "csv" }, spec)
    assert.equal(3, o.n)
    assert.equal(2.5, o.rate)
    assert.equal("a", o.mode)
    assert.same({ "x", "y" }, o.devices)
    assert.is_true(o.fast)
    assert.equal("f.txt", o.file)
    assert.equal("csv", o.output)
    assert.equal("jsonl", cli.parse({ "--jsonl" }, spec).output)
    assert.equal(math.tointeger(7), cli.parse({ "--n", "7" }, spec).n)
    assert.equal(-1.5, cli.parse({ "--rate", "-1.5" }, { name = "t", options = { { "rate", "number", nil, "r" } } }).rate)
  end)
  it("names the closest option to a typo and lists them all where none is near", function()
    assert.equal("--mode", (cli.closest("--mdoe", { "--n", "--mode", "--fast" })))
    assert.matches("^usage: xpulua scripts/t%.lua %[options%] %[FILE%]\n", cli.help(spec))
    assert.matches("\n  %-%-n N +count %(runs%); default 3\n", cli.help(spec))
    assert.matches("\n  %-%-mode a|b +mode; default a\n", cli.help(spec))
  end)
end)

describe("report records", function()
  it("decode_json reads back what report.json writes, nested and escaped", function()
    local r = { a = 1, b = "x\"y\n", c = { 1, 2.5, "z" }, d = true, e = { k = -3e-7 } }
    local back = assert(report.decode_json(report.json(r)))
    assert.same(r, back)
    assert.is_nil((report.decode_json('{"a":1,}x')))
    assert.equal(report.NULL, report.decode_json('{"a":null}').a)
  end)
  it("table_stream writes the header at once and each row as it comes, flushed, aligned as the header", function()
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    local row = report.table_stream({ title = "t", header = { "name", "us" }, widths = { 6, 5 } }, f)
    local function seen() local g = io.open(path); local text = g:read("a"); g:close(); return text end
    assert.equal("t\nname    us\n------  -----\n", seen())
    row { "q4_0", 12.5 }
    assert.equal("t\nname    us\n------  -----\nq4_0     12.5\n", seen())
    f:close()
    os.remove(path)
  end)

  it("stats carry the standard deviation and the count", function()
    local st = report.stats { 3, 1, 2 }
    assert.equal(2, st.median)
    assert.equal(3, st.n)
    assert.near(1, st.stddev, 1e-12)
    assert.equal(0, report.stats({ 5 }).stddev)
  end)
end)

describe("one output discipline", function()
  it("bench-launch: -o jsonl records carry the run's facts and the stats; -o csv a header and a row each; tables on stderr", function()
    local out, err, code = run(BIN .. " scripts/bench-launch.lua --n 4 --passes 3 -o jsonl")
    assert.equal(0, code, err)
    local n = 0
    for line in out:gmatch("[^\n]+") do
      local r = assert(report.decode_json(line), line)
      n = n + 1
      for _, f in ipairs { "date", "device", "driver", "commit", "command", "median", "min", "max", "stddev", "n" } do
        assert.is_not_nil(r[f], f)
      end
      assert.equal(3, r.n)
      assert.matches("'%-o' 'jsonl'", r.command)
      assert.same({ "mode", "launches" }, r.key)
    end
    assert.equal(2, n)
    assert.matches("launch cost on cpu:0", err)
    out, err, code = run(BIN .. " scripts/bench-launch.lua --n 4 --passes 3 -o csv")
    assert.equal(0, code, err)
    local lines = {}
    for line in out:gmatch("[^\n]+") do lines[#lines + 1] = line end
    assert.equal(3, #lines, out)
    assert.matches("^bench,command,commit,date,", lines[1])
    out, err, code = run(BIN .. " scripts/bench-launch.lua --n 4 --passes 3")
    assert.equal(0, code, err)
    assert.matches("^launch cost on cpu:0", out)
    assert.equal("", err)
  end)

  it("bench-decode with two devices: each device's table on stdout in table mode, records alone on stdout with -o jsonl", function()
    local args = " scripts/bench-decode.lua --device cpu:0 --device cpu:0 --format q4_0 --rows 64 --cols 512 --n 2 --copies 2"
    local out, err, code = run(BIN .. args)
    assert.equal(0, code, err)
    local _, tables = out:gsub("\ndecode mat%-vec %(", "")
    assert.equal(2, tables, out)
    assert.matches("\ndecode mat%-vec side by side", out)
    assert.not_matches('\n{', out)
    out, err, code = run(BIN .. args .. " -o jsonl")
    assert.equal(0, code, err)
    for line in out:gmatch("[^\n]+") do assert.is_truthy(report.decode_json(line), line) end
    assert.matches("decode mat%-vec side by side", err)
  end)

  it("compare.lua: rows matched on their key fields, A, B and B/A, the unmatched named", function()
    local a, b = os.tmpname(), os.tmpname()
    local f = io.open(a, "w")
    f:write('{"bench":"x","key":["fmt"],"fmt":"q4_0","median":2.0,"date":"d1"}\n',
            '{"bench":"x","key":["fmt"],"fmt":"q8_0","median":4.0}\n')
    f:close()
    f = io.open(b, "w")
    f:write('{"bench":"x","key":["fmt"],"fmt":"q8_0","median":2.0,"date":"d2"}\n',
            '{"bench":"x","key":["fmt"],"fmt":"q4_0","median":3.0}\n',
            '{"bench":"x","key":["fmt"],"fmt":"q6_K","median":1.0}\n')
    f:close()
    local out, err, code = run(("%s scripts/compare.lua %s %s"):format(BIN, a, b))
    assert.equal(0, code, err)
    assert.matches("\nx fmt=q4_0 +2 +3 +1%.500\nx fmt=q8_0 +4 +2 +0%.500\n", out)
    assert.matches("\nx fmt=q6_K +" .. b:gsub("%p", "%%%0"), out)
    out, err, code = run(("%s scripts/compare.lua %s %s -o jsonl"):format(BIN, a, b))
    assert.equal(0, code, err)
    local first = report.decode_json(out:match("^[^\n]+"))
    assert.equal(1.5, first.b_over_a)
    local _, e2, c2 = run(("%s scripts/compare.lua %s /nonexistent.jsonl"):format(BIN, a))
    assert.equal(2, c2)
    assert.matches("/nonexistent.jsonl", e2, 1, true)
    os.remove(a)
    os.remove(b)
  end)
end)

describe("deterministic output", function()
  it("bench-shape-ops names write_slice's shape by its largest operand in every process (not pairs' order)", function()
    local shapes = {}
    for _ = 1, 8 do
      local out, err, code = run(BIN .. " scripts/bench-shape-ops.lua --device cpu:0 --mib 1 --reps 1 --warm-ms 0 --again 0 "
        .. "--ops write_slice -o jsonl")
      assert.equal(0, code, err)
      shapes[report.json(assert(report.decode_json(out:match("^[^\n]+"))).shape)] = true
    end
    assert.same({ ["[256,1024]"] = true }, shapes) -- dest (1 MiB of f32, rows of 1024), never source
  end)
end)

describe("a script run from another directory", function()
  it("finds the contract file beside its scripts/ directory", function()
    local here = io.popen("pwd"):read("l")
    local bin = BIN:sub(1, 1) == "/" and BIN or here .. "/" .. BIN
    local out, err, code = run(("cd /tmp && %s %s/scripts/bench-shape-ops.lua --device cpu:0 --mib 1 --reps 1 "
      .. "--warm-ms 0 --again 0 --ops flip"):format(bin, here))
    assert.equal(0, code, err)
    assert.matches("\nflip +2097152 ", out)
    no_traceback(err, "bench-shape-ops")
  end)
end)
