//! The trust score: the lower bound of the 95 % Wilson score interval of an agent's pass rate.
//!
//! A handful of passes must not look like a long clean record: 3 passes out of 3 score 0.439,
//! 100 out of 100 score 0.963, 1,000 out of 1,000 score 0.996. The bound is monotone — one more
//! pass never lowers it, one more fail never raises it — and always within [0, 1]. It is
//! computed from the counts alone (no recency weighting), so it is reproducible from the
//! public `/reputation` history.
//!
//! Version 2 adds a floor of evidence: below [`MIN_SAMPLE`] counted verifications an agent is
//! `unrated` (no score at all), so nobody buys a number that rests on two or three calls.
//! Only verifications that checked something are counted (see the score method's text).

/// The method's name, as score responses state it.
pub const METHOD: &str = "wilson_lower_bound";
/// The method's version; bumped whenever the formula changes.
pub const METHOD_VERSION: &str = "2";
/// Counted verifications an agent needs before it is rated.
pub const MIN_SAMPLE: u64 = 10;
/// The confidence of the interval.
pub const CONFIDENCE: f64 = 0.95;
/// The normal quantile of a two-sided 95 % interval.
const Z: f64 = 1.959_963_984_540_054;

/// Why an agent has no score.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoScore {
    /// Nothing was ever counted.
    NoData,
    /// Fewer than [`MIN_SAMPLE`] counted verifications.
    Unrated,
}

impl NoScore {
    /// The `reason` a score answer states.
    pub fn reason(self) -> &'static str {
        match self {
            NoScore::NoData => "no_data",
            NoScore::Unrated => "unrated",
        }
    }
}

/// The rating of an agent: its score once it has [`MIN_SAMPLE`] counted verifications.
pub fn rating(passes: u64, fails: u64) -> Result<f64, NoScore> {
    match passes.saturating_add(fails) {
        0 => Err(NoScore::NoData),
        n if n < MIN_SAMPLE => Err(NoScore::Unrated),
        _ => trust_score(passes, fails).ok_or(NoScore::NoData),
    }
}

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

    #[test]
    fn below_the_minimum_there_is_no_score() {
        assert_eq!(rating(0, 0), Err(NoScore::NoData));
        assert_eq!(rating(MIN_SAMPLE - 1, 0), Err(NoScore::Unrated));
        assert_eq!(rating(0, MIN_SAMPLE - 1), Err(NoScore::Unrated));
        assert_eq!(
            rating(MIN_SAMPLE, 0).ok(),
            trust_score(MIN_SAMPLE, 0),
            "rated from the minimum on"
        );
    }
}
