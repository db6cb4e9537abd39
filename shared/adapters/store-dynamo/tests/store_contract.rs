//! One contract, two adapters: every test runs against the embedded (redb) store and against
//! DynamoDB Local (`AWS_ENDPOINT_URL_DYNAMODB`, started by scripts/test.sh; with
//! `VERIFIER_REQUIRE_COMPONENTS=1` a missing endpoint fails the test instead of skipping it).

use std::sync::Arc;
use verifier_ports::store::{FreeClaim, FreeLimit, Outcome, RECENT_OUTCOMES_KEPT, Store};
use verifier_store_dynamo::DynamoStore;
use verifier_store_embedded::EmbeddedStore;

async fn dynamo() -> Option<Arc<dyn Store>> {
    if std::env::var("AWS_ENDPOINT_URL_DYNAMODB").is_err() {
        assert!(
            std::env::var("VERIFIER_REQUIRE_COMPONENTS").is_err(),
            "DynamoDB Local is required (AWS_ENDPOINT_URL_DYNAMODB unset)"
        );
        eprintln!("skipped: AWS_ENDPOINT_URL_DYNAMODB is unset");
        return None;
    }
    let table = format!("contract-{}", uuid::Uuid::new_v4());
    let store = DynamoStore::from_env(&table).await;
    store.create_table().await.expect("create table");
    Some(Arc::new(store))
}

/// The UTC day `offset` days from today (`YYYY-MM-DD`), as allowances are keyed. Not a fixed
/// date: an allowance row expires two days after its day, and DynamoDB Local deletes rows past
/// their TTL, so a fixed date's rows start vanishing mid-test once it is three days old.
fn utc_day(offset: i64) -> String {
    verifier_ports::clock::utc_day(time::OffsetDateTime::now_utc() + time::Duration::days(offset))
}

fn embedded() -> (Arc<dyn Store>, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    (
        Arc::new(EmbeddedStore::open(dir.path()).expect("store")),
        dir,
    )
}

fn outcome(agent: &str, pass: bool, at: &str) -> Outcome {
    Outcome {
        agent_id: agent.into(),
        verification_id: uuid::Uuid::new_v4().to_string(),
        result: if pass { "pass" } else { "fail" }.into(),
        verified_at: at.into(),
        signed_deliverable: None,
        paid: false,
        checks: 1,
    }
}

/// Run a contract test on both adapters.
macro_rules! contract {
    ($name:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn embedded() {
                let (store, _dir) = super::embedded();
                super::$name(store).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn dynamodb() {
                if let Some(store) = super::dynamo().await {
                    super::$name(store).await;
                }
            }
        }
    };
}

async fn allowance_is_exact_under_concurrency(store: Arc<dyn Store>) {
    let tasks: Vec<_> = (0..100)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let o = (i % 2 == 0)
                    .then(|| outcome("agent-conc", true, "2026-12-03T10:00:00.000000+00:00"));
                store.claim_free("10.0.0.1", &utc_day(0), 20, o).await
            })
        })
        .collect();
    let mut granted = 0;
    let mut exhausted = 0;
    for t in tasks {
        match t.await.expect("join").expect("claim") {
            FreeClaim::Granted { used } => {
                assert!((1..=20).contains(&used), "{used}");
                granted += 1;
            }
            FreeClaim::Exhausted { used } => {
                assert_eq!(used, 20);
                exhausted += 1;
            }
            FreeClaim::BudgetSpent => panic!("no budget was given"),
        }
    }
    assert_eq!((granted, exhausted), (20, 80));
    assert_eq!(
        store
            .free_used("10.0.0.1", &utc_day(0))
            .await
            .expect("used"),
        20
    );
    // Outcomes were recorded exactly for the granted claims that carried one.
    let h = store.history("agent-conc", 100).await.expect("history");
    assert_eq!(h.passes as usize, h.recent.len());
    assert!(h.passes <= 20);
}
contract!(allowance_is_exact_under_concurrency);

