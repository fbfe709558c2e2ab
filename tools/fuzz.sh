#!/bin/sh
# tools/fuzz.sh BUILD SECONDS -- build the libFuzzer targets and run each
# for SECONDS seconds (`make fuzz FUZZ_SECONDS=N`).
#
#   BUILD/fuzz/fuzz_NAME        one binary per fuzz/fuzz_NAME.c, built by
#                               clang with -fsanitize=fuzzer,address,undefined
#   BUILD/fuzz/corpus/NAME      its corpus: seeds generated from the test
#                               fixtures by fuzz/fuzz_seeds.c, plus whatever
#                               the runs found (kept between runs)
#   BUILD/fuzz/crashes/NAME     what made it fail (crash-, leak-, timeout-,
#                               oom-): minimise it, keep it under
#                               fuzz/regressions/NAME, fix the bug
#   BUILD/fuzz/logs/NAME.log    libFuzzer's output
#   BUILD/fuzz/cost-worst       fuzz_cost's costliest page (its recipe)
#
# The targets run one after another, each in one process (no -jobs: the
# machine is shared).  A summary table ends the run; the exit status is 1
# if any target failed.  FUZZ_TARGETS="doc index" runs only those.
#
# fuzz_cost times pages (fuzz/fuzz_cost.c): it is built at -O2 without
# AddressSanitizer, UndefinedBehaviorSanitizer and comparison tracing,
# against a library built the same way, so that instrumentation of the
# library (and not of libxml2) does not skew its ratio.
set -eu

BUILD=${1:-build}
SECS=${2:-60}
OUT=$BUILD/fuzz
CC=${FUZZ_CC:-clang}
TARGETS=${FUZZ_TARGETS:-doc snapshot image idf volatility index dust cost figures}
PKGS="libxml-2.0 libpcre2-8 libutf8proc libxxhash zlib libcrypto libpsl"

case $SECS in
    ''|*[!0-9]*) echo "fuzz.sh: seconds must be a number, not '$SECS'" >&2
                 exit 2 ;;
esac
if ! command -v "$CC" >/dev/null 2>&1; then
    echo "fuzz.sh: $CC not found (tools/deps.sh fuzz installs it)" >&2
    exit 2
fi

SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
BASE="-std=c11 -D_GNU_SOURCE -g -fno-omit-frame-pointer
      -Wall -Wextra -Wshadow -Wno-unused-parameter
      -Isrc $(pkg-config --cflags $PKGS)"
CFLAGS="$BASE -O1 $SAN"
# fuzz_cost: no sanitizers, and no comparison tracing (libFuzzer's
# -fsanitize=fuzzer traces every comparison by default: it made the
# scanner's byte loop ten times slower, and libxml2's not at all).
CFLAGS_COST="$BASE -O2 -fno-sanitize-coverage=trace-cmp"
LIBS="$(pkg-config --libs $PKGS) -lstemmer -lm"

mkdir -p "$OUT/obj" "$OUT/logs"

# ---- Build: the library with coverage instrumentation, then each target.

# Is $1 older than any of the rest (or missing)?  (sh has no locals: the
# names are the function's own.)
stale() {
    stale_target=$1
    shift
    [ -e "$stale_target" ] || return 0
    for stale_dep in "$@"; do
        [ "$stale_dep" -nt "$stale_target" ] && return 0
    done
    return 1
}

