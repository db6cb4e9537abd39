//! DynamoDB keeps an agent's newest outcomes inside its counters' item (`recent`): one write
//! per verification, bounded, counted once, and still reading the rows of earlier versions.
//! Runs on DynamoDB Local (`AWS_ENDPOINT_URL_DYNAMODB`), skipped without it.

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity};
use std::collections::HashMap;
use std::sync::Arc;
use time::OffsetDateTime;
use verifier_ports::store::{Outcome, RECENT_OUTCOMES_KEPT, Store};
use verifier_store_dynamo::DynamoStore;

/// The entries an item may hold: a trim starts at 28 (plain appends are refused at 32).
const TRIM_AT: usize = RECENT_OUTCOMES_KEPT + 8;
const CAP: usize = RECENT_OUTCOMES_KEPT + 12;

async fn setup(retention_days: u32) -> Option<(DynamoStore, Client, String)> {
    if std::env::var("AWS_ENDPOINT_URL_DYNAMODB").is_err() {
        assert!(
            std::env::var("VERIFIER_REQUIRE_COMPONENTS").is_err(),
            "DynamoDB Local is required (AWS_ENDPOINT_URL_DYNAMODB unset)"
        );
        eprintln!("skipped: AWS_ENDPOINT_URL_DYNAMODB is unset");
        return None;
    }
    let table = format!("recent-{}", uuid::Uuid::new_v4());
    let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let client = Client::new(&config);
    let store = DynamoStore::new(client.clone(), &table).with_outcome_retention(retention_days);
    store.create_table().await.expect("create table");
    Some((store, client, table))
}

/// Delete a test's table: DynamoDB Local's TTL job walks every table (about a second each), and
/// the component tests wait for it.
async fn drop_table(client: &Client, table: &str) {
    client
        .delete_table()
        .table_name(table)
        .send()
        .await
        .expect("delete table");
}

/// `t` as the engine writes `verified_at`.
fn micros(t: OffsetDateTime) -> String {
    t.format(time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]+00:00"
    ))
    .expect("format")
}

/// The `i`th outcome of `agent`, `i` seconds after `start`.
fn outcome(agent: &str, start: OffsetDateTime, i: i64) -> Outcome {
    Outcome {
        agent_id: agent.into(),
        verification_id: uuid::Uuid::new_v4().to_string(),
        result: if i % 3 == 0 { "fail" } else { "pass" }.into(),
        verified_at: micros(start + time::Duration::seconds(i)),
        signed_deliverable: None,
        paid: i % 2 == 0,
        checks: 1 + i as u64,
    }
}

/// An Ethereum-address-sized agent ID (42 characters), unique per test.
fn agent() -> String {
    format!("0x{}{}", uuid::Uuid::new_v4().simple(), "00000000")
}

async fn stats_item(client: &Client, table: &str, agent: &str) -> HashMap<String, AttributeValue> {
    client
        .get_item()
        .table_name(table)
        .key("pk", AttributeValue::S(format!("AGENT#{agent}")))
        .key("sk", AttributeValue::S("STATS".into()))
        .consistent_read(true)
        .send()
        .await
        .expect("get")
        .item
        .expect("the agent's item")
}

fn entries(item: &HashMap<String, AttributeValue>) -> usize {
    item.get("recent")
        .and_then(|l| l.as_l().ok())
        .map_or(0, Vec::len)
}

