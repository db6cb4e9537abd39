#!/usr/bin/env bash
# Lint the SAM template offline, without AWS credentials:
#   1. cfn-lint template.yaml                          (project venv, $VENV)
#   2. sam validate --lint                             (SAM CLI venv, $SAM_VENV)
#   3. translate with aws-sam-translator, then cfn-lint the generated CloudFormation: this is the
#      only step that sees SAM-generated resources, so it is the one that catches a circular
#      dependency (e.g. a function whose environment references the HttpApi that routes to it).
# Installs the exact pins of scripts/requirements-sam.txt first (idempotent: a second run only
# checks). Exit status 0 only when every step passes; warnings on template.yaml are failures too.
#
#   scripts/lint-template.sh [template.yaml]
#   VENV=/path/.venv SAM_VENV=/path/.venv-sam PYTHON=python3.11 scripts/lint-template.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TEMPLATE=$(realpath "${1:-$ROOT/template.yaml}")
REQ=$ROOT/scripts/requirements-sam.txt
VENV=${VENV:-$ROOT/.venv}
SAM_VENV=${SAM_VENV:-$ROOT/.venv-sam}
PYTHON=${PYTHON:-python3}

now() { date +%s.%N; }
# True when every `name==version` line of the given file is installed in the venv's Python.
pins_satisfied() {
  "$1/bin/python" - "$2" <<'PY' 2>/dev/null
import re, sys
from importlib.metadata import PackageNotFoundError, version
for line in open(sys.argv[1]):
    m = re.match(r"^([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==(\S+)", line.strip())
    if m:
        try:
            if version(m.group(1)) != m.group(3):
                sys.exit(1)
        except PackageNotFoundError:
            sys.exit(1)
PY
}
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
step() { printf '\n==> %s\n' "$*"; }

CFN_LINT_PIN=$(grep -E '^cfn-lint==' "$REQ")
started=$(now)

step "install $CFN_LINT_PIN into $VENV"
t=$(now)
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
if pins_satisfied "$VENV" <(echo "$CFN_LINT_PIN"); then
  echo "already installed"
else
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$CFN_LINT_PIN"
fi
echo "($(since "$t") s)"

step "install $(grep -E '^[a-z]' "$REQ" | tr '\n' ' ')into $SAM_VENV"
t=$(now)
[ -x "$SAM_VENV/bin/python" ] || "$PYTHON" -m venv "$SAM_VENV"
if pins_satisfied "$SAM_VENV" "$REQ"; then
  echo "already installed"
else
  "$SAM_VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQ"
  "$SAM_VENV/bin/python" -m pip check --disable-pip-version-check
fi
echo "($(since "$t") s)"

# No credentials, no profile, no config from the caller's HOME: an empty HOME, a fixed region.
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
mkdir -p "$SCRATCH/home"
isolated() {
  env -u AWS_PROFILE -u AWS_DEFAULT_PROFILE -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY \
    -u AWS_SESSION_TOKEN -u AWS_CONFIG_FILE -u AWS_SHARED_CREDENTIALS_FILE \
    -u AWS_ENDPOINT_URL -u SAM_CONFIG_FILE \
    HOME="$SCRATCH/home" AWS_DEFAULT_REGION=us-east-1 AWS_REGION=us-east-1 \
    AWS_EC2_METADATA_DISABLED=true SAM_CLI_TELEMETRY=0 "$@"
}

lint_started=$(now)
step "cfn-lint $(basename "$TEMPLATE")"
t=$(now)
isolated "$VENV/bin/cfn-lint" "$TEMPLATE"
echo "ok ($(since "$t") s)"

step "sam validate --lint"
t=$(now)
# Run from a scratch copy: sam validate reads samconfig.toml from the working directory, and a
# missing region makes it print an error yet exit 0, which the fixed region above prevents.
cp "$TEMPLATE" "$SCRATCH/template.yaml"
out=$(cd "$SCRATCH" && isolated "$SAM_VENV/bin/sam" validate --lint --template-file template.yaml 2>&1) || {
  echo "$out"
  exit 1
}
echo "$out"
case "$out" in
  *"is a valid SAM Template"*) ;;
  *) echo "sam validate did not report a valid template" >&2; exit 1 ;;
esac
echo "ok ($(since "$t") s)"

step "translate (aws-sam-translator) and cfn-lint the generated CloudFormation"
t=$(now)
isolated "$SAM_VENV/bin/python" - "$TEMPLATE" "$SCRATCH/translated.json" <<'PY'
import json, sys
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

src, out = sys.argv[1], sys.argv[2]
with open(src, encoding="utf-8") as f:
    template = yaml_parse(f.read())
# `sam validate` does the same: local CodeUri paths become an S3 URI before translation.
for resource in template.get("Resources", {}).values():
    if resource.get("Type") == "AWS::Serverless::Function":
        resource.setdefault("Properties", {})["CodeUri"] = "s3://bucket/key"
# Values for the parameters that have no default (any value matching their AllowedPattern).
params = {"PayToBase": "0x" + "0" * 39 + "1", "PayToSolana": "1" * 32}

class NoManagedPolicies:
    def load(self):
        return {}

translated = transform(template, params, NoManagedPolicies())
with open(out, "w", encoding="utf-8") as f:
    json.dump(translated, f, indent=1)
print(f"{len(translated['Resources'])} CloudFormation resources")
PY
rc=0
isolated "$SAM_VENV/bin/cfn-lint" "$SCRATCH/translated.json" || rc=$?
# cfn-lint's exit status is a bit field: 2 = errors, 4 = warnings, 8 = informational. Warnings on
# SAM-generated resources are not ours to fix; errors (E3004 circular dependency, ...) are.
if [ $((rc & 2)) -ne 0 ] || [ "$rc" -eq 1 ]; then
  echo "cfn-lint found errors in the translated template (exit $rc)" >&2
  exit 1
fi
echo "ok ($(since "$t") s)"

printf '\ntemplate lint passed: lint %s s, total %s s\n' "$(since "$lint_started")" "$(since "$started")"
