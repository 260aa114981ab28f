#!/bin/sh
# distinct-rows.sh — does a decode mat-vec read slower when every weight row is distinct than
# when the rows repeat (as the benches' fixtures do)? docs/PERF.md ("Open: with every weight
# row distinct ...") has the first sighting: on vulkan:0 4-5x slower, in processes that also
# spent 24 s building the distinct fixture first. Here every fixture is built once, before any
# timed process (bench-matvec-kernel --fixtures), so the timed processes differ only in the
# data; the two fixtures alternate over three rounds, a process each. Prints one line per
# (round, device, kernel): median us with 64 distinct rows, then with every row distinct.
# The environment is scripts/device-run.sh's; needs build/static/xpulua (or XPULUA_BIN).
# SHAPE (default 4096x14336), DEVICES (default "cuda:0 vulkan:0"), FORMATS (q4_0 iq4_nl);
# COPIES: the weight copies a timed process rotates (default: past the caches).
case "${1:-}" in -h|--help)
	echo 'usage: [SHAPE=RxC] [DEVICES="cuda:0 vulkan:0"] [FORMATS="q4_0 iq4_nl"] [COPIES=K] sh lab/distinct-rows.sh'
	sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
esac
set -u
. "$(dirname "$0")/../scripts/device-env.sh" >/dev/null
SHAPE=${SHAPE:-4096x14336}
ROWS=${SHAPE%x*}
FX=${FIXTURES:-/tmp/xpulua-fixtures}
mkdir -p "$FX"

# the median us of one process timing kernel $2 on device $1 with $3 distinct rows
time_one() {
	"$X" scripts/bench-matvec-kernel.lua --device "$1" --kernel "$2" --shape "$SHAPE" --n 15 \
		--distinct "$3" --fixtures "$FX" ${COPIES:+--copies "$COPIES"} --tsv 2>/dev/null | cut -f3
}

for f in ${FORMATS:-q4_0 iq4_nl}; do
	for dd in 64 "$ROWS"; do # built on the CPU, timed there once on two copies (a few ms), kept in $FX
		"$X" scripts/bench-matvec-kernel.lua --device cpu:0 --kernel "${f}_q8k_wave" --shape "$SHAPE" --n 1 \
			--distinct "$dd" --fixtures "$FX" --copies 2 --tsv > /dev/null 2>&1 || echo "building $f x $dd rows failed"
	done
done
printf 'round\tdevice\tkernel\tshape\tus, 64 distinct rows\tus, %s (all) distinct\n' "$ROWS"
for r in 1 2 3; do
	for d in ${DEVICES:-cuda:0 vulkan:0}; do
		"$X" -e "assert(require'xpu'.device'$d')" 2>/dev/null || { echo "$d: absent"; continue; }
		for f in ${FORMATS:-q4_0 iq4_nl}; do
			k=${f}_q8k_wave
			[ "$d" = "${d#vulkan}" ] || k=${k}_dot4
			printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$d" "$k" "$SHAPE" "$(time_one "$d" "$k" 64)" "$(time_one "$d" "$k" "$ROWS")"
		done
	done
done
