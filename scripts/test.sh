#!/bin/sh
# test.sh XPULUA [long] — runs the busted specs inside xpulua: without `long` every spec but
# those tagged #long (make test: what proves correctness, in minutes), with it only those
# (make test-long: soaks, sweeps, repeated sizes). The five slowest spec files are printed
# with their seconds; the last line is the summary "N passed, N failed[, N skipped]" and the
# exit status is non-zero on any failure.
case "${1:-}" in -h|--help)
	echo 'usage: sh scripts/test.sh XPULUA [long]'
	sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
esac
set -u
case "${2:-}" in
	"") tags=--exclude-tags=long ;;
	long) tags=--tags=long ;;
	*) echo "test.sh: unknown set '$2' (give none, or long)" >&2; exit 2 ;;
esac
exec "$1" /usr/bin/busted --output=spec/summary.lua "$tags" spec/
