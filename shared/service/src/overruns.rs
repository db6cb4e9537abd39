//! Work that cost more than its estimate on a request thread, and what follows from it.
//!
//! Cheap verifications run on the request threads, chosen by their estimate; an estimate that
//! is wrong (a cost-model hole, issue 35) would let one request hold a request thread for far
//! longer than it was priced at, and everything behind it waits. So the request threads
//! measure the CPU of work that runs past its estimate ([`super::cpu_watch`]: no system call
//! for work that ends in time) and, when it passed its estimate by more than [`SLACK_NS`], do
//! not trust that estimate again: the client is sent to the bounded pool ([`super::pool`]: two
//! places per client, lower priority) for [`DEMOTION`], the compiled schema for as long as it
//! is cached, whoever sends it, and the overrun is logged (amounts and the largest part only,
//! nothing the caller sent). So a mispriced request costs the request threads once per client
//! and schema, not once per request.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How far past its estimate a verification may run before the estimate is distrusted: well
/// above the noise of a thread's CPU clock (page faults, cache misses), well below what would
/// be felt by the requests waiting behind it.
pub const SLACK_NS: u64 = 1_000_000;

/// How long a client whose request overran stays on the bounded pool.
pub const DEMOTION: Duration = Duration::from_secs(60);

/// Most clients remembered at once (about 100 bytes each: 6.4 MiB at most); when full, the
/// oldest demotion makes room.
pub const MAX_DEMOTED: usize = 65_536;

/// The overruns seen and the clients demoted for them.
#[derive(Default)]
pub struct Overruns {
    demoted: Mutex<HashMap<String, Instant>>,
    /// Clients in `demoted` (read without the lock on every request).
    demoted_count: AtomicUsize,
    /// Overruns since start.
    seen: AtomicU64,
    /// The second (since the Unix epoch) of the last overrun logged: at most one line a
    /// second, however many overruns an attack makes.
    logged_second: AtomicU64,
}

impl Overruns {
    /// Whether `client` overran recently (its verifications go to the pool).
    pub fn demoted(&self, client: &str) -> bool {
        if self.demoted_count.load(Ordering::Relaxed) == 0 {
            return false;
        }
        let Ok(mut demoted) = self.demoted.lock() else {
            return true;
        };
        match demoted.get(client) {
            Some(since) if since.elapsed() < DEMOTION => true,
            Some(_) => {
                demoted.remove(client);
                self.demoted_count.store(demoted.len(), Ordering::Relaxed);
                false
            }
            None => false,
        }
    }

    /// Record an overrun of `client`'s request: the client goes to the pool for [`DEMOTION`].
    pub fn record(&self, client: &str, estimate_ns: u64, measured_ns: u64, part: &'static str) {
        let seen = self.seen.fetch_add(1, Ordering::Relaxed) + 1;
        let second = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        if self.logged_second.swap(second, Ordering::Relaxed) != second {
            tracing::warn!(
                estimate_us = estimate_ns / 1000,
                measured_us = measured_ns / 1000,
                largest_part = part,
                overruns = seen,
                "a verification cost more CPU than its estimate on a request thread; its client and schema now run on the bounded pool"
            );
        }
        let Ok(mut demoted) = self.demoted.lock() else {
            return;
        };
        if demoted.len() >= MAX_DEMOTED && !demoted.contains_key(client) {
            demoted.retain(|_, since| since.elapsed() < DEMOTION);
            if demoted.len() >= MAX_DEMOTED
                && let Some(oldest) = demoted
                    .iter()
                    .min_by_key(|(_, since)| **since)
                    .map(|(c, _)| c.clone())
            {
                demoted.remove(&oldest);
            }
        }
        demoted.insert(client.to_owned(), Instant::now());
        self.demoted_count.store(demoted.len(), Ordering::Relaxed);
    }

    /// Overruns since start.
    pub fn seen(&self) -> u64 {
        self.seen.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_overrun_demotes_its_client_only() {
        let o = Overruns::default();
        assert!(!o.demoted("a"));
        o.record("a", 20_000, 200_000_000, "schema_walk");
        assert!(o.demoted("a"));
        assert!(!o.demoted("b"));
        assert_eq!(o.seen(), 1);
    }

    #[test]
    fn the_demoted_set_is_bounded() {
        let o = Overruns::default();
        for i in 0..MAX_DEMOTED + 10 {
            o.record(&format!("c{i}"), 0, 10_000_000, "rules");
        }
        let held = o.demoted.lock().expect("lock").len();
        assert!(held <= MAX_DEMOTED, "{held}");
        assert!(o.demoted(&format!("c{}", MAX_DEMOTED + 9)));
    }
}
