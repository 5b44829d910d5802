//! An injectable clock and the timestamp format.

use std::sync::{Arc, Mutex};
use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime, UtcOffset};

pub trait Clock: Send + Sync {
    fn now(&self) -> OffsetDateTime;
}

pub type SharedClock = Arc<dyn Clock>;

/// The operating system's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }
}

/// A clock that moves only when told to.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<OffsetDateTime>,
}

impl ManualClock {
    pub fn new(start: OffsetDateTime) -> Arc<ManualClock> {
        Arc::new(ManualClock {
            now: Mutex::new(start),
        })
    }

    pub fn advance(&self, d: Duration) {
        let mut now = self.now.lock().unwrap_or_else(|p| p.into_inner());
        *now += d;
    }

    pub fn set(&self, t: OffsetDateTime) {
        *self.now.lock().unwrap_or_else(|p| p.into_inner()) = t;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> OffsetDateTime {
        *self.now.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `YYYY-MM-DDThh:mm:ssZ`, whole seconds, UTC.
pub fn format_timestamp(t: OffsetDateTime) -> String {
    let t = t.to_offset(UtcOffset::UTC);
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

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimestampError {
    #[error("not an RFC 3339 date-time")]
    NotRfc3339,
    #[error("not UTC (offset {0}); expected Z or +00:00")]
    NotUtc(String),
}

/// Parses an RFC 3339 date-time in UTC (`Z` or `+00:00`, optional fraction).
pub fn parse_timestamp(s: &str) -> Result<OffsetDateTime, TimestampError> {
    let t = OffsetDateTime::parse(s, &Rfc3339).map_err(|_| TimestampError::NotRfc3339)?;
    if t.offset() != UtcOffset::UTC {
        return Err(TimestampError::NotUtc(t.offset().to_string()));
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_offsets() {
        let t = parse_timestamp("2024-01-01T00:00:00Z").unwrap();
        assert_eq!(format_timestamp(t), "2024-01-01T00:00:00Z");
        assert!(parse_timestamp("2024-01-01T00:00:00.250+00:00").is_ok());
        assert!(matches!(
            parse_timestamp("2024-01-01T02:00:00+02:00"),
            Err(TimestampError::NotUtc(_))
        ));
        assert!(parse_timestamp("yesterday").is_err());
        let c = ManualClock::new(t);
        c.advance(Duration::seconds(61));
        assert_eq!(format_timestamp(c.now()), "2024-01-01T00:01:01Z");
    }
}
