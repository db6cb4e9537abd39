//! Pricing a verification before it runs, and running it: cheap work on the request thread,
//! anything dearer on a worker of the bounded pool ([`super::pool`]).

use super::Services;
use super::cpu_watch;
use super::overruns::SLACK_NS;
use super::pool::Slot;
use crate::call::VerifyCall;
use crate::errors::ApiError;
use std::sync::Arc;
use time::OffsetDateTime;
use verifier_engine::checks::schema::CompiledSchema;
use verifier_engine::cost::{Budget, Meter, OverBudget};
use verifier_engine::request::VerifyRequest;
use verifier_engine::{EngineError, Unsigned, Verification};
use verifier_receipt::keys::SigningIdentity;

/// Requests larger than this are parsed, priced and run on the bounded pool from the start.
pub const HEAVY_BODY_BYTES: usize = 16 * 1024;

/// Work priced above this runs on the bounded pool, not on the request threads.
pub const LIGHT: Budget = Budget::ms_mib(2, 8);

/// (subschema, value) pairs a second look at an over-budget request may walk to tell whether
/// even the paid ceiling is passed (exponential schemas pass it within a few hundred).
const SECOND_LOOK_PAIRS: usize = 10_000;

/// Why a verification was not run.
pub(super) enum Refused {
    /// The caller's error (422).
    Invalid(ApiError),
    /// Over the ceiling it was priced under.
    Over(OverBudget),
    /// No worker for it (429/503), or our failure.
    Error(ApiError),
}

impl From<EngineError> for Refused {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::Invalid(invalid) => {
                Refused::Invalid(ApiError::InvalidRequest(invalid.problems))
            }
            EngineError::OverBudget(over) => Refused::Over(over),
            other => {
                tracing::error!(error = %other, "verification failed internally");
                Refused::Error(ApiError::Internal)
            }
        }
    }
}

/// A compiled, priced verification ready to run (on a pool worker when it holds one).
pub(super) struct Priced<'p> {
    compiled: Arc<CompiledSchema>,
    meter: Meter,
    slot: Option<Slot<'p>>,
}

impl<'p> Priced<'p> {
    /// Run the checks, under the meter the request was priced with; the report is signed
    /// next ([`Checked::sign`]), so its outcome can go to the store while it is.
    pub(super) async fn check(
        self,
        s: &Arc<Services>,
        req: &Arc<VerifyRequest>,
        client: &str,
        now: OffsetDateTime,
    ) -> Result<Checked<'p>, Refused> {
        let signer = s.keys.current();
        let Priced {
            compiled,
            mut meter,
            slot,
        } = self;
        let unsigned = match &slot {
            Some(slot) => {
                let (s, req, signer) = (s.clone(), req.clone(), signer.clone());
                slot.run(move || {
                    let key_version = signer.key_version();
                    s.engine
                        .check_metered(&req, &compiled, &mut meter, key_version, now)
                })
                .await
                .map_err(Refused::Error)?
                .map_err(Refused::from)?
            }
            None => {
                // On a request thread: work that runs past its estimate is measured, and an
                // estimate it passed is not trusted again (see `super::overruns`).
                let watched = s.pool.config().watch_overruns.then(cpu_watch::begin);
                let checked =
                    s.engine
                        .check_metered(req, &compiled, &mut meter, signer.key_version(), now);
                let estimate = meter.total().cpu_ns;
                let limit = estimate.saturating_add(SLACK_NS);
                if let Some(used) = watched.and_then(|w| w.finish(limit))
                    && used > limit
                {
                    compiled.mark_mispriced();
                    s.pool.overruns().record(
                        client,
                        estimate,
                        used,
                        meter.largest_cpu_part().name(),
                    );
                }
                checked.map_err(Refused::from)?
            }
        };
        Ok(Checked {
            unsigned,
            signer,
            slot,
        })
    }
}

/// A verification whose checks have run, to be signed (on the pool worker it ran on, if any).
pub(super) struct Checked<'p> {
    unsigned: Unsigned,
    signer: Arc<SigningIdentity>,
    slot: Option<Slot<'p>>,
}

