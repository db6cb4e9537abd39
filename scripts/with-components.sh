#!/usr/bin/env bash
# Run a command (from the repository root) with DynamoDB Local and moto started on loopback by
# scripts/components.sh, their endpoints exported; both stop when the command ends. Needs what
# scripts/test.sh installs (./.venv, npm components). The measurement scripts use it:
#
#   scripts/with-components.sh .venv/bin/python tests/e2e/lambda_costs.py
set -euo pipefail
cd "$(dirname "$0")/.."
export VENV=$PWD/.venv
# shellcheck source=scripts/components.sh
source scripts/components.sh
trap components_stop EXIT
start_dynamodb_local >&2
start_moto >&2
"$@"
