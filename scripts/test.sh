#!/bin/sh
# test.sh XPULUA — runs every busted spec inside xpulua; the last line is the summary
# "N passed, N failed[, N skipped]" and the exit status is non-zero on any failure.
case "${1:-}" in -h|--help)
	echo 'usage: sh scripts/test.sh XPULUA'
	sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
esac
set -u
exec "$1" /usr/bin/busted --output=spec/summary.lua spec/
