//! The time format of receipts: `verified_at` and the attestation's `timestamp`.

use time::OffsetDateTime;

/// Format a time as RFC 3339 with microseconds and `+00:00`.
pub fn rfc3339_micros(t: OffsetDateTime) -> String {
    const MICROS_UTC: &[time::format_description::BorrowedFormatItem<'_>] = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]+00:00"
    );
    // Formatting a UTC time with this description cannot fail (years stay within 0..=9999).
    t.to_offset(time::UtcOffset::UTC)
        .format(MICROS_UTC)
        .unwrap_or_default()
}
