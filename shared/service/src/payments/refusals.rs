//! A per-client budget of payments the facilitator refused, so junk that passes the local
//! checks (a smart-wallet signature only the chain can check, an honest signature from an
//! unfunded wallet) cannot be relayed to the facilitator at request rate.
//!
//! Each refusal fills a client's bucket by one; the bucket drains at [`DRAIN_PER_SECOND`].
//! A client whose bucket holds [`BURST`] refusals waits (429 with `Retry-After`) until one
//! drains, before any store or network call. Payments the facilitator accepts cost nothing, so an
//! honest buyer is never slowed. At most [`TRACKED_CLIENTS`] clients are remembered (about
//! 1 MiB); the least recently seen are forgotten first.

use quick_cache::sync::Cache;
use std::time::Instant;

/// Refusals a client may cause in a burst.
pub const BURST: f64 = 10.0;
/// Refusals forgiven per second (one per 30 s).
pub const DRAIN_PER_SECOND: f64 = 1.0 / 30.0;
/// Clients remembered at once.
pub const TRACKED_CLIENTS: usize = 10_000;

#[derive(Clone, Copy)]
struct Bucket {
    level: f64,
    at: Instant,
}

impl Bucket {
    fn drained(self, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        (self.level - elapsed * DRAIN_PER_SECOND).max(0.0)
    }
}

/// The refusal buckets of recent clients.
pub struct RefusalBudget {
    buckets: Cache<String, Bucket>,
}

impl Default for RefusalBudget {
    fn default() -> Self {
        RefusalBudget {
            buckets: Cache::new(TRACKED_CLIENTS),
        }
    }
}

impl RefusalBudget {
    /// Seconds `client` must wait before its next payment may reach the facilitator; `None`
    /// when it may go now.
    pub fn wait(&self, client: &str, now: Instant) -> Option<u64> {
        let level = self.buckets.get(client)?.drained(now);
        (level > BURST - 1.0).then(|| ((level - (BURST - 1.0)) / DRAIN_PER_SECOND).ceil() as u64)
    }

    /// Count one refusal of `client`'s payment by the facilitator.
    pub fn refused(&self, client: &str, now: Instant) {
        let level = self.buckets.get(client).map_or(0.0, |b| b.drained(now));
        self.buckets.insert(
            client.to_owned(),
            Bucket {
                level: level + 1.0,
                at: now,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_burst_of_refusals_then_one_per_drain_interval() {
        let budget = RefusalBudget::default();
        let t0 = Instant::now();
        for _ in 0..BURST as usize {
            assert_eq!(budget.wait("a", t0), None);
            budget.refused("a", t0);
        }
        let wait = budget.wait("a", t0).expect("over the burst");
        assert_eq!(wait, 30);
        // Another client is not affected.
        assert_eq!(budget.wait("b", t0), None);
        // After one drain interval one more refusal may happen.
        let later = t0 + Duration::from_secs(wait);
        assert_eq!(budget.wait("a", later), None);
        budget.refused("a", later);
        assert!(budget.wait("a", later).is_some());
        // A long quiet period empties the bucket.
        assert_eq!(budget.wait("a", later + Duration::from_secs(3600)), None);
    }
}
