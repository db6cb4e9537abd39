//! Numbers as the hosted service prints them in messages (Python's `repr`: `135.0`, `129.5`,
//! `3`, `1e+16`), so our messages match its receipts byte for byte.

use serde_json::Number;

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
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if negative { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let point = exp + 1; // digits before the decimal point
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
