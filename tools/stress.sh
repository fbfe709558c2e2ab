#!/bin/sh
# Load and faults through a real nginx with 4 workers (`make stress`).
#
#   tools/stress.sh BUILD
#
# The work is in stress/run.pl (phases, criteria, summary); the origin's
# corpus comes from stress/gen-corpus.pl and wrk's request mix from
# stress/mix.lua.  Everything runs under BUILD/stress/ (the corpus is kept
# between runs); the summary table is printed and left in
# BUILD/stress/summary.txt.  Exit status 1 if any criterion failed.
#
# Environment: STRESS_A, STRESS_B (seconds of phases A and B, default 60),
# STRESS_CONNS (default 256), STRESS_VALGRIND=0 (skip the valgrind phase).
set -eu

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case "$BUILD" in /*) ;; *) BUILD="$TOP/$BUILD" ;; esac

for tool in wrk nginx; do
    command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || {
        echo "stress: $tool is not installed (tools/deps.sh stress)" >&2
        exit 1
    }
done

exec perl "$TOP/stress/run.pl" "$BUILD"
