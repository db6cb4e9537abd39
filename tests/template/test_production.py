"""template.yaml is ready to operate: log groups with a retention, access logs without the
caller's address, alarms on AWS metrics that notify one topic, a dashboard, API throttling and
reserved concurrency from parameters. Reads the template only (no AWS, no build):

    .venv/bin/python -m pytest -q tests/template
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
sys.path.insert(0, str(ROOT / "scripts"))
import routes_from_template  # noqa: E402  (the project's loader: `!Ref x` -> {"Ref": x}, ...)

# logical id -> (binary, reserved concurrency parameter, its default, condition for "-1")
FUNCTIONS = {
    "VerifyFunction": ("verify", "VerifyReservedConcurrency", 20, "VerifyUnreserved"),
    "ScoreFunction": ("score", "ScoreReservedConcurrency", 5, "ScoreUnreserved"),
    "McpFunction": ("mcp", "McpReservedConcurrency", 10, "McpUnreserved"),
    "DiscoveryFunction": ("discovery", "DiscoveryReservedConcurrency", 5, "DiscoveryUnreserved"),
    "RotateKeyFunction": ("rotate-key", "RotateKeyReservedConcurrency", 1, "RotateKeyUnreserved"),
}
CLOUDWATCH_RETENTION_DAYS = [1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096,
                             1827, 2192, 2557, 2922, 3288, 3653]
TOPIC = [{"Ref": "AlarmTopic"}]


@pytest.fixture(scope="module")
def template() -> dict:
    return routes_from_template.load_template(TEMPLATE)


@pytest.fixture(scope="module")
def resources(template) -> dict:
    return template["Resources"]


@pytest.fixture(scope="module")
def params(template) -> dict:
    return template["Parameters"]


def alarms(resources) -> dict:
    return {k: v for k, v in resources.items() if v["Type"] == "AWS::CloudWatch::Alarm"}


def find_alarm(resources, **props) -> tuple[str, dict]:
    """The one alarm whose Properties include every given key with that value."""
    found = [(k, v["Properties"]) for k, v in alarms(resources).items()
             if all(v["Properties"].get(key) == value for key, value in props.items())]
    assert len(found) == 1, f"expected one alarm with {props}, found {[k for k, _ in found]}"
    return found[0]


def function_dims(logical_id: str) -> list:
    return [{"Name": "FunctionName", "Value": {"Ref": logical_id}}]


def test_the_functions_are_the_five_known_ones(resources):
    functions = {k for k, v in resources.items() if v["Type"] == "AWS::Serverless::Function"}
    assert functions == set(FUNCTIONS), "a new function needs its log group, alarms and concurrency here"


def test_every_function_logs_to_its_own_group_with_the_retention_parameter(template, resources, params):
    retention = params["LogRetentionDays"]
    assert retention["Type"] == "Number" and retention["Default"] == 30
    assert retention["AllowedValues"] == CLOUDWATCH_RETENTION_DAYS
    # JSON logs at the LogLevel parameter stay as they were (Globals), the group is added per function.
    assert template["Globals"]["Function"]["LoggingConfig"]["LogFormat"] == "JSON"
    for logical_id, (binary, *_rest) in FUNCTIONS.items():
        props = resources[logical_id]["Properties"]
        name = f"agent-output-verifier-${{Stage}}-{binary}"
        assert props["FunctionName"] == {"Fn::Sub": name}
        group_id = logical_id.removesuffix("Function") + "LogGroup"
        assert props["LoggingConfig"] == {"LogGroup": {"Ref": group_id}}
        group = resources[group_id]
        assert group["Type"] == "AWS::Logs::LogGroup"
        assert group["Properties"]["LogGroupName"] == {"Fn::Sub": f"/aws/lambda/{name}"}
        assert group["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}


def test_api_access_logs_are_json_without_the_callers_address(resources):
    api = resources["HttpApi"]["Properties"]
    settings = api["AccessLogSettings"]
    assert settings["DestinationArn"] == {"Fn::GetAtt": ["ApiAccessLogGroup", "Arn"]}
    group = resources["ApiAccessLogGroup"]
    assert group["Type"] == "AWS::Logs::LogGroup"
    assert group["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}
    fmt = settings["Format"]
    assert isinstance(fmt, str)
    fields = json.loads(fmt)
    assert fields == {key: f"$context.{key}" for key in (
        "requestId", "routeKey", "status", "responseLength", "integrationLatency",
        "responseLatency", "requestTime")}
    for forbidden in ("$context.identity", "sourceIp", "userAgent", "$context.path",
                      "queryString", "$context.http", "$context.authorizer"):
        assert forbidden not in fmt


def test_default_route_throttling_comes_from_the_parameters(resources, params):
    api = resources["HttpApi"]["Properties"]
    assert api["DefaultRouteSettings"] == {
        "ThrottlingRateLimit": {"Ref": "ApiThrottleRate"},
        "ThrottlingBurstLimit": {"Ref": "ApiThrottleBurst"},
    }
    assert params["ApiThrottleRate"]["Default"] == 100
    assert params["ApiThrottleBurst"]["Default"] == 200
    for name in ("ApiThrottleRate", "ApiThrottleBurst"):
        assert params[name]["Type"] == "Number" and params[name]["MinValue"] >= 1


def test_every_function_has_reserved_concurrency_from_a_parameter(template, resources, params):
    for logical_id, (_binary, param, default, condition) in FUNCTIONS.items():
        props = resources[logical_id]["Properties"]
        assert props["ReservedConcurrentExecutions"] == {
            "Fn::If": [condition, {"Ref": "AWS::NoValue"}, {"Ref": param}]}
        # -1 leaves the property out (no reservation); 0 would be a reservation that stops it.
        assert template["Conditions"][condition] == {"Fn::Equals": [{"Ref": param}, "-1"]}
        assert params[param]["Type"] == "Number"
        assert params[param]["Default"] == default
        assert params[param]["MinValue"] == -1


def test_the_alarm_topic_has_an_optional_email_subscription(template, resources, params):
    assert resources["AlarmTopic"]["Type"] == "AWS::SNS::Topic"
    assert params["AlarmEmail"]["Default"] == ""
    assert template["Conditions"]["HasAlarmEmail"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "AlarmEmail"}, ""]}]}
    subscriptions = {k: v for k, v in resources.items() if v["Type"] == "AWS::SNS::Subscription"}
    assert list(subscriptions) == ["AlarmEmailSubscription"]
    sub = subscriptions["AlarmEmailSubscription"]
    assert sub["Condition"] == "HasAlarmEmail"
    assert sub["Properties"] == {"TopicArn": {"Ref": "AlarmTopic"}, "Protocol": "email",
                                 "Endpoint": {"Ref": "AlarmEmail"}}


def test_every_alarm_notifies_the_topic_and_treats_missing_data_right(resources):
    found = alarms(resources)
    assert len(found) >= 15
    for logical_id, alarm in found.items():
        props = alarm["Properties"]
        assert props["AlarmActions"] == TOPIC, logical_id
        assert props["OKActions"] == TOPIC, logical_id
        # Missing data is the failure only for "the rotation has not run".
        # The ring's size is written once a rotation (monthly): between rotations the alarm keeps
        # the state the last size put it in.
        expected = {"RotateKeyMissedRunAlarm": "breaching", "KeyRingNearlyFullAlarm": "ignore"}.get(
            logical_id, "notBreaching")
        assert props["TreatMissingData"] == expected, logical_id
        assert props.get("AlarmDescription"), logical_id
        assert props["AlarmName"]["Fn::Sub"].startswith("agent-output-verifier-${Stage}-"), logical_id


APPLICATION_ALARMS = {"FacilitatorErrorsAlarm", "SettlementUnknownAlarm", "FreeBudgetSpentAlarm"}


def test_application_alarms_watch_the_functions_emf_metrics(resources, params):
    """The three alarms on the functions' own metrics (EMF, namespace from the parameter), each a
    Metrics Insights query over the dimension set the functions write (the function's name and
    the metric's labels)."""
    found = alarms(resources)
    assert APPLICATION_ALARMS <= set(found)
    assert "MetricsNamespace" in params
    expected = {
        "FacilitatorErrorsAlarm": ("COUNT(verifier_dependency_duration_seconds)",
                                   "dependency, function, outcome", "outcome = ''error''"),
        "SettlementUnknownAlarm": ("SUM(verifier_payments_total)", "code, function, network, outcome",
                                   "outcome = ''settlement_unknown''"),
        "FreeBudgetSpentAlarm": ("SUM(verifier_payment_required_total)", "function, reason",
                                 "reason = ''free_budget_spent''"),
    }
    for logical_id, (select, dims, where) in expected.items():
        expr = found[logical_id]["Properties"]["Metrics"][0]["Expression"]["Fn::Sub"]
        assert f"SELECT {select} FROM SCHEMA(\"${{MetricsNamespace}}\", {dims})" in expr, expr
        assert where.replace("''", "'") in expr.replace("''", "'"), expr


def test_the_key_ring_alarm_fires_before_ssm_refuses_the_ring(resources):
    """The rotate-key function's own gauge of the ring's bytes (EMF, one value a rotation), alarmed
    at 75 % of SSM's 8,192-byte limit over a day."""
    props = alarms(resources)["KeyRingNearlyFullAlarm"]["Properties"]
    assert props["Namespace"] == {"Ref": "MetricsNamespace"}
    assert props["MetricName"] == "verifier_key_ring_bytes"
    assert props["Dimensions"] == [{"Name": "function", "Value": "rotate-key"}]
    assert props["Statistic"] == "Maximum" and props["Period"] == 86400
    assert props["Threshold"] == 6144 and props["ComparisonOperator"] == "GreaterThanThreshold"


def test_alarms_watch_aws_metrics_only(resources):
    """Apart from those on the functions' own metrics, alarms watch AWS's metrics."""
    for logical_id, alarm in alarms(resources).items():
        if logical_id in APPLICATION_ALARMS | {"KeyRingNearlyFullAlarm"}:
            continue
        props = alarm["Properties"]
        namespaces = [props["Namespace"]] if "Namespace" in props else []
        for query in props.get("Metrics", []):
            if "MetricStat" in query:
                namespaces.append(query["MetricStat"]["Metric"]["Namespace"])
            elif "SELECT" in str(query.get("Expression")):
                namespaces += re.findall(r'SCHEMA\("([^"]+)"', query["Expression"]["Fn::Sub"])
        assert namespaces, logical_id
        assert all(ns.startswith("AWS/") for ns in namespaces), (logical_id, namespaces)
        assert "UserErrors" not in json.dumps(props), logical_id


@pytest.mark.parametrize("metric", ["Errors", "Throttles"])
def test_every_function_has_errors_and_throttles_alarms(resources, metric):
    for logical_id, (binary, *_rest) in FUNCTIONS.items():
        name, props = find_alarm(resources, Namespace="AWS/Lambda", MetricName=metric,
                                 Dimensions=function_dims(logical_id))
        assert name == logical_id.removesuffix("Function") + f"{metric}Alarm"
        assert props["AlarmName"] == {"Fn::Sub": f"agent-output-verifier-${{Stage}}-{binary}-{metric.lower()}"}
        assert props["Statistic"] == "Sum"
        assert props["Period"] == 300 and props["EvaluationPeriods"] == 1
        assert props["Threshold"] == 0 and props["ComparisonOperator"] == "GreaterThanThreshold"


def test_api_5xx_rate_alarm(resources, params):
    props = resources["Api5xxRateAlarm"]["Properties"]
    assert params["Api5xxRatePercent"]["Default"] == 1
    assert props["Threshold"] == {"Ref": "Api5xxRatePercent"}
    assert props["ComparisonOperator"] == "GreaterThanThreshold"
    assert props["EvaluationPeriods"] == 1
    queries = {q["Id"]: q for q in props["Metrics"]}
    for query_id, metric in (("errors", "5xx"), ("requests", "Count")):
        q = queries[query_id]
        assert q["ReturnData"] is False
        assert q["MetricStat"] == {
            "Metric": {"Namespace": "AWS/ApiGateway", "MetricName": metric,
                       "Dimensions": [{"Name": "ApiId", "Value": {"Ref": "HttpApi"}}]},
            "Period": 300, "Stat": "Sum"}
    returned = [q for q in props["Metrics"] if q.get("ReturnData") is True]
    assert len(returned) == 1
    expression = returned[0]["Expression"]["Fn::Sub"]
    # a percentage of the requests, only when there were at least some
    assert "100 * FILL(errors, 0) / requests" in expression
    assert "requests >= ${Api5xxAlarmMinRequests}" in expression
    assert params["Api5xxAlarmMinRequests"]["MinValue"] >= 1


@pytest.mark.parametrize("logical_id,metric", [("TableThrottlesAlarm", "ThrottledRequests"),
                                               ("TableSystemErrorsAlarm", "SystemErrors")])
def test_table_alarms_sum_every_operation_of_the_table(resources, logical_id, metric):
    props = resources[logical_id]["Properties"]
    (query,) = props["Metrics"]
    assert query["ReturnData"] is True and query["Period"] == 300
    assert query["Expression"] == {"Fn::Sub": (
        f"SELECT SUM({metric}) FROM SCHEMA(\"AWS/DynamoDB\", Operation, TableName) "
        "WHERE TableName = '${Table}'")}
    assert props["Threshold"] == 0 and props["ComparisonOperator"] == "GreaterThanThreshold"
    assert props["EvaluationPeriods"] == 1


def test_rotation_alarms(template, resources, params):
    rotation = resources["RotateKeyFunction"]["Properties"]["Events"]["Rotation"]["Properties"]
    assert rotation["GroupName"] == {"Ref": "RotationScheduleGroup"}
    assert resources["RotationScheduleGroup"]["Type"] == "AWS::Scheduler::ScheduleGroup"
    name, props = find_alarm(resources, Namespace="AWS/Scheduler", MetricName="InvocationDroppedCount")
    assert name == "RotationDroppedAlarm"
    assert props["Dimensions"] == [{"Name": "ScheduleGroup", "Value": {"Ref": "RotationScheduleGroup"}}]
    assert props["Threshold"] == 0 and props["ComparisonOperator"] == "GreaterThanThreshold"

    # "has not run": no invocation in N daily periods, missing data breaching
    missed = resources["RotateKeyMissedRunAlarm"]
    assert missed["Condition"] == "HasRotationMissedRunAlarm"
    assert template["Conditions"]["HasRotationMissedRunAlarm"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "RotationMissedRunAlarmDays"}, "0"]}]}
    props = missed["Properties"]
    assert props["Namespace"] == "AWS/Lambda" and props["MetricName"] == "Invocations"
    assert props["Dimensions"] == function_dims("RotateKeyFunction")
    assert props["Statistic"] == "Sum" and props["Period"] == 86400
    assert props["EvaluationPeriods"] == {"Ref": "RotationMissedRunAlarmDays"}
    assert props["DatapointsToAlarm"] == {"Ref": "RotationMissedRunAlarmDays"}
    assert props["Threshold"] == 1 and props["ComparisonOperator"] == "LessThanThreshold"
    # CloudWatch: Period x EvaluationPeriods <= 7 days for periods of an hour or more.
    days = params["RotationMissedRunAlarmDays"]
    assert days["MaxValue"] * props["Period"] <= 7 * 86400
    # The default schedule is longer than that, so the alarm is off by default.
    m = re.fullmatch(r"rate\((\d+) days?\)", params["RotationScheduleExpression"]["Default"])
    assert m, "the default rotation schedule is a rate in days"
    if int(m.group(1)) + 1 > days["MaxValue"]:
        assert days["Default"] == 0


