//! Wall-clock times as RFC 3339 UTC text (`2026-05-04T12:34:56Z`) for the servers' player lists
//! and log lines, computed from the Unix epoch with the proleptic Gregorian calendar.
//!
//! Pure arithmetic: this module never reads a clock itself.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds precision: `YYYY-MM-DDTHH:MM:SSZ`. Times before 1970 print as the epoch.
pub fn rfc3339(time: SystemTime) -> String {
    let (date, secs_of_day, _) = split(time);
    format!("{date}T{}Z", clock(secs_of_day))
}

/// Millisecond precision: `YYYY-MM-DDTHH:MM:SS.mmmZ` (for log lines).
pub fn rfc3339_millis(time: SystemTime) -> String {
    let (date, secs_of_day, millis) = split(time);
    format!("{date}T{}.{millis:03}Z", clock(secs_of_day))
}

/// Seconds since the Unix epoch (0 for earlier times).
pub fn unix_seconds(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn split(time: SystemTime) -> (String, u64, u32) {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let days = secs / 86_400;
    let (y, m, d) = civil_from_days(days);
    (
        format!("{y:04}-{m:02}-{d:02}"),
        secs % 86_400,
        since.subsec_millis(),
    )
}

fn clock(secs_of_day: u64) -> String {
    format!(
        "{:02}:{:02}:{:02}",
        secs_of_day / 3600,
        secs_of_day / 60 % 60,
        secs_of_day % 60
    )
}

/// (year, month 1-12, day 1-31) of the day `days` after 1970-01-01.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    // Shift the epoch to 0000-03-01 so leap days fall at the end of a year, then count in
    // 400-year eras of 146097 days.
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153; // 0 = March
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn known_dates() {
        assert_eq!(rfc3339(at(0)), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(at(951_782_400)), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(at(1_709_210_096)), "2024-02-29T12:34:56Z");
        assert_eq!(rfc3339(at(4_102_444_799)), "2099-12-31T23:59:59Z");
        assert_eq!(
            rfc3339_millis(at(86_400) + Duration::from_millis(7)),
            "1970-01-02T00:00:00.007Z"
        );
    }
}
