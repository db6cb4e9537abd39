"""ops/grafana/agent-output-verifier.json is an importable Grafana dashboard over the local
server's metrics as shared/service/src/telemetry.rs defines them: every panel on the
`${datasource}` variable with a PromQL target, every metric name and label it uses one that
telemetry.rs records, and every metric telemetry.rs defines on some panel. Reads the two files
only (no Grafana, no Prometheus, no build; standard library):

    .venv/bin/python -m pytest -q tests/template/test_grafana.py
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "ops" / "grafana" / "agent-output-verifier.json"
TELEMETRY = ROOT / "shared" / "service" / "src" / "telemetry.rs"

DATASOURCE = "${datasource}"
# The labels this service records at all (Prometheus's own `le` on histogram buckets included).
KNOWN_LABELS = {"route", "status", "transport", "result", "paid", "reason", "network", "outcome",
                "code", "dependency", "le", "key_version", "kind"}
HISTOGRAM_SUFFIXES = ("_bucket", "_count", "_sum")

CONST = re.compile(r'pub\s+const\s+([A-Z][A-Z0-9_]*)\s*:\s*&str\s*=\s*"(verifier_[a-z0-9_]+)"\s*;')
RECORD = re.compile(r"\b(counter|histogram|gauge)!\(\s*([A-Z][A-Z0-9_]*)\b")
LABEL_KEY = re.compile(r'"([a-z_][a-z0-9_]*)"\s*=>')
METRIC = re.compile(r"\bverifier_[a-zA-Z0-9_]+")
GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
SELECTOR = re.compile(r"\b(verifier_[a-zA-Z0-9_]+)\s*\{([^}]*)\}")
MATCHER = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
AGGREGATION = re.compile(r"\b(?:sum|avg|min|max|count|topk|bottomk|quantile|stddev|stdvar|group)\s*\(")
LEGEND_LABEL = re.compile(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}")


def macro_args(text: str, start: int) -> str:
    """The text of a macro call's arguments, from just after its `(` to its matching `)`."""
    depth, i = 1, start
    while depth:
        ch = text[i]
        depth += {"(": 1, ")": -1}.get(ch, 0)
        i += 1
    return text[start:i - 1]


def telemetry() -> dict[str, dict]:
    """Each metric telemetry.rs defines: {name: {"kind": counter|histogram|gauge, "labels": set}},
    the labels being the keys of every `counter!`/`histogram!`/`gauge!` call that records it
    (a histogram's buckets add `le`)."""
    text = TELEMETRY.read_text(encoding="utf-8")
    consts = dict(CONST.findall(text))
    assert consts, f"no `pub const ...: &str = \"verifier_...\"` in {TELEMETRY}"
    metrics = {name: {"kind": None, "labels": set()} for name in consts.values()}
    for m in RECORD.finditer(text):
        kind, const = m.groups()
        assert const in consts, f"{kind}!({const}, ...) records a metric telemetry.rs does not define"
        metric = metrics[consts[const]]
        assert metric["kind"] in (None, kind), f"{consts[const]} is recorded as {metric['kind']} and {kind}"
        metric["kind"] = kind
        metric["labels"] |= set(LABEL_KEY.findall(macro_args(text, m.end())))
    for name, metric in metrics.items():
        assert metric["kind"], f"{name} is defined but never recorded in telemetry.rs"
        if metric["kind"] == "histogram":
            metric["labels"].add("le")
    return metrics


def base_name(identifier: str, metrics: dict) -> str | None:
    """The telemetry metric an identifier of a query names (a histogram only through its
    `_bucket`, `_count` or `_sum` series), or None."""
    if identifier in metrics and metrics[identifier]["kind"] != "histogram":
        return identifier
    for suffix in HISTOGRAM_SUFFIXES:
        stem = identifier[: -len(suffix)]
        if identifier.endswith(suffix) and metrics.get(stem, {}).get("kind") == "histogram":
            return stem
    return None


@pytest.fixture(scope="module")
def metrics() -> dict:
    return telemetry()


@pytest.fixture(scope="module")
def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text(encoding="utf-8"))


