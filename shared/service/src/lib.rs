//! The Agent Output Verifier service: the calls, whatever the transport — a verification (free
//! allowance or paid), a score lookup (free `no_data` / `unrated`, or paid), the reputation
//! history — with the free allowance, pricing before work, the heavy pool and the x402 payment
//! gate, against the ports of `verifier-ports` (store, keys, facilitator, clock). REST handlers
//! and MCP tools both call these and only translate the [`Reply`].
//!
//! - [`verify`]: one verification, priced before it runs ([`pricing`], [`unpaid`], [`paid`]);
//! - [`score`]: scores and reputation;
//! - [`pool`]: the bounded pool of costly work ([`overruns`], [`cpu_watch`]);
//! - [`payments`]: x402 v2 offers, local checks, the gate over a facilitator;
//! - [`config`], [`errors`], [`routes`]: the deployment's settings, the one error shape, the
//!   route table every router and document follows;
//! - [`telemetry`]: the metrics, defined once.

pub mod blocks;
pub mod call;
pub mod client;
pub mod config;
pub mod cpu_watch;
pub mod errors;
pub mod examples;
pub mod free_budget;
mod free_first;
pub mod in_flight;
pub mod listings;
pub mod metered;
pub mod overruns;
pub mod paid;
pub mod payments;
pub mod pool;
pub mod priced_result;
pub mod pricing;
pub mod routes;
pub mod score;
pub mod telemetry;
mod unpaid;
pub mod verify;

pub use verifier_engine as engine;
pub use verifier_ports as ports;
pub use verifier_receipt as receipt;

/// The caller's network address as the edge saw it: the socket peer locally,
/// `requestContext.http.sourceIp` on Lambda; never a client-supplied header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientAddr(pub String);

/// How many bytes a request's body had as received (MCP measures its free size limit on these,
/// not on the re-serialized tool arguments).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceivedBytes(pub usize);

use crate::config::ServiceConfig;
use crate::errors::ApiError;
use crate::payments::{PaymentError, PaymentGate, PaymentRequired, SettlementResponse};
use serde_json::{Value, json};
use std::sync::Arc;
use verifier_engine::Engine;
use verifier_ports::clock::Clock;
use verifier_ports::keys::KeySource;
use verifier_ports::store::Store;

/// Everything a call needs, built once at start-up (Lambda init or the local server).
pub struct Services {
    pub config: ServiceConfig,
    /// The checks and the schema caches.
    pub engine: Engine,
    /// The active signing key and the public key ring.
    pub keys: Arc<dyn KeySource>,
    /// Allowance, history, replay guard.
    pub store: Arc<dyn Store>,
    /// Time (injectable for tests).
    pub clock: Arc<dyn Clock>,
    /// x402: offers, checks, facilitator.
    pub payments: PaymentGate,
    /// The bounded pool costly verifications run on.
    pub pool: pool::WorkPool,
    /// The bazaar listings of the paid resources (built on the first 402).
    pub listings: listings::Listings,
    /// The verifications in progress (whether a store write may overlap its signature).
    pub in_flight: in_flight::InFlight,
    /// The last day whose free budget this process saw spent.
    pub free_budget: free_budget::SpentDay,
    /// The operator's blocks (client networks, agent IDs).
    pub blocks: blocks::BlockList,
}

/// How an answered call was paid for.
#[derive(Debug, Clone, PartialEq)]
pub enum Billing {
    /// From the free allowance: what is left of it.
    Free {
        remaining: u64,
        limit: u64,
        resets_at: String,
    },
    /// Paid and settled.
    Paid(SettlementResponse),
    /// A free route.
    NotCharged,
}

/// A successful call: the response body and how it was paid.
#[derive(Debug, Clone)]
pub struct Answer {
    pub body: Vec<u8>,
    pub billing: Billing,
    /// A verification's verdict (passed or not); none for other calls and for a paid answer
    /// delivered again.
    pub verdict: Option<bool>,
}

/// A 402: what to pay, why the last payment (if any) failed, the caller's free allowance.
#[derive(Debug, Clone)]
pub struct PaymentDemand {
    pub required: PaymentRequired,
    /// The `free_trial` object (verification routes).
    pub free_trial: Option<Value>,
    /// Why the payment that was sent was refused.
    pub error: Option<PaymentError>,
    /// A failed settlement, for `PAYMENT-RESPONSE`.
    pub settlement: Option<SettlementResponse>,
    /// Why a request that carried no payment must be paid for (`payment_reason`).
    pub reason: Option<Value>,
}

impl PaymentDemand {
    /// The REST 402 body: the PaymentRequired members, then `free_trial` and `payment_error`.
    pub fn body(&self) -> Value {
        let mut body = serde_json::to_value(&self.required).unwrap_or_else(|_| json!({}));
        if let Some(trial) = &self.free_trial {
            body["free_trial"] = trial.clone();
        }
        if let Some(e) = &self.error {
            body["payment_error"] = payment_error(e);
        }
        if let Some(reason) = &self.reason {
            body["payment_reason"] = reason.clone();
        }
        body["charged"] = false.into();
        body
    }
}

/// The `payment_error` object of a 402.
pub fn payment_error(e: &PaymentError) -> Value {
    let mut v = json!({
        "code": e.code(),
        "message": format!("{e}. Nothing was charged."),
        "fix": e.fix(),
        "retryable": e.retryable(),
    });
    if let Some(reason) = e.reason() {
        v["reason"] = reason.into();
    }
    v
}

/// The outcome of a call.
#[derive(Debug, Clone)]
pub enum Reply {
    Answer(Answer),
    PaymentRequired(Box<PaymentDemand>),
    Error(ApiError),
}

/// What a payment buys, as PaymentRequired names it.
#[derive(Debug, Clone)]
pub struct Resource {
    pub url: String,
    pub description: &'static str,
    /// How the Bazaar lists it.
    pub listing: listings::Listing,
    /// The value of the route's path parameter (the score route's agent ID), which the
    /// listing names as this request's `pathParams`.
    pub path_param: Option<String>,
}
