//! What the verify handlers share, built once at start-up.

use std::sync::Arc;
use verifier_core::Engine;
use verifier_core::clock::Clock;
use verifier_core::config::ServiceConfig;
use verifier_core::keys::KeySource;
use verifier_core::store::Store;

/// Shared state of the verify function.
pub struct VerifyState {
    /// The checks and the compiled-schema cache.
    pub engine: Engine,
    /// The signing key.
    pub keys: Arc<dyn KeySource>,
    /// Allowance and history.
    pub store: Arc<dyn Store>,
    /// Prices, limits, addresses.
    pub config: ServiceConfig,
    /// Time (injectable for tests).
    pub clock: Arc<dyn Clock>,
}
