#!/usr/bin/env bash
# Smoke test of the real test components: installs them (npm ci, pip), starts DynamoDB Local and
# moto through scripts/components.sh, runs tests/components/test_components.py against them with
# boto3, checks the Node 22 binary and both conformance CLIs, and stops everything.
#
#   VENV=/path/to/venv tests/components/smoke_test.sh [pytest args]
#
# VENV defaults to ./.venv (created when missing); tests/components/requirements.txt is installed
# into it. Run from anywhere.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
: "${VENV:=$ROOT/.venv}"
export VENV

# shellcheck source=scripts/components.sh
source scripts/components.sh
trap components_stop EXIT

t0=$(date +%s.%N)
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install --quiet --disable-pip-version-check -r tests/components/requirements.txt
printf '[components] pip install -r tests/components/requirements.txt: %.2f s\n' \
  "$(python3 -c "import time,sys; print(time.time()-float(sys.argv[1]))" "$t0")" >&2

components_install

echo "Node 22: $("$NODE22" --version)"
for v in v0.1 v0.2; do
  cli="tests/mcp-conformance/$v/node_modules/@modelcontextprotocol/conformance/dist/index.js"
  echo "conformance $v: $("$NODE22" "$cli" --version), $("$NODE22" "$cli" list --server | grep -c '^  - ') server scenarios"
done

start_dynamodb_local
start_moto
echo "AWS_ENDPOINT_URL_DYNAMODB=$AWS_ENDPOINT_URL_DYNAMODB"
echo "AWS_ENDPOINT_URL_KMS=$AWS_ENDPOINT_URL_KMS AWS_ENDPOINT_URL_SSM=$AWS_ENDPOINT_URL_SSM"

# pytest writes its cache under $COMPONENTS_LOG_DIR, not into the tree.
"$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/components/test_components.py "$@"
