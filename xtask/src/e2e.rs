//! `cargo xtask e2e`: Layer 2 in one command. The web client's dependencies (`npm ci`, only
//! when the lockfile changed) and production build (only when its sources changed), the replay
//! gateway built with the seed route in the usual target folder (sharing its dependencies; the
//! usual `target/debug/xtask` is put back at once), the browser suite's gateways started from it
//! with `DEERFLOW_ENABLE_TEST_SEED=1`, then Playwright against Debian's Chromium. Exit status 1
//! when a spec fails or a replay missed.
//!
//! Everything it writes is under `target/e2e/`: `replay-gateway` (the seed build's binary),
//! `stamps/` (what the last `npm ci` and client build saw), `gateways.json` and `gateways/` (the
//! manifest and the replay logs), `report/` (Playwright's HTML report), `results/` (traces of
//! failures), `screenshots/` and `results.json`.
//!
//! Layer 2 is the same replay, seen through a browser:
//!
//! ```text
//! fixtures/*.json
//!   → cargo xtask replay-gateway --manifest   one harness::replay_gateway per fixture + named extras,
//!                                             each an in-process gateway on 127.0.0.1:0 replaying
//!                                             through its own ReplayEngine, its ReplayObserver
//!                                             appending gateways/<name>.replay.jsonl as calls hit or miss
//!   → gateway-under-test  server.web_dir      the built client (web/dist) at /, the API under /api
//!   → Playwright + Debian's Chromium          web/tests/e2e specs, looked up by gateway name in the
//!                                             manifest; each test fails on a dirty page or a miss
//! ```

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use harness::workspace::workspace_root;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Arguments of `e2e`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only the tests whose title matches this regular expression (Playwright's --grep), e.g.
    /// `renders write_read_file` or `multi-run`.
    #[arg(long, short = 'g', value_name = "REGEX")]
    grep: Option<String>,
    /// Browser workers in parallel [default: 2, or E2E_WORKERS].
    #[arg(long, value_name = "N")]
    workers: Option<u32>,
    /// Install and build everything (npm ci when due, the client build when due, the replay
    /// gateway), then stop without starting a gateway or a browser: what CI runs before the
    /// client's typecheck, lint and unit tests, which need node_modules.
    #[arg(long, conflicts_with_all = ["grep", "workers"])]
    no_run: bool,
}

/// The browsers the suite can drive, by executable name, in order of preference. Chromium's
/// headless shell first: the suite always runs headless, the shell is the build Playwright itself
/// runs headless tests in, and on two cores it took the suite from 9.6 to 7.7 s (16.6 to 13.0 busy
/// CPU-seconds) against the full browser's new headless mode, the same Blink rendering the pages.
const CHROMIUM_NAMES: [&str; 5] = [
    "chromium-headless-shell",
    "chromium",
    "chromium-browser",
    "google-chrome-stable",
    "google-chrome",
];

/// Where everything goes.
struct Layout {
    web: PathBuf,
    out: PathBuf,
}

impl Layout {
    fn new() -> Layout {
        let root = workspace_root();
        Layout {
            web: root.join("gateway-under-test/web"),
            out: root.join("target/e2e"),
        }
    }