/// The day's free budget across all clients: 120 claims from 40 clients (3 each, a
/// per-client limit of 2) against a budget of 25 grant exactly 25, under concurrency; the
/// refused record nothing, the next day has a budget of its own.
async fn the_free_budget_is_exact_under_concurrency(store: Arc<dyn Store>) {
    let limit = FreeLimit {
        per_client: 2,
        total: Some(25),
    };
    let agent = format!("agent-budget-{}", uuid::Uuid::new_v4().simple());
    let tasks: Vec<_> = (0..120)
        .map(|i| {
            let (store, agent) = (store.clone(), agent.clone());
            tokio::spawn(async move {
                let o = outcome(&agent, true, "2026-12-03T10:00:00.000000+00:00");
                let client = format!("192.0.2.{}", i % 40);
                store
                    .claim_free_within(&client, &utc_day(0), limit, Some(o))
                    .await
            })
        })
        .collect();
    let (mut granted, mut exhausted, mut spent) = (0, 0, 0);
    for t in tasks {
        match t.await.expect("join").expect("claim") {
            FreeClaim::Granted { used } => {
                assert!((1..=2).contains(&used), "{used}");
                granted += 1;
            }
            FreeClaim::Exhausted { used } => {
                assert_eq!(used, 2);
                exhausted += 1;
            }
            FreeClaim::BudgetSpent => spent += 1,
        }
    }
    assert_eq!(
        granted, 25,
        "exactly the budget ({exhausted} exhausted, {spent} spent)"
    );
    assert_eq!(granted + exhausted + spent, 120);
    assert!(spent > 0);
    let h = store.history(&agent, 100).await.expect("history");
    assert_eq!(h.passes, 25, "only granted claims record their outcome");
    let next_day = store
        .claim_free_within("192.0.2.1", &utc_day(1), limit, None)
        .await
        .expect("claim");
    assert_eq!(next_day, FreeClaim::Granted { used: 1 });
    // A total of 0: no free call at all.
    let none = FreeLimit {
        per_client: 2,
        total: Some(0),
    };
    assert_eq!(
        store
            .claim_free_within("192.0.2.200", &utc_day(2), none, None)
            .await
            .expect("claim"),
        FreeClaim::BudgetSpent
    );
}
contract!(the_free_budget_is_exact_under_concurrency);

/// Claims made before the work (no outcome, as the service makes them on a store that
/// [`Store::claims_before_work`]): 120 claims from 40 clients (3 each, a per-client limit of
/// 2) against a budget of 40 grant exactly 40 under concurrency, every count is exact (the
/// refused gave theirs back), and a call handed back with `release_free` is granted again —
/// once.
async fn claims_before_the_work_are_exact_and_can_be_given_back(store: Arc<dyn Store>) {
    let day = utc_day(3);
    let limit = FreeLimit {
        per_client: 2,
        total: Some(40),
    };
    let tasks: Vec<_> = (0..120)
        .map(|i| {
            let (store, day) = (store.clone(), day.clone());
            tokio::spawn(async move {
                let client = format!("198.51.100.{}", i % 40);
                let claim = store.claim_free_within(&client, &day, limit, None).await;
                (client, claim.expect("claim"))
            })
        })
        .collect();
    let (mut granted, mut exhausted, mut spent) = (0u64, 0, 0);
    let mut holder = None;
    for t in tasks {
        match t.await.expect("join") {
            (client, FreeClaim::Granted { used }) => {
                assert!((1..=2).contains(&used), "{used}");
                granted += 1;
                holder = Some(client);
            }
            (_, FreeClaim::Exhausted { used }) => {
                assert_eq!(used, 2);
                exhausted += 1;
            }
            (_, FreeClaim::BudgetSpent) => spent += 1,
        }
    }
    assert_eq!(
        granted, 40,
        "exactly the budget ({exhausted} exhausted, {spent} spent)"
    );
    assert_eq!(granted + exhausted + spent, 120);
    let mut counted = 0;
    for i in 0..40 {
        counted += store
            .free_used(&format!("198.51.100.{i}"), &day)
            .await
            .expect("used");
    }
    assert_eq!(counted, granted, "the refused claims left no count behind");

    // One granted call handed back: its client's count drops, and one more call is granted.
    let holder = holder.expect("a granted client");
    let before = store.free_used(&holder, &day).await.expect("used");
    store
        .release_free(&holder, &day, true)
        .await
        .expect("release");
    assert_eq!(
        store.free_used(&holder, &day).await.expect("used"),
        before - 1
    );
    let newcomer = |n| format!("203.0.113.{n}");
    assert!(matches!(
        store
            .claim_free_within(&newcomer(1), &day, limit, None)
            .await
            .expect("claim"),
        FreeClaim::Granted { used: 1 }
    ));
    assert_eq!(
        store
            .claim_free_within(&newcomer(2), &day, limit, None)
            .await
            .expect("claim"),
        FreeClaim::BudgetSpent
    );
    assert_eq!(
        store.free_used(&newcomer(2), &day).await.expect("used"),
        0,
        "a claim refused for the budget is not counted against its client"
    );
    // An allowance of 0 grants nothing, not even a first call.
    let none = FreeLimit {
        per_client: 0,
        total: Some(40),
    };
    assert_eq!(
        store
            .claim_free_within(&newcomer(3), &utc_day(4), none, None)
            .await
            .expect("claim"),
        FreeClaim::Exhausted { used: 0 }
    );
}
contract!(claims_before_the_work_are_exact_and_can_be_given_back);