def all_panels(dashboard: dict) -> list[dict]:
    """Every panel, those inside collapsed rows included."""
    out = []
    for panel in dashboard["panels"]:
        out.append(panel)
        out.extend(panel.get("panels", []))
    return out


def query_panels(dashboard: dict) -> list[dict]:
    return [p for p in all_panels(dashboard) if p.get("type") != "row"]


def exprs(dashboard: dict) -> list[tuple[str, dict]]:
    """(panel title, target) of every target of every panel."""
    return [(p["title"], t) for p in query_panels(dashboard) for t in p.get("targets", [])]


def uses_variable(datasource) -> bool:
    """A datasource reference to the `datasource` variable: the string, or {"uid": ...}."""
    if isinstance(datasource, dict):
        return datasource.get("uid") == DATASOURCE
    return datasource == DATASOURCE


def test_telemetry_defines_the_metrics(metrics):
    # The parse itself is checked: the names and labels the operator docs promise.
    documented = {"verifier_requests_total", "verifier_request_duration_seconds",
                  "verifier_verifications_total", "verifier_payment_required_total",
                  "verifier_payments_total", "verifier_revenue_usdc_atomic_total",
                  "verifier_refusals_total", "verifier_dependency_duration_seconds",
                  "verifier_pool_wait_seconds", "verifier_pool_rejections_total",
                  "verifier_signing_key_info"}
    assert documented <= set(metrics), f"telemetry.rs lost {sorted(documented - set(metrics))}"
    assert metrics["verifier_requests_total"] == {"kind": "counter", "labels": {"route", "status"}}
    assert metrics["verifier_request_duration_seconds"] == {"kind": "histogram", "labels": {"route", "le"}}
    assert metrics["verifier_payments_total"]["labels"] == {"network", "outcome", "code"}
    assert metrics["verifier_signing_key_info"] == {"kind": "gauge", "labels": {"key_version"}}
    assert metrics["verifier_pool_wait_seconds"] == {"kind": "histogram", "labels": {"le"}}
    for name, metric in metrics.items():
        assert metric["labels"] <= KNOWN_LABELS, f"{name} records labels {metric['labels'] - KNOWN_LABELS}"


def test_the_dashboard_is_importable(dashboard):
    assert dashboard["schemaVersion"] >= 36
    assert dashboard["title"] and dashboard["uid"]
    assert dashboard.get("id") is None, "an exported id would clash on import"
    variables = [v for v in dashboard["templating"]["list"] if v["name"] == "datasource"]
    assert len(variables) == 1
    assert variables[0]["type"] == "datasource" and variables[0]["query"] == "prometheus"
    panels = all_panels(dashboard)
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)), f"panel ids repeat: {ids}"
    for panel in panels:
        for key in ("x", "y", "w", "h"):
            assert isinstance(panel["gridPos"][key], int), f"{panel['title']}: gridPos.{key}"
        assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24, f"{panel['title']} is wider than the grid"


def test_every_panel_queries_the_datasource_variable(dashboard):
    panels = query_panels(dashboard)
    assert panels
    for panel in panels:
        title = panel.get("title", panel.get("id"))
        assert panel["type"] in {"timeseries", "stat", "table"}, f"{title}: {panel['type']}"
        assert uses_variable(panel.get("datasource")), f"{title}: datasource {panel.get('datasource')!r}"
        targets = [t for t in panel.get("targets", []) if t.get("expr", "").strip()]
        assert targets, f"{title} has no target with an expr"
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), f"{title}: refIds repeat"
        for target in panel["targets"]:
            if "datasource" in target:
                assert uses_variable(target["datasource"]), f"{title}: target datasource {target['datasource']!r}"


def test_every_metric_name_is_one_telemetry_defines(dashboard, metrics):
    for title, target in exprs(dashboard):
        for identifier in METRIC.findall(target["expr"]):
            assert base_name(identifier, metrics), (
                f"{title}: {identifier} is not a series telemetry.rs exports "
                f"(a histogram only as _bucket, _count or _sum): {target['expr']}")


