#!/bin/sh
# check-driver-faults.sh XPULUA DEVICE... — driver failure injection (make check-driver-faults):
# on each device, every driver call N (vkXxx through the Vulkan backend's table, cuXxx and
# hipXxx through the CUDA and HIP backends') failed in turn, with the error a driver gives.
#   open  the device's first use, a process per N (spec/oom/open.lua): open, buffers, the
#         first launch (pipelines are made then), wait, read back
#   use   an opened device, one process (spec/oom/run.lua device_use): buffers, uploads,
#         copy_bytes, a q4_0 decode through routes.llama, downloads, release
# Every failure must name its call; a failed open must destroy all it made; the failed step,
# retried, must succeed with the right bytes; the driver objects alive afterwards (the ledger:
# made - destroyed per kind) must be those of a run without faults. A device that is absent
# is reported skipped, with the reason. Any sanitizer report fails (reports-driver/ beside
# XPULUA). OOM_STRIDE=k tries every kth N only.
case "${1:-}" in
-h|--help)
	echo 'usage: sh scripts/check-driver-faults.sh XPULUA DEVICE...'
	sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
'') echo 'usage: sh scripts/check-driver-faults.sh XPULUA DEVICE...' >&2; exit 2 ;;
esac
set -u
X=$1; shift
[ -x "$X" ] || { echo "check-driver-faults: $X: no such executable" >&2; exit 2; }
STRIDE=${OOM_STRIDE:-1}
R=$(dirname "$X")/reports-driver
rm -rf "$R"
mkdir -p "$R"
# protect_shadow_gap=0: the CUDA driver maps memory where ASan's shadow gap would be
export ASAN_OPTIONS="detect_leaks=1:protect_shadow_gap=0:log_path=$R/asan"
export LSAN_OPTIONS="suppressions=$(pwd)/scripts/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:log_path=$R/ubsan"
failed=0 checked=0
row() { printf '%-10s %-6s %8s %9s %9s  %s\n' "$@"; }
reports() { ls "$R" | grep -c -E '^(asan|ubsan)\.'; }
row device scenario "N max" survived seconds result
for dev in "$@"; do
	tag=$(echo "$dev" | tr : -)
	t0=$(date +%s)
	ref=$("$X" spec/oom/open.lua "$dev" 1000000000 2>&1)
	case "$ref" in *"fired=none"*) ;; *)
		why=$(echo "$ref" | grep -o 'no such device.*\|backend is .*\|error.*' | head -1)
		row "$dev" open - - - "skipped: ${why:-$ref}"
		row "$dev" use - - - "skipped: ${why:-$ref}"
		continue ;;
	esac
	checked=$((checked + 1))
	want=${ref##*ledger=}
	n=0 survived=0 problems=0
	: > "$R/$tag-open.out"
	while :; do
		out=$("$X" spec/oom/open.lua "$dev" "$n" 2>&1)
		echo "$out" >> "$R/$tag-open.out"
		case "$out" in
		*"fired=none"*) break ;;
		*FAILED*) problems=$((problems + 1)); echo "  $out" >&2 ;;
		*"reported=not usable") survived=$((survived + 1)) ;;
		*"ledger=$want") survived=$((survived + 1)) ;;
		*) problems=$((problems + 1)); echo "  N=$n: driver objects ${out##*ledger=}, without faults $want" >&2 ;;
		esac
		n=$((n + STRIDE))
	done
	res=ok; [ "$problems" -eq 0 ] && [ "$(reports)" -eq 0 ] || { res="FAILED ($problems; $R/$tag-open.out)"; failed=1; }
	row "$dev" open "$n" "$survived" "$(($(date +%s) - t0))" "$res"
	t0=$(date +%s)
	XPU_FAULT_DEVICE=$dev "$X" spec/oom/run.lua device_use "$STRIDE" driver > "$R/$tag-use.out" 2>&1
	rc=$?
	line=$(grep '^device_use nmax=' "$R/$tag-use.out")
	get() { echo "$line" | sed -n "s/.* $1=\([0-9]*\).*/\1/p"; }
	res=ok; [ "$rc" -eq 0 ] && [ "$(reports)" -eq 0 ] || { res="FAILED (exit $rc; $R/$tag-use.out)"; failed=1; }
	row "$dev" use "$(get nmax)" "$(get survived)" "$(($(date +%s) - t0))" "$res"
	[ "$res" = ok ] || grep '^  ' "$R/$tag-use.out" | head -10 >&2
done
[ "$STRIDE" -gt 1 ] && echo "(every ${STRIDE}th N)"
if [ "$failed" -ne 0 ]; then
	echo "check-driver-faults: failures above (reports in $R)"
elif [ "$checked" -eq 0 ]; then
	echo "check-driver-faults: none of $* is present here: nothing was checked"
else
	echo "check-driver-faults: $checked device(s) survived every fault; the others were skipped"
fi
exit "$failed"
