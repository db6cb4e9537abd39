//! The service's metrics, defined once: their names, their labels (bounded sets only — never an
//! agent ID, an address or anything else a caller chose) and the calls that record them through
//! the `metrics` facade. The local server exports them as Prometheus text on its own listener;
//! with no recorder installed every call here is a no-op. Recording is a few atomic operations:
//! an answer never waits on metrics.

use metrics::{
    Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram,
};

/// Requests answered, by route (the route table's path, or `unmatched`) and status.
pub const REQUESTS: &str = "verifier_requests_total";
/// Time from a request's arrival to its response, by route.
pub const REQUEST_DURATION: &str = "verifier_request_duration_seconds";
/// Verifications answered (200), by transport, result and whether paid.
pub const VERIFICATIONS: &str = "verifier_verifications_total";
/// 402s for calls that sent no payment, by why a payment is required.
pub const PAYMENT_REQUIRED: &str = "verifier_payment_required_total";
/// Payments by network, outcome (verified, settled, released, settlement_unknown, refused) and
/// the payment error code of a refusal.
pub const PAYMENTS: &str = "verifier_payments_total";
/// Settled amounts in the asset's atomic units (USDC: millionths of a dollar), by network.
pub const REVENUE: &str = "verifier_revenue_usdc_atomic_total";
/// Error answers by their `code` (every code of the one error shape, 402s aside).
pub const REFUSALS: &str = "verifier_refusals_total";
/// Calls to what the service depends on, by dependency (store, facilitator, ssm) and outcome.
pub const DEPENDENCY_DURATION: &str = "verifier_dependency_duration_seconds";
/// Time a costly verification waited for a worker of the bounded pool.
pub const POOL_WAIT: &str = "verifier_pool_wait_seconds";
/// Work the bounded pool turned away, by the status answered (429 busy client, 503 full).
pub const POOL_REJECTIONS: &str = "verifier_pool_rejections_total";
/// Lambda instances started (on Lambda only: one per cold start).
pub const COLD_STARTS: &str = "verifier_cold_starts_total";
/// The signing key in use (value 1, its version as a label; an operator's label, one at a time).
pub const SIGNING_KEY: &str = "verifier_signing_key_info";
/// Counter: a process started signing with a key version (at start, or a refresh that picked
/// up a rotation), by `key_version`: written only when it happens, so on Lambda it costs a
/// log line per cold start or rotation, not per call.
pub const SIGNING_KEY_ADOPTIONS: &str = "verifier_signing_key_adoptions_total";
/// Counter: requests refused because the operator blocked their client or agent, by `kind`
/// (`client`, `agent`).
pub const BLOCKED_REQUESTS: &str = "verifier_blocked_requests_total";

/// The request-duration buckets, in seconds: from 100 µs (a cached answer) to 5 s.
pub const DURATION_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

/// The HELP text and unit of every metric (once, at start).
pub fn describe() {
    describe_counter!(REQUESTS, "Requests answered, by route and status.");
    describe_histogram!(
        REQUEST_DURATION,
        Unit::Seconds,
        "Time from a request's arrival to its response, by route."
    );
    describe_counter!(
        VERIFICATIONS,
        "Verifications answered, by transport (rest, mcp), result (pass, fail) and paid (true, false)."
    );
    describe_counter!(
        PAYMENT_REQUIRED,
        "Payment-required answers to calls without a payment, by reason."
    );
    describe_counter!(
        PAYMENTS,
        "x402 payments by network, outcome (verified, settled, released, settlement_unknown, refused) and refusal code."
    );
    describe_counter!(
        REVENUE,
        "Settled amounts in the asset's atomic units (USDC: 1,000,000 per dollar), by network."
    );
    describe_counter!(REFUSALS, "Error answers by their error code.");
    describe_histogram!(
        DEPENDENCY_DURATION,
        Unit::Seconds,
        "Calls to the store, the facilitator and SSM (the keys on Lambda: at a cold start and each refresh), by dependency and outcome (ok, error)."
    );
    describe_histogram!(
        POOL_WAIT,
        Unit::Seconds,
        "Time a costly verification waited for a worker of the bounded pool."
    );
    describe_counter!(
        POOL_REJECTIONS,
        "Costly work the bounded pool turned away, by status (429: the client's share is busy, 503: the pool is full)."
    );
    describe_counter!(COLD_STARTS, "Lambda instances started (cold starts).");
    describe_gauge!(
        SIGNING_KEY,
        "The signing key in use: 1 for its key_version."
    );
    describe_counter!(
        SIGNING_KEY_ADOPTIONS,
        "A process started signing with this key_version (at start, or a refresh after a rotation)."
    );
    describe_counter!(
        BLOCKED_REQUESTS,
        "Requests refused with 403 blocked, by kind (client: its network is blocked, agent: the agent ID it names is)."
    );
}

/// A request refused because its `kind` (`client`, `agent`) is blocked.
pub fn blocked_request(kind: &'static str) {
    counter!(BLOCKED_REQUESTS, "kind" => kind).increment(1);
}

