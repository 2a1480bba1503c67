//! Issue 43: `keyless test` says each fixture's age by its provenance, and `--max-age` (key
//! `max_age`) warns about an older one, `--max-age-fail` fails the run for it. A fixture without
//! provenance has an unknown age: named, never failed.

use replay_core::{Fixture, Provenance};
use serde_json::Value;

use super::{FIXTURE, UserRepo, said};

/// The user's fixture, given a provenance that says it was recorded `days` ago.
fn recorded_days_ago(repo: &UserRepo, days: i64) {
    let path = repo.path().join(format!("fixtures/{FIXTURE}.json"));
    let mut fixture = Fixture::load(&path).unwrap();
    fixture.provenance = Some(Provenance {
        recorded_at: chrono::Utc::now() - chrono::Duration::days(days) - chrono::Duration::hours(1),
        upstream: "https://api.openai.com/v1".to_owned(),
        models: vec!["gpt-4o-mini".to_owned()],
        wires: vec!["openai.chat.completions".to_owned()],
        keyless_version: "0.1.0".to_owned(),
        stream: None,
    });
    std::fs::write(&path, fixture.to_pretty_json()).unwrap();
}

#[test]
fn a_fixture_recorded_40_days_ago_warns_past_30d_and_fails_with_max_age_fail() {
    let repo = UserRepo::new().with_golden();

    // The shipped fixture has no provenance: its age is unknown, named, and the run passes.
    let unknown = repo.keyless(&["test", "--json", "--max-age", "30d"]);
    assert_eq!(unknown.status.code(), Some(0), "{}", said(&unknown));
    let line: Value = serde_json::from_slice(&unknown.stdout).expect("one JSON object");
    assert_eq!(
        (&line["recorded_at"], &line["age_days"]),
        (&Value::Null, &Value::Null)
    );
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("age unknown"),
        "{}",
        said(&unknown)
    );

    recorded_days_ago(&repo, 40);
    let warned = repo.keyless(&["test", "--max-age", "30d"]);
    assert_eq!(warned.status.code(), Some(0), "{}", said(&warned));
    let stderr = String::from_utf8_lossy(&warned.stderr);
    assert!(
        stderr.contains("warning: ")
            && stderr.contains("recorded 40d ago")
            && stderr.contains("older than --max-age 30d"),
        "{}",
        said(&warned)
    );
    let table = String::from_utf8_lossy(&warned.stdout);
    assert!(
        table
            .lines()
            .any(|row| row.contains("write_read_file") && row.trim_end().ends_with("40d")),
        "{}",
        said(&warned)
    );

    // The key in keyless.toml, failing with the flag.
    let config = repo.path().join("keyless.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("max_age = \"30d\"\n{text}")).unwrap();
    let failed = repo.keyless(&["test", "--json", "--max-age-fail"]);
    assert_eq!(failed.status.code(), Some(1), "{}", said(&failed));
    assert!(
        String::from_utf8_lossy(&failed.stderr).contains("error: "),
        "{}",
        said(&failed)
    );
    let line: Value = serde_json::from_slice(&failed.stdout).expect("one JSON object");
    assert_eq!(line["age_days"], 40, "{line:#}");
    assert!(line["recorded_at"].is_string(), "{line:#}");
}
