#!/bin/sh
# device-run.sh — everything a GPU machine is borrowed for, in one pass that builds nothing:
# the specs (inside the static xpulua, with busted carried in .dev/), then the ceilings and
# the benchmarks, logs under $OUT. Needs: build/static/xpulua (make static), .dev/ (busted's
# Lua files and its C modules lfs, term, system), optionally .gl/ (the Vulkan loader .deb).
case "${1:-}" in -h|--help)
	echo 'usage: [SPECS=none] [OUT=DIR] sh scripts/device-run.sh'
	sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
esac
set -u
. "$(dirname "$0")/device-env.sh"
stage() { printf '\n=== %s\n' "$*"; }
stage devices
nvidia-smi -L 2>/dev/null
$X -e 'print(require"xpu".devices())'
if [ "${SPECS:-}" != none ]; then
	stage specs
	$X .dev/busted --output=spec/summary.lua ${SPECS:-spec/} > "$OUT/specs.log" 2>&1
	grep -E "^(FAILED|skipped)|passed, " "$OUT/specs.log" | head -60
fi
# SPECS=none skips the specs; STAGES picks what runs per device (default: all); DECODE_ARGS go to bench-decode (e.g. --grid resident)
has() { case " ${STAGES:-bandwidth decode id launch shape} " in *" $1 "*) return 0;; esac; return 1; }
for d in ${DEVICES:-cuda:0 vulkan:0}; do
	$X -e "assert(require'xpu'.device'$d')" 2>/dev/null || { stage "$d: absent"; continue; }
	if has bandwidth; then
		stage "$d bandwidth"
		$X scripts/bandwidth.lua --device "$d" --jsonl > "$OUT/bandwidth-$d.jsonl" 2>&1; grep -v '^{' "$OUT/bandwidth-$d.jsonl"
	fi
	if has decode; then
		stage "$d decode ${DECODE_ARGS:-}"
		$X scripts/bench-decode.lua --device "$d" --n 50 ${DECODE_ARGS:-} --jsonl > "$OUT/decode-$d.jsonl" 2>&1
		grep -v '^{' "$OUT/decode-$d.jsonl"
	fi
	if has id; then stage "$d id"; $X scripts/bench-id.lua --device "$d" --n 100 2>&1; fi
	if has launch; then stage "$d launch"; $X scripts/bench-launch.lua --device "$d" 2>&1; fi
	if has shape; then stage "$d shape ops"; $X scripts/bench-shape-ops.lua --device "$d" 2>&1 | grep -v '^{'; fi
done
