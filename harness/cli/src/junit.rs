//! `keyless test --junit FILE`: the run as JUnit XML, the format GitHub Actions, GitLab, Jenkins
//! and Buildkite show in their test views, written through `quick-junit` (what cargo-nextest
//! writes its own with). One `<testsuite>`, one `<testcase>` per fixture run: its name the
//! fixture's (`word_count.flash`), its classname the fixture folder, its time the fixture's wall
//! time (gateway start included). A fixture that failed its checks has a `<failure>` whose
//! message lists the failed checks and whose text is what the run printed for it (each miss's
//! diagnostic, the framing problem, the golden's diff) and the gateway log's path; one that could
//! not run at all has an `<error>`. The file is written whole to a temporary file beside it and
//! renamed, so a reader never sees half a report. Every name, attribute and text is first made
//! XML 1.0 `Char`s ([`xml_chars`]): a fixture name or a gateway's output holding U+FFFE or a C0
//! control would otherwise make the whole report not well-formed, and lost to its reader.

use std::path::{Path, PathBuf};
use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

/// Why a fixture did not pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failed {
    /// The run finished and failed a check (a miss, the framing, the golden).
    Check {
        /// The failed checks, one line.
        message: String,
        /// Everything the run printed about it, and the golden's diff.
        text: String,
    },
    /// The fixture could not run (the gateway did not start, the drive failed).
    Error {
        /// The error and its causes.
        message: String,
    },
}

/// One fixture's line in the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// The fixture's name (its file stem).
    pub name: String,
    /// The folder it is in.
    pub folder: String,
    /// Its wall time.
    pub time: Duration,
    /// `None` when it passed.
    pub failed: Option<Failed>,
    /// The gateway log of its run.
    pub gateway_log: Option<PathBuf>,
}

/// Why the report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum JunitError {
    /// The XML could not be serialised.
    #[error("cannot write the JUnit report {}: {source}", .path.display())]
    Serialize {
        /// The report file.
        path: PathBuf,
        /// Why.
        source: quick_junit::SerializeError,
    },
    /// The file could not be written.
    #[error("cannot write the JUnit report {}: {source}", .path.display())]
    Io {
        /// The report file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// `text` with every character outside XML 1.0's `Char` production (`#x9 | #xA | #xD |
/// [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]`) replaced by U+FFFD: the other C0
/// controls, U+FFFE and U+FFFF (a Rust string holds no lone surrogate). XML 1.0 allows none of
/// them even as a character reference, so escaping cannot carry them; quick-junit writes them raw.
pub fn xml_chars(text: &str) -> String {
    let allowed = |c: char| {
        matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}')
            || c >= '\u{10000}'
    };
    text.chars()
        .map(|c| {
            if allowed(c) {
                c
            } else {
                char::REPLACEMENT_CHARACTER
            }
        })
        .collect()
}

/// The report of `cases` (in the order given), the suite named `suite`, `time` the run's wall time.
pub fn report(suite: &str, cases: &[Case], time: Duration) -> Report {
    let mut test_suite = TestSuite::new(xml_chars(suite));
    test_suite.set_time(time);
    for case in cases {
        let status = match &case.failed {
            None => TestCaseStatus::success(),
            Some(Failed::Check { message, text }) => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                status
                    .set_message(xml_chars(message))
                    .set_type("keyless check")
                    .set_description(xml_chars(&with_log(text, case.gateway_log.as_deref())));
                status
            }
            Some(Failed::Error { message }) => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
                status
                    .set_message(xml_chars(message))
                    .set_type("keyless error")
                    .set_description(xml_chars(&with_log(message, case.gateway_log.as_deref())));
                status
            }
        };
        let mut test_case = TestCase::new(xml_chars(&case.name), status);
        test_case
            .set_classname(xml_chars(&case.folder))
            .set_time(case.time);
        if let Some(log) = &case.gateway_log {
            test_case.add_property(Property::new(
                "gateway_log",
                xml_chars(&log.display().to_string()),
            ));
        }
        test_suite.add_test_case(test_case);
    }
    let mut report = Report::new("keyless");
    report.set_time(time).add_test_suite(test_suite);
    report
}

fn with_log(text: &str, log: Option<&Path>) -> String {
    match log {
        Some(log) if !text.contains(&log.display().to_string()) => {
            format!("{}\ngateway log: {}\n", text.trim_end(), log.display())
        }
        _ => text.to_owned(),
    }
}

