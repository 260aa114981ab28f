-- api_doc_spec.lua — docs/API.md against the live binding: every function reachable from the
-- `xpu` table, from the methods of each xpu.* metatable and from the lua/xpu/ and lua/models/
-- modules has its row on the page, every row names something that exists, and the page is what
-- scripts/api-doc.sh renders from xpu.api() (the table help() prints), so none can drift.

local BIN = os.getenv("XPULUA") or "build/xpulua"
local xpu = require "xpu"

local fx = require "spec.support.fixtures"
local slurp = fx.slurp

-- The names the page documents: the first cell of each table row ("| `name` | ...").
local function documented()
	local page = assert(slurp("docs/API.md"), "docs/API.md is missing")
	local names, order = {}, {}
	for name in page:gmatch("\n| `([^`]+)` |") do
		assert.is_nil(names[name], "docs/API.md documents " .. name .. " twice")
		names[name] = true
		order[#order + 1] = name
	end
	return names, order
end

-- The methods table of a metatable: its "methods", a table __index, or the table its __index
-- function closes over.
local function methods_of(mt)
	if type(mt.methods) == "table" then return mt.methods end
	if type(mt.__index) == "table" then return mt.__index end
	if type(mt.__index) == "function" then
		local _, up = debug.getupvalue(mt.__index, 1)
		if type(up) == "table" then return up end
	end
end

-- Every function of a table and of the tables inside it, as "prefix.key".
local function walk(t, prefix, into, seen)
	seen = seen or {}
	seen[t] = true
	for k, v in pairs(t) do
		if type(k) == "string" and type(v) == "function" then
			into[prefix .. k] = v
		elseif type(k) == "string" and type(v) == "table" and not seen[v] then
			walk(v, prefix .. k .. ".", into, seen)
		end
	end
end

-- The live API: xpu.*, Type:method for each metatable luaL_newmetatable made as "xpu.Type",
-- and the functions each lua/xpu/*.lua and lua/models/*.lua module returns.
local function live()
	local names = {}
	walk(xpu, "xpu.", names)
	for key, mt in pairs(debug.getregistry()) do
		if type(key) == "string" and key:match("^xpu%.%u") and type(mt) == "table" and mt.__name == key then
			local methods = methods_of(mt)
			for m, f in pairs(methods or {}) do
				if type(f) == "function" then names[key:sub(5) .. ":" .. m] = f end
			end
		end
	end
	local p = io.popen("find lua/xpu lua/models -name '*.lua' 2>/dev/null | sort")
	for path in p:lines() do
		local mod = path:gsub("^lua/", ""):gsub("%.lua$", ""):gsub("/", ".")
		local m = require(mod)
		if type(m) == "table" then walk(m, mod .. ".", names) end
	end
	p:close()
	return names
end

local function sorted_keys(t)
	local list = {}
	for k in pairs(t) do list[#list + 1] = k end
	table.sort(list)
	return list
end

describe("docs/API.md", function()
	it("documents every function of the live API", function()
		local doc = documented()
		local missing = {}
		for _, name in ipairs(sorted_keys(live())) do
			if not doc[name] then missing[#missing + 1] = name end
		end
		assert.are.same({}, missing, "docs/API.md lacks: " .. table.concat(missing, ", "))
	end)

	it("documents nothing that does not exist", function()
		local have = live()
		local _, order = documented()
		local stale = {}
		for _, name in ipairs(order) do
			if not have[name] then stale[#stale + 1] = name end
		end
		assert.are.same({}, stale, "docs/API.md names what the binding lacks: " .. table.concat(stale, ", "))
	end)

	it("is what scripts/api-doc.sh renders from xpu.api(), the entries help() prints", function()
		local p = io.popen("scripts/api-doc.sh " .. BIN .. " 2>&1")
		local rendered = p:read("a")
		p:close()
		assert.are.equal(rendered, slurp("docs/API.md"),
			"docs/API.md is stale: run scripts/api-doc.sh > docs/API.md")
	end)

	it("has one entry in xpu.api() per name, each with a signature and a summary", function()
		local seen = {}
		for _, s in ipairs(xpu.api()) do
			assert.is_string(s.title)
			assert.is_string(s.intro)
			for _, e in ipairs(s) do
				assert.is_nil(seen[e.name], e.name .. " has two entries")
				seen[e.name] = true
				assert.is_truthy(#e.signature > 0 and #e.summary > 0, e.name)
				assert.is_falsy(e.summary:find("\n", 1, true), e.name .. ": a summary is one line")
				local short = e.name:match("[%.:]([%w_]+)$")
				assert.is_truthy(e.signature:find(short, 1, true), e.name .. ": the signature names " .. short)
			end
		end
	end)

	it("fails naming a function that is added undocumented, and a documented name removed", function()
		-- the check itself, on a binding with one function more and one less
		local saved = xpu.now
		xpu.now = nil
		xpu.undocumented_probe = function() end
		local ok_missing, names = pcall(live)
		xpu.now = saved
		xpu.undocumented_probe = nil
		assert.is_true(ok_missing)
		assert.is_not_nil(names["xpu.undocumented_probe"])
		assert.is_nil(names["xpu.now"])
		assert.is_true(documented()["xpu.now"] ~= nil)
		assert.is_nil(documented()["xpu.undocumented_probe"])
	end)
end)
