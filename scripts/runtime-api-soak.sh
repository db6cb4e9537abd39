#!/usr/bin/env bash
# A soak of the emulated deployment's Runtime API path (tests/e2e/runtime_api_soak.py): ROUNDS
# rounds of 402, paid call and replay through one deployment on the local chain; prints each
# round that went wrong or took over 5 s, then a JSON summary. Needs what scripts/test.sh
# installs (./.venv, npm components) and the release binaries.
#
#   scripts/runtime-api-soak.sh                    # 1000 rounds through the relay
#   DIRECT=1 ROUNDS=2000 scripts/runtime-api-soak.sh   # functions on the emulator directly
set -euo pipefail
exec "$(dirname "$0")/with-components.sh" .venv/bin/python tests/e2e/runtime_api_soak.py