fn ids(recent: &[Outcome]) -> Vec<String> {
    recent.iter().map(|o| o.verification_id.clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_newest_outcomes_are_listed_whole_and_the_item_stays_one_write_unit() {
    let Some((store, client, table)) = setup(0).await else {
        return;
    };
    let agent = agent();
    let start = OffsetDateTime::now_utc();
    let mut written = Vec::new();
    let mut largest = 0;
    for i in 0..75 {
        let o = outcome(&agent, start, i);
        store.record(o.clone()).await.expect("record");
        written.push(o);
        let item = stats_item(&client, &table, &agent).await;
        largest = largest.max(entries(&item));
        // What the next append costs: DynamoDB bills the larger of the item before and after,
        // in 1 KB units; a copy of the item written alone says what this one costs.
        let copy: HashMap<_, _> = item
            .into_iter()
            .map(|(k, v)| match k.as_str() {
                "pk" => (k, AttributeValue::S(format!("COPY#{agent}"))),
                _ => (k, v),
            })
            .collect();
        let put = client
            .put_item()
            .table_name(&table)
            .set_item(Some(copy))
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .expect("put copy");
        let units = put
            .consumed_capacity
            .and_then(|c| c.capacity_units)
            .expect("consumed capacity");
        assert_eq!(
            units,
            1.0,
            "after {} outcomes the item costs {units} WRU",
            i + 1
        );
    }
    assert!(largest <= TRIM_AT, "{largest} entries");
    // The yardstick can fail: the same item with 1,100 more bytes costs two units.
    let mut item = stats_item(&client, &table, &agent).await;
    item.insert("pk".into(), AttributeValue::S(format!("COPY#{agent}")));
    let filler = |len: usize| AttributeValue::S("x".repeat(len));
    let mut units = Vec::new();
    for len in [0, 1_100] {
        item.insert("filler".into(), filler(len.max(1)));
        let put = client
            .put_item()
            .table_name(&table)
            .set_item(Some(item.clone()))
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .expect("put copy");
        units.push(put.consumed_capacity.and_then(|c| c.capacity_units));
    }
    assert_eq!(units, vec![Some(1.0), Some(2.0)]);
    let h = store
        .history(&agent, RECENT_OUTCOMES_KEPT)
        .await
        .expect("history");
    let newest: Vec<Outcome> = written
        .iter()
        .rev()
        .take(RECENT_OUTCOMES_KEPT)
        .cloned()
        .collect();
    assert_eq!(
        h.recent, newest,
        "the newest, newest first, every field kept"
    );
    let fails = written.iter().filter(|o| !o.passed()).count() as u64;
    assert_eq!((h.passes, h.fails), (75 - fails, fails));
    assert_eq!(h.paid, written.iter().filter(|o| o.paid).count() as u64);
    assert_eq!(h.checks, written.iter().map(|o| o.checks).sum::<u64>());
    assert_eq!(
        h.first_seen.as_deref(),
        Some(written[0].verified_at.as_str())
    );
    assert_eq!(
        h.last_seen.as_deref(),
        Some(written[74].verified_at.as_str())
    );
    drop_table(&client, &table).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_sent_again_counts_once() {
    let Some((store, client, table)) = setup(0).await else {
        return;
    };
    let agent = agent();
    let o = outcome(&agent, OffsetDateTime::now_utc(), 1);
    store.record(o.clone()).await.expect("record");
    // What an SDK retry of a committed update sends: the same outcome again.
    store.record(o.clone()).await.expect("again");
    let h = store.history(&agent, 20).await.expect("history");
    assert_eq!((h.passes, h.fails, h.recent.len()), (1, 0, 1));
    drop_table(&client, &table).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_of_one_agent_are_all_counted_and_the_list_stays_bounded() {
    let Some((store, client, table)) = setup(0).await else {
        return;
    };
    let store = Arc::new(store);
    let agent = agent();
    let start = OffsetDateTime::now_utc();
    let tasks: Vec<_> = (0..120)
        .map(|i| {
            let (store, o) = (store.clone(), outcome(&agent, start, i));
            tokio::spawn(async move { store.record(o).await })
        })
        .collect();
    for t in tasks {
        t.await.expect("join").expect("record");
    }
    let h = store.history(&agent, 100).await.expect("history");
    assert_eq!(h.passes + h.fails, 120);
    let listed: std::collections::HashSet<_> = ids(&h.recent).into_iter().collect();
    assert!(
        (RECENT_OUTCOMES_KEPT..=CAP).contains(&listed.len()),
        "{} listed",
        listed.len()
    );
    assert!(entries(&stats_item(&client, &table, &agent).await) <= CAP);
    drop_table(&client, &table).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_deliverables_count_once_and_their_list_stays_bounded() {
    let Some((store, client, table)) = setup(0).await else {
        return;
    };
    let agent = agent();
    let start = OffsetDateTime::now_utc();
    let mut written = Vec::new();
    for i in 0..40 {
        let o = Outcome {
            signed_deliverable: Some(format!("{agent}-deliverable-{i}")),
            ..outcome(&agent, start, i)
        };
        store.record(o.clone()).await.expect("record");
        written.push(o);
        assert!(entries(&stats_item(&client, &table, &agent).await) <= TRIM_AT);
    }
    // The same signed deliverable again (another verification of it) is not counted.
    let again = Outcome {
        verification_id: uuid::Uuid::new_v4().to_string(),
        ..written[39].clone()
    };
    store.record(again).await.expect("record again");
    let h = store
        .history(&agent, RECENT_OUTCOMES_KEPT)
        .await
        .expect("history");
    assert_eq!(h.passes + h.fails, 40);
    let newest: Vec<String> = ids(&written)
        .into_iter()
        .rev()
        .take(RECENT_OUTCOMES_KEPT)
        .collect();
    assert_eq!(ids(&h.recent), newest);
    drop_table(&client, &table).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_of_earlier_versions_are_still_listed_after_the_new_entries() {
    let Some((store, client, table)) = setup(0).await else {
        return;
    };
    let agent = agent();
    let pk = AttributeValue::S(format!("AGENT#{agent}"));
    let s = |v: &str| AttributeValue::S(v.into());
    let n = |v: u64| AttributeValue::N(v.to_string());
    // The counters and three outcome rows as the version before wrote them.
    client
        .put_item()
        .table_name(&table)
        .item("pk", pk.clone())
        .item("sk", s("STATS"))
        .item("passes", n(2))
        .item("fails", n(1))
        .item("paid", n(0))
        .item("checks", n(3))
        .item("first_seen", s("2026-12-01T10:00:00.000000+00:00"))
        .item("last_seen", s("2026-12-01T10:00:02.000000+00:00"))
        .send()
        .await
        .expect("put stats");
    let mut old_ids = Vec::new();
    for i in 0..3 {
        let at = format!("2026-12-01T10:00:0{i}.000000+00:00");
        let id = uuid::Uuid::new_v4().to_string();
        client
            .put_item()
            .table_name(&table)
            .item("pk", pk.clone())
            .item("sk", s(&format!("OUT#{at}#{id}")))
            .item("result", s(if i == 1 { "fail" } else { "pass" }))
            .item("verified_at", s(&at))
            .item("verification_id", s(&id))
            .item("paid", AttributeValue::Bool(false))
            .item("checks", n(1))
            .send()
            .await
            .expect("put row");
        old_ids.insert(0, id);
    }
    let h = store.history(&agent, 20).await.expect("history");
    assert_eq!(ids(&h.recent), old_ids);
    assert_eq!(h.recent[1].result, "fail");
    let start = OffsetDateTime::now_utc();
    let new = [outcome(&agent, start, 1), outcome(&agent, start, 2)];
    for o in &new {
        store.record(o.clone()).await.expect("record");
    }
    let h = store.history(&agent, 20).await.expect("history");
    let mut expected = vec![
        new[1].verification_id.clone(),
        new[0].verification_id.clone(),
    ];
    expected.extend(old_ids.clone());
    assert_eq!(ids(&h.recent), expected);
    assert_eq!((h.passes, h.fails), (4, 1));
    // Asked for fewer, the new entries alone answer.
    let h = store.history(&agent, 2).await.expect("history");
    assert_eq!(ids(&h.recent), expected[..2].to_vec());
    // Erasing the agent removes both forms and says how many verifications it had.
    assert_eq!(store.erase_agent(&agent).await.expect("erase"), 5);
    assert_eq!(
        store.history(&agent, 20).await.expect("history"),
        Default::default()
    );
    drop_table(&client, &table).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_retention_outcomes_are_not_listed_and_the_next_write_removes_them() {
    let Some((store, client, table)) = setup(30).await else {
        return;
    };
    let agent = agent();
    let month_ago = OffsetDateTime::now_utc() - time::Duration::days(31);
    for i in 0..3 {
        store
            .record(outcome(&agent, month_ago, i))
            .await
            .expect("record");
    }
    let h = store.history(&agent, 20).await.expect("history");
    assert_eq!(
        (h.passes + h.fails, h.recent.len()),
        (3, 0),
        "the counts stay"
    );
    let fresh = outcome(&agent, OffsetDateTime::now_utc(), 5);
    store.record(fresh.clone()).await.expect("record");
    let h = store.history(&agent, 20).await.expect("history");
    assert_eq!(ids(&h.recent), vec![fresh.verification_id]);
    assert_eq!(h.passes + h.fails, 4);
    assert_eq!(entries(&stats_item(&client, &table, &agent).await), 1);
    drop_table(&client, &table).await;
}
