//! Time formats of the wire contract: ISO-8601 UTC with microseconds and `+00:00`, epoch
//! milliseconds for event ids, and the local date for the dynamic-context reminder.

use chrono::{Local, SecondsFormat, Utc};

/// Now as `2026-04-27T03:19:46.511479+00:00`.
pub fn now_iso() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Micros, false)
}

/// Milliseconds since the Unix epoch.
pub fn epoch_ms() -> i64 {
    Utc::now().timestamp_millis()
}

/// Seconds since the Unix epoch.
pub fn epoch_seconds() -> i64 {
    Utc::now().timestamp()
}

/// The server's local date as `YYYY-MM-DD, Weekday` (English weekday name).
pub fn local_date_with_weekday() -> String {
    Local::now().format("%Y-%m-%d, %A").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_timestamps_have_microseconds_and_an_explicit_offset() {
        let ts = now_iso();
        assert_eq!(ts.len(), "2026-04-27T03:19:46.511479+00:00".len(), "{ts}");
        assert!(ts.ends_with("+00:00"), "{ts}");
    }

    #[test]
    fn the_reminder_date_names_the_weekday() {
        let date = local_date_with_weekday();
        let (day, weekday) = date.split_once(", ").expect("comma");
        assert_eq!(day.len(), 10);
        assert!(
            [
                "Monday",
                "Tuesday",
                "Wednesday",
                "Thursday",
                "Friday",
                "Saturday",
                "Sunday"
            ]
            .contains(&weekday)
        );
    }
}
