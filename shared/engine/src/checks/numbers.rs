//! Numbers as the hosted service prints them in messages (Python's `repr`: `135.0`, `129.5`,
//! `3`, `1e+16`), so our messages match its receipts byte for byte.

use serde_json::Number;
use std::fmt::Write;

/// A JSON number as Python would print the parsed value: integers plain, floats with `repr`.
pub fn py_number(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    py_float(n.as_f64().unwrap_or(f64::NAN))
}

/// Python's `repr(float)`.
pub fn py_float(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    // Shortest round-trip digits and decimal exponent, as `{:e}` gives them.
    let mut sci = String::with_capacity(32);
    let _ = write!(sci, "{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (lead, rest) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digit_count = lead.len() + rest.len();
    let mut out = String::with_capacity(digit_count + 8);
    if f < 0.0 {
        out.push('-');
    }
    if (-4..16).contains(&exp) {
        let point = exp + 1; // digits before the decimal point
        if point <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-point) as usize));
            out.push_str(lead);
            out.push_str(rest);
        } else if point as usize >= digit_count {
            out.push_str(lead);
            out.push_str(rest);
            out.extend(std::iter::repeat_n('0', point as usize - digit_count));
            out.push_str(".0");
        } else {
            // `lead` is one digit, so the point falls inside `rest`.
            let (a, b) = rest.split_at(point as usize - lead.len());
            out.push_str(lead);
            out.push_str(a);
            out.push('.');
            out.push_str(b);
        }
    } else {
        out.push_str(lead);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
    out
}

/// A running sum that prints like Python's `sum()`: an integer while every term is one.
#[derive(Debug, Clone, Copy, Default)]
pub struct PySum {
    total: f64,
    any_float: bool,
}

impl PySum {
    /// Add a term.
    pub fn add(&mut self, n: &Number) {
        self.total += n.as_f64().unwrap_or(0.0);
        self.any_float |= n.is_f64();
    }

    /// The sum's value.
    pub fn value(&self) -> f64 {
        self.total
    }

    /// The sum as Python prints it.
    pub fn render(&self) -> String {
        if self.any_float {
            py_float(self.total)
        } else {
            format!("{}", self.total as i64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The straightforward form of `py_float` (allocation per step), kept to check the fast one.
    fn reference_repr(f: f64) -> String {
        let sci = format!("{f:e}");
        let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        let sign = if mantissa.starts_with('-') { "-" } else { "" };
        let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
        if (-4..16).contains(&exp) {
            let point = exp + 1;
            let body = if point <= 0 {
                format!("0.{}{}", "0".repeat((-point) as usize), digits)
            } else if point as usize >= digits.len() {
                format!("{}{}.0", digits, "0".repeat(point as usize - digits.len()))
            } else {
                let (a, b) = digits.split_at(point as usize);
                format!("{a}.{b}")
            };
            format!("{sign}{body}")
        } else {
            let (first, rest) = digits.split_at(1);
            let frac = if rest.is_empty() {
                String::new()
            } else {
                format!(".{rest}")
            };
            let esign = if exp < 0 { '-' } else { '+' };
            format!("{sign}{first}{frac}e{esign}{:02}", exp.abs())
        }
    }

    #[test]
    fn agrees_with_the_reference_form_on_many_doubles() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..200_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let f = f64::from_bits(state);
            if !f.is_finite() || f == 0.0 {
                continue;
            }
            assert_eq!(py_float(f), reference_repr(f), "{f:e}");
            let g = (state % 10_000_000) as f64 / 1000.0 - 5000.0;
            if g != 0.0 {
                assert_eq!(py_float(g), reference_repr(g), "{g:e}");
            }
        }
    }

    #[test]
    fn matches_python_repr() {
        for (f, s) in [
            (135.0, "135.0"),
            (129.5, "129.5"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5e-7, "-2.5e-07"),
            (1.5e300, "1.5e+300"),
            (123456.789, "123456.789"),
        ] {
            assert_eq!(py_float(f), s, "{f}");
        }
    }
}
