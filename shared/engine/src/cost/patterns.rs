//! What a `pattern` costs: to compile, to hold, and to match against a string of `n` bytes.
//!
//! jsonschema matches some patterns without a regex engine (literals, prefixes, alternations of
//! literals, a counted character class): those cost a linear scan. Every other pattern becomes a
//! `regex::Regex` over the pattern's ECMA-262 translation. Its worst case is the PikeVM, whose
//! work per byte grows with the automaton's size; the regex crate runs it when the lazy DFA cannot
//! (Unicode word boundaries on non-ASCII text) or gives up (its cache cleared again and again).
//! So each pattern is compiled here to the same Thompson NFA (size-limited by what the budget has
//! left) and, without Unicode word boundaries, determinized under a small size limit: a pattern
//! whose whole DFA fits in the lazy DFA's cache never thrashes it and is priced per byte at DFA
//! speed; any other is priced as the PikeVM would run it. Compiling the regex is priced from the
//! time these two builds took (the regex crate repeats them, forward and reverse): Unicode
//! classes make compile time depend on more than the automaton's size.

use super::calibration as c;
use super::{Cost, Part};
use regex_automata::dfa::dense;
use regex_automata::nfa::thompson;
use std::time::Instant;

fn elapsed_ns(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// The lazy-DFA cache each compiled pattern may grow (the regex crate's `dfa_size_limit`,
/// given to jsonschema); also the memory a pattern may add once used.
pub const DFA_CACHE_BYTES: u64 = 512 << 10;
/// The largest dense DFA a pattern may determinize to and still be priced at DFA speed (its
/// states then fit the lazy DFA's cache with room to spare).
const DENSE_DFA_LIMIT: usize = 128 << 10;
/// Working memory allowed while determinizing it.
const DETERMINIZE_LIMIT: usize = 256 << 10;
/// NFAs larger than this are not determinized (their DFAs would not fit the limit anyway, and
/// trying costs milliseconds): priced as the PikeVM.
const DENSE_MAX_NFA_STATES: usize = 256;
/// The largest NFA one pattern may compile to (the regex crate's `size_limit`).
pub const MAX_NFA_BYTES: u64 = 4 << 20;

/// How jsonschema will match a pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Matcher {
    /// Without a regex engine: a linear scan.
    Linear,
    /// A lazy DFA that fits its cache: linear, plus building at most `dfa_states` states of
    /// `nfa_states` NFA states each.
    Dfa { dfa_states: u64, nfa_states: u64 },
    /// Possibly the PikeVM: per byte, work proportional to the NFA's states.
    Pike { nfa_states: u64 },
    /// Not a pattern the regex engine accepts; compiling the schema will refuse it.
    Refused,
}

/// A pattern's costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PatternCost {
    pub matcher: Matcher,
    /// Compiling it (CPU) and the memory that is held once compiled and used.
    pub compile: Cost,
    /// Memory while it compiles.
    pub compile_peak: u64,
}

/// A pattern too large to compile within what the budget has left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge;

