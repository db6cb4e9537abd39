#!/usr/bin/env python3
"""Print the HTTP API routes that template.yaml gives the functions, one `METHOD PATH` a line, sorted.

    python3 scripts/routes_from_template.py                 # GET /health ... (sorted)
    python3 scripts/routes_from_template.py --functions     # GET /health discovery  (adds the binary)
    python3 scripts/routes_from_template.py path/to/template.yaml

A route is an event of `Type: HttpApi` on an `AWS::Serverless::Function`; the binary is the
function's `Metadata.BuildProperties.Binary`. Tests compare this output with the code's route
table (shared/src/routes.rs), so the template and the code cannot drift apart.

Needs PyYAML (a dependency of cfn-lint, so any venv made by scripts/lint-template.sh has it).
CloudFormation short-form tags (!Ref, !Sub, !GetAtt, !If, ...) are read as plain values.
Exit status: 0 on success, 1 when the template is missing or malformed or two events declare
the same method and path, 2 on bad usage.
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    import yaml
except ImportError:  # pragma: no cover - depends on the interpreter
    sys.exit("routes_from_template.py: PyYAML is required (pip install pyyaml, or use the venv "
             "that scripts/lint-template.sh makes)")


class _CfnLoader(yaml.SafeLoader):
    """SafeLoader that reads `!Tag value` as {"Fn::Tag": value} (`!Ref x` as {"Ref": x})."""


def _construct_tag(loader: yaml.SafeLoader, tag_suffix: str, node: yaml.Node):
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    if tag_suffix == "Ref":
        return {"Ref": value}
    if tag_suffix == "GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {f"Fn::{tag_suffix}": value}


_CfnLoader.add_multi_constructor("!", _construct_tag)


def load_template(template_path: Path) -> dict:
    """The template as data, short-form tags read as their long forms (`{"Ref": x}`,
    `{"Fn::Sub": s}`, ...)."""
    doc = yaml.load(template_path.read_text(encoding="utf-8"), Loader=_CfnLoader)
    if not isinstance(doc, dict) or not isinstance(doc.get("Resources"), dict):
        raise ValueError(f"{template_path}: no Resources mapping")
    return doc


def routes(template_path: Path) -> list[tuple[str, str, str]]:
    """(METHOD, PATH, binary) for every HttpApi event, sorted by METHOD then PATH."""
    doc = load_template(template_path)
    found: dict[tuple[str, str], str] = {}
    for logical_id, resource in doc["Resources"].items():
        if not isinstance(resource, dict) or resource.get("Type") != "AWS::Serverless::Function":
            continue
        props = resource.get("Properties") or {}
        binary = ((resource.get("Metadata") or {}).get("BuildProperties") or {}).get("Binary", logical_id)
        for event_id, event in (props.get("Events") or {}).items():
            if not isinstance(event, dict) or event.get("Type") != "HttpApi":
                continue
            ep = event.get("Properties") or {}
            method, path = ep.get("Method"), ep.get("Path")
            if not isinstance(method, str) or not isinstance(path, str):
                raise ValueError(f"{logical_id}.{event_id}: Method and Path must be plain strings")
            key = (method.upper(), path)
            if key in found:
                raise ValueError(f"{key[0]} {key[1]} is declared twice ({found[key]} and {binary})")
            found[key] = binary
    return sorted((m, p, b) for (m, p), b in found.items())


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    flags = {a for a in argv if a.startswith("--")}
    unknown = flags - {"--functions", "--help"}
    if "--help" in flags:
        print(__doc__.strip())
        return 0
    if unknown or len(args) > 1:
        print("usage: routes_from_template.py [--functions] [template.yaml]", file=sys.stderr)
        return 2
    path = Path(args[0]) if args else Path(__file__).resolve().parent.parent / "template.yaml"
    try:
        rows = routes(path)
    except (OSError, ValueError, yaml.YAMLError) as e:
        print(f"routes_from_template.py: {e}", file=sys.stderr)
        return 1
    for method, route_path, binary in rows:
        print(f"{method} {route_path} {binary}" if "--functions" in flags else f"{method} {route_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
