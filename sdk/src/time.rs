//! Times as upstream APIs and the host write them, without a clock crate
//! in the component.

/// `YYYY-MM-DDTHH:MM:SSZ` (RFC 3339, UTC) of a Unix time in seconds: the
/// form the host reads a device's `last_seen` in, and the form many APIs
/// take in their filters (SDK 0.4.1).
///
/// ```
/// assert_eq!(cairn_sdk::time::rfc3339_utc(0), "1970-01-01T00:00:00Z");
/// assert_eq!(cairn_sdk::time::rfc3339_utc(951_782_400 + 3_661), "2000-02-29T01:01:01Z");
/// ```
pub fn rfc3339_utc(seconds: i64) -> String {
    let days = seconds.div_euclid(86_400);
    let rest = seconds.rem_euclid(86_400);
    // The civil date of a day count, after Howard Hinnant's
    // `civil_from_days` (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3_600,
        rest % 3_600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_times_as_rfc3339() {
        for (seconds, expected) in [
            (0, "1970-01-01T00:00:00Z"),
            (1_767_225_600, "2026-01-01T00:00:00Z"),
            (951_782_400 + 3_661, "2000-02-29T01:01:01Z"),
            (1_735_689_599, "2024-12-31T23:59:59Z"),
            (-1, "1969-12-31T23:59:59Z"),
        ] {
            assert_eq!(rfc3339_utc(seconds), expected, "{seconds}");
        }
    }
}
