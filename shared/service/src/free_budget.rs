//! The day's free budget across all clients, as this process last saw it. The store counts the
//! budget (in the same atomic step as each client's allowance); once it refuses a claim because
//! the budget is spent, later free calls of the same UTC day are told so before any work is
//! done, with no store write. A new day forgets it.

use std::sync::atomic::{AtomicI64, Ordering};

/// The last UTC day (days since the Unix epoch, plus one; 0: none) whose budget this process
/// saw spent.
#[derive(Debug, Default)]
pub struct SpentDay(AtomicI64);

/// The UTC day of a Unix time, in days since the epoch.
pub fn day_index(unix_seconds: i64) -> i64 {
    unix_seconds.div_euclid(86_400)
}

impl SpentDay {
    /// Whether the budget of `day` was seen spent.
    pub fn is_spent(&self, day: i64) -> bool {
        self.0.load(Ordering::Relaxed) == day + 1
    }

    /// The budget of `day` is spent.
    pub fn mark(&self, day: i64) {
        self.0.fetch_max(day + 1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spent_day_is_remembered_until_the_next_day() {
        let spent = SpentDay::default();
        let today = day_index(1_796_000_000);
        assert!(!spent.is_spent(today));
        spent.mark(today);
        assert!(spent.is_spent(today));
        assert!(!spent.is_spent(today + 1));
        // An older day marked late does not hide a newer one.
        spent.mark(today - 1);
        assert!(spent.is_spent(today));
        assert_eq!(day_index(-1), -1);
    }
}
