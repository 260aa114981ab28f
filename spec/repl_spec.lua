-- repl_spec.lua — the REPL of `xpulua`: `xpu` and `help` as its globals (and only its), plain
-- tables laid out, xpu objects through their __tostring, the audit's printer and help().
-- Driven with -i on a pipe, and once through a pty (script(1)) where readline reads the lines.

local BIN = os.getenv("XPULUA") or "build/xpulua"

local fx = require "spec.support.fixtures"
local slurp = fx.slurp
local q = fx.quote
local tmpfile, remove_temps = fx.temps()

-- Runs `xpulua args...` with input on stdin; returns the exit code, stdout and stderr.
local function run(args, input)
	local cmd = { "env -u LUA_INIT -u LUA_INIT_5_4 -u XPULUA_INIT", q(BIN) }
	for _, a in ipairs(args) do cmd[#cmd + 1] = q(a) end
	local out, err = tmpfile(), tmpfile()
	local line = table.concat(cmd, " ") .. " < " .. q(tmpfile(input or "")) .. " > " .. q(out)
		.. " 2> " .. q(err)
	local _, _, code = os.execute(line)
	return code, slurp(out), slurp(err)
end

-- The REPL's answer to each line of input: the lines it printed after the prompt and the
-- echoed line ("> ..."), up to the next prompt; continuation lines (">> ...") are skipped.
local function answers(input, args)
	local code, out, err = run(args or { "-i" }, input)
	assert.are.equal(0, code, err)
	local blocks = {}
	for line in out:gmatch("([^\n]*)\n") do
		if line:sub(1, 2) == "> " then
			blocks[#blocks + 1] = {}
		elseif line:sub(1, 3) ~= ">> " and #blocks > 0 then
			table.insert(blocks[#blocks], line .. "\n")
		end
	end
	local replies = {}
	for i, b in ipairs(blocks) do replies[i] = table.concat(b) end
	if replies[#replies] == "" then replies[#replies] = nil end  -- the prompt at the end of input
	return replies, err
end

-- The one reply to a one-line input.
local function reply(line)
	local r = answers(line .. "\n")
	return r[1]
end

describe("xpulua REPL", function()
	teardown(function()
		remove_temps()
	end)

	describe("globals", function()
		it("has xpu and help in the REPL, neither in a script or -e", function()
			assert.are.equal("table\tfunction\ttrue\n", reply("type(xpu), type(help), xpu == require 'xpu'"))
			local _, out = run({ "-e", "print(xpu, help)" })
			assert.are.equal("nil\tnil\n", out)
			local script = tmpfile("print(rawget(_G, 'xpu'), rawget(_G, 'help'))")
			_, out = run({ script })
			assert.are.equal("nil\tnil\n", out)
		end)

		it("keeps a global xpu or help the user set first", function()
			local r = answers("=xpu, help\n", { "-e", "xpu = 5 help = 'mine'", "-i" })
			assert.are.equal("5\tmine\n", r[1])
		end)
	end)

	describe("showing values", function()
		it("shows a short plain table inline, strings quoted inside it", function()
			assert.are.equal("{1, 2, 3}\n", reply("{1, 2, 3}"))
			assert.are.equal('{[5] = true, a = 1, b = "x\\n", c = {1, {2, {...}}}}\n',
				reply('{a = 1, b = "x\\n", c = {1, {2, {3}}}, [5] = true}'))
			assert.are.equal("{}\n", reply("{}"))
		end)

		it("shows a long table one entry a line, the sequence first, then keys sorted", function()
			local r = reply("t = {} for i = 1, 10 do t[i] = i * i end t.name = 'sq' t.alpha = 0 return t")
			local want = { "{" }
			for i = 1, 10 do want[#want + 1] = ("  [%d] = %d"):format(i, i * i) end
			want[#want + 1] = "  alpha = 0"
			want[#want + 1] = '  name = "sq"'
			want[#want + 1] = "}"
			assert.are.equal(table.concat(want, "\n") .. "\n", r)
		end)

		it("shows a list of records as columns", function()
			local r = reply("{ {row = 'a', device = 'cpu:0', n = 1}, {row = 'bb', device = 'cpu:0', m = 2.5} }")
			assert.are.equal(
				"     device  m    n  row\n" ..
				"  1  cpu:0        1  a\n" ..
				"  2  cpu:0   2.5     bb\n", r)
		end)

		it("stops at a cycle and leaves top-level strings as they are", function()
			assert.are.equal("{self = {self = {self = {...}}}}\n", reply("t = {} t.self = t return t"))
			assert.are.equal("plain\tstring\n", reply("'plain', 'string'"))
		end)

		it("leaves print as lua's: tables print as addresses", function()
			assert.matches("^table: 0x%x+\n$", reply("print({1})"))
		end)

		it("shows xpu objects by their __tostring, inside tables too", function()
			local r = answers(table.concat({
				"xpu.device 'cpu:0'",
				"tostring(xpu.device 'cpu:0')",
				"xpu.new_routes('facts'):register { name = 'f', regime = 'decode', format = 'q4_0', kernel = 'copy_bytes', facts = { 'in_dim' } }"
					.. " q = xpu.query { format = 'q4_0', regime = 'decode', in_dim = 256 }",
				"{ q }",
				"'{' .. tostring(q) .. '}'",
				"t = xpu.new_routes 'repl' t:register { name = 'r1', regime = 'decode', format = 'q4_0', kernel = 'copy_bytes' }",
				"t:rows()",
				"'{' .. tostring(t:rows()[1]) .. '}'",
				"t:pick(xpu.call { query = xpu.query { format = 'q4_0', regime = 'decode' }, device = xpu.device 'cpu:0', receiver = {} }) ~= nil",
				"t:records()",
			}, "\n") .. "\n")
			assert.matches("^cpu:0  [^\n]*wave %d+", r[1])
			assert.are.equal(r[2], r[1])
			assert.matches("^{query q4_0 decode [^\n]*in_dim=256[^\n]*}\n$", r[4])
			assert.are.equal(r[5], r[4])
			assert.matches("^{row 'r1' [^\n]*}\n$", r[7])
			assert.are.equal(r[8], r[7])
			assert.are.equal("true\n", r[9])
			assert.are.equal("     device  format  regime  row\n  1  cpu:0   q4_0    decode  r1\n", r[10])
		end)
	end)

	describe("the audit's printer", function()
		it("lists every unserved query, never-firing row and shadowed query", function()
			local setup = {
				"t = xpu.new_routes 'audit-print'",
				"aligned = function(q) if q.in_dim % 256 ~= 0 then return 'in width not 256-aligned' end end",
				"t:register { name = 'q4-wave', regime = 'decode', format = 'q4_0', priority = 20, shape = aligned, kernel = 'copy_bytes', facts = { 'in_dim' } }",
				"t:register { name = 'q4-plain', regime = 'decode', format = 'q4_0', priority = 10, kernel = 'copy_bytes' }",
				"t:register { name = 'q6-wave', regime = 'decode', format = 'q6_K', shape = aligned, kernel = 'copy_bytes', facts = { 'in_dim' } }",
				"t:register { name = 'orphan', regime = 'prefill', format = 'iq4_nl', kernel = 'copy_bytes' }",
				"qs = { xpu.query { format = 'q4_0', regime = 'decode', in_dim = 4096 },"
					.. " xpu.query { format = 'q6_K', regime = 'decode', in_dim = 100 },"
					.. " xpu.query { format = 'q5_K', regime = 'decode', in_dim = 4096 } }",
				"t:audit(qs)",
				"tostring(qs[1])", "tostring(qs[2])", "tostring(qs[3])",
			}
			local r = answers(table.concat(setup, "\n") .. "\n")
			-- each query as its own __tostring says it, less the word "query"
			local shown = {}
			for i = 1, 3 do shown[i] = r[#r - 3 + i]:gsub("^query ", ""):gsub("\n$", "") end
			assert.matches("^q6_K decode ", shown[2])
			assert.are.equal(
				"audit: 3 queries x 4 rows, 2 unserved, 2 never firing, 1 shadowed\n" ..
				"  unserved      query 2    " .. shown[2] .. "   furthest: 'q6-wave' refused at Shape: in width not 256-aligned\n" ..
				"  unserved      query 3    " .. shown[3] .. "   furthest: 'q4-wave' refused at Format\n" ..
				"  never firing  row 3      orphan\n" ..
				"  never firing  row 4      q6-wave\n" ..
				"  shadowed      query 1    " .. shown[1] .. "   admitted by 'q4-wave' (priority 20), 'q4-plain' (priority 10)\n",
				r[#r - 3])
		end)

		it("says only the counts when nothing is wrong", function()
			local code, out = run({ "-e", "local xpu = require 'xpu' local t = xpu.new_routes 'ok' "
				.. "t:register { name = 'r', regime = 'decode', format = 'q4_0', kernel = 'copy_bytes' } "
				.. "print(t:audit { xpu.query { format = 'q4_0', regime = 'decode' } })" })
			assert.are.equal(0, code)
			assert.are.equal("audit: 1 queries x 1 rows, 0 unserved, 0 never firing, 0 shadowed\n", out)
		end)
	end)

	describe("help", function()
		-- Every entry of xpu.api(), in order.
		local function entries()
			local list = {}
			for _, s in ipairs(require("xpu").api()) do
				for _, e in ipairs(s) do list[#list + 1] = e end
			end
			return list
		end

		it("help() lists every entry of the API on one line, under its section", function()
			local r = reply("help()")
			local all = entries()
			assert.is_true(#all > 100)
			for _, e in ipairs(all) do
				local line = r:match("\n  (" .. e.signature:gsub("%p", "%%%0") .. " [^\n]*)\n")
				assert.is_not_nil(line, "help() lacks " .. e.name)
				assert.is_truthy(line:find(e.summary, 1, true), e.name .. ": " .. line)
			end
			assert.matches("^xpu\n", r)
			assert.matches("\nDevice\n", r, 1, true)
		end)

		it("help(f) and help 'name' show one entry", function()
			local want = "xpu\n  xpu.device([id]) -> Device"
			assert.are.equal(want, reply("help(xpu.device)"):sub(1, #want))
			assert.are.equal(reply("help(xpu.device)"), reply("help 'device'"))
			assert.are.equal(reply("help(xpu.device)"), reply("help 'xpu.device'"))
			local one = reply("help(xpu.device('cpu:0').supports)")
			assert.matches("^Device\n  d:supports%(cap%) %-> boolean +whether[^\n]*\n$", one)
			assert.matches("^gguf\n  xpu.gguf.write%(", reply("help(xpu.gguf.write)"))
		end)

		it("help(object) shows its type's methods; help(module function) finds it", function()
			local r = reply("help(xpu.device 'cpu:0')")
			assert.matches("^Device\n", r)
			local _, count = r:gsub("\n  d:", "")
			assert.are.equal(11, count)
			assert.matches("^Device\n  A device answers[^\n]*fields: id,", r)
			-- a type without methods: its section's words
			local query = reply("help(xpu.query { format = 'q4_0', regime = 'decode' })")
			assert.matches("^Query and Call\n  xpu.query and xpu.call make them;[^\n]*\n$", query)
			assert.are.equal(query, reply("help 'Query'"))
			r = answers("report = require 'xpu.report'\nhelp(report.table)\n")
			assert.matches("^xpu.report\n  report.table{", r[2])
		end)

		it("names what it does not know", function()
			local _, err = answers("help 'no_such_thing'\n")
			assert.matches("help: nothing in the xpu API is named 'no_such_thing'", err, 1, true)
			_, err = answers("help(print)\n")
			assert.matches("help: that function is not part of the xpu API", err, 1, true)
			_, err = answers("help(42)\n")
			assert.matches("bad argument #1 to 'help'", err, 1, true)
		end)
	end)

	describe("on a terminal", function()
		it("reads lines through readline with xpu and the table layout", function()
			if not os.execute("command -v script > /dev/null 2>&1") then
				pending("script(1) is not installed: no pty to drive the REPL through")
				return
			end
			local ldd = io.popen("ldd " .. q(BIN) .. " 2>/dev/null")
			local libs = ldd:read("a")
			ldd:close()
			if not libs:find("libreadline", 1, true) then
				pending("this xpulua is built without readline (make static reads plain lines)")
				return
			end
			local home = tmpfile()
			os.remove(home)
			assert(os.execute("mkdir -p " .. q(home)))
			local input = tmpfile("=type(xpu)\n{1, {2}}\nos.exit(0)\n")
			local out = tmpfile()
			local cmd = "env HOME=" .. q(home) .. " " .. q(BIN)
			local ok = os.execute("timeout 20 script -qec " .. q(cmd) .. " /dev/null < " .. q(input)
				.. " > " .. q(out) .. " 2>&1")
			os.execute("rm -rf " .. q(home))
			assert.is_true(ok)
			local text = slurp(out):gsub("\27%[%?2004[hl]", ""):gsub("\r", "")
			assert.matches("> =type%(xpu%)\ntable\n", text)
			assert.matches("> {1, {2}}\n{1, {2}}\n", text, 1, true)
		end)
	end)
end)