impl Checked<'_> {
    /// The report, before its signature.
    pub(super) fn report(&self) -> &Unsigned {
        &self.unsigned
    }

    /// Sign the report and serialize the response.
    pub(super) async fn sign(self, s: &Arc<Services>) -> Result<Verification, Refused> {
        let Checked {
            unsigned,
            signer,
            slot,
        } = self;
        match slot {
            Some(slot) => {
                let s = s.clone();
                slot.run(move || s.engine.sign(unsigned, &signer))
                    .await
                    .map_err(Refused::Error)?
                    .map_err(Refused::from)
            }
            None => s.engine.sign(unsigned, &signer).map_err(Refused::from),
        }
    }
}

/// Compile (cached) and price one request under the meter.
fn attempt(
    s: &Services,
    req: &VerifyRequest,
    body_len: usize,
    meter: &mut Meter,
) -> Result<Arc<CompiledSchema>, EngineError> {
    let compiled = s
        .engine
        .compile(&req.expected_schema, req.format_assertion, meter, true)?;
    s.engine.price(req, &compiled, body_len, meter)?;
    Ok(compiled)
}

/// Compile (cached) and price a verification under `budget`: on the pool worker `slot` when
/// the request holds one; else first on the request thread under the [`LIGHT`] ceiling, and on
/// a pool worker under the whole budget when that is not enough.
pub(super) async fn price<'s>(
    s: &'s Arc<Services>,
    call: &VerifyCall<'_>,
    budget: Budget,
    slot: Option<Slot<'s>>,
) -> Result<Priced<'s>, Refused> {
    if slot.is_none()
        && call.body_len <= HEAVY_BODY_BYTES
        && !s.pool.overruns().demoted(call.client)
    {
        let light = Budget {
            cpu_ns: LIGHT.cpu_ns.min(budget.cpu_ns),
            mem_bytes: LIGHT.mem_bytes.min(budget.mem_bytes),
        };
        let mut meter = s.engine.meter(light);
        match attempt(s, &call.request, call.body_len, &mut meter) {
            // A schema that once cost more than its estimate runs on the pool, whoever sends it.
            Ok(compiled) if !compiled.is_mispriced() => {
                return Ok(Priced {
                    compiled,
                    meter: meter.with_budget(budget),
                    slot: None,
                });
            }
            Ok(_) => {}
            // Dearer than the light ceiling: priced again on a pool worker, unless the
            // estimate is past the whole budget already.
            Err(EngineError::OverBudget(over)) => {
                if light == budget || over.past(budget) {
                    return Err(Refused::Over(over));
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    let slot = match slot {
        Some(slot) => slot,
        None => s.pool.admit(call.client).await.map_err(Refused::Error)?,
    };
    let (worker_s, req, body_len) = (s.clone(), call.request.clone(), call.body_len);
    let (compiled, meter) = slot
        .run(move || {
            let mut meter = worker_s.engine.meter(budget);
            attempt(&worker_s, &req, body_len, &mut meter).map(|compiled| (compiled, meter))
        })
        .await
        .map_err(Refused::Error)??;
    Ok(Priced {
        compiled,
        meter,
        slot: Some(slot),
    })
}

/// A request found over `over`'s budget: is it past the paid ceiling too? A cheap second look
/// (its schema compiled already, the walk capped), so a request no payment could buy gets its
/// 422 rather than a 402.
pub(super) fn second_look(s: &Services, call: &VerifyCall<'_>, over: OverBudget) -> OverBudget {
    let paid = s.config.budgets.paid;
    if over.past(paid)
        || !s
            .engine
            .has_compiled(&call.request.expected_schema, call.request.format_assertion)
    {
        return over;
    }
    let mut meter = s.engine.meter(paid);
    let repriced = s
        .engine
        .compile(
            &call.request.expected_schema,
            call.request.format_assertion,
            &mut meter,
            false,
        )
        .and_then(|compiled| {
            s.engine
                .price_capped(
                    &call.request,
                    &compiled,
                    call.body_len,
                    &mut meter,
                    Some(SECOND_LOOK_PAIRS),
                )
                .map_err(EngineError::from)
        });
    match repriced {
        Err(EngineError::OverBudget(again)) if again.past(paid) => again,
        _ => over,
    }
}