async fn claims_record_outcomes_and_exhausted_claims_record_nothing(store: Arc<dyn Store>) {
    let day = &utc_day(0);
    let o1 = outcome("agent-h", true, "2026-12-04T01:00:00.000000+00:00");
    let o2 = outcome("agent-h", false, "2026-12-04T02:00:00.000000+00:00");
    let o3 = outcome("agent-h", true, "2026-12-04T03:00:00.000000+00:00");
    assert_eq!(
        store
            .claim_free("c1", day, 2, Some(o1.clone()))
            .await
            .expect("claim"),
        FreeClaim::Granted { used: 1 }
    );
    assert_eq!(
        store
            .claim_free("c1", day, 2, Some(o2.clone()))
            .await
            .expect("claim"),
        FreeClaim::Granted { used: 2 }
    );
    assert_eq!(
        store
            .claim_free("c1", day, 2, Some(o3))
            .await
            .expect("claim"),
        FreeClaim::Exhausted { used: 2 }
    );
    // Another day and another client have their own allowance.
    assert_eq!(
        store
            .claim_free("c1", &utc_day(1), 2, None)
            .await
            .expect("claim"),
        FreeClaim::Granted { used: 1 }
    );
    assert_eq!(store.free_used("c2", day).await.expect("used"), 0);
    let h = store.history("agent-h", 10).await.expect("history");
    assert_eq!((h.passes, h.fails), (1, 1));
    assert_eq!(h.first_seen.as_deref(), Some(o1.verified_at.as_str()));
    assert_eq!(h.last_seen.as_deref(), Some(o2.verified_at.as_str()));
    assert_eq!(h.recent, vec![o2.clone(), o1.clone()]);
    // A paid verification's outcome counts the same way.
    let paid = outcome("agent-h", true, "2026-12-04T04:00:00.000000+00:00");
    store.record(paid.clone()).await.expect("record");
    let h = store.history("agent-h", 2).await.expect("history");
    assert_eq!((h.passes, h.fails), (2, 1));
    assert_eq!(h.recent, vec![paid, o2]);
    assert_eq!(
        store.history("nobody", 10).await.expect("history"),
        verifier_ports::store::AgentHistory::default()
    );
}
contract!(claims_record_outcomes_and_exhausted_claims_record_nothing);

async fn fifty_concurrent_outcomes_of_one_agent_are_all_counted(store: Arc<dyn Store>) {
    let tasks: Vec<_> = (0..50)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let at = format!("2026-12-03T10:00:{:02}.000000+00:00", i);
                store
                    .claim_free(
                        &format!("client-{i}"),
                        &utc_day(0),
                        5,
                        Some(outcome("agent-50", true, &at)),
                    )
                    .await
            })
        })
        .collect();
    for t in tasks {
        assert!(matches!(
            t.await.expect("join").expect("claim"),
            FreeClaim::Granted { .. }
        ));
    }
    // Every one is counted; the history lists the newest the store keeps, each once.
    let h = store
        .history("agent-50", RECENT_OUTCOMES_KEPT)
        .await
        .expect("history");
    let ids: std::collections::HashSet<_> = h.recent.iter().map(|o| &o.verification_id).collect();
    assert_eq!((h.passes, h.recent.len(), ids.len()), (50, 20, 20));
}
contract!(fifty_concurrent_outcomes_of_one_agent_are_all_counted);