def test_every_label_is_one_the_metric_records(dashboard, metrics):
    for title, target in exprs(dashboard):
        expr = target["expr"]
        used = {base_name(i, metrics) for i in METRIC.findall(expr)} - {None}
        recorded = set().union(*(metrics[name]["labels"] for name in used)) if used else set()
        grouped = set()
        for group in GROUPING.findall(expr):
            for label in filter(None, (part.strip() for part in group.split(","))):
                assert label in KNOWN_LABELS, f"{title}: unknown label {label!r} in {expr}"
                assert label in recorded, f"{title}: no metric of {sorted(used)} records {label!r}: {expr}"
                grouped.add(label)
        for identifier, matchers in SELECTOR.findall(expr):
            name = base_name(identifier, metrics)
            for label, _op, _value in MATCHER.findall(matchers):
                assert label in KNOWN_LABELS, f"{title}: unknown label {label!r} in {expr}"
                assert label in metrics[name]["labels"], f"{title}: {name} does not record {label!r}"
            unparsed = MATCHER.sub("", matchers).replace(",", "").strip()
            assert not unparsed, f"{title}: a matcher not understood in {{{matchers}}}"
        # A legend names only labels the query's result keeps.
        for label in LEGEND_LABEL.findall(target.get("legendFormat", "")):
            if grouped:
                kept = grouped - {"le"}
            elif AGGREGATION.search(expr):
                kept = set()  # aggregated without `by`: no labels left
            else:
                kept = recorded - {"le"}
            assert label in kept, f"{title}: legend {{{{{label}}}}} is not a label of the result of {expr}"


def test_matched_values_are_ones_telemetry_names(dashboard, metrics):
    """`label="value"` matches a value telemetry.rs writes or documents (a typo matches nothing)."""
    text = TELEMETRY.read_text(encoding="utf-8")
    for title, target in exprs(dashboard):
        for _identifier, matchers in SELECTOR.findall(target["expr"]):
            for label, op, value in MATCHER.findall(matchers):
                if op in ("=", "!="):
                    assert re.search(rf"\b{re.escape(value)}\b", text), (
                        f"{title}: {label}={value!r} is no value telemetry.rs names")


# Metrics only Lambda writes (the CloudWatch dashboard of template.yaml shows them).
LAMBDA_ONLY = {"verifier_cold_starts_total"}


def test_every_metric_is_on_a_panel(dashboard, metrics):
    shown = {base_name(i, metrics) for _, t in exprs(dashboard) for i in METRIC.findall(t["expr"])}
    missing = sorted(set(metrics) - shown - LAMBDA_ONLY)
    assert not missing, f"metrics on no panel: {missing}"


def test_histograms_are_quantiles_by_le_and_counters_are_rates(dashboard, metrics):
    for title, target in exprs(dashboard):
        expr = target["expr"]
        if "histogram_quantile" in expr:
            assert "_bucket" in expr and re.search(r"\bby\s*\([^)]*\ble\b", expr), (
                f"{title}: histogram_quantile needs the rate of _bucket summed by le: {expr}")
        for identifier in METRIC.findall(expr):
            name = base_name(identifier, metrics)
            if metrics[name]["kind"] == "counter" or identifier.endswith(HISTOGRAM_SUFFIXES):
                assert re.search(rf"\b(?:rate|increase|irate)\(\s*{identifier}\b", expr), (
                    f"{title}: the counter {identifier} is used without rate() or increase(): {expr}")


def test_the_panels_the_operator_needs(dashboard):
    titles = {p["title"].lower() for p in query_panels(dashboard)}
    for needed in ("requests per second", "latency", "verifications", "402", "payments", "revenue",
                   "revenue today", "refusals", "dependency", "pool", "signing key"):
        assert any(needed in t for t in titles), f"no panel about {needed!r}: {sorted(titles)}"
    revenue = [t["expr"] for p in query_panels(dashboard) if "revenue" in p["title"].lower()
               for t in p["targets"]]
    assert all("/ 1e6" in e for e in revenue), "revenue is shown in dollars (atomic units / 1e6)"