impl PatternCost {
    /// Price a pattern (as written in the schema), compiling at most `nfa_bytes_left` of NFA.
    pub fn analyze(pattern: &str, nfa_bytes_left: u64) -> Result<PatternCost, TooLarge> {
        if jsonschema_regex::analyze_pattern(pattern).is_some() {
            return Ok(PatternCost::linear(pattern.len()));
        }
        let Ok(translated) = jsonschema_regex::to_rust_regex(pattern) else {
            return Ok(PatternCost::refused());
        };
        let engine_text = match jsonschema_regex::search_form(pattern, &translated) {
            Some(jsonschema_regex::Search::RepeatedClass(_)) => {
                return Ok(PatternCost::linear(pattern.len()));
            }
            Some(jsonschema_regex::Search::Collapsed(collapsed)) => collapsed,
            None => translated.into_owned(),
        };
        if min_nfa_bytes(&engine_text) > MAX_NFA_BYTES {
            // Larger than the regex engine's own limit: refused by the compile, whatever the
            // budget (so a 422, not a price).
            return Ok(PatternCost::refused());
        }
        let limit = nfa_bytes_left.min(MAX_NFA_BYTES);
        let started = Instant::now();
        let nfa = match thompson::Compiler::new()
            .configure(thompson::Config::new().nfa_size_limit(Some(limit as usize)))
            .build(&engine_text)
        {
            Ok(nfa) => nfa,
            Err(e) if e.size_limit().is_some() => return Err(TooLarge),
            // Lookaround, backreferences and the like: the schema compile refuses them.
            Err(_) => return Ok(PatternCost::refused()),
        };
        let nfa_ns = elapsed_ns(started);
        let nfa_bytes = nfa.memory_usage() as u64;
        let nfa_states = nfa.states().len() as u64;
        let started = Instant::now();
        let determinized = if nfa.look_set_any().contains_word_unicode()
            || nfa.states().len() > DENSE_MAX_NFA_STATES
        {
            None
        } else {
            dense::Builder::new()
                .configure(
                    dense::Config::new()
                        .dfa_size_limit(Some(DENSE_DFA_LIMIT))
                        .determinize_size_limit(Some(DETERMINIZE_LIMIT)),
                )
                .build_from_nfa(&nfa)
                .ok()
        };
        let dense_ns = elapsed_ns(started);
        // The lazy DFA's cache grows with the states it builds: at most the whole DFA (its
        // states also keep their NFA state sets) when that is known, else to its limit.
        let (matcher, dfa_cache) = match determinized {
            Some(dfa) => {
                let bytes = dfa.memory_usage() as u64;
                let per_state = (dfa.stride() as u64 * 4).max(1);
                let dfa_states = bytes / per_state + 1;
                let cache =
                    (4 * bytes + dfa_states * 8 * nfa_states + (16 << 10)).min(DFA_CACHE_BYTES);
                (
                    Matcher::Dfa {
                        dfa_states,
                        nfa_states,
                    },
                    cache,
                )
            }
            None => (Matcher::Pike { nfa_states }, DFA_CACHE_BYTES),
        };
        // The regex crate builds a forward and a reverse NFA (measured up to 3× our NFA build)
        // and, for small automata, full DFAs (up to 2× our determinization); this analysis is
        // spent already and counted too.
        let cpu = c::REGEX_COMPILE_BASE_NS
            .saturating_add(nfa_ns.saturating_mul(c::REGEX_COMPILE_PER_NFA_BUILD + 1))
            .saturating_add(dense_ns.saturating_mul(c::REGEX_COMPILE_PER_DFA_BUILD + 1));
        Ok(PatternCost {
            matcher,
            compile: Cost::new(
                cpu,
                c::REGEX_BASE_BYTES
                    + c::REGEX_HELD_BYTES_PER_NFA_BYTE * nfa_bytes
                    + c::REGEX_SCRATCH_BYTES_PER_STATE * nfa_states
                    + dfa_cache,
            ),
            compile_peak: c::REGEX_PEAK_BYTES_PER_NFA_BYTE * nfa_bytes + DETERMINIZE_LIMIT as u64,
        })
    }

    fn linear(pattern_len: usize) -> Self {
        PatternCost {
            matcher: Matcher::Linear,
            compile: Cost::new(c::MATCH_BASE_NS * 4, 256 + 2 * pattern_len as u64),
            compile_peak: 0,
        }
    }

    fn refused() -> Self {
        PatternCost {
            matcher: Matcher::Refused,
            compile: Cost::ZERO,
            compile_peak: 0,
        }
    }

    /// Matching a string of `n` bytes once (CPU).
    pub fn match_ns(&self, n: u64) -> u64 {
        let per_byte = match self.matcher {
            Matcher::Linear => c::MATCH_LINEAR_NS_PER_BYTE,
            Matcher::Dfa { .. } => c::MATCH_DFA_NS_PER_BYTE,
            Matcher::Pike { nfa_states } => c::MATCH_PIKE_NS_PER_BYTE
                .saturating_add(c::MATCH_PIKE_NS_PER_STATE_BYTE.saturating_mul(nfa_states)),
            Matcher::Refused => 0,
        };
        c::MATCH_BASE_NS.saturating_add(per_byte.saturating_mul(n))
    }