def _dashboard(resources) -> tuple[dict, set[str]]:
    dashboard = resources["Dashboard"]
    assert dashboard["Type"] == "AWS::CloudWatch::Dashboard"
    body = dashboard["Properties"]["DashboardBody"]["Fn::Sub"]
    refs = set(re.findall(r"\$\{([^}!]+)\}", body))
    return json.loads(re.sub(r"\$\{([^}!]+)\}", r"<\1>", body)), refs


def _lines(widget) -> list:
    """(namespace, metric, dims, stat) for every metric line; ("expression", text) otherwise."""
    props = widget["properties"]
    out = []
    for line in props["metrics"]:
        if isinstance(line[0], dict):
            out.append(("expression", line[0]["expression"]))
            continue
        options = line[-1] if isinstance(line[-1], dict) else {}
        names = [x for x in line if not isinstance(x, dict)]
        dims = dict(zip(names[2::2], names[3::2]))
        out.append((names[0], names[1], dims, options.get("stat", props.get("stat"))))
    return out


def test_dashboard_shows_the_api_the_functions_and_the_table(resources):
    body, refs = _dashboard(resources)
    # every ${...} the body substitutes is a resource of the stack or a pseudo parameter
    assert refs <= set(resources) | {"AWS::Region", "MetricsNamespace"}
    assert set(FUNCTIONS) <= refs and {"HttpApi", "Table"} <= refs
    lines = [line for widget in body["widgets"] for line in _lines(widget)]
    metrics = {(l[0], l[1], tuple(sorted(l[2].items())), l[3]) for l in lines if l[0] != "expression"}
    api = (("ApiId", "<HttpApi>"),)
    for metric, stat in (("Count", "Sum"), ("4xx", "Sum"), ("5xx", "Sum"), ("Latency", "p50"), ("Latency", "p99")):
        assert ("AWS/ApiGateway", metric, api, stat) in metrics, (metric, stat)
    for logical_id in FUNCTIONS:
        fn = (("FunctionName", f"<{logical_id}>"),)
        for metric, stat in (("Invocations", "Sum"), ("Errors", "Sum"), ("Throttles", "Sum"),
                             ("Duration", "p50"), ("Duration", "p99"), ("ConcurrentExecutions", "Maximum")):
            assert ("AWS/Lambda", metric, fn, stat) in metrics, (logical_id, metric, stat)
    table = (("TableName", "<Table>"),)
    for metric in ("ConsumedReadCapacityUnits", "ConsumedWriteCapacityUnits", "ReadThrottleEvents",
                   "WriteThrottleEvents"):
        assert ("AWS/DynamoDB", metric, table, "Sum") in metrics, metric
    expressions = [l[1] for l in lines if l[0] == "expression"]
    for metric in ("ThrottledRequests", "SystemErrors"):
        assert (f"SELECT SUM({metric}) FROM SCHEMA(\"AWS/DynamoDB\", Operation, TableName) "
                "WHERE TableName = '<Table>'") in expressions
    # The functions' own metrics (EMF) through Metrics Insights queries on their namespace.
    for metric in ("verifier_verifications_total", "verifier_revenue_usdc_atomic_total",
                   "verifier_refusals_total", "verifier_payment_required_total", "verifier_cold_starts_total"):
        assert any(f"SUM({metric}) FROM SCHEMA(\"<MetricsNamespace>\"" in e for e in expressions), metric
    assert all(l[0].startswith("AWS/") for l in lines if l[0] != "expression")


def test_every_parameter_has_a_description(params):
    for name, param in params.items():
        assert param.get("Description"), name


def test_the_routes_still_read(resources):
    routes = routes_from_template.routes(TEMPLATE)
    assert {binary for _m, _p, binary in routes} == {"verify", "score", "mcp", "discovery"}
