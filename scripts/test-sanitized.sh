#!/bin/sh
# test-sanitized.sh XPULUA — every spec file inside a sanitizer build of xpulua (make asan or
# make tsan), one process each, so one report does not hide the files after it. A file fails
# on a failed spec or on any AddressSanitizer, LeakSanitizer, UBSan or ThreadSanitizer report;
# the reports are kept under reports/ beside the binary. Leaks inside the Vulkan driver and its loader (lavapipe keeps its
# compiler's state to exit) are not ours and are suppressed (scripts/lsan.supp). Prints a line
# per file and exits non-zero if any failed.
case "${1:-}" in -h|--help)
	echo 'usage: sh scripts/test-sanitized.sh XPULUA'
	sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
esac
set -u
X=$1
R=$(dirname "$X")/reports
rm -rf "$R"
mkdir -p "$R"
export ASAN_OPTIONS="detect_leaks=1:log_path=$R/asan"
export LSAN_OPTIONS="suppressions=$(pwd)/scripts/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:log_path=$R/ubsan"
export TSAN_OPTIONS="log_path=$R/tsan"
failed=0
for f in spec/*_spec.lua; do
	name=$(basename "$f" .lua)
	before=$(ls "$R" | wc -l)
	"$X" /usr/bin/busted --output=spec/summary.lua "$f" > "$R/$name.out" 2>&1
	rc=$?
	reports=$(( $(ls "$R" | wc -l) - before - 1 ))
	printf '%-22s %s%s\n' "$name" "$(tail -1 "$R/$name.out")" \
		"$([ "$reports" -gt 0 ] && echo "; $reports sanitizer report(s)")"
	if [ "$rc" -ne 0 ] || [ "$reports" -gt 0 ]; then
		failed=1
	fi
done
[ "$failed" -eq 0 ] && echo "sanitizers: every spec file clean" || echo "sanitizers: failures above (reports in $R)"
exit "$failed"