    fn stamp(&self, name: &str) -> PathBuf {
        self.out.join("stamps").join(name)
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let layout = Layout::new();
    // Found before the builds, so a missing browser is said at once, not minutes later.
    let chromium = if args.no_run {
        None
    } else {
        Some(find_chromium()?)
    };
    let npm = find_npm()?;
    std::fs::create_dir_all(layout.out.join("stamps"))
        .with_context(|| format!("cannot create {}", layout.out.display()))?;

    install_client_dependencies(&layout, &npm)?;
    build_client(&layout, &npm)?;
    let gateway_binary = build_replay_gateway(&layout)?;
    let Some(chromium) = chromium else {
        println!(
            "e2e: everything built in {:.1} s (--no-run)",
            started.elapsed().as_secs_f64()
        );
        return Ok(ExitCode::SUCCESS);
    };
    println!("e2e: browser {}", chromium.display());
    for stale in ["screenshots", "results.json", "gateways.json"] {
        remove(&layout.out.join(stale))?;
    }
    let gateways = GatewayProcess::start(&gateway_binary, &layout)?;

    let step = Instant::now();
    println!("e2e: Playwright (one line per test)");
    let mut playwright = Command::new(layout.web.join("node_modules/.bin/playwright"));
    playwright
        .arg("test")
        .current_dir(&layout.web)
        .env("E2E_GATEWAYS", &gateways.manifest)
        .env("E2E_OUTPUT_DIR", &layout.out)
        .env("CHROMIUM_PATH", &chromium);
    if let Some(grep) = &args.grep {
        playwright.args(["--grep", grep]);
    }
    if let Some(workers) = args.workers {
        playwright.arg(format!("--workers={workers}"));
    }
    let suite = playwright
        .status()
        .context("cannot run Playwright (node_modules/.bin/playwright)")?;
    let suite_seconds = step.elapsed().as_secs_f64();
    let gateway_status = gateways.stop()?;

    let results = summary(&layout.out.join("results.json"));
    let failed = !suite.success() || !gateway_status.success();
    println!(
        "e2e: {}; replay gateways {}; {:.1} s in all ({suite_seconds:.1} s of browser tests)",
        results.unwrap_or_else(|err| format!("no summary ({err:#})")),
        if gateway_status.success() {
            "without a miss".to_owned()
        } else {
            format!("exited with {gateway_status} (a replay miss, above)")
        },
        started.elapsed().as_secs_f64(),
    );
    println!(
        "e2e: report {}, screenshots {}",
        layout.out.join("report/index.html").display(),
        layout.out.join("screenshots").display()
    );
    Ok(if failed {
        println!("e2e: FAILED");
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// `$CHROMIUM_PATH`, else the first Chromium on `PATH` (the suite never downloads a browser).
fn find_chromium() -> anyhow::Result<PathBuf> {
    if let Some(configured) = std::env::var_os("CHROMIUM_PATH").filter(|value| !value.is_empty()) {
        let path = PathBuf::from(configured);
        if is_executable(&path) {
            return Ok(path);
        }
        bail!("CHROMIUM_PATH={} is not an executable file", path.display());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .flat_map(|folder| CHROMIUM_NAMES.map(|name| folder.join(name)))
        .find(|candidate| is_executable(candidate))
        .context(
            "no Chromium on PATH: install Debian's package (`apt-get install \
             chromium-headless-shell`, or `chromium`) or set CHROMIUM_PATH; the suite never \
             downloads Playwright's own browsers",
        )
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

fn find_npm() -> anyhow::Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|folder| folder.join("npm"))
        .find(|candidate| is_executable(candidate))
        .context("no npm on PATH: the web client needs Node 20.19 or newer with npm")
}

fn remove(path: &Path) -> anyhow::Result<()> {
    let result = if path.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    match result {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
            Err(err).with_context(|| format!("cannot remove {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// Runs `command`, failing with its name when it fails.
fn run_step(command: &mut Command, what: &str) -> anyhow::Result<()> {
    let status = command
        .status()
        .with_context(|| format!("cannot run {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

/// The SHA-256 of `files` (and every file below the folders among them), names included, in a
/// stable order. A missing path counts as empty, so creating it changes the digest.
fn digest(root: &Path, files: &[&str]) -> anyhow::Result<String> {
    let mut hasher = Sha256::new();
    for name in files {
        let mut paths: Vec<PathBuf> = walkdir::WalkDir::new(root.join(name))
            .into_iter()
            .filter_map(Result::ok)
            .filter(|entry| entry.file_type().is_file())
            .map(walkdir::DirEntry::into_path)
            .collect();
        paths.sort();
        for path in paths {
            let bytes =
                std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
            hasher.update(
                path.strip_prefix(root)
                    .unwrap_or(&path)
                    .as_os_str()
                    .as_encoded_bytes(),
            );
            hasher.update([0]);
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(&bytes);
        }
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect())
}

/// Whether the step whose inputs digest to `current` must run: its stamp says otherwise, or its
/// output `product` is missing.
fn stale(stamp: &Path, current: &str, product: &Path) -> bool {
    !product.exists() || std::fs::read_to_string(stamp).ok().as_deref() != Some(current)
}

fn install_client_dependencies(layout: &Layout, npm: &Path) -> anyhow::Result<()> {
    let current = digest(&layout.web, &["package.json", "package-lock.json"])?;
    let stamp = layout.stamp("npm-ci");
    // npm writes node_modules/.package-lock.json at the end of a complete install.
    if !stale(
        &stamp,
        &current,
        &layout.web.join("node_modules/.package-lock.json"),
    ) {
        println!("e2e: client dependencies up to date (package-lock.json unchanged)");
        return Ok(());
    }
    let step = Instant::now();
    println!("e2e: npm ci (package-lock.json changed since the last install)");
    remove(&stamp)?;
    run_step(
        Command::new(npm)
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&layout.web),
        "npm ci in gateway-under-test/web",
    )?;
    write_stamp(&stamp, &current)?;
    println!("e2e: npm ci done in {:.1} s", step.elapsed().as_secs_f64());
    Ok(())
}

/// What the production build reads.
const CLIENT_SOURCES: [&str; 8] = [
    "src",
    "public",
    "index.html",
    "package.json",
    "package-lock.json",
    "vite.config.ts",
    "tsconfig.json",
    "tsconfig.app.json",
];

fn build_client(layout: &Layout, npm: &Path) -> anyhow::Result<()> {
    let current = digest(&layout.web, &CLIENT_SOURCES)?;
    let stamp = layout.stamp("client-build");
    if !stale(&stamp, &current, &layout.web.join("dist/index.html")) {
        println!("e2e: client build up to date (sources unchanged)");
        return Ok(());
    }
    let step = Instant::now();
    println!("e2e: npm run build (the client's sources changed since the last build)");
    remove(&stamp)?;
    run_step(
        Command::new(npm)
            .args(["run", "build", "--silent"])
            .current_dir(&layout.web),
        "npm run build in gateway-under-test/web",
    )?;
    write_stamp(&stamp, &current)?;
    println!("e2e: client built in {:.1} s", step.elapsed().as_secs_f64());
    Ok(())
}

fn write_stamp(stamp: &Path, digest: &str) -> anyhow::Result<()> {
    std::fs::write(stamp, digest).with_context(|| format!("cannot write {}", stamp.display()))
}

/// Builds xtask with the seed route in the workspace's own target folder, so it shares every
/// dependency the usual build compiled (only the gateway and the crates above it compile again),
/// and keeps that binary as `target/e2e/replay-gateway`. Cargo puts the build's binary at
/// `target/debug/xtask`, where `cargo xtask` and `cargo test` expect the one without the seed
/// route, so the usual build is asked for again at once: it is fresh, and cargo only links the
/// usual binary back into place (cargo's lock on the target folder keeps other cargo commands
/// out meanwhile). A folder of its own (`target/e2e/cargo`, until this change) compiled a
/// second copy of the whole dependency tree.
fn build_replay_gateway(layout: &Layout) -> anyhow::Result<PathBuf> {
    let step = Instant::now();
    println!("e2e: cargo build -p xtask --features test-seed");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(&cargo)
        .args(["build", "--package", "xtask", "--features", "test-seed"])
        .arg("--message-format=json-render-diagnostics")
        .current_dir(workspace_root())
        .stderr(Stdio::inherit())
        .output()
        .context("cannot run the cargo build of the replay gateway")?;
    if !output.status.success() {
        bail!(
            "cargo build of the replay gateway failed ({})",
            output.status
        );
    }
    let built = xtask_executable(&output.stdout)
        .context("cargo build named no xtask executable among its artifacts")?;
    let kept = layout.out.join("replay-gateway");
    remove(&kept)?;
    // A hard link keeps the seed build's file even after cargo links the usual one back.
    if std::fs::hard_link(&built, &kept).is_err() {
        std::fs::copy(&built, &kept)
            .with_context(|| format!("cannot copy {} to {}", built.display(), kept.display()))?;
    }
    run_step(
        Command::new(&cargo)
            .args(["build", "--quiet", "--package", "xtask"])
            .current_dir(workspace_root()),
        "cargo build -p xtask (putting the usual binary back)",
    )?;
    // The build folder of earlier versions: gigabytes nothing reads any more.
    remove(&layout.out.join("cargo"))?;
    println!(
        "e2e: replay gateway built in {:.1} s",
        step.elapsed().as_secs_f64()
    );
    Ok(kept)
}

/// The `executable` of the xtask binary among cargo's JSON build messages.
fn xtask_executable(messages: &[u8]) -> Option<PathBuf> {
    String::from_utf8_lossy(messages)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|message| {
            message["reason"] == "compiler-artifact"
                && message["target"]["name"] == "xtask"
                && message["target"]["kind"]
                    .as_array()
                    .is_some_and(|kinds| kinds.iter().any(|kind| kind == "bin"))
        })
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
}

/// The replay gateways, a child process serving the whole suite.
struct GatewayProcess {
    child: Option<Child>,
    manifest: PathBuf,
}

impl GatewayProcess {
    /// Starts the suite's gateways and waits until their manifest exists (it is written once
    /// every gateway listens).
    fn start(binary: &Path, layout: &Layout) -> anyhow::Result<GatewayProcess> {
        let manifest = layout.out.join("gateways.json");
        let child = Command::new(binary)
            .args(["replay-gateway", "--manifest"])
            .arg(&manifest)
            .arg("--web-dir")
            .arg(layout.web.join("dist"))
            .env("DEERFLOW_ENABLE_TEST_SEED", "1")
            // The gateways' own warnings would repeat, between the test lines, what the suite
            // checks anyway (a fixture's recorded model error, a miss's failed model call);
            // `RUST_LOG` still wins.
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "error".into()),
            )
            .stdin(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {}", binary.display()))?;
        let mut process = GatewayProcess {
            child: Some(child),
            manifest,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !process.manifest.exists() {
            if let Some(status) = process.child_mut().try_wait()? {
                bail!("the replay gateways exited before they were ready ({status})");
            }
            if Instant::now() > deadline {
                bail!("the replay gateways wrote no manifest within 60 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(process)
    }

    fn child_mut(&mut self) -> &mut Child {
        self.child
            .as_mut()
            .expect("the child is only taken by stop")
    }

    /// SIGTERM, then its exit status: a failure when a replay call missed. On any error the
    /// drop kills it.
    fn stop(mut self) -> anyhow::Result<ExitStatus> {
        rustix::process::kill_process(
            rustix::process::Pid::from_child(self.child_mut()),
            rustix::process::Signal::TERM,
        )
        .context("cannot send SIGTERM to the replay gateways")?;
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(status) = self.child_mut().try_wait()? {
                self.child = None;
                return Ok(status);
            }
            if Instant::now() > deadline {
                bail!("the replay gateways did not stop within 15 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for GatewayProcess {
    /// An early return (a failed Playwright start, a gateway deaf to SIGTERM) must not leave the
    /// gateways running.
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `N passed, N failed[, N flaky, N skipped, N suite errors]` from Playwright's JSON report, and
/// a line per failed test (`FAILED render.spec.ts › renders …`) printed on the way.
fn summary(results: &Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(results)
        .with_context(|| format!("cannot read {}", results.display()))?;
    let report: Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not JSON", results.display()))?;
    let mut failed = Vec::new();
    failed_specs(&report["suites"], &mut failed);
    for spec in &failed {
        println!("e2e: FAILED {spec}");
    }
    let count = |key: &str| report["stats"][key].as_u64().unwrap_or(0);
    let mut parts = vec![
        format!("{} passed", count("expected")),
        format!("{} failed", count("unexpected")),
    ];
    for (key, name) in [("flaky", "flaky"), ("skipped", "skipped")] {
        if count(key) > 0 {
            parts.push(format!("{} {name}", count(key)));
        }
    }
    // Errors outside any test: the global setup or teardown (a replay miss found at the end).
    let errors = report["errors"].as_array().map_or(0, Vec::len);
    if errors > 0 {
        parts.push(format!("{errors} suite error(s)"));
    }
    Ok(parts.join(", "))
}

/// `file › title` of every spec below `suites` that did not pass.
fn failed_specs(suites: &Value, out: &mut Vec<String>) {
    for suite in suites.as_array().into_iter().flatten() {
        for spec in suite["specs"].as_array().into_iter().flatten() {
            if spec["ok"] == Value::Bool(false) {
                let file = spec["file"].as_str().unwrap_or_default();
                let title = spec["title"].as_str().unwrap_or_default();
                out.push(format!("{file} › {title}"));
            }
        }
        failed_specs(&suite["suites"], out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `npx playwright test` run by hand finds its browser in chromium.ts: the same names, in the
    /// same order, as the xtask's, so both drive the same browser.
    #[test]
    fn the_playwright_config_looks_for_the_same_browsers_in_the_same_order() {
        let path = Layout::new().web.join("tests/e2e/support/chromium.ts");
        let source = std::fs::read_to_string(&path).unwrap();
        let list = source
            .lines()
            .find_map(|line| line.strip_prefix("const NAMES = ["))
            .unwrap_or_else(|| panic!("{}: no `const NAMES = [` line", path.display()));
        let names: Vec<&str> = list.split('"').skip(1).step_by(2).collect();
        assert_eq!(names, CHROMIUM_NAMES, "{}: {list}", path.display());
    }

    /// The seed build's binary is the `xtask` bin's `executable` among cargo's messages: not a
    /// dependency's artifact, not a library of the same name, not a diagnostic.
    #[test]
    fn the_replay_gateway_is_the_xtask_bin_among_cargo_s_messages() {
        let artifact = |name: &str, kind: &str, executable: Option<&str>| {
            serde_json::json!({
                "reason": "compiler-artifact",
                "target": {"name": name, "kind": [kind]},
                "executable": executable,
            })
            .to_string()
        };
        let cases = [
            (
                vec![artifact("xtask", "bin", Some("/t/debug/xtask"))],
                Some("/t/debug/xtask"),
            ),
            (
                vec![
                    r#"{"reason":"compiler-message","message":{}}"#.to_owned(),
                    artifact("harness", "lib", None),
                    artifact("keyless", "bin", Some("/t/debug/keyless")),
                    "not json".to_owned(),
                    artifact("xtask", "bin", Some("/t/debug/xtask")),
                    r#"{"reason":"build-finished","success":true}"#.to_owned(),
                ],
                Some("/t/debug/xtask"),
            ),
            (vec![artifact("xtask", "lib", None)], None),
            (vec![], None),
        ];
        for (lines, expected) in cases {
            let messages = lines.join("\n");
            assert_eq!(
                xtask_executable(messages.as_bytes()),
                expected.map(PathBuf::from),
                "{messages}"
            );
        }
    }
}
