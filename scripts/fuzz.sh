#!/usr/bin/env bash
# Run the cargo-fuzz targets of fuzz/ for a bounded time, and fail on any crash.
#
# Targets (fuzz/fuzz_targets/):
#   parse_and_verify  bytes as a request body: Engine::parse, then verify and sign what parses;
#                     no panic, and no internal (non-Invalid) EngineError;
#   http              bytes as one HTTP/1.1 connection to the real `verifier serve` router on an
#                     embedded store (hyper over an in-memory duplex): no 5xx, no panic, no hang.
#
# What it does: installs cargo-fuzz (pinned) if missing; seeds fuzz/corpus/<target>/ from the
# repo's vectors, examples and events (fuzz/seed.py); builds the targets; runs each for
# FUZZ_TIME seconds (or FUZZ_RUNS inputs) with its dictionary; prints the executions per
# target; exits non-zero if any target crashed (reproducers land in fuzz/artifacts/<target>/).
# Stable Rust is enough: RUSTC_BOOTSTRAP=1 lets cargo-fuzz pass its nightly-only flags.
#
# Environment:
#   FUZZ_TARGETS    targets to run (default "parse_and_verify http")
#   FUZZ_TIME       seconds per target (default 300)
#   FUZZ_RUNS       inputs per target instead of a time bound (default: unset, time-bound)
#   FUZZ_SANITIZER  address or none (default address)
#   FUZZ_JOBS       parallel fuzzing processes per target (default 1)
#   FUZZ_ARGS       extra libFuzzer arguments (e.g. "-max_len=8192")
#
# Usage: scripts/fuzz.sh                       # 5 minutes per target
#        FUZZ_TIME=30 scripts/fuzz.sh          # a quick smoke run
#        cargo fuzz run http fuzz/artifacts/http/crash-...   # (in fuzz/) replay a crash
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

CARGO_FUZZ_VERSION=0.13.1
FUZZ_TARGETS=${FUZZ_TARGETS:-parse_and_verify http}
FUZZ_TIME=${FUZZ_TIME:-300}
FUZZ_RUNS=${FUZZ_RUNS:-}
FUZZ_SANITIZER=${FUZZ_SANITIZER:-address}
FUZZ_JOBS=${FUZZ_JOBS:-1}
FUZZ_ARGS=${FUZZ_ARGS:-}
export RUSTC_BOOTSTRAP=1
# The fuzz build's own target dir (gitignored), apart from the workspace's target/.
TARGET_DIR=target/fuzz

if ! cargo fuzz --version 2>/dev/null | grep -q "$CARGO_FUZZ_VERSION"; then
  cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
fi

python3 seed.py

build=(--sanitizer "$FUZZ_SANITIZER" --target-dir "$TARGET_DIR" --release)
cargo fuzz build "${build[@]}"

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
declare -A execs status
failed=0
for target in $FUZZ_TARGETS; do
  case $target in
    http) dict=http.dict ;;
    *) dict=json.dict ;;
  esac
  bound=(-max_total_time="$FUZZ_TIME")
  [ -n "$FUZZ_RUNS" ] && bound=(-runs="$FUZZ_RUNS")
  echo "== $target: ${bound[*]}, sanitizer $FUZZ_SANITIZER, $FUZZ_JOBS job(s)"
  jobs=()
  [ "$FUZZ_JOBS" -gt 1 ] && jobs=(-jobs="$FUZZ_JOBS" -workers="$FUZZ_JOBS")
  set +e
  # shellcheck disable=SC2086
  cargo fuzz run "${build[@]}" "$target" -- "${bound[@]}" "${jobs[@]}" -dict="$dict" \
    -timeout=20 -print_final_stats=1 $FUZZ_ARGS 2>&1 | tee "$logs/$target.log" | grep -E '^#[0-9]+\s+(DONE|pulse)|^Done|==ERROR|panicked|SUMMARY|Test unit written|stat::number_of_executed_units'
  rc=${PIPESTATUS[0]}
  set -e
  # With -jobs the workers log to fuzz-N.log; sum what they report.
  [ "$FUZZ_JOBS" -gt 1 ] && cat fuzz-*.log >>"$logs/$target.log" 2>/dev/null && rm -f fuzz-*.log
  execs[$target]=$(awk '/stat::number_of_executed_units/ {n += $2} END {print n + 0}' "$logs/$target.log")
  if [ "$rc" -ne 0 ] || grep -qE '==ERROR|panicked at|deadly signal' "$logs/$target.log"; then
    status[$target]="CRASH (exit $rc; see fuzz/artifacts/$target/)"
    grep -E 'panicked at|==ERROR|Test unit written' "$logs/$target.log" | head -5 || true
    failed=1
  else
    status[$target]="ok"
  fi
done

echo
echo "| target | executions | corpus files | result |"
echo "|--------|------------|--------------|--------|"
total=0
for target in $FUZZ_TARGETS; do
  total=$(( total + ${execs[$target]} ))
  echo "| $target | ${execs[$target]} | $(find "corpus/$target" -type f | wc -l) | ${status[$target]} |"
done
echo "total executions: $total"
exit "$failed"
