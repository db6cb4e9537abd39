//! The trust score: the lower bound of the 95 % Wilson score interval of an agent's pass rate.
//!
//! A handful of passes must not look like a long clean record: 3 passes out of 3 score 0.439,
//! 100 out of 100 score 0.963, 1,000 out of 1,000 score 0.996. The bound is monotone — one more
//! pass never lowers it, one more fail never raises it — and always within [0, 1]. It is
//! computed from the counts alone (no recency weighting), so it is reproducible from the
//! public `/reputation` history.

/// The method's name, as score responses state it.
pub const METHOD: &str = "wilson_lower_bound";
/// The method's version; bumped whenever the formula changes.
pub const METHOD_VERSION: &str = "1";
/// The confidence of the interval.
pub const CONFIDENCE: f64 = 0.95;
/// The normal quantile of a two-sided 95 % interval.
const Z: f64 = 1.959_963_984_540_054;

/// The trust score for `passes` and `fails`, rounded to 6 decimals; `None` with no data.
pub fn trust_score(passes: u64, fails: u64) -> Option<f64> {
    let n = passes.checked_add(fails)?;
    if n == 0 {
        return None;
    }
    let n = n as f64;
    let p = passes as f64 / n;
    let z2 = Z * Z;
    let centre = p + z2 / (2.0 * n);
    let margin = Z * ((p * (1.0 - p) + z2 / (4.0 * n)) / n).sqrt();
    let bound = (centre - margin) / (1.0 + z2 / n);
    Some(((bound.clamp(0.0, 1.0)) * 1e6).round() / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        assert_eq!(trust_score(0, 0), None);
        assert_eq!(trust_score(3, 0), Some(0.438503));
        assert_eq!(trust_score(0, 5), Some(0.0));
        assert_eq!(trust_score(100, 0), Some(0.963007));
        assert!(trust_score(1000, 0).is_some_and(|s| s > 0.996));
        assert!(trust_score(50, 50).is_some_and(|s| (s - 0.403832).abs() < 1e-6));
    }
}