async fn a_payment_is_claimed_once(store: Arc<dyn Store>) {
    let key = format!("eip155:8453#0xabc#{}", uuid::Uuid::new_v4());
    let until = time::OffsetDateTime::now_utc().unix_timestamp() + 3600;
    let (a, b) = tokio::join!(
        store.claim_payment(&key, until),
        store.claim_payment(&key, until)
    );
    let wins = [a.expect("claim"), b.expect("claim")];
    assert_eq!(wins.iter().filter(|w| **w).count(), 1, "{wins:?}");
    assert!(!store.claim_payment(&key, until).await.expect("claim"));
    assert!(
        store
            .claim_payment(&format!("{key}-other"), until)
            .await
            .expect("claim")
    );
}
contract!(a_payment_is_claimed_once);

/// A payment's claim moves claimed → settling → settled; only one of two racing requests
/// takes over a `settling` claim; a released claim has no state and can be claimed again.
async fn a_payment_claim_moves_through_its_states(store: Arc<dyn Store>) {
    use verifier_ports::store::PaymentState::{Claimed, Settled, Settling};
    let key = format!("eip155:8453#0xdef#{}", uuid::Uuid::new_v4());
    let until = time::OffsetDateTime::now_utc().unix_timestamp() + 3600;
    let advance = |from, to| store.advance_payment(&key, from, to);
    assert!(!advance(Claimed, Settling).await.expect("no claim yet"));
    assert!(store.claim_payment(&key, until).await.expect("claim"));
    assert!(!advance(Settling, Settled).await.expect("not settling"));
    assert!(advance(Claimed, Settling).await.expect("to settling"));
    let (a, b) = tokio::join!(advance(Settling, Claimed), advance(Settling, Claimed));
    let wins = [a.expect("take over"), b.expect("take over")];
    assert_eq!(wins.iter().filter(|w| **w).count(), 1, "{wins:?}");
    assert!(advance(Claimed, Settling).await.expect("to settling"));
    assert!(advance(Settling, Settled).await.expect("to settled"));
    assert!(!advance(Settling, Claimed).await.expect("settled stays"));
    assert!(!store.claim_payment(&key, until).await.expect("replay"));
    let other = format!("{key}-released");
    assert!(store.claim_payment(&other, until).await.expect("claim"));
    store.release_payment(&other).await.expect("release");
    assert!(
        !store
            .advance_payment(&other, Claimed, Settling)
            .await
            .expect("released")
    );
    assert!(
        store
            .claim_payment(&other, until)
            .await
            .expect("claim again")
    );
}
contract!(a_payment_claim_moves_through_its_states);

async fn a_paid_answer_is_kept_once_until_it_expires(store: Arc<dyn Store>) {
    use verifier_ports::store::PaidAnswer;
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let id = format!("pay_{}", uuid::Uuid::new_v4().simple());
    let answer = |n: u8| PaidAnswer {
        fingerprint: format!("fp{n}"),
        body: format!("{{\"n\":{n}}}"),
        settlement: "{\"success\":true}".into(),
    };
    assert_eq!(store.paid_answer(&id, now).await.expect("read"), None);
    store
        .keep_paid_answer(&id, &answer(1), now + 3600)
        .await
        .expect("keep");
    // The first answer kept under an id stays.
    store
        .keep_paid_answer(&id, &answer(2), now + 3600)
        .await
        .expect("keep again");
    assert_eq!(
        store.paid_answer(&id, now).await.expect("read"),
        Some(answer(1))
    );
    // Past its time it is gone, whether or not the row was removed yet.
    assert_eq!(
        store.paid_answer(&id, now + 3600).await.expect("read"),
        None
    );
    let other = format!("{id}x");
    assert_eq!(store.paid_answer(&other, now).await.expect("read"), None);
}
contract!(a_paid_answer_is_kept_once_until_it_expires);

