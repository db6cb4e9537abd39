"""The real components do what the project needs from them.

Run by tests/components/smoke_test.sh, which starts DynamoDB Local and moto with
scripts/components.sh and exports their endpoints. Every test talks to the real emulator
over 127.0.0.1 with boto3; nothing is mocked.
"""
import os
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

REQUIRED = ["AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_KMS", "AWS_ENDPOINT_URL_SSM"]
missing = [v for v in REQUIRED if not os.environ.get(v)]
if missing:
    pytest.fail(f"start the components first (tests/components/smoke_test.sh); unset: {missing}",
                pytrace=False)
for var in REQUIRED:
    assert os.environ[var].startswith("http://127.0.0.1:"), (var, os.environ[var])
# The generic endpoint must not be set: it would send DynamoDB calls to moto (or vice versa).
assert "AWS_ENDPOINT_URL" not in os.environ, "AWS_ENDPOINT_URL must stay unset"

CFG = Config(retries={"max_attempts": 1, "mode": "standard"}, max_pool_connections=64,
             connect_timeout=5, read_timeout=30)


def client(service):
    # No endpoint_url here: botocore must pick up AWS_ENDPOINT_URL_<SERVICE> by itself,
    # as the Rust SDK does.
    return boto3.session.Session().client(service, config=CFG)


def uid(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="module")
def ddb():
    c = client("dynamodb")
    assert c.meta.endpoint_url == os.environ["AWS_ENDPOINT_URL_DYNAMODB"]
    return c


@pytest.fixture()
def table(ddb):
    name = uid("t")
    ddb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                              {"AttributeName": "sk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                   {"AttributeName": "sk", "KeyType": "RANGE"}],
    )
    ddb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.1, "MaxAttempts": 50})
    yield name
    ddb.delete_table(TableName=name)