# build_lib DIR FLAGS...: the library with coverage instrumentation.
build_lib() {
    lib_dir=$1
    shift
    mkdir -p "$lib_dir"
    lib_objs=""
    for c in src/*.c; do
        o=$lib_dir/$(basename "$c" .c).o
        if stale "$o" "$c" src/*.h; then
            echo "CC $c ($lib_dir)"
            # shellcheck disable=SC2086
            $CC "$@" -fsanitize=fuzzer-no-link -c "$c" -o "$o"
        fi
        lib_objs="$lib_objs $o"
    done
    # shellcheck disable=SC2086
    if stale "$lib_dir/libsimhash-fuzz.a" $lib_objs; then
        rm -f "$lib_dir/libsimhash-fuzz.a"
        # shellcheck disable=SC2086
        ar rcs "$lib_dir/libsimhash-fuzz.a" $lib_objs
    fi
}

# shellcheck disable=SC2086
build_lib "$OUT/obj" $CFLAGS
lib=$OUT/obj/libsimhash-fuzz.a
case " $TARGETS " in
    *" cost "*)
        # shellcheck disable=SC2086
        build_lib "$OUT/obj-cost" $CFLAGS_COST ;;
esac

for t in $TARGETS; do
    bin=$OUT/fuzz_$t
    flags=$CFLAGS
    tlib=$lib
    if [ "$t" = cost ]; then
        flags=$CFLAGS_COST
        tlib=$OUT/obj-cost/libsimhash-fuzz.a
    fi
    if stale "$bin" "fuzz/fuzz_$t.c" fuzz/fuzz_util.h "$tlib"; then
        echo "LD $bin"
        # shellcheck disable=SC2086
        $CC $flags -fsanitize=fuzzer "fuzz/fuzz_$t.c" "$tlib" $LIBS -o "$bin"
    fi
done

# ---- Seeds: from the fixtures, by the library itself.
seeds=$OUT/fuzz_seeds
# shellcheck disable=SC2086
if stale "$seeds" fuzz/*.c fuzz/*.h "$lib"; then
    echo "LD $seeds"
    # shellcheck disable=SC2086
    $CC $CFLAGS -fsanitize=fuzzer-no-link fuzz/fuzz_seeds.c "$lib" $LIBS \
        -o "$seeds"
fi
mkdir -p "$OUT/corpus"
"$seeds" "$OUT/corpus" tests/fixtures t/fixtures/site

# ---- Run.

# Per target: the longest input worth trying, and a dictionary.
max_len() {
    case $1 in
        doc|snapshot|volatility) echo 65536 ;;
        image) echo 131072 ;;
        figures) echo 4096 ;;
        idf) echo 16384 ;;
        index|dust) echo 2048 ;;
        cost) echo 1024 ;;
    esac
}

# What libFuzzer writes for a failure (slow-unit- files are not one).
count_failures() {
    ls "$1" | grep -cE '^(crash|leak|timeout|oom)-' || true
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

failed=0
summary=$OUT/summary.txt
printf '%-11s %10s %8s %8s %8s %7s  %s\n' target execs exec/s cov ft crashes \
    status > "$summary"
for t in $TARGETS; do
    corpus=$OUT/corpus/$t
    crashes=$OUT/crashes/$t
    log=$OUT/logs/$t.log
    mkdir -p "$corpus" "$crashes"
    dirs=$corpus
    for d in fuzz/seeds/$t fuzz/regressions/$t; do
        [ -d "$d" ] && dirs="$dirs $d"
    done
    dict=""
    [ -f "fuzz/$t.dict" ] && dict="-dict=fuzz/$t.dict"
    before=$(count_failures "$crashes")

    echo "== fuzz_$t for ${SECS}s (log: $log)"
    status=ok
    # A page of simhash_max_body costs fuzz_cost well under a second.
    timeout=30
    [ "$t" = cost ] && timeout=2
    # shellcheck disable=SC2086
    FUZZ_COST_WORST=$OUT/cost-worst \
    "$OUT/fuzz_$t" -max_total_time="$SECS" -max_len="$(max_len "$t")" \
        -timeout=$timeout -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$crashes/" $dict $dirs > "$log" 2>&1 \
        || status=FAILED

    after=$(count_failures "$crashes")
    found=$((after - before))
    [ "$found" -gt 0 ] && status=FAILED
    [ "$status" = FAILED ] && failed=1

    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    if [ -z "$execs" ]; then
        # Stopped by a failure: the last status line has the count.
        execs=$(sed -n 's/^#\([0-9]*\).*/\1/p' "$log" | tail -1)
    fi
    cov=$(sed -n 's/.* cov: \([0-9]*\) .*/\1/p' "$log" | tail -1)
    ft=$(sed -n 's/.* ft: \([0-9]*\) .*/\1/p' "$log" | tail -1)
    printf '%-11s %10s %8s %8s %8s %7s  %s\n' "$t" "${execs:-?}" \
        "${rate:-?}" "${cov:-?}" "${ft:-?}" "$found" "$status" >> "$summary"
    if [ "$status" = FAILED ]; then
        grep -E 'ERROR|check failed|runtime error|SUMMARY' "$log" | head -5
        ls -t "$crashes" | grep -E '^(crash|leak|timeout|oom)-' \
            | head -"$((found > 0 ? found : 1))" | sed "s|^|    $crashes/|"
    fi
done

echo
echo "fuzz: ${SECS}s per target, $CC $(${CC} --version | sed -n 's/.*version \([^ ]*\).*/\1/p;q')"
cat "$summary"
if [ -f "$OUT/logs/cost.log" ]; then
    grep '^fuzz_cost: reference' "$OUT/logs/cost.log" | tail -1
fi
exit $failed
