//! Time, injectable so tests can move to the next UTC day.

use std::sync::Mutex;
use time::{Date, OffsetDateTime, Time};

/// A source of the current time.
pub trait Clock: Send + Sync {
    /// Now, in UTC.
    fn now(&self) -> OffsetDateTime;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }
}

/// A clock tests set by hand.
#[derive(Debug)]
pub struct ManualClock(Mutex<OffsetDateTime>);

impl ManualClock {
    /// A clock showing `at`.
    pub fn new(at: OffsetDateTime) -> Self {
        ManualClock(Mutex::new(at))
    }

    /// Move the clock.
    pub fn set(&self, at: OffsetDateTime) {
        if let Ok(mut t) = self.0.lock() {
            *t = at;
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> OffsetDateTime {
        self.0
            .lock()
            .map(|t| *t)
            .unwrap_or_else(|e| *e.into_inner())
    }
}

/// The UTC day of a time, as `YYYY-MM-DD`.
pub fn utc_day(t: OffsetDateTime) -> String {
    let d = t.to_offset(time::UtcOffset::UTC).date();
    format!("{:04}-{:02}-{:02}", d.year(), u8::from(d.month()), d.day())
}

/// The next UTC midnight after `t`.
pub fn next_utc_midnight(t: OffsetDateTime) -> OffsetDateTime {
    let d: Date = t.to_offset(time::UtcOffset::UTC).date();
    let next = d.next_day().unwrap_or(d);
    next.with_time(Time::MIDNIGHT).assume_utc()
}

/// RFC 3339 with seconds precision and `Z`: `2026-12-03T00:00:00Z`.
pub fn rfc3339_seconds(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}
