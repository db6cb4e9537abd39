//! How many verifications this process is running at once: one alone sends its store write
//! before signing its report, so the two overlap; among others it signs first, so its write
//! joins theirs in one group commit.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The number of verifications in progress.
#[derive(Debug, Default)]
pub struct InFlight(AtomicUsize);

/// One verification in progress, counted until dropped.
#[must_use = "the verification is counted only while this lives"]
pub struct Entered<'a>(&'a InFlight);

impl InFlight {
    /// Count a verification in until the returned guard is dropped.
    pub fn enter(&self) -> Entered<'_> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Entered(self)
    }

    /// Whether one verification (the caller's) is in progress, and no other.
    pub fn alone(&self) -> bool {
        self.0.load(Ordering::Relaxed) <= 1
    }
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        self.0.0.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verification_is_alone_until_a_second_enters_and_again_when_it_leaves() {
        let in_flight = InFlight::default();
        let first = in_flight.enter();
        assert!(in_flight.alone());
        let second = in_flight.enter();
        assert!(!in_flight.alone());
        drop(second);
        assert!(in_flight.alone());
        drop(first);
        assert!(in_flight.alone());
    }
}
