#!/usr/bin/env bash
# Build every Lambda function for arm64 (provided.al2023) with cargo-lambda, the way
# `sam build` does (BuildMethod rust-cargolambda), and print each bootstrap's size, stripped and
# zipped the way `sam build` packages it (Python's zipfile, deflate, default level).
#
#   scripts/build-lambda.sh            # all five functions
#   FUNCTIONS="verify mcp" scripts/build-lambda.sh
#
# Installs cargo-lambda and Zig from PyPI into .venv-lambda (scripts/requirements-lambda.txt)
# and the aarch64-unknown-linux-gnu Rust target (rustup) when missing. Output:
# target/lambda/<function>/bootstrap. Not part of the test command (it is a deploy step).
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.venv-lambda
if [ ! -x "$venv/bin/cargo-lambda" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r scripts/requirements-lambda.txt
fi
export PATH="$PWD/$venv/bin:$PATH"
rustup target list --installed | grep -qx aarch64-unknown-linux-gnu \
  || rustup target add aarch64-unknown-linux-gnu

functions=${FUNCTIONS:-"verify score mcp discovery rotate-key"}
args=()
for f in $functions; do args+=(--bin "$f"); done
# The release-lambda profile (Cargo.toml): fat LTO, one codegen unit, no symbols.
cargo lambda build --profile release-lambda --arm64 --locked "${args[@]}"

printf '%-12s %22s %22s\n' function "stripped bytes (MB)" "zipped bytes (MB)"
for f in $functions; do
  size=$(stat -c %s "target/lambda/$f/bootstrap")
  zipped=$(python3 - "target/lambda/$f/bootstrap" <<'PY'
import io, sys, zipfile
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
    z.write(sys.argv[1], "bootstrap")
print(len(buf.getvalue()))
PY
)
  printf '%-12s %14s (%5.2f) %14s (%5.2f)\n' "$f" "$size" "$(echo "$size / 1000000" | bc -l)" \
    "$zipped" "$(echo "$zipped / 1000000" | bc -l)"
done
