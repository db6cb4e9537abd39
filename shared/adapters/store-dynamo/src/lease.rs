//! Units of the day's free budget this process claimed from DynamoDB in a block and has not
//! granted yet, so most free calls need no write to the budget's one item.
//!
//! A block is claimed with one conditional update (`used <= total - units`) after a client's
//! own claim was granted; each later granted free call of the day takes a unit here. The store's count
//! therefore runs ahead of the calls granted, never behind: the budget is never overspent,
//! and a process that stops (or a day that ends) leaves at most `LEASE_UNITS - 1` of its
//! units ungranted. Near the end of the budget, blocks no longer fit and units are claimed
//! one at a time, so a single process grants exactly the budget.

use std::sync::Mutex;

/// Units claimed at once: one budget write per this many free calls.
pub const LEASE_UNITS: u64 = 16;

/// The units in hand, for one day.
#[derive(Default)]
pub(crate) struct BudgetLease(Mutex<(String, u64)>);

impl BudgetLease {
    /// Take one unit of `day` if one is in hand.
    pub(crate) fn take(&self, day: &str) -> bool {
        let Ok(mut lease) = self.0.lock() else {
            return false;
        };
        if lease.0 == day && lease.1 > 0 {
            lease.1 -= 1;
            true
        } else {
            false
        }
    }

    /// Put `units` of `day` in hand (those of an earlier day are dropped).
    pub(crate) fn add(&self, day: &str, units: u64) {
        if units == 0 {
            return;
        }
        if let Ok(mut lease) = self.0.lock() {
            if lease.0 != day {
                *lease = (day.to_owned(), 0);
            }
            lease.1 += units;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_taken_per_day_and_an_old_days_are_dropped() {
        let lease = BudgetLease::default();
        assert!(!lease.take("2026-12-07"));
        lease.add("2026-12-07", 2);
        assert!(lease.take("2026-12-07"));
        assert!(!lease.take("2026-12-08"), "a unit of another day");
        lease.add("2026-12-08", 1);
        assert!(!lease.take("2026-12-07"), "the old day's unit was dropped");
        assert!(lease.take("2026-12-08"));
        assert!(!lease.take("2026-12-08"));
    }
}
