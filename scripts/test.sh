#!/usr/bin/env bash
# The whole test suite: formatting, lints, every Rust test, and the end-to-end tests with real
# clients against the real binary over loopback. Installs what it needs into the project
# (./.venv); starts and stops every server it uses. Run from anywhere: scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
step() { printf '\n==> %s\n' "$*"; }
started=$(date +%s)

step "rustfmt"
cargo fmt --all -- --check

step "clippy (all targets, warnings are errors)"
cargo clippy --workspace --all-targets --release --locked -- -D warnings

step "build the release binary"
cargo build --release --locked --bin verifier

step "Rust tests (unit, vectors, JSON-Schema-Test-Suite, HTTP on loopback)"
cargo test --workspace --release --locked

step "Python clients (./.venv)"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/pip install --quiet --disable-pip-version-check -r tests/e2e/requirements.txt

step "end-to-end tests with the real clients"
VERIFIER_BIN="$ROOT/target/release/verifier" .venv/bin/python -m pytest -q tests/e2e

printf '\nall tests passed in %ss\n' "$(( $(date +%s) - started ))"