/// A signed deliverable's outcome counts once, however often it is submitted, through a free
/// claim (which is still granted) or a paid record; another deliverable counts again.
async fn a_signed_deliverable_counts_once(store: Arc<dyn Store>) {
    let agent = format!("did:key:z6Mk{}", uuid::Uuid::new_v4().simple());
    let client = format!("client-{}", uuid::Uuid::new_v4().simple());
    let signed = |d: &str, pass: bool| Outcome {
        signed_deliverable: Some(d.to_owned()),
        ..outcome(&agent, pass, "2026-12-04T10:00:00.000000+00:00")
    };
    let d1 = format!("{:064x}", uuid::Uuid::new_v4().as_u128());
    let d2 = format!("{:064x}", uuid::Uuid::new_v4().as_u128());
    for _ in 0..3 {
        let claim = store
            .claim_free(&client, &utc_day(0), 100, Some(signed(&d1, false)))
            .await
            .expect("claim");
        assert!(matches!(claim, FreeClaim::Granted { .. }), "{claim:?}");
        store.record(signed(&d1, false)).await.expect("record");
    }
    store.record(signed(&d2, true)).await.expect("record");
    store.record(signed(&d2, true)).await.expect("record");
    let h = store.history(&agent, 10).await.expect("history");
    assert_eq!((h.passes, h.fails, h.recent.len()), (1, 1, 2));
    assert_eq!(
        store.free_used(&client, &utc_day(0)).await.expect("used"),
        3,
        "the free calls are used even when the outcome is not counted again"
    );
}
contract!(a_signed_deliverable_counts_once);

/// The evidence behind a score: how many counted verifications were paid and the checks they
/// ran together, in the counts and in each recent outcome, through free claims and paid records.
async fn the_counts_keep_paid_verifications_and_checks(store: Arc<dyn Store>) {
    let agent = format!("agent-evidence-{}", uuid::Uuid::new_v4().simple());
    let client = format!("client-{}", uuid::Uuid::new_v4().simple());
    let at = "2026-12-04T11:00:00.000000+00:00";
    let free = Outcome {
        checks: 3,
        ..outcome(&agent, true, at)
    };
    let claim = store
        .claim_free(&client, &utc_day(0), 5, Some(free))
        .await
        .expect("claim");
    assert!(matches!(claim, FreeClaim::Granted { .. }), "{claim:?}");
    for checks in [7, 11] {
        let paid = Outcome {
            paid: true,
            checks,
            ..outcome(&agent, false, "2026-12-04T11:00:01.000000+00:00")
        };
        store.record(paid).await.expect("record");
    }
    let h = store.history(&agent, 10).await.expect("history");
    assert_eq!((h.passes, h.fails, h.paid, h.checks), (1, 2, 2, 21));
    let mut recent: Vec<_> = h.recent.iter().map(|o| (o.paid, o.checks)).collect();
    recent.sort_unstable();
    assert_eq!(recent, vec![(false, 3), (true, 7), (true, 11)]);
}
contract!(the_counts_keep_paid_verifications_and_checks);

/// An erased agent's history is gone (counters and outcomes), other agents keep theirs, and the
/// agent starts again from nothing.
async fn erasing_an_agent_removes_its_history_only(store: Arc<dyn Store>) {
    let tag = uuid::Uuid::new_v4().simple().to_string();
    let (erased, kept) = (format!("erased-{tag}"), format!("kept-{tag}"));
    for i in 0..30 {
        let at = format!("2026-12-07T10:00:{:02}.000000+00:00", i % 60);
        store
            .record(outcome(&erased, i % 3 != 0, &at))
            .await
            .expect("record");
    }
    store
        .record(outcome(&kept, true, "2026-12-07T10:00:00.000000+00:00"))
        .await
        .expect("record");
    assert_eq!(store.erase_agent(&erased).await.expect("erase"), 30);
    assert_eq!(
        store.history(&erased, 10).await.expect("history"),
        Default::default()
    );
    assert_eq!(store.history(&kept, 10).await.expect("history").passes, 1);
    assert_eq!(store.erase_agent(&erased).await.expect("again"), 0);
    store
        .record(outcome(&erased, false, "2026-12-07T11:00:00.000000+00:00"))
        .await
        .expect("record");
    let again = store.history(&erased, 10).await.expect("history");
    assert_eq!((again.passes, again.fails, again.recent.len()), (0, 1, 1));
}
contract!(erasing_an_agent_removes_its_history_only);

