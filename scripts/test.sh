#!/bin/sh
# test.sh XPULUA — runs every busted spec inside xpulua; the last line is the summary
# "N passed, N failed[, N skipped]" and the exit status is non-zero on any failure.
set -u
exec "$1" /usr/bin/busted --output=spec/summary.lua spec/
