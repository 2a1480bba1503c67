//! Layer 1 goldens: one test per fixture in `fixtures/` (adding a fixture file adds a test).
//!
//! Each replays its fixture through the real gateway in-process and asserts, in order: the first
//! event is `metadata` and the last `end`; the replay model missed nothing (the error middleware
//! hides misses from the stream, so the ledger is the gate); and the shape sequence equals the
//! insta snapshot `golden/<stem>.snap`. The first two come from the run's verdict; the golden is
//! asserted with insta itself, so a new or changed shape is written as `golden/<stem>.snap.new`
//! for `cargo insta review`. Under `CI=true` insta never writes, so a changed shape fails.

use std::path::Path;

use harness::golden::golden_dir;
use harness::layer1::run_fixture;

fn golden(path: &Path) -> datatest_stable::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let run = runtime.block_on(run_fixture(path))?;
    let verdict = run.verdict();
    if !verdict.replayed_cleanly() {
        return Err(run.report(&verdict).into());
    }
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(golden_dir());
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.set_description(format!("fixture: fixtures/{}.json", run.stem()));
    let stem = run.stem();
    let document = run.golden_document();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        settings.bind(|| insta::assert_snapshot!(stem.as_str(), document));
    }));
    if outcome.is_err() {
        return Err(format!(
            "the SSE shape of {} differs from golden/{stem}.snap (review with `cargo insta review`)\n\n{}",
            path.display(),
            run.report(&verdict)
        )
        .into());
    }
    Ok(())
}

datatest_stable::harness! {
    { test = golden, root = "fixtures", pattern = r"^.*\.json$" },
}