/// Writes `report` to `path` atomically (a temporary file in the same folder, then a rename).
pub fn write(path: &Path, report: &Report) -> Result<(), JunitError> {
    let io = |source| JunitError::Io {
        path: path.to_path_buf(),
        source,
    };
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&folder).map_err(io)?;
    let mut file = tempfile::NamedTempFile::new_in(&folder).map_err(io)?;
    report
        .serialize(&mut file)
        .map_err(|source| JunitError::Serialize {
            path: path.to_path_buf(),
            source,
        })?;
    file.persist(path).map_err(|err| io(err.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(name: &str, failed: Option<Failed>) -> Case {
        Case {
            name: name.to_owned(),
            folder: "fixtures".to_owned(),
            time: Duration::from_millis(1500),
            failed,
            gateway_log: Some(PathBuf::from(format!(".keyless/logs/{name}.gateway.log"))),
        }
    }

    /// The written file parses with a standard XML parser, and says per fixture what failed and
    /// where its gateway's log is.
    #[test]
    fn a_report_parses_back_with_one_testcase_per_fixture() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("reports/keyless.xml");
        let cases = [
            case("a.flash", None),
            case(
                "b.flash",
                Some(Failed::Check {
                    message: "golden changed".into(),
                    text: "--- golden/b.flash.snap\n+++ golden/b.flash.snap.new\n-  \"x\" <&>\n"
                        .into(),
                }),
            ),
            case(
                "c.flash",
                Some(Failed::Error {
                    message: "booting the gateway for fixtures/c.flash.json: exited".into(),
                }),
            ),
        ];
        write(
            &path,
            &report("keyless test", &cases, Duration::from_secs(3)),
        )
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let document = roxmltree::Document::parse(&text).unwrap_or_else(|err| panic!("{err}"));
        let testcases: Vec<roxmltree::Node> = document
            .descendants()
            .filter(|node| node.has_tag_name("testcase"))
            .collect();
        let names: Vec<&str> = testcases
            .iter()
            .filter_map(|node| node.attribute("name"))
            .collect();
        assert_eq!(names, ["a.flash", "b.flash", "c.flash"]);
        let suite = document
            .descendants()
            .find(|node| node.has_tag_name("testsuite"))
            .unwrap();
        let attribute = |name| suite.attribute(name).unwrap_or_default();
        assert_eq!(
            (
                attribute("tests"),
                attribute("failures"),
                attribute("errors")
            ),
            ("3", "1", "1")
        );
        let child = |index: usize, tag: &str| {
            testcases[index]
                .children()
                .find(|node| node.has_tag_name(tag))
        };
        assert!(child(0, "failure").is_none() && child(0, "error").is_none());
        let failure = child(1, "failure").expect("b.flash failed");
        assert_eq!(failure.attribute("message"), Some("golden changed"));
        let text = failure.text().unwrap_or_default();
        assert!(
            text.contains("-  \"x\" <&>") && text.contains("gateway log: .keyless/logs/b.flash"),
            "{text}"
        );
        assert!(child(2, "error").is_some(), "c.flash is an error");
        assert_eq!(testcases[0].attribute("classname"), Some("fixtures"));
        assert_eq!(testcases[0].attribute("time"), Some("1.500"));
        assert!(
            std::fs::read_dir(path.parent().unwrap())
                .unwrap()
                .all(|entry| entry.unwrap().path() == path),
            "a temporary file was left beside the report"
        );
    }

    /// Issue 45, finding 6: a fixture name, a folder, a log path and a run's output holding
    /// characters XML 1.0 does not allow (U+FFFE, U+FFFF, C0 controls but TAB, LF and CR) still
    /// make a well-formed report, each such character read back as U+FFFD.
    #[test]
    fn characters_outside_xml_1_0_are_replaced_so_the_report_parses() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keyless.xml");
        let bad = "\u{fffe}\u{ffff}\u{0}\u{1}\u{1b}\u{7f}";
        let mut failed = case(
            &format!("a{bad}.flash"),
            Some(Failed::Check {
                message: format!("golden changed {bad}"),
                text: format!("the gateway said {bad}\ttab\r\nline"),
            }),
        );
        failed.folder = format!("fixtures{bad}");
        let errored = case(
            &format!("b{bad}.flash"),
            Some(Failed::Error {
                message: format!("exited {bad}"),
            }),
        );
        write(
            &path,
            &report(&format!("suite{bad}"), &[failed, errored], Duration::ZERO),
        )
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let document = roxmltree::Document::parse(&text)
            .unwrap_or_else(|err| panic!("not well-formed: {err}\n{text:?}"));
        let replaced = "\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{7f}";
        let names: Vec<&str> = (document.descendants())
            .filter(|node| node.has_tag_name("testcase"))
            .filter_map(|node| node.attribute("name"))
            .collect();
        assert_eq!(
            names,
            [format!("a{replaced}.flash"), format!("b{replaced}.flash")]
        );
        let failure = (document.descendants())
            .find(|node| node.has_tag_name("failure"))
            .unwrap();
        assert_eq!(
            failure.attribute("message"),
            Some(format!("golden changed {replaced}").as_str())
        );
        assert!(
            (failure.text().unwrap_or_default()).contains(&format!("said {replaced}")),
            "{text}"
        );
        let classname = (document.descendants())
            .find(|node| node.has_tag_name("testcase"))
            .and_then(|node| node.attribute("classname"));
        assert_eq!(classname, Some(format!("fixtures{replaced}").as_str()));
    }
}
