-- cli_spec.lua — the `xpulua` command against lua 5.4's behaviour: options, `arg`, LUA_INIT,
-- paths, messages and exit codes, the REPL on a pipe, and the searcher for embedded modules.
-- Runs the binary named by $XPULUA, else build/xpulua (specs run from the repository root).

local BIN = os.getenv("XPULUA") or "build/xpulua"
-- Messages start with the name the command was run by, as lua's do: BIN, as a pattern.
local NAME = BIN:gsub("%p", "%%%0")

-- Variables the command reads, cleared so that the caller's environment cannot leak in.
local ENV_VARS = { "LUA_INIT", "LUA_INIT_5_4", "XPULUA_INIT", "XPULUA_ROOT", "LUA_PATH",
	"LUA_PATH_5_4", "LUA_CPATH", "LUA_CPATH_5_4" }

local fx = require "spec.support.fixtures"
local slurp, spit = fx.slurp, fx.spit
local q = fx.quote
local tmpfile, remove_temps = fx.temps()

local function tmpdir()
	local path = tmpfile()
	os.remove(path)
	assert(os.execute("mkdir -p " .. q(path)))
	return path
end

-- A shell loop that waits (10 s at most) until the chunk has created the file $READY names.
local function wait_for(path)
	return "n=0; while [ ! -e " .. q(path) .. " ] && [ $n -lt 200 ]; do sleep 0.05; n=$((n+1)); done"
end

-- Lua that creates the file $READY names: the command has reached that point.
local MARK_READY = "io.open(os.getenv('READY'), 'w'):close()"

