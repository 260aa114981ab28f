#!/bin/sh
# api-doc.sh — prints docs/API.md from the binary's xpu.api(), the entries compiled from
# src/lua/l_api.c that help() prints too; spec/api_doc_spec.lua checks the page against it.
#   scripts/api-doc.sh [build/xpulua] > docs/API.md
case "${1:-}" in
-h|--help)
	echo "usage: scripts/api-doc.sh [XPULUA] > docs/API.md"
	echo "Prints docs/API.md from XPULUA's xpu.api() (default build/xpulua)."
	exit 0;;
-*)	echo "api-doc.sh: unknown option '$1' (only --help)" >&2; exit 2;;
esac
bin=${1:-build/xpulua}
if [ ! -x "$bin" ]; then
	echo "api-doc.sh: no xpulua binary at '$bin' (build it with make, or name one)" >&2
	exit 2
fi
exec "$bin" -E -e '
local xpu = require "xpu"
local out = {}
local function say(s) out[#out + 1] = s end
local function cell(s) return (s:gsub("|", "\\|")) end
say("# The xpulua Lua API")
say("")
say("Every public function of the `xpu` module, of its objects and of the `lua/xpu/` and `lua/models/` modules:")
say("its name, its signature and what it does. `help()` in the REPL prints the same entries;")
say("`help \"name\"` or `help(f)` prints one. This page is generated from the table compiled")
say("into the binary (src/lua/l_api.c) by `scripts/api-doc.sh > docs/API.md`;")
say("spec/api_doc_spec.lua fails when the page, the table and the binding disagree.")
say("")
say("A name `Type:method` is a method of objects of type `xpu.Type`; misuse raises, a missing")
say("driver or failed probe returns `nil, message`.")
for _, s in ipairs(xpu.api()) do
	say("")
	say("## " .. s.title)
	say("")
	say(s.intro)
	if #s > 0 then
		say("")
		say("| name | signature | what it does |")
		say("|---|---|---|")
		for _, e in ipairs(s) do
			say(("| `%s` | `%s` | %s |"):format(e.name, cell(e.signature), cell(e.summary)))
		end
	end
end
io.write(table.concat(out, "\n"), "\n")
'
