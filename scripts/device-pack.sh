#!/bin/sh
# device-pack.sh — fills the ignored folders a GPU machine needs beside build/static/xpulua
# (which has no Lua, libyaml, busted or Vulkan loader of its own): .dev/ with busted's Lua
# files, its C modules (lfs, term, system) and its runner, and .gl/ with Debian's Vulkan
# loader package, which scripts/device-env.sh unpacks there. Run it here after `make static`.
#   scripts/device-pack.sh [--help]
set -eu
case "${1:-}" in
-h|--help)
	echo "usage: scripts/device-pack.sh [--help]"
	sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'
	exit 0;;
"") ;;
*)	echo "device-pack.sh: unknown option '$1' (only --help)" >&2; exit 2;;
esac
cd "$(dirname "$0")/.."
share=/usr/share/lua/5.4
lib=/usr/lib/x86_64-linux-gnu/lua/5.4
[ -f "$share/busted/runner.lua" ] || { echo "device-pack.sh: no busted in $share (make setup)" >&2; exit 1; }
rm -rf .dev && mkdir -p .dev/share .dev/lib
cp -rL "$share/." .dev/share/
cp -rL "$lib/." .dev/lib/
cp /usr/bin/busted .dev/busted
mkdir -p .gl
if ! ls .gl/libvulkan1_*.deb >/dev/null 2>&1; then
	(cd .gl && apt-get download libvulkan1 >/dev/null) ||
		echo "device-pack.sh: could not download libvulkan1 (Vulkan stays absent there)" >&2
fi
echo "device-pack.sh: .dev/ $(du -sh .dev | cut -f1), .gl/ $(ls .gl)"