/// Blocks are listed once each; blocking twice or unblocking what is not blocked changes
/// nothing.
async fn blocks_are_set_listed_and_removed(store: Arc<dyn Store>) {
    use verifier_ports::store::BlockTarget;
    let net = BlockTarget::Client("203.0.113.0/24".into());
    let agent = BlockTarget::Agent(format!("spammer-{}", uuid::Uuid::new_v4().simple()));
    assert!(store.set_blocked(&net, true, 100).await.expect("block"));
    assert!(!store.set_blocked(&net, true, 200).await.expect("again"));
    assert!(store.set_blocked(&agent, true, 300).await.expect("block"));
    let mut listed = store.blocks().await.expect("list");
    listed.sort_by_key(|b| b.since);
    assert_eq!(
        listed
            .iter()
            .map(|b| (&b.target, b.since))
            .collect::<Vec<_>>(),
        vec![(&net, 100), (&agent, 300)]
    );
    assert!(store.set_blocked(&net, false, 400).await.expect("unblock"));
    assert!(
        !store
            .set_blocked(&net, false, 500)
            .await
            .expect("not blocked")
    );
    assert_eq!(store.blocks().await.expect("list").len(), 1);
}
contract!(blocks_are_set_listed_and_removed);

/// Settled payments are kept once each and listed oldest first within the period asked, across
/// months.
async fn settlements_are_kept_once_and_listed_by_time(store: Arc<dyn Store>) {
    use verifier_ports::store::Settlement;
    let tx = uuid::Uuid::new_v4().simple().to_string();
    let settled = |at: i64, i: u32| Settlement {
        at,
        network: "eip155:8453".into(),
        payer: "0x2222222222222222222222222222222222222222".into(),
        amount: "20000".into(),
        transaction: format!("0x{tx}{i}"),
        route: "/verify/schema".into(),
    };
    // 2026-11-30T23:59:59Z, then three in December.
    let times = [1_796_083_199, 1_796_083_200, 1_796_100_000, 1_796_200_000];
    for (i, at) in times.iter().enumerate() {
        store
            .record_settlement(&settled(*at, i as u32))
            .await
            .expect("record");
    }
    store
        .record_settlement(&settled(times[1], 1))
        .await
        .expect("recorded twice: kept once");
    let all = store
        .settlements(times[0], times[3] + 1, 100)
        .await
        .expect("list");
    assert_eq!(all.iter().map(|x| x.at).collect::<Vec<_>>(), times.to_vec());
    assert_eq!(all[2], settled(times[2], 2));
    let december = store
        .settlements(times[1], times[3], 100)
        .await
        .expect("list");
    assert_eq!(
        december.iter().map(|x| x.at).collect::<Vec<_>>(),
        times[1..3].to_vec()
    );
    assert_eq!(
        store
            .settlements(times[0], times[3] + 1, 2)
            .await
            .expect("list")
            .len(),
        2
    );
}
contract!(settlements_are_kept_once_and_listed_by_time);

/// With a retention, the embedded store drops an agent's expired outcomes as it writes new
/// ones; the counts stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_store_drops_expired_outcomes_and_keeps_the_counts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = EmbeddedStore::open(dir.path())
        .expect("store")
        .with_outcome_retention(30);
    let old = verifier_ports::clock::rfc3339_seconds(
        time::OffsetDateTime::now_utc() - time::Duration::days(31),
    );
    let recent = verifier_ports::clock::rfc3339_seconds(time::OffsetDateTime::now_utc());
    for _ in 0..6 {
        store
            .record(outcome("kept-counts", true, &old))
            .await
            .expect("record");
    }
    // Each write drops up to 4 expired ones, oldest first (the first writes dropped the
    // expired ones written before them).
    store
        .record(outcome("kept-counts", false, &recent))
        .await
        .expect("record");
    store
        .record(outcome("kept-counts", false, &recent))
        .await
        .expect("record");
    let h = store.history("kept-counts", 100).await.expect("history");
    assert_eq!((h.passes, h.fails), (6, 2), "the counts stay");
    assert!(
        h.recent.iter().all(|o| o.verified_at == recent),
        "{:?}",
        h.recent
    );
    assert_eq!(h.recent.len(), 2);
}
