#!/usr/bin/env bash
# What a serverless user pays, measured on the emulated deployment (tests/e2e/lambda_costs.py):
# per function init and warm duration under the Lambda Runtime API emulator, and DynamoDB round
# trips and capacity units per free verification, paid verification (on the local chain), 402,
# reputation and no-data score. Needs what scripts/test.sh installs (./.venv, npm components)
# and the release binaries (cargo build --release --workspace). Prints JSON.
#
#   scripts/lambda-costs.sh                       # 5 cold starts, 200 warm calls per function
#   COLD_STARTS=20 WARM_CALLS=500 scripts/lambda-costs.sh
#   METRICS_NAMESPACE= scripts/lambda-costs.sh     # the functions with their EMF metrics off
#   LAMBDA_BIN_DIR=target/release-lambda scripts/lambda-costs.sh   # another build of the functions
# The yardstick binary is an example: `cargo build --release --all-targets` (the test command)
# or `cargo build --profile release-lambda -p function-common --example bare_lambda` builds it.
set -euo pipefail
exec "$(dirname "$0")/with-components.sh" .venv/bin/python tests/e2e/lambda_costs.py