-- Runs `xpulua args...`; opts.env sets variables, opts.stdin is the input text (default
-- none, from /dev/null), opts.bin the path to run instead of BIN. opts.shell wraps the command (for pipes and signals): XPULUA in it
-- is the command, WAIT_READY waits until Lua has run MARK_READY.
-- Returns the exit code, stdout and stderr.
local function run(args, opts)
	opts = opts or {}
	opts.env = opts.env or {}
	local ready = tmpfile()
	os.remove(ready)
	opts.env.READY = ready
	local cmd = { "env" }
	for _, v in ipairs(ENV_VARS) do cmd[#cmd + 1] = "-u " .. v end
	for k, v in pairs(opts.env or {}) do cmd[#cmd + 1] = q(k .. "=" .. v) end
	cmd[#cmd + 1] = q(opts.bin or BIN)
	for _, a in ipairs(args) do cmd[#cmd + 1] = q(a) end
	local line = table.concat(cmd, " ")
	local out, err = tmpfile(), tmpfile()
	if opts.shell then
		line = opts.shell:gsub("XPULUA", function() return line end)
			:gsub("WAIT_READY", function() return wait_for(ready) end)
	else
		local input = opts.stdin and tmpfile(opts.stdin) or "/dev/null"
		line = line .. " < " .. q(input)
	end
	local full = "( " .. line .. " ) > " .. q(out) .. " 2> " .. q(err)
	local _, _, code = os.execute(full)
	return code, slurp(out), slurp(err)
end

describe("xpulua command", function()
	teardown(function()
		remove_temps()
	end)

	it("exists", function()
		assert.is_true(io.open(BIN, "rb") ~= nil, "no binary at " .. BIN)
	end)

	describe("options", function()
		it("-e runs a statement, joined or separate", function()
			local code, out = run({ "-e", "print(1 + 1)", "-eprint('x')" })
			assert.are.equal(0, code)
			assert.are.equal("2\nx\n", out)
		end)

		it("-l mod sets the global mod; -l g=mod sets g only; -l mod-v sets mod", function()
			local dir = tmpdir()
			spit(dir .. "/climod.lua", "return { v = 42 }")
			spit(dir .. "/cm-v2.lua", "return { w = 7 }")
			local env = { LUA_PATH = dir .. "/?.lua" }
			local code, out = run({ "-l", "climod", "-e", "print(climod.v)" }, { env = env })
			assert.are.equal(0, code)
			assert.are.equal("42\n", out)
			code, out = run({ "-l", "g=climod", "-e", "print(g.v, climod)" }, { env = env })
			assert.are.equal(0, code)
			assert.are.equal("42\tnil\n", out)
			code, out = run({ "-lcm-v2", "-e", "print(cm.w)" }, { env = env })
			assert.are.equal(0, code)
			assert.are.equal("7\n", out)
		end)

		it("-l of a missing module fails with require's message", function()
			local code, _, err = run({ "-l", "no_such_mod_xyz" })
			assert.are.equal(1, code)
			assert.matches("^" .. NAME .. ": module 'no_such_mod_xyz' not found:", err)
		end)

		it("- runs stdin as the script, with the arguments after it", function()
			local code, out = run({ "-", "a", "b" }, { stdin = "print(...) print(arg[0])" })
			assert.are.equal(0, code)
			assert.are.equal("a\tb\n-\n", out)
		end)

		it("-- ends the options", function()
			local script = tmpfile("print('script', ...)")
			local code, out = run({ "-e", "print('e')", "--", script, "-v" })
			assert.are.equal(0, code)
			assert.are.equal("e\nscript\t-v\n", out)
			local code2, _, err = run({ "--", "-e" })
			assert.are.equal(1, code2)
			assert.matches("^" .. NAME .. ": cannot open %-e", err)
		end)

		it("-v prints the version line and does not read stdin", function()
			local code, out = run({ "-v" }, { stdin = "print('read stdin')" })
			assert.are.equal(0, code)
			-- lua's copyright line ends it, as lua's -v does (the Lua suite, main.lua, looks for it)
			assert.matches("^xpulua %d+%.%d+%.%d+ on Lua 5%.4%.%d+  Copyright %(C%) [^\n]*PUC%-Rio\n$", out)
		end)

		it("names itself in messages by argv[0], as lua does", function()
			local link = tmpdir() .. "/my-xpu"
			local abs = BIN:sub(1, 1) == "/" and BIN or os.getenv("PWD") .. "/" .. BIN
			assert(os.execute("ln -s " .. q(abs) .. " " .. q(link)))
			local code, _, err = run({ "-e", "error('x', 0)" }, { bin = link })
			assert.are.equal(1, code)
			assert.are.equal(link .. ": x\n", err:match("^[^\n]*\n"))
		end)

		it("-W turns warnings on", function()
			local _, _, err = run({ "-W", "-e", "warn('careful')" })
			assert.matches("Lua warning: careful", err, 1, true)
			local _, _, quiet = run({ "-e", "warn('careful')" })
			assert.are.equal("", quiet)
		end)

		it("a bad option prints the usage and exits 1", function()
			local code, out, err = run({ "-z" })
			assert.are.equal(1, code)
			assert.are.equal("", out)
			assert.matches("^" .. NAME .. ": unrecognized option '%-z'\n", err)
			assert.matches("usage: " .. BIN .. " [options] [script [args]]", err, 1, true)
			for _, o in ipairs({ "-e stat", "-i", "-l mod", "-l g=mod", "-v", "-E", "-W", "--" }) do
				assert.matches("\n  " .. o, err, 1, true)
			end
		end)

		it("an option missing its argument is named", function()
			local code, _, err = run({ "-e" })
			assert.are.equal(1, code)
			assert.matches("^" .. NAME .. ": '%-e' needs argument\n", err)
			local _, _, err2 = run({ "-vx" })
			assert.matches("^" .. NAME .. ": unrecognized option '%-vx'", err2)
		end)
	end)

	describe("the arg table", function()
		it("holds the interpreter and options below 0, the script at 0, its arguments above", function()
			local script = tmpfile([[
				print(arg[-3] == os.getenv("BIN"), arg[-2], arg[-1], arg[0] == os.getenv("SCRIPT"))
				print(#arg, arg[1], arg[2], select('#', ...), ...)
			]])
			local code, out = run({ "-e", "x=1", script, "p", "q" },
				{ env = { BIN = BIN, SCRIPT = script } })
			assert.are.equal(0, code)
			assert.are.equal("true\t-e\tx=1\ttrue\n2\tp\tq\t2\tp\tq\n", out)
		end)

		it("has the interpreter at 0 when there is no script", function()
			local _, out = run({ "-e", "print(arg[0] == os.getenv('BIN'), arg[1], arg[2], #arg)" },
				{ env = { BIN = BIN } })
			assert.are.equal("true\t-e\tprint(arg[0] == os.getenv('BIN'), arg[1], arg[2], #arg)\t2\n", out)
		end)

		it("skips a first line starting with #, so busted and #! scripts run", function()
			local script = tmpfile("#!/usr/bin/env xpulua\nprint('shebang ok')\n")
			local code, out = run({ script })
			assert.are.equal(0, code)
			assert.are.equal("shebang ok\n", out)
		end)
	end)

	describe("environment", function()
		it("runs LUA_INIT, preferring LUA_INIT_5_4, then XPULUA_INIT", function()
			local _, out = run({ "-e", "print('main')" },
				{ env = { LUA_INIT = "print('init')", XPULUA_INIT = "print('xinit')" } })
			assert.are.equal("init\nxinit\nmain\n", out)
			_, out = run({ "-e", "" },
				{ env = { LUA_INIT = "print('init')", LUA_INIT_5_4 = "print('init54')" } })
			assert.are.equal("init54\n", out)
		end)

		it("runs a file named by @", function()
			local f = tmpfile("print('from file', ...)")
			local _, out = run({ "-e", "" }, { env = { LUA_INIT = "@" .. f } })
			assert.are.equal("from file\n", out)
			local _, out2 = run({ "-e", "" }, { env = { XPULUA_INIT = "@" .. f } })
			assert.are.equal("from file\n", out2)
		end)

		it("stops when an init fails", function()
			local code, out, err = run({ "-e", "print('main')" }, { env = { LUA_INIT = "error('ie')" } })
			assert.are.equal(1, code)
			assert.are.equal("", out)
			assert.matches("^" .. NAME .. ": LUA_INIT:1: ie\nstack traceback:", err)
		end)

		it("-E ignores LUA_INIT, XPULUA_INIT and LUA_PATH", function()
			local code, out = run({ "-E", "-e", "print(package.path == 'x')" }, { env = {
				LUA_INIT = "print('init')", XPULUA_INIT = "print('xinit')", LUA_PATH = "x" } })
			assert.are.equal(0, code)
			assert.are.equal("false\n", out)
		end)

		it("expands ;; in LUA_PATH and LUA_CPATH to the paths it uses when they are unset", function()
			local show = { "-e", "print(package.path) print(package.cpath)" }
			local root = tmpdir()
			local _, unset = run(show, { env = { XPULUA_ROOT = root } })
			assert.are.equal(1, unset:find(root .. "/lua/?.lua;", 1, true))  -- ours come first
			local _, dflt = run(show, { env = { XPULUA_ROOT = root, LUA_PATH = ";;", LUA_CPATH = ";;" } })
			assert.are.equal(unset, dflt)
			local _, v54 = run(show, { env = { XPULUA_ROOT = root, LUA_PATH_5_4 = ";;",
				LUA_CPATH_5_4 = ";;" } })
			assert.are.equal(unset, v54)
			local path, cpath = unset:match("^([^\n]*)\n([^\n]*)\n$")
			local _, around = run(show, { env = { XPULUA_ROOT = root, LUA_PATH = "a/?.lua;;b/?.lua",
				LUA_CPATH = "c;;" } })
			assert.are.equal("a/?.lua;" .. path .. ";b/?.lua\nc;" .. cpath .. "\n", around)
		end)

		it("takes package.path and cpath from LUA_PATH and LUA_CPATH as lua does", function()
			local _, out = run({ "-e", "print(package.path, package.cpath)" },
				{ env = { LUA_PATH = "x", LUA_CPATH = "y" } })
			assert.are.equal("x\ty\n", out)
			_, out = run({ "-e", "print(package.path)" },
				{ env = { LUA_PATH = "x", LUA_PATH_5_4 = "x54" } })
			assert.are.equal("x54\n", out)
		end)
	end)

	describe("errors and exit codes", function()
		it("exits 0 after a script that ends normally, with os.exit's code otherwise", function()
			assert.are.equal(0, (run({ "-e", "local x = 1" })))
			assert.are.equal(3, (run({ "-e", "os.exit(3)" })))
		end)

		it("prints `<argv[0]>: file:line: message` and a traceback, exit 1", function()
			local script = tmpfile("local x = 1\nerror('boom')\n")
			local code, out, err = run({ script })
			assert.are.equal(1, code)
			assert.are.equal("", out)
			assert.are.equal(BIN .. ": " .. script .. ":2: boom\nstack traceback:\n",
				err:match("^[^\n]*\n[^\n]*\n"))
		end)

		it("names a script it cannot open", function()
			local code, _, err = run({ "nofile_xyz.lua" })
			assert.are.equal(1, code)
			assert.matches("^" .. NAME .. ": cannot open nofile_xyz.lua", err)
		end)

		it("describes error objects that are not strings", function()
			local _, _, err = run({ "-e", "error({})" })
			assert.matches("^" .. NAME .. ": %(error object is a table value%)", err)
			_, _, err = run({ "-e", "error(setmetatable({}, {__tostring = function() return 'ts' end}))" })
			assert.are.equal(BIN .. ": ts\n", err)
		end)

		it("reports a syntax error in -e as (command line)", function()
			local code, _, err = run({ "-e", "x =" })
			assert.are.equal(1, code)
			assert.matches("^" .. NAME .. ": %(command line%):1:", err)
		end)

		it("stops a running chunk on SIGINT with 'interrupted!'", function()
			local code, _, err = run({ "-e", MARK_READY .. " while true do end" }, {
				shell = "XPULUA < /dev/null & p=$!; WAIT_READY; kill -INT $p; wait $p" })
			assert.are.equal(1, code)
			-- the signal may land while the ready mark's file is still being closed: then the
			-- message carries the chunk's position, "(command line):1: interrupted!"
			assert.matches("^" .. NAME .. ": [^\n]-interrupted!\nstack traceback:", err)
		end)
	end)

	describe("stdin", function()
		it("runs as a chunk when it is not a terminal and there is no script", function()
			local code, out = run({}, { stdin = "print(40 + 2)" })
			assert.are.equal(0, code)
			assert.are.equal("42\n", out)
		end)

		it("fails with the chunk's error", function()
			local code, _, err = run({}, { stdin = "x =" })
			assert.are.equal(1, code)
			assert.matches("^" .. NAME .. ": stdin:1:", err)
		end)
	end)

	describe("REPL on a pipe (-i)", function()
		it("prints an expression's value (=expr and bare)", function()
			local code, out = run({ "-i" }, { stdin = "=1+1\nx = 20\nx + 1\n" })
			assert.are.equal(0, code)
			assert.matches("^xpulua [^\n]*\n", out)
			assert.matches("2\n", out, 1, true)
			assert.matches("21\n", out, 1, true)
		end)

		it("prints several values through tostring", function()
			local input = "setmetatable({}, {__tostring = function() return 'T!' end}), nil, 's'\n"
			local _, out = run({ "-i" }, { stdin = input })
			assert.matches("T!\tnil\ts\n", out, 1, true)
		end)

		it("continues an incomplete chunk with >>", function()
			local _, out = run({ "-i" }, { stdin = "for i = 1, 2 do\nprint(i * 10)\nend\n" })
			assert.matches("> for i = 1, 2 do\n>> print(i * 10)\n>> end\n10\n20\n", out, 1, true)
		end)

		it("prints errors without the program name and goes on", function()
			local code, out, err = run({ "-i" }, { stdin = "error('e1')\n=7\n" })
			assert.are.equal(0, code)
			assert.matches("^stdin:1: e1\nstack traceback:", err)
			assert.matches("7\n", out, 1, true)
		end)

		it("reports a chunk cut short by the end of input", function()
			local _, _, err = run({ "-i" }, { stdin = "print(1\n" })
			assert.matches("stdin:1: ')' expected near <eof>", err, 1, true)
		end)

		it("echoes each line read off a terminal after its prompt, as lua does", function()
			-- the Lua suite's case (main.lua): a prompt that is not a string goes through tostring
			local prompt = "local C = 0 _PROMPT = setmetatable({}, {__tostring = function() "
				.. "C = C + 1 return C end})"
			local _, out = run({ "-e", prompt, "-i" }, { stdin = " --\na = 2\n" })
			assert.are.equal("1 --\n2a = 2\n3\n", out:sub(-#"1 --\n2a = 2\n3\n"))
			-- a last line without its newline still ends its line
			_, out = run({ "-e", "_PROMPT = '$ '", "-i" }, { stdin = "=1" })
			assert.matches("%$ =1\n1\n%$ \n$", out)
		end)

		it("honours _PROMPT and _PROMPT2", function()
			local input = "_PROMPT = 'P> ' _PROMPT2 = 'P>> '\nif true then\nend\n"
			local _, out = run({ "-i" }, { stdin = input })
			assert.matches("> _PROMPT = 'P> ' _PROMPT2 = 'P>> '\nP> if true then\nP>> end\nP> \n$", out, 1)
		end)

		it("runs after the script with -i", function()
			local script = tmpfile("y = 5")
			local _, out = run({ "-i", script }, { stdin = "=y * 2\n" })
			assert.matches("10\n", out, 1, true)
		end)

		it("goes back to the prompt when SIGINT stops a chunk", function()
			local code, out, err = run({ "-i" }, {
				shell = "(echo " .. q(MARK_READY .. " while true do end") .. "; sleep 1; echo '=8') "
					.. "| XPULUA & p=$!; WAIT_READY; kill -INT $p; wait $p" })
			assert.are.equal(0, code)
			assert.matches("interrupted!", err, 1, true)
			assert.matches("8\n", out, 1, true)
		end)

		it("shows a new prompt on SIGINT while reading", function()
			local code, out = run({ "-i" }, {
				shell = "(echo " .. q(MARK_READY) .. "; sleep 2; echo '=9') | XPULUA & p=$!; "
					.. "WAIT_READY; sleep 0.3; kill -INT $p; wait $p" })
			assert.are.equal(0, code)
			assert.matches("true\n> \n> =9\n9\n", out, 1, true)
		end)
	end)

	describe("modules", function()
		it("preloads xpu", function()
			local code, out = run({ "-e", "print(type(package.preload.xpu), type(require 'xpu'))" })
			assert.are.equal(0, code)
			assert.are.equal("function\ttable\n", out)
		end)

		it("counts Lua's allocations", function()
			local T = require("xpu").T
			if not (T and T.alloc_count) then
				pending("xpu.T.alloc_count is absent from this build")
				return
			end
			local before = T.alloc_count()
			local t = {}
			for i = 1, 100 do t[i] = { i } end
			assert.is_true(T.alloc_count() - before >= 100)
		end)

		it("puts the embedded searcher after preload; it speaks only of project modules", function()
			local _, out = run({ "-e", "print(#package.searchers, package.searchers[2]('xpu.nope_xyz'))" })
			assert.are.equal("5\tno embedded module 'xpu.nope_xyz'\n", out)
			local _, _, err = run({ "-e", "require 'routes.no_such_xyz'" })
			local order = "no field package.preload['routes.no_such_xyz']\n"
				.. "\tno embedded module 'routes.no_such_xyz'\n"
			assert.matches(order, err, 1, true)
		end)

		it("adds nothing to require's message for a module outside lua/xpu and lua/routes", function()
			local _, out = run({ "-e", "print(select('#', package.searchers[2]('nope_xyz')), "
				.. "package.searchers[2]('xpux.a'), (package.searchers[2]('nope.xpu')))" })
			assert.are.equal("0\tnil\tnil\n", out)
			-- the same message as lua's own, as the Lua test suite checks it (attrib.lua)
			local code = "package.path = '?.lua;?/?' package.cpath = '?.so;?/init' "
				.. "local ok, msg = pcall(require, 'XXX') print(msg)"
			local _, got = run({ "-e", code })
			assert.are.equal("module 'XXX' not found:\n\tno field package.preload['XXX']\n"
				.. "\tno file 'XXX.lua'\n\tno file 'XXX/XXX'\n\tno file 'XXX.so'\n"
				.. "\tno file 'XXX/init'\n", got)
		end)

		it("serves an embedded module with its file as the chunk name", function()
			local p = io.popen("find lua -name '*.lua' 2>/dev/null | sort | head -n 1")
			local path = p:read("l")
			p:close()
			if not path then
				pending("no lua/ modules to embed yet")
				return
			end
			local name = path:gsub("^lua/", ""):gsub("%.lua$", ""):gsub("/init$", ""):gsub("/", ".")
			-- An empty root: nothing on disk, so the copy in the binary is what is served.
			local code, out = run({ "-e", "local f, where = package.searchers[2](os.getenv('MOD')) "
				.. "print(type(f), where, debug.getinfo(f, 'S').source)" },
				{ env = { XPULUA_ROOT = tmpdir(), MOD = name } })
			assert.are.equal(0, code)
			assert.are.equal("function\t" .. path .. "\t@" .. path .. "\n", out)
		end)

		it("prefers the source tree's copy (XPULUA_ROOT) and puts it on package.path", function()
			local root = tmpdir()
			assert(os.execute("mkdir -p " .. q(root .. "/lua/xpu")))
			spit(root .. "/lua/xpu/cli_probe.lua", "return 'from tree'")
			local env = { XPULUA_ROOT = root }
			local _, out = run({ "-e", "local first = os.getenv('XPULUA_ROOT') .. '/lua/?.lua;' "
				.. "print(require 'xpu.cli_probe', package.path:find(first, 1, true) == 1)" },
				{ env = env })
			assert.are.equal("from tree\ttrue\n", out)
			env.LUA_PATH = "x"
			_, out = run({ "-e", "print(require 'xpu.cli_probe', package.path)" }, { env = env })
			assert.are.equal("from tree\tx\n", out)
		end)
	end)
end)
