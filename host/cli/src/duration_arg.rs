//! Durations as flags take them: a number of seconds (`30`, `0.5`), or a
//! number with a unit in humantime's forms (`500ms`, `30s`, `10m`, `1h`,
//! `1h 30m`), the way cron jobs and their authors write them.

use std::time::Duration;

/// Parses a duration flag (see the module docs); the library checks the
/// range each use accepts.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if let Ok(seconds) = text.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds)
            .map_err(|_| format!("{text:?} is not a number of seconds"));
    }
    humantime::parse_duration(text).map_err(|error| {
        format!("{text:?} is not a duration ({error}): write seconds (30, 0.5) or a number with a unit (500ms, 30s, 10m, 1h)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_and_units_are_read() {
        assert_eq!(parse_duration("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("1h 30m"), Ok(Duration::from_secs(5400)));
        let refused = parse_duration("-1").unwrap_err();
        assert!(refused.contains("not a number of seconds"), "{refused}");
        let refused = parse_duration("ten minutes").unwrap_err();
        assert!(
            refused.contains("\"ten minutes\" is not a duration"),
            "{refused}"
        );
    }
}
