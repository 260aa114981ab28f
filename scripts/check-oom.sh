#!/bin/sh
# check-oom.sh XPULUA [SCENARIO...] — failure injection (make check-oom): each scenario of
# spec/oom/ in a process of its own inside the sanitized build XPULUA (build/oom/xpulua),
# every allocation N failed in turn (spec/oom/run.lua). Prints a table: scenario, the
# allocations counted (N max), the failures survived and at which site; fails on any
# problem the run names, and on any AddressSanitizer, LeakSanitizer or UBSan report (kept
# under reports-oom/ beside the binary). OOM_STRIDE=k tries every kth N only (the short form);
# OOM_SITES=alloc,lua,yaml chooses the sites. The scenario `process` starts xpulua itself
# once per N with allocation N failing (XPULUA_FAULT_AT, build/oom only).
case "${1:-}" in
-h|--help)
	echo 'usage: sh scripts/check-oom.sh XPULUA [SCENARIO...]'
	sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
'') echo 'usage: sh scripts/check-oom.sh XPULUA [SCENARIO...]' >&2; exit 2 ;;
esac
set -u
X=$1; shift
[ -x "$X" ] || { echo "check-oom: $X: no such executable (make oom builds it)" >&2; exit 2; }
SCENARIOS=${*:-process startup routes gguf contract bind decode}
STRIDE=${OOM_STRIDE:-1}
SITES=${OOM_SITES:-alloc,lua,yaml}
R=$(dirname "$X")/reports-oom
rm -rf "$R"
mkdir -p "$R"
export ASAN_OPTIONS="detect_leaks=1:log_path=$R/asan"
export LSAN_OPTIONS="suppressions=$(pwd)/scripts/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:log_path=$R/ubsan"
failed=0
printf '%-10s %8s %9s %8s %8s %8s %9s  %s\n' scenario "N max" survived alloc lua yaml seconds result
# process: xpulua itself started with allocation N failing and every one after it
# (XPULUA_FAULT_AT, read at start-up in build/oom), a process per N: `require "xpu"` and
# cpu:0 opened, so the process-wide set-up (kernel table, names, formats) runs under the
# fault. Each run must end with an error that says out of memory (exit 1, not a signal);
# the loop ends at the first N never reached, which must run clean.
process_loop() {
	n=0 survived=0 bad=0
	: > "$R/process.out"
	while :; do
		out=$(XPULUA_FAULT_AT=$n XPULUA_FAULT_SITES=$SITES "$X" -e "local xpu = require 'xpu'; assert(xpu.device 'cpu:0'); print(#xpu.kernels())" 2>&1)
		code=$?
		echo "N=$n exit $code: $out" | tr '\n' ' ' >> "$R/process.out"; echo >> "$R/process.out"
		case "$out" in
		*"XPULUA_FAULT_AT: not reached"*)
			[ "$code" -eq 0 ] || { bad=$((bad + 1)); echo "  N=$n: failed with no fault reached: $out" >&2; }
			break ;;
		esac
		if [ "$code" -eq 1 ] && echo "$out" | grep -q -e 'not enough memory' -e 'out of memory'; then
			survived=$((survived + 1))
		else
			bad=$((bad + 1)); echo "  N=$n: exit $code: $(echo "$out" | head -3)" >&2
		fi
		n=$((n + STRIDE))
	done
	echo "process nmax=$n survived=$survived alloc=- lua=- yaml=- problems=$bad"
	[ "$bad" -eq 0 ]
}

for s in $SCENARIOS; do
	t0=$(date +%s)
	if [ "$s" = process ]; then
		process_loop > "$R/$s.out.tmp" 2>&1; rc=$?
		cat "$R/$s.out.tmp" >> "$R/$s.out"; rm -f "$R/$s.out.tmp"
	else
		"$X" spec/oom/run.lua "$s" "$STRIDE" "$SITES" > "$R/$s.out" 2>&1
		rc=$?
	fi
	t1=$(date +%s)
	reports=$(ls "$R" | grep -c -E '^(asan|ubsan)\.' )
	line=$(grep "^$s nmax=" "$R/$s.out")
	get() { v=$(echo "$line" | sed -n "s/.* $1=\([0-9]*\).*/\1/p"); echo "${v:--}"; }
	if [ "$rc" -eq 0 ] && [ "$reports" -eq 0 ] && [ -n "$line" ]; then
		result=ok
	else
		result="FAILED (exit $rc, $reports sanitizer report(s); $R/$s.out)"
		failed=1
	fi
	printf '%-10s %8s %9s %8s %8s %8s %9s  %s\n' "$s" "$(get nmax)" "$(get survived)" "$(get alloc)" \
		"$(get lua)" "$(get yaml)" "$((t1 - t0))" "$result"
	[ "$result" = ok ] || sed -n '2,12p' "$R/$s.out" | grep '^  ' >&2
	for f in "$R"/asan.* "$R"/ubsan.*; do [ -e "$f" ] && mv "$f" "$R/$s-$(basename "$f")"; done
done
[ "$STRIDE" -gt 1 ] && echo "(every ${STRIDE}th N)"
[ "$failed" -eq 0 ] && echo "check-oom: every scenario survived every fault" ||
	echo "check-oom: failures above (reports in $R)"
exit "$failed"