    /// Building the lazy DFA's states the first time the pattern runs in a request (CPU).
    pub fn warm_up_ns(&self) -> u64 {
        match self.matcher {
            Matcher::Dfa {
                dfa_states,
                nfa_states,
            } => dfa_states
                .saturating_mul(nfa_states.saturating_add(256))
                .saturating_mul(c::DFA_STATE_NS_PER_NFA_STATE),
            _ => 0,
        }
    }
}

/// The least memory a pattern's NFA can take, from its syntax alone: every repetition's
/// minimum count of copies, one 16-byte state at least per literal, class or assertion. Linear
/// in the pattern's length (nothing is expanded), so a pattern that could never compile is known
/// without compiling any of it.
fn min_nfa_bytes(pattern: &str) -> u64 {
    use regex_automata::util::syntax;
    use regex_syntax::hir::{Hir, HirKind};
    fn states(hir: &Hir) -> u64 {
        match hir.kind() {
            HirKind::Empty => 0,
            HirKind::Literal(_) | HirKind::Class(_) | HirKind::Look(_) => 1,
            HirKind::Repetition(rep) => states(&rep.sub).saturating_mul(u64::from(rep.min)),
            HirKind::Capture(cap) => states(&cap.sub),
            HirKind::Concat(subs) | HirKind::Alternation(subs) => {
                subs.iter().map(states).fold(0, u64::saturating_add)
            }
        }
    }
    syntax::parse(pattern).map_or(0, |hir| states(&hir).saturating_mul(16))
}

/// The part patterns are charged to.
pub const PART: Part = Part::Patterns;

#[cfg(test)]
mod tests {
    use super::*;

    fn analyze(p: &str) -> PatternCost {
        PatternCost::analyze(p, MAX_NFA_BYTES).expect("fits")
    }

    #[test]
    fn literal_and_counted_patterns_need_no_engine() {
        for p in ["^INV-", "^abc$", "^(a|b|c)$", r"^\S*$", "^[a-z]{1,20}$"] {
            assert_eq!(analyze(p).matcher, Matcher::Linear, "{p}");
        }
    }

    #[test]
    fn ordinary_patterns_run_at_dfa_speed() {
        for p in ["^INV-[0-9]{4}$", r"^\S+@\S+\.\S+$", r"\w+", "(a|b)*c"] {
            assert!(
                matches!(analyze(p).matcher, Matcher::Dfa { .. }),
                "{p}: {:?}",
                analyze(p)
            );
        }
    }

    #[test]
    fn unicode_word_boundaries_and_dfa_blowups_are_priced_as_the_pikevm() {
        assert!(matches!(analyze(r"\b\w+\b$").matcher, Matcher::Pike { .. }));
        // 2^20 DFA states: too large to determinize within the limit.
        assert!(matches!(
            analyze("(a|b)*a(a|b){20}").matcher,
            Matcher::Pike { .. }
        ));
        let pike = analyze(r"(?:a|\b)[^z]{1,1000}$y");
        let Matcher::Pike { nfa_states } = pike.matcher else {
            panic!("{pike:?}")
        };
        assert!(nfa_states > 5_000);
        // 28 KB against it measured 210 ms; the estimate must be above.
        assert!(pike.match_ns(28_000) > 210_000_000);
    }

    #[test]
    fn huge_repetitions_are_refused_by_the_size_left() {
        assert_eq!(
            PatternCost::analyze("[a-z]{20000}x", 100_000),
            Err(TooLarge)
        );
        let fits = PatternCost::analyze("[a-z]{2000}x", 1 << 20).expect("fits");
        assert!(fits.compile.mem_bytes > 48_000 * 4);
    }

    #[test]
    fn patterns_past_the_engine_limit_are_refused_without_compiling() {
        for p in ["a{1000000}", "(a{1000}){1000}", "((a{100}){100}){100}"] {
            let started = std::time::Instant::now();
            assert_eq!(analyze(p).matcher, Matcher::Refused, "{p}");
            assert!(
                started.elapsed() < std::time::Duration::from_millis(5),
                "{p}"
            );
        }
        assert!(min_nfa_bytes("[a-z]{2000}x") < MAX_NFA_BYTES);
    }

    #[test]
    fn lookaround_is_left_to_the_compile_to_refuse() {
        assert_eq!(analyze("(?=a)b").matcher, Matcher::Refused);
        assert_eq!(analyze(r"(a)\1").matcher, Matcher::Refused);
    }
}
