//! How integrity checks are counted (`integrity_checks`), at the granularity of the hosted
//! service: a rule or bound is not one check but one per thing it establishes.
//!
//! For every path a rule or bound reads — its `field`, and a field operand (`equals_field`,
//! `other_field`, `in_field`):
//! - one check per array the path fans out over at a `[]` step (it is an array);
//! - one check per location the path reaches: the value is there (a missing one fails, unless
//!   `if_present` allows it, then it is not counted);
//! - for rules that compute with numbers (`sum_equals`, `gte`, `lte`, and bounds), one check per
//!   value found: it is a number.
//!
//! Then the comparisons: `sum_equals` one (the sum equals the target); `gte`, `lte`, bounds and
//! `exists_in` one per value of `field` (it is within the limit, the range, the allowed set);
//! `unique` one per value (it repeats no earlier one). A comparison that cannot be made (a value
//! or operand missing or not a number) fails. So a rule or bound with a finding always has a
//! failed check, and one without has none. The hosted invoice example (`sum_equals` over two
//! line totals equal to `total`) counts 8: `line_items` is an array, two line totals present and
//! numbers (4), `total` present and a number (2), the sum (1) — 7 passed.

use crate::path::Resolved;

/// Checks counted for one rule or bound.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    pub passed: usize,
    pub total: usize,
}

impl Tally {
    /// Count `n` checks of which `failed` failed.
    pub fn add(&mut self, n: usize, failed: usize) {
        self.total += n;
        self.passed += n.saturating_sub(failed);
    }

    /// Add another tally.
    pub fn merge(&mut self, other: Tally) {
        self.total += other.total;
        self.passed += other.passed;
    }

    /// Count what a path's resolution establishes: its arrays, the locations it reached and,
    /// when `numbers`, that each value found is a number.
    pub fn path(&mut self, resolved: &Resolved<'_>, if_present: bool, numbers: bool) {
        self.add(resolved.arrays, 0);
        self.add(resolved.found.len(), 0);
        if !if_present {
            self.add(resolved.missing.len(), resolved.missing.len());
        }
        if numbers {
            let not_numbers = resolved
                .found
                .iter()
                .filter(|(_, v)| !v.is_number())
                .count();
            self.add(resolved.found.len(), not_numbers);
        }
    }
}
