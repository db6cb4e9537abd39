//! Property tests of the trust score: bounded, monotone in passes and in fails, stable for
//! large samples, and never flattering a short record.

use proptest::prelude::*;
use verifier_engine::trust::{MIN_SAMPLE, NoScore, rating, trust_score};

proptest! {
    #[test]
    fn bounded(passes in 0u64..1_000_000, fails in 0u64..1_000_000) {
        if let Some(s) = trust_score(passes, fails) {
            prop_assert!((0.0..=1.0).contains(&s));
        } else {
            prop_assert_eq!(passes + fails, 0);
        }
    }

    #[test]
    fn a_pass_never_lowers_and_a_fail_never_raises(passes in 0u64..200_000, fails in 0u64..200_000) {
        let base = trust_score(passes, fails).unwrap_or(0.0);
        let more_pass = trust_score(passes + 1, fails).unwrap_or(0.0);
        let more_fail = trust_score(passes, fails + 1).unwrap_or(0.0);
        prop_assert!(more_pass >= base, "{} -> {}", base, more_pass);
        if passes + fails > 0 {
            prop_assert!(more_fail <= base, "{} -> {}", base, more_fail);
        }
    }

    #[test]
    fn no_score_below_the_minimum_and_the_plain_score_from_it(passes in 0u64..100_000, fails in 0u64..100_000) {
        let n = passes + fails;
        match rating(passes, fails) {
            Ok(s) => {
                prop_assert!(n >= MIN_SAMPLE);
                prop_assert_eq!(Some(s), trust_score(passes, fails));
            }
            Err(NoScore::NoData) => prop_assert_eq!(n, 0),
            Err(NoScore::Unrated) => prop_assert!(n > 0 && n < MIN_SAMPLE),
        }
    }

    #[test]
    fn a_rated_agent_stays_rated_and_monotone(passes in 0u64..200_000, fails in 0u64..200_000) {
        if let Ok(base) = rating(passes, fails) {
            let more_pass = rating(passes + 1, fails);
            let more_fail = rating(passes, fails + 1);
            prop_assert!(more_pass.is_ok_and(|s| s >= base), "{} -> {:?}", base, more_pass);
            prop_assert!(more_fail.is_ok_and(|s| s <= base), "{} -> {:?}", base, more_fail);
        }
    }

    #[test]
    fn stable_for_large_samples(rate in 0.0f64..=1.0, n in 100_000u64..10_000_000) {
        let passes = (rate * n as f64).round() as u64;
        let s = trust_score(passes, n - passes).unwrap_or(-1.0);
        let p = passes as f64 / n as f64;
        // Close to the pass rate, a little below it (a lower bound).
        prop_assert!(s <= p + 1e-6 && p - s < 0.01, "rate {} score {}", p, s);
    }
}

#[test]
fn a_few_passes_do_not_look_like_a_long_clean_record() {
    let short = trust_score(3, 0).unwrap_or(1.0);
    let long = trust_score(1000, 0).unwrap_or(0.0);
    assert!(short < 0.5 && long > 0.99, "{short} {long}");
    // 95 of 100 beats 19 of 20 (same rate, more evidence).
    assert!(trust_score(95, 5) > trust_score(19, 1));
}