def test_dynamodb_create_table_pay_per_request(ddb, table):
    desc = ddb.describe_table(TableName=table)["Table"]
    assert desc["TableStatus"] == "ACTIVE"
    assert desc["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    assert {k["AttributeName"]: k["KeyType"] for k in desc["KeySchema"]} == {"pk": "HASH", "sk": "RANGE"}
    assert table in ddb.list_tables()["TableNames"]


def test_dynamodb_update_time_to_live(ddb, table):
    r = ddb.update_time_to_live(TableName=table, TimeToLiveSpecification={
        "Enabled": True, "AttributeName": "expires_at"})
    assert r["TimeToLiveSpecification"] == {"Enabled": True, "AttributeName": "expires_at"}
    d = ddb.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
    assert d["TimeToLiveStatus"] == "ENABLED" and d["AttributeName"] == "expires_at"
    # DynamoDB Local enforces TTL with a background job: an item that expired a few seconds ago
    # is deleted within about a second (real DynamoDB deletes lazily, often days later; moto never
    # does). Like real DynamoDB it ignores expiry times more than five years in the past. So the
    # project's read paths must filter on expires_at themselves, and tests must not rely on an
    # expired item being either present or gone.
    now = int(time.time())
    keys = {k: {"pk": {"S": "ttl"}, "sk": {"S": k}} for k in ("recent", "ancient", "future")}
    ddb.put_item(TableName=table, Item={**keys["recent"], "expires_at": {"N": str(now - 10)}})
    ddb.put_item(TableName=table, Item={**keys["ancient"], "expires_at": {"N": "1000"}})
    ddb.put_item(TableName=table, Item={**keys["future"], "expires_at": {"N": str(now + 3600)}})

    def present(k):
        return "Item" in ddb.get_item(TableName=table, Key=keys[k], ConsistentRead=True)

    # Its TTL job walks every table, about a second each, and the Rust tests before this one
    # (the same DynamoDB Local) leave a few dozen: measured 16-30 s here, so allow 120 s.
    deadline = time.monotonic() + 120
    while present("recent") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not present("recent"), "DynamoDB Local did not delete an expired item within 120 s"
    assert present("ancient") and present("future")


def counter_add(ddb, table, key, limit, all_old=False):
    kwargs = dict(
        TableName=table, Key=key,
        UpdateExpression="ADD #c :one",
        ConditionExpression="attribute_not_exists(#c) OR #c < :limit",
        ExpressionAttributeNames={"#c": "count"},   # `count` is a reserved word
        ExpressionAttributeValues={":one": {"N": "1"}, ":limit": {"N": str(limit)}},
        ReturnValues="UPDATED_NEW",
    )
    if all_old:
        kwargs["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
    return ddb.update_item(**kwargs)


def test_dynamodb_conditional_counter_sequential(ddb, table):
    key = {"pk": {"S": "agent#a1"}, "sk": {"S": "day#2026-12-03"}}
    got = [int(counter_add(ddb, table, key, 3)["Attributes"]["count"]["N"]) for _ in range(3)]
    assert got == [1, 2, 3]
    with pytest.raises(ClientError) as e:
        counter_add(ddb, table, key, 3)
    assert e.value.response["Error"]["Code"] == "ConditionalCheckFailedException"


def test_dynamodb_return_values_on_condition_check_failure(ddb, table):
    key = {"pk": {"S": "agent#a2"}, "sk": {"S": "day#2026-12-03"}}
    counter_add(ddb, table, key, 1)
    with pytest.raises(ClientError) as e:
        counter_add(ddb, table, key, 1, all_old=True)
    err = e.value.response
    assert err["Error"]["Code"] == "ConditionalCheckFailedException"
    assert err["Item"]["count"] == {"N": "1"}, err
    assert err["Item"]["pk"] == key["pk"]


def test_dynamodb_conditional_counter_50_concurrent_calls_stop_at_limit(ddb, table):
    key = {"pk": {"S": "agent#race"}, "sk": {"S": "day#2026-12-03"}}
    limit, calls = 20, 50
    barrier = threading.Barrier(calls)

    def one(_):
        barrier.wait()
        try:
            return int(counter_add(ddb, table, key, limit)["Attributes"]["count"]["N"])
        except ClientError as e:
            code = e.response["Error"]["Code"]
            if code == "ConditionalCheckFailedException":
                return None
            raise

    with ThreadPoolExecutor(max_workers=calls) as pool:
        results = list(pool.map(one, range(calls)))
    granted = sorted(r for r in results if r is not None)
    assert granted == list(range(1, limit + 1)), granted    # each value handed out exactly once
    assert results.count(None) == calls - limit
    item = ddb.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]
    assert item["count"] == {"N": str(limit)}


def test_dynamodb_transact_write_cancels_atomically(ddb, table):
    counter = {"pk": {"S": "agent#tx"}, "sk": {"S": "counter"}}
    nonce = {"pk": {"S": "nonce#n1"}, "sk": {"S": "nonce"}}

    def transact():
        return ddb.transact_write_items(TransactItems=[
            {"Update": {
                "TableName": table, "Key": counter,
                "UpdateExpression": "ADD #c :one",
                "ConditionExpression": "attribute_not_exists(#c) OR #c < :limit",
                "ExpressionAttributeNames": {"#c": "count"},
                "ExpressionAttributeValues": {":one": {"N": "1"}, ":limit": {"N": "5"}},
            }},
            {"Put": {
                "TableName": table, "Item": {**nonce, "used_at": {"N": "1"}},
                "ConditionExpression": "attribute_not_exists(pk)",
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }},
        ])

    transact()
    with pytest.raises(ClientError) as e:
        transact()                                      # the nonce exists now: replay
    err = e.value.response
    assert err["Error"]["Code"] == "TransactionCanceledException"
    reasons = [r["Code"] for r in err["CancellationReasons"]]
    assert reasons == ["None", "ConditionalCheckFailed"], err["CancellationReasons"]
    # The first action (whose own condition held) was rolled back with the second.
    item = ddb.get_item(TableName=table, Key=counter, ConsistentRead=True)["Item"]
    assert item["count"] == {"N": "1"}
    old = err["CancellationReasons"][1].get("Item")
    assert old is None or old["used_at"] == {"N": "1"}, old


def test_dynamodb_unaliased_reserved_word_is_rejected(ddb, table):
    with pytest.raises(ClientError) as e:
        ddb.update_item(TableName=table, Key={"pk": {"S": "x"}, "sk": {"S": "y"}},
                        UpdateExpression="ADD count :one",
                        ExpressionAttributeValues={":one": {"N": "1"}})
    assert e.value.response["Error"]["Code"] == "ValidationException"


@pytest.fixture(scope="module")
def kms():
    c = client("kms")
    assert c.meta.endpoint_url == os.environ["AWS_ENDPOINT_URL_KMS"]
    return c


@pytest.fixture(scope="module")
def ssm():
    c = client("ssm")
    assert c.meta.endpoint_url == os.environ["AWS_ENDPOINT_URL_SSM"]
    return c


def test_kms_key_alias_and_ssm_secure_string_rotation(kms, ssm):
    key_id = kms.create_key(Description="aov signing-key wrap", KeyUsage="ENCRYPT_DECRYPT",
                            KeySpec="SYMMETRIC_DEFAULT")["KeyMetadata"]["KeyId"]
    alias = "alias/" + uid("aov")
    kms.create_alias(AliasName=alias, TargetKeyId=key_id)
    aliases = {a["AliasName"]: a.get("TargetKeyId") for a in kms.list_aliases(KeyId=key_id)["Aliases"]}
    assert aliases.get(alias) == key_id
    ct = kms.encrypt(KeyId=alias, Plaintext=b"seed")["CiphertextBlob"]
    assert kms.decrypt(CiphertextBlob=ct)["Plaintext"] == b"seed"

    name = "/aov/" + uid("signing-key")
    v1, v2 = "c2VlZC0x", "c2VlZC0y"
    r = ssm.put_parameter(Name=name, Type="SecureString", KeyId=key_id, Value=v1)
    assert r["Version"] == 1
    p = ssm.get_parameter(Name=name, WithDecryption=True)["Parameter"]
    assert (p["Type"], p["Value"], p["Version"]) == ("SecureString", v1, 1)

    with pytest.raises(ClientError) as e:
        ssm.put_parameter(Name=name, Type="SecureString", KeyId=key_id, Value=v2)
    assert e.value.response["Error"]["Code"] == "ParameterAlreadyExists"

    r = ssm.put_parameter(Name=name, Type="SecureString", KeyId=key_id, Value=v2, Overwrite=True)
    assert r["Version"] == 2
    assert ssm.get_parameter(Name=name, WithDecryption=True)["Parameter"]["Value"] == v2
    old = ssm.get_parameter(Name=f"{name}:1", WithDecryption=True)["Parameter"]
    assert old["Value"] == v1

    hist = ssm.get_parameter_history(Name=name, WithDecryption=True)["Parameters"]
    assert [(h["Version"], h["Value"]) for h in hist] == [(1, v1), (2, v2)]
    assert all(h["KeyId"] in (key_id, f"arn:aws:kms:us-east-1:123456789012:key/{key_id}")
               or h["KeyId"].endswith(key_id) for h in hist), hist


def test_kms_with_alias_as_ssm_key_id(kms, ssm):
    key_id = kms.create_key()["KeyMetadata"]["KeyId"]
    alias = "alias/" + uid("aov")
    kms.create_alias(AliasName=alias, TargetKeyId=key_id)
    name = "/aov/" + uid("by-alias")
    ssm.put_parameter(Name=name, Type="SecureString", KeyId=alias, Value="v")
    assert ssm.get_parameter(Name=name, WithDecryption=True)["Parameter"]["Value"] == "v"


def test_endpoints_are_separate():
    # DynamoDB goes to DynamoDB Local, KMS/SSM to moto: two different servers.
    assert os.environ["AWS_ENDPOINT_URL_DYNAMODB"] != os.environ["AWS_ENDPOINT_URL_KMS"]
    assert os.environ["AWS_ENDPOINT_URL_KMS"] == os.environ["AWS_ENDPOINT_URL_SSM"]
    t0 = time.monotonic()
    client("dynamodb").list_tables()
    client("kms").list_keys()
    client("ssm").describe_parameters()
    assert time.monotonic() - t0 < 30


def test_dynamodb_local_has_one_database_per_access_key_and_region(ddb, table):
    # Without -sharedDb, DynamoDB Local keeps a separate database for each access key + region
    # pair: a client with other credentials or another region does not see the table.
    assert table in ddb.list_tables()["TableNames"]
    other_key = boto3.session.Session(aws_access_key_id="other", aws_secret_access_key="x").client(
        "dynamodb", config=CFG)
    other_region = boto3.session.Session().client("dynamodb", region_name="eu-west-1", config=CFG)
    assert table not in other_key.list_tables()["TableNames"]
    assert table not in other_region.list_tables()["TableNames"]