/// The blocks now enforced changed (a log line, not a gauge: on Lambda a gauge would be
/// repeated on every invocation's metrics line).
pub fn blocks(networks: usize, agents: usize) {
    tracing::info!(networks, agents, "blocks loaded");
}

/// A status code as a label (the statuses this service answers; any other as `other`).
pub fn status_label(status: u16) -> &'static str {
    const KNOWN: [(u16, &str); 17] = [
        (200, "200"),
        (204, "204"),
        (400, "400"),
        (402, "402"),
        (403, "403"),
        (404, "404"),
        (405, "405"),
        (406, "406"),
        (408, "408"),
        (409, "409"),
        (411, "411"),
        (413, "413"),
        (415, "415"),
        (422, "422"),
        (429, "429"),
        (500, "500"),
        (503, "503"),
    ];
    KNOWN
        .iter()
        .find(|(code, _)| *code == status)
        .map_or("other", |(_, label)| label)
}

/// One request answered: its route (a route table path, or `unmatched`), status and duration.
pub fn request(route: &'static str, status: u16, seconds: f64) {
    counter!(REQUESTS, "route" => route, "status" => status_label(status)).increment(1);
    histogram!(REQUEST_DURATION, "route" => route).record(seconds);
}

/// How a verification reached the service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Rest,
    Mcp,
}

impl Transport {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Rest => "rest",
            Transport::Mcp => "mcp",
        }
    }
}

/// One verification answered with its verdict.
pub fn verification(transport: Transport, passed: bool, paid: bool) {
    counter!(
        VERIFICATIONS,
        "transport" => transport.as_str(),
        "result" => if passed { "pass" } else { "fail" },
        "paid" => if paid { "true" } else { "false" }
    )
    .increment(1);
}

/// Why a call without a payment is answered with a 402.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaymentReason {
    /// The client's free allowance for today is used up.
    AllowanceSpent,
    /// The body is over the free size limit.
    OverFreeSize,
    /// The estimate is over the unpaid ceiling.
    OverFreeCost,
    /// The day's free budget across all clients is spent.
    FreeBudgetSpent,
    /// An empty POST (an x402 discovery probe).
    Probe,
    /// A rated score (always paid).
    PaidScore,
}

impl PaymentReason {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            PaymentReason::AllowanceSpent => "allowance_spent",
            PaymentReason::OverFreeSize => "over_free_size",
            PaymentReason::OverFreeCost => "over_free_cost",
            PaymentReason::FreeBudgetSpent => "free_budget_spent",
            PaymentReason::Probe => "probe",
            PaymentReason::PaidScore => "paid_score",
        }
    }
}

/// A 402 for a call that sent no payment.
pub fn payment_required(reason: PaymentReason) {
    counter!(PAYMENT_REQUIRED, "reason" => reason.as_str()).increment(1);
}

/// A payment's step: `network` is the CAIP-2 network of one of the offers the payment matched
/// (`none` when it matched none), `outcome` verified, settled, released, settlement_unknown or
/// refused, `code` the payment error code of a refusal (`none` otherwise).
pub fn payment(network: &str, outcome: &'static str, code: &'static str) {
    counter!(
        PAYMENTS,
        "network" => network.to_owned(),
        "outcome" => outcome,
        "code" => code
    )
    .increment(1);
}

/// A settled amount, in the asset's atomic units.
pub fn revenue(network: &str, atomic_units: u64) {
    counter!(REVENUE, "network" => network.to_owned()).increment(atomic_units);
}

/// An error answered, by its code.
pub fn refusal(code: &'static str) {
    counter!(REFUSALS, "code" => code).increment(1);
}

/// A dependency the service calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dependency {
    Store,
    Facilitator,
    /// SSM Parameter Store (the keys at a Lambda cold start).
    Ssm,
}

impl Dependency {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Dependency::Store => "store",
            Dependency::Facilitator => "facilitator",
            Dependency::Ssm => "ssm",
        }
    }
}

/// One call to a dependency and how it went.
pub fn dependency(dependency: Dependency, ok: bool, seconds: f64) {
    histogram!(
        DEPENDENCY_DURATION,
        "dependency" => dependency.as_str(),
        "outcome" => if ok { "ok" } else { "error" }
    )
    .record(seconds);
}

/// A costly verification got a worker after waiting this long.
pub fn pool_wait(seconds: f64) {
    histogram!(POOL_WAIT).record(seconds);
}

/// The pool turned work away with this status.
pub fn pool_rejection(status: u16) {
    counter!(POOL_REJECTIONS, "status" => status_label(status)).increment(1);
}

/// A Lambda instance started.
pub fn cold_start() {
    counter!(COLD_STARTS).increment(1);
}

/// The signing key now in use (the local server: a gauge a scrape reads).
pub fn signing_key(key_version: &str) {
    gauge!(SIGNING_KEY, "key_version" => key_version.to_owned()).set(1.0);
    key_adopted(key_version);
}

/// This process started signing with `key_version` (Lambda: no gauge, which EMF would
/// repeat on every invocation's line).
pub fn key_adopted(key_version: &str) {
    counter!(SIGNING_KEY_ADOPTIONS, "key_version" => key_version.to_owned()).increment(1);
}
