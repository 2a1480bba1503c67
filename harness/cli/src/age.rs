//! `keyless test --max-age` (issue 43): a fixture whose provenance says it was recorded longer
//! ago than the limit is reported (a warning, or with `--max-age-fail` a failure of the run). A
//! fixture without provenance (recorded before keyless wrote it) has an unknown age: it is named
//! in a warning, never failed, since nothing says how old it is.

use std::path::PathBuf;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use replay_core::{FixtureError, LoadedFixture};

/// An age limit as written: a whole number and a unit, `30d`, `2w`, `12h`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(try_from = "String")]
pub struct MaxAge {
    /// The limit.
    limit: chrono::Duration,
    /// The number as written.
    count: u32,
    /// The unit as written (`h`, `d` or `w`).
    unit: char,
}

/// A `--max-age` or `max_age` that is not `<number><h|d|w>`.
#[derive(Debug, thiserror::Error)]
#[error(
    "max age {0:?}: expected a whole number and a unit, h (hours), d (days) or w (weeks), e.g. 30d"
)]
pub struct BadMaxAge(String);

impl FromStr for MaxAge {
    type Err = BadMaxAge;

    fn from_str(text: &str) -> Result<MaxAge, BadMaxAge> {
        let bad = || BadMaxAge(text.to_owned());
        let unit = text.chars().last().ok_or_else(bad)?;
        let count: u32 = text[..text.len() - unit.len_utf8()]
            .parse()
            .map_err(|_| bad())?;
        let limit = match unit {
            'h' => chrono::Duration::hours(count.into()),
            'd' => chrono::Duration::days(count.into()),
            'w' => chrono::Duration::weeks(count.into()),
            _ => return Err(bad()),
        };
        Ok(MaxAge { limit, count, unit })
    }
}

impl TryFrom<String> for MaxAge {
    type Error = BadMaxAge;

    fn try_from(text: String) -> Result<MaxAge, BadMaxAge> {
        text.parse()
    }
}

impl std::fmt::Display for MaxAge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", self.count, self.unit)
    }
}

/// What `--max-age` found: a line each for the fixtures past it and those of unknown age.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct AgeReport {
    /// One line per fixture older than the limit.
    pub too_old: Vec<String>,
    /// One line per fixture without provenance.
    pub unknown: Vec<String>,
}

/// Checks each loaded fixture's age at `now` against `max_age` (a fixture that failed to load
/// is reported by the run itself).
pub fn check(
    paths: &[PathBuf],
    fixtures: &[Result<LoadedFixture, FixtureError>],
    max_age: MaxAge,
    now: DateTime<Utc>,
) -> AgeReport {
    let mut report = AgeReport::default();
    for (path, loaded) in paths.iter().zip(fixtures) {
        let Ok(loaded) = loaded else { continue };
        match &loaded.fixture().provenance {
            Some(provenance) if provenance.age(now) > max_age.limit => {
                report.too_old.push(format!(
                    "{}: recorded {} ago ({}), older than --max-age {max_age}: record it again \
                     (keyless drift shows what changed upstream)",
                    path.display(),
                    provenance.age_label(now),
                    provenance.to_value()["recorded_at"]
                        .as_str()
                        .unwrap_or_default(),
                ));
            }
            Some(_) => {}
            None => report.unknown.push(format!(
                "{}: age unknown (no provenance: recorded before keyless wrote one), not checked \
                 against --max-age {max_age}",
                path.display()
            )),
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_max_age_is_a_number_and_a_unit() {
        for (text, hours) in [("30d", 720), ("2w", 336), ("12h", 12), ("0d", 0)] {
            let age: MaxAge = text.parse().expect(text);
            assert_eq!(age.limit.num_hours(), hours, "{text}");
            assert_eq!(age.to_string(), text);
        }
        for text in ["", "30", "d", "30m", "-1d", "1.5d", "30 d"] {
            let err = text.parse::<MaxAge>().expect_err(text).to_string();
            assert!(err.contains("e.g. 30d"), "{text}: {err}");
        }
    }
}
