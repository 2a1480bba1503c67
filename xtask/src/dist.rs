//! `cargo xtask dist`: everything a release publishes for one platform, built into `target/dist/`
//! by the same steps on a developer's machine, in `.ci/run` and in each row of the release
//! workflow (`.github/workflows/release.yml`):
//!
//! - the wheel, built by maturin (pinned in `dist/requirements.txt`, installed into the venv
//!   `target/dist-tools/`) from `dist/python/pyproject.toml` with `bindings = "bin"`, as ruff and
//!   uv ship theirs; maturin runs the one cargo build of the `keyless` binary;
//! - the npm main package `keyless` (`dist/npm/keyless/`: a launcher that runs the binary of this
//!   platform's package, and the test-runner helpers of `lib/`: `keyless/playwright`,
//!   `keyless/vitest`) and this platform's package (`@keyless/cli-<os>-<cpu>[-musl]`, from
//!   `dist/npm/platform/` and the row of `dist/platforms.json`), as `npm pack` tarballs;
//! - the binary itself, `keyless-<target>` (stripped by the `release-dist` profile);
//! - `SHA256SUMS` over all of them, in `sha256sum -c` format.
//!
//! One version everywhere: harness/cli/Cargo.toml's. maturin reads it for the wheel (the
//! pyproject declares the version dynamic), this module writes it into both package.json files
//! (the templates carry none), and the built binary's `--version` and the wheel's file name are
//! checked against it. The output is assembled in `target/dist.partial/` and moved to
//! `target/dist/` only when complete, so a failed run leaves no half-written release behind.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail, ensure};
use harness::workspace::workspace_root;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// Arguments of `dist`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  cargo xtask dist
      this machine's wheel, npm tarballs, binary and SHA256SUMS in target/dist/, built with the
      release-dist profile (LTO, one codegen unit, stripped)
  cargo xtask dist --profile dev
      the same packages around the debug build: what .ci/run installs and tests
  cargo xtask dist --target aarch64-unknown-linux-musl --zig --compatibility musllinux_1_2
      a release workflow row: cross-linked through zig (pip's ziglang, dist/requirements-zig.txt)

Then, with no Rust toolchain needed:
  pip install target/dist/keyless-*.whl
  npm install target/dist/keyless-cli-linux-x64-*.tgz target/dist/keyless-[0-9]*.tgz")]
pub struct Args {
    /// The target triple to build for (a row of dist/platforms.json) [default: this machine's,
    /// from `rustc -vV`].
    #[arg(long, value_name = "TRIPLE")]
    target: Option<String>,
    /// The cargo profile: `release-dist` for a release, `dev` to package the debug build quickly.
    #[arg(long, value_name = "NAME", default_value = "release-dist")]
    profile: String,
    /// Where the packages go, relative to the workspace root.
    #[arg(long, value_name = "DIR", default_value = "target/dist")]
    out: PathBuf,
    /// Link through zig (maturin --zig): a manylinux2014 wheel from any Linux, or musl. Installs
    /// dist/requirements-zig.txt beside maturin.
    #[arg(long)]
    zig: bool,
    /// The wheel's Linux platform tag policy (maturin --compatibility), e.g. `manylinux2014` or
    /// `musllinux_1_2` [default: maturin's, the lowest manylinux tag the binary satisfies].
    #[arg(long, value_name = "TAG")]
    compatibility: Option<String>,
}

/// The binary's package, whose version is every package's version.
const CLI_MANIFEST: &str = "harness/cli/Cargo.toml";
/// The packaging templates and tables, all under this folder.
const DIST_DIR: &str = "dist";
/// The main npm package's test-runner helpers (its package.json `exports`), beside its launcher.
const NPM_LIB: &str = "npm/keyless/lib";

/// What the main npm package's launcher looks up its platform in (shipped beside it).
const PLATFORMS_FILE: &str = "platforms.json";
/// The name of the checksum file, as `sha256sum -c` and GitHub releases commonly call it.
const CHECKSUMS_FILE: &str = "SHA256SUMS";

/// One platform a release builds, a row of `dist/platforms.json`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Platform {
    /// Rust's target triple.
    pub target: String,
    /// The npm package holding this platform's binary.
    pub package: String,
    /// Node's `process.platform` (npm's `os`).
    pub os: String,
    /// Node's `process.arch` (npm's `cpu`).
    pub cpu: String,
    /// `glibc` or `musl` on Linux (npm's `libc`), absent elsewhere.
    #[serde(default)]
    pub libc: Option<String>,
}

/// `dist/platforms.json`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlatformsFile {
    platforms: Vec<Platform>,
}

/// The npm scope of the per-platform packages.
const SCOPE: &str = "@keyless";

impl Platform {
    /// The package name this row must have: `@keyless/cli-<os>-<cpu>`, `-musl` appended for musl,
    /// biome's naming. Rows are checked against it so the table cannot drift from the rule.
    fn expected_package(&self) -> String {
        let musl = if self.libc.as_deref() == Some("musl") {
            "-musl"
        } else {
            ""
        };
        format!("{SCOPE}/cli-{}-{}{musl}", self.os, self.cpu)
    }

    /// What the target triple says the row's os, cpu and libc are.
    fn from_triple(
        target: &str,
    ) -> anyhow::Result<(&'static str, &'static str, Option<&'static str>)> {
        let cpu = match target.split('-').next() {
            Some("x86_64") => "x64",
            Some("aarch64") => "arm64",
            _ => bail!("target {target}: unknown architecture (x86_64 or aarch64)"),
        };
        let (os, libc) = if target.contains("-linux-gnu") {
            ("linux", Some("glibc"))
        } else if target.contains("-linux-musl") {
            ("linux", Some("musl"))
        } else if target.contains("-apple-darwin") {
            ("darwin", None)
        } else if target.contains("-windows-") {
            ("win32", None)
        } else {
            bail!("target {target}: unknown system (linux-gnu, linux-musl, apple-darwin, windows)")
        };
        Ok((os, cpu, libc))
    }

    /// Checks the row against its triple and the naming rule.
    fn check(&self) -> anyhow::Result<()> {
        let (os, cpu, libc) = Self::from_triple(&self.target)?;
        let row = &self.target;
        ensure!(
            self.os == os,
            "{row}: os is {:?}, the triple says {os:?}",
            self.os
        );
        ensure!(
            self.cpu == cpu,
            "{row}: cpu is {:?}, the triple says {cpu:?}",
            self.cpu
        );
        ensure!(
            self.libc.as_deref() == libc,
            "{row}: libc is {:?}, the triple says {libc:?}",
            self.libc
        );
        let expected = self.expected_package();
        ensure!(
            self.package == expected,
            "{row}: package is {:?}, the naming rule gives {expected:?}",
            self.package
        );
        Ok(())
    }

    /// The binary's file name on this platform.
    fn exe(&self, stem: &str) -> String {
        if self.os == "win32" {
            format!("{stem}.exe")
        } else {
            stem.to_owned()
        }
    }
}

/// Parses and checks `dist/platforms.json`: every row valid, no target or package twice.
pub fn parse_platforms(text: &str) -> anyhow::Result<Vec<Platform>> {
    let file: PlatformsFile = serde_json::from_str(text)?;
    let mut targets = BTreeSet::new();
    let mut packages = BTreeSet::new();
    for platform in &file.platforms {
        platform.check()?;
        ensure!(
            targets.insert(&platform.target),
            "{}: listed twice",
            platform.target
        );
        ensure!(
            packages.insert(&platform.package),
            "{}: listed twice",
            platform.package
        );
    }
    Ok(file.platforms)
}

/// The version of `harness/cli/Cargo.toml`'s `[package]`, written there as a literal.
pub fn cli_version(manifest: &str) -> anyhow::Result<String> {
    let parsed: toml::Table = toml::from_str(manifest)?;
    match parsed
        .get("package")
        .and_then(|package| package.get("version"))
    {
        Some(toml::Value::String(version)) => Ok(version.clone()),
        Some(_) => bail!("[package] version is not a literal string (it must be written here)"),
        None => bail!("[package] has no version"),
    }
}

/// The wheel's version for a cargo version, as maturin writes it (PEP 440): `0.2.0-rc.1` is
/// `0.2.0rc1`, `-alpha.N` `aN`, `-beta.N` `bN`.
pub fn pep440(version: &str) -> anyhow::Result<String> {
    let Some((release, pre)) = version.split_once('-') else {
        return Ok(version.to_owned());
    };
    let (kind, number) = pre
        .split_once('.')
        .with_context(|| format!("pre-release {pre:?} of {version}: expected e.g. rc.1"))?;
    let short = match kind {
        "alpha" | "a" => "a",
        "beta" | "b" => "b",
        "rc" => "rc",
        _ => bail!("pre-release {pre:?} of {version}: alpha, beta or rc"),
    };
    ensure!(
        number.bytes().all(|byte| byte.is_ascii_digit()) && !number.is_empty(),
        "pre-release {pre:?} of {version}: the number after {kind}. must be digits"
    );
    Ok(format!("{release}{short}{number}"))
}

/// The npm main package's package.json: the template with the version and one optional
/// dependency per platform at that same version.
pub fn main_package_json(
    template: &Value,
    version: &str,
    platforms: &[Platform],
    repository: Option<&str>,
) -> anyhow::Result<Value> {
    let mut package = versioned(template, version)?;
    let optional: Map<String, Value> = platforms
        .iter()
        .map(|platform| (platform.package.clone(), json!(version)))
        .collect();
    package.insert("optionalDependencies".into(), Value::Object(optional));
    with_repository(&mut package, repository);
    Ok(Value::Object(package))
}

/// A platform package's package.json: the template with the name, version, `os`, `cpu` and,
/// on Linux, `libc` of its row.
pub fn platform_package_json(
    template: &Value,
    version: &str,
    platform: &Platform,
    repository: Option<&str>,
) -> anyhow::Result<Value> {
    let template_fields = versioned(template, version)?;
    let mut package = Map::new();
    package.insert("name".into(), json!(platform.package));
    package.extend(template_fields);
    package.insert("os".into(), json!([platform.os]));
    package.insert("cpu".into(), json!([platform.cpu]));
    if let Some(libc) = &platform.libc {
        package.insert("libc".into(), json!([libc]));
    }
    with_repository(&mut package, repository);
    Ok(Value::Object(package))
}

/// The template's fields with `version` set; a template that writes its own version is refused,
/// since Cargo.toml is the one place it is written.
fn versioned(template: &Value, version: &str) -> anyhow::Result<Map<String, Value>> {
    let Value::Object(fields) = template else {
        bail!("a package.json template must be a JSON object");
    };
    ensure!(
        !fields.contains_key("version"),
        "a package.json template writes a version: remove it (the version comes from {CLI_MANIFEST})"
    );
    let mut package = Map::new();
    for (key, value) in fields {
        package.insert(key.clone(), value.clone());
        if key == "name" {
            package.insert("version".into(), json!(version));
        }
    }
    if !package.contains_key("version") {
        package.insert("version".into(), json!(version));
    }
    Ok(package)
}

/// npm's provenance is checked against the package's repository, which only the release
/// workflow knows (GITHUB_REPOSITORY).
fn with_repository(package: &mut Map<String, Value>, repository: Option<&str>) {
    if let Some(url) = repository {
        package.insert(
            "repository".into(),
            json!({ "type": "git", "url": format!("git+{url}.git") }),
        );
    }
}

/// The tarball `npm pack` writes for a package: the scope's `@` dropped and its `/` a `-`.
pub fn npm_tarball_name(package: &str, version: &str) -> String {
    let flat = package.trim_start_matches('@').replace('/', "-");
    format!("{flat}-{version}.tgz")
}

/// `SHA256SUMS`: a line `<hex>  <name>` per file, by name, as `sha256sum` writes and `sha256sum
/// -c` reads. Names are bare file names.
pub fn checksums(files: &[(String, Vec<u8>)]) -> anyhow::Result<String> {
    let mut sorted: Vec<&(String, Vec<u8>)> = files.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = String::new();
    for (name, bytes) in sorted {
        ensure!(
            !name.is_empty() && !name.contains(['/', '\\', '\n', '\r']),
            "{name:?}: a checksum line names a bare file"
        );
        let digest = Sha256::digest(bytes);
        for byte in digest {
            write!(out, "{byte:02x}").expect("writing to a String");
        }
        writeln!(out, "  {name}").expect("writing to a String");
    }
    Ok(out)
}

pub fn run(args: Args) -> anyhow::Result<std::process::ExitCode> {
    let started = Instant::now();
    let root = workspace_root();
    let dist = root.join(DIST_DIR);
    let version = cli_version(&read(&root.join(CLI_MANIFEST))?)
        .with_context(|| format!("reading the version of {CLI_MANIFEST}"))?;
    let platforms = parse_platforms(&read(&dist.join(PLATFORMS_FILE))?)
        .with_context(|| format!("reading {DIST_DIR}/{PLATFORMS_FILE}"))?;
    let host = host_triple()?;
    let target = args.target.clone().unwrap_or_else(|| host.clone());
    let Some(platform) = platforms.iter().find(|p| p.target == target) else {
        let known: Vec<&str> = platforms.iter().map(|p| p.target.as_str()).collect();
        bail!(
            "{target} is not a row of {DIST_DIR}/{PLATFORMS_FILE}: one of {}",
            known.join(", ")
        );
    };
    let out = root.join(&args.out);
    let stage = out.with_extension("partial");
    println!(
        "dist: keyless {version} for {target} ({}), profile {}, into {}",
        platform.package,
        args.profile,
        out.display()
    );
    remove(&stage)?;
    std::fs::create_dir_all(&stage)
        .with_context(|| format!("cannot create {}", stage.display()))?;

    let maturin = install_tools(&root, &dist, args.zig)?;

    let step = Instant::now();
    println!("dist: [2/5] the wheel (maturin runs the cargo build)");
    let mut build = Command::new(&maturin);
    build
        .args(["build", "--locked", "--profile", &args.profile, "--out"])
        .arg(&stage)
        .current_dir(dist.join("python"));
    if args.target.is_some() {
        build.args(["--target", &target]);
    }
    if args.zig {
        build.arg("--zig");
    }
    if let Some(tag) = &args.compatibility {
        build.args(["--compatibility", tag]);
    }
    run_step(&mut build, "maturin build")?;
    let wheel = single_file(&stage, |name| name.ends_with(".whl"))?;
    let wheel_prefix = format!("keyless-{}-", pep440(&version)?);
    ensure!(
        wheel.starts_with(&wheel_prefix),
        "the wheel {wheel} is not version {version} ({wheel_prefix}…): maturin read another version"
    );
    println!("dist: {wheel} in {:.1} s", step.elapsed().as_secs_f64());

    println!("dist: [3/5] the binary");
    let built = built_binary(&root, args.target.as_deref(), &args.profile, platform)?;
    let binary_name = platform.exe(&format!("keyless-{target}"));
    copy(&built, &stage.join(&binary_name))?;
    if target == host {
        check_version(&stage.join(&binary_name), &version)?;
    } else {
        println!("dist: {binary_name} is for another machine; its --version is not checked here");
    }

    println!("dist: [4/5] the npm packages");
    let npm = std::env::var_os("NPM").map_or_else(|| PathBuf::from("npm"), PathBuf::from);
    let repository = github_repository();
    let npm_stage = root.join("target/dist-npm");
    remove(&npm_stage)?;
    let platform_dir = npm_stage.join("platform");
    let template = read_json(&dist.join("npm/platform/package.json"))?;
    let package = platform_package_json(&template, &version, platform, repository.as_deref())?;
    write_json(&platform_dir.join("package.json"), &package)?;
    copy(
        &built,
        &platform_dir.join("bin").join(platform.exe("keyless")),
    )?;
    copy(&dist.join("README.md"), &platform_dir.join("README.md"))?;
    pack(
        &npm,
        &platform_dir,
        &stage,
        &npm_tarball_name(&platform.package, &version),
    )?;

    let main_dir = npm_stage.join("keyless");
    let template = read_json(&dist.join("npm/keyless/package.json"))?;
    let package = main_package_json(&template, &version, &platforms, repository.as_deref())?;
    let main_name = package["name"]
        .as_str()
        .context("the main package has no name")?
        .to_owned();
    write_json(&main_dir.join("package.json"), &package)?;
    copy(
        &dist.join("npm/keyless/bin/keyless.js"),
        &main_dir.join("bin/keyless.js"),
    )?;
    // The test-runner helpers (`keyless/playwright`, `keyless/vitest`): plain JavaScript with
    // their types, shipped as they are.
    copy_files(&dist.join(NPM_LIB), &main_dir.join("lib"))?;
    copy(&dist.join(PLATFORMS_FILE), &main_dir.join(PLATFORMS_FILE))?;
    copy(&dist.join("README.md"), &main_dir.join("README.md"))?;
    pack(
        &npm,
        &main_dir,
        &stage,
        &npm_tarball_name(&main_name, &version),
    )?;

    println!("dist: [5/5] {CHECKSUMS_FILE}");
    let mut files = Vec::new();
    for entry in
        std::fs::read_dir(&stage).with_context(|| format!("cannot list {}", stage.display()))?
    {
        let path = entry?.path();
        let name = file_name(&path)?;
        files.push((
            name,
            std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?,
        ));
    }
    let sums = checksums(&files)?;
    std::fs::write(stage.join(CHECKSUMS_FILE), &sums)
        .with_context(|| format!("cannot write {CHECKSUMS_FILE}"))?;

    remove(&out)?;
    std::fs::rename(&stage, &out)
        .with_context(|| format!("cannot move {} to {}", stage.display(), out.display()))?;
    files.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, bytes) in &files {
        println!("  {:>12} bytes  {name}", bytes.len());
    }
    println!(
        "dist: done in {:.1} s: {} ({CHECKSUMS_FILE} beside them)",
        started.elapsed().as_secs_f64(),
        out.display()
    );
    Ok(std::process::ExitCode::SUCCESS)
}

/// maturin (and zig with `--zig`) at their pinned versions in `target/dist-tools/`, installed
/// when missing or at another version.
fn install_tools(root: &Path, dist: &Path, zig: bool) -> anyhow::Result<PathBuf> {
    let step = Instant::now();
    let venv = root.join("target/dist-tools");
    let bin = if cfg!(windows) {
        venv.join("Scripts")
    } else {
        venv.join("bin")
    };
    let maturin = bin.join(if cfg!(windows) {
        "maturin.exe"
    } else {
        "maturin"
    });
    let requirements = read(&dist.join("requirements.txt"))?;
    let pinned = requirements
        .lines()
        .find_map(|line| line.trim().strip_prefix("maturin=="))
        .context("dist/requirements.txt pins no maturin==")?
        .to_owned();
    let installed = Command::new(&maturin)
        .arg("--version")
        .output()
        .ok()
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned());
    let wanted = format!("maturin {pinned}");
    if installed.as_deref() == Some(&wanted) && !zig {
        println!("dist: [1/5] {wanted} (target/dist-tools)");
        return Ok(maturin);
    }
    println!("dist: [1/5] installing {wanted} into target/dist-tools (dist/requirements.txt)");
    if !bin
        .join(if cfg!(windows) {
            "python.exe"
        } else {
            "python"
        })
        .exists()
    {
        let python = std::env::var_os("PYTHON").map_or_else(
            || PathBuf::from(if cfg!(windows) { "python" } else { "python3" }),
            PathBuf::from,
        );
        run_step(
            Command::new(python).args(["-m", "venv"]).arg(&venv),
            "python3 -m venv target/dist-tools",
        )?;
    }
    let mut pip = Command::new(bin.join("python"));
    pip.args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "-r",
    ])
    .arg(dist.join("requirements.txt"));
    if zig {
        pip.arg("-r").arg(dist.join("requirements-zig.txt"));
    }
    run_step(&mut pip, "pip install -r dist/requirements.txt")?;
    println!(
        "dist: tools installed in {:.1} s",
        step.elapsed().as_secs_f64()
    );
    Ok(maturin)
}

/// Where cargo put the binary maturin built: `<target dir>/[<triple>/]<profile dir>/keyless`.
fn built_binary(
    root: &Path,
    target: Option<&str>,
    profile: &str,
    platform: &Platform,
) -> anyhow::Result<PathBuf> {
    // cargo's own answer, as maturin asks it: CARGO_TARGET_DIR, `build.target-dir` or target/.
    let output = Command::new("cargo")
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(root)
        .output()
        .context("cannot run cargo metadata")?;
    ensure!(
        output.status.success(),
        "cargo metadata failed ({})",
        output.status
    );
    let metadata: Value =
        serde_json::from_slice(&output.stdout).context("cargo metadata: not JSON")?;
    let target_dir = PathBuf::from(
        metadata["target_directory"]
            .as_str()
            .context("cargo metadata names no target_directory")?,
    );
    let profile_dir = match profile {
        "dev" | "test" => "debug",
        "release" | "bench" => "release",
        other => other,
    };
    let mut path = target_dir;
    if let Some(triple) = target {
        path.push(triple);
    }
    path.push(profile_dir);
    path.push(platform.exe("keyless"));
    ensure!(path.is_file(), "maturin built no {}", path.display());
    Ok(path)
}

/// Runs the built binary's `--version` and checks it is `keyless <version>`.
fn check_version(binary: &Path, version: &str) -> anyhow::Result<()> {
    let output = Command::new(binary)
        .arg("--version")
        .output()
        .with_context(|| format!("cannot run {}", binary.display()))?;
    let said = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    ensure!(
        said == format!("keyless {version}"),
        "{} --version says {said:?}, not keyless {version}",
        binary.display()
    );
    println!("dist: {said} (--version)");
    Ok(())
}

/// `npm pack` of `folder` into `out`, which must then hold `expected`.
fn pack(npm: &Path, folder: &Path, out: &Path, expected: &str) -> anyhow::Result<()> {
    run_step(
        Command::new(npm)
            .args(["pack", "--silent", "--pack-destination"])
            .arg(out)
            .current_dir(folder)
            .stdout(std::process::Stdio::null()),
        &format!("npm pack in {}", folder.display()),
    )?;
    ensure!(out.join(expected).is_file(), "npm pack wrote no {expected}");
    println!("dist: {expected}");
    Ok(())
}

/// This machine's target triple, from `rustc -vV`.
fn host_triple() -> anyhow::Result<String> {
    let output = Command::new("rustc")
        .arg("-vV")
        .output()
        .context("cannot run rustc -vV")?;
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .map(str::to_owned)
        .context("rustc -vV names no host")
}

/// `https://github.com/<owner>/<repo>` in a GitHub Actions run, else nothing.
fn github_repository() -> Option<String> {
    let server = std::env::var("GITHUB_SERVER_URL").ok()?;
    let repository = std::env::var("GITHUB_REPOSITORY").ok()?;
    Some(format!("{server}/{repository}"))
}

/// The one file in `folder` whose name `matches`.
fn single_file(folder: &Path, matches: impl Fn(&str) -> bool) -> anyhow::Result<String> {
    let mut found = Vec::new();
    for entry in
        std::fs::read_dir(folder).with_context(|| format!("cannot list {}", folder.display()))?
    {
        let name = file_name(&entry?.path())?;
        if matches(&name) {
            found.push(name);
        }
    }
    match found.as_slice() {
        [one] => Ok(one.clone()),
        _ => bail!(
            "expected one wheel in {}, found {found:?}",
            folder.display()
        ),
    }
}

fn file_name(path: &Path) -> anyhow::Result<String> {
    path.file_name()
        .and_then(|name| name.to_str())
        .map(str::to_owned)
        .with_context(|| format!("{}: not a UTF-8 file name", path.display()))
}

fn read(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

fn read_json(path: &Path) -> anyhow::Result<Value> {
    serde_json::from_str(&read(path)?).with_context(|| format!("{}: not JSON", path.display()))
}

fn write_json(path: &Path, value: &Value) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(value)? + "\n";
    create_parent(path)?;
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

fn copy(from: &Path, to: &Path) -> anyhow::Result<()> {
    create_parent(to)?;
    std::fs::copy(from, to)
        .with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))?;
    Ok(())
}

/// Copies every file of the folder `from` (not its subfolders: it has none) into `to`.
fn copy_files(from: &Path, to: &Path) -> anyhow::Result<()> {
    for entry in
        std::fs::read_dir(from).with_context(|| format!("cannot list {}", from.display()))?
    {
        let path = entry?.path();
        if path.is_file() {
            copy(&path, &to.join(file_name(&path)?))?;
        }
    }
    Ok(())
}

fn create_parent(path: &Path) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    Ok(())
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
    ensure!(status.success(), "{what} failed ({status})");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo_file(path: &str) -> String {
        read(&workspace_root().join(path)).unwrap()
    }

    fn shipped_platforms() -> Vec<Platform> {
        parse_platforms(&repo_file("dist/platforms.json")).unwrap()
    }

    fn row(target: &str, package: &str, os: &str, cpu: &str, libc: Option<&str>) -> Platform {
        Platform {
            target: target.into(),
            package: package.into(),
            os: os.into(),
            cpu: cpu.into(),
            libc: libc.map(str::to_owned),
        }
    }

    #[test]
    fn the_shipped_platform_table_follows_the_naming_rule_and_covers_the_release() {
        let platforms = shipped_platforms();
        let targets: Vec<&str> = platforms.iter().map(|p| p.target.as_str()).collect();
        assert_eq!(
            targets,
            [
                "x86_64-unknown-linux-gnu",
                "x86_64-unknown-linux-musl",
                "aarch64-unknown-linux-gnu",
                "aarch64-unknown-linux-musl",
                "x86_64-apple-darwin",
                "aarch64-apple-darwin",
                "x86_64-pc-windows-msvc",
            ]
        );
        // The release workflow's matrix builds the same targets.
        let workflow = repo_file(".github/workflows/release.yml");
        let matrix: Vec<&str> = workflow
            .lines()
            .filter_map(|line| {
                line.trim()
                    .trim_start_matches("- ")
                    .strip_prefix("target: ")
            })
            .collect();
        assert_eq!(matrix, targets, "release.yml's matrix");
    }

    #[test]
    fn a_row_that_breaks_the_naming_table_is_refused_naming_the_row() {
        let cases = [
            (
                row(
                    "x86_64-unknown-linux-musl",
                    "@keyless/cli-linux-x64",
                    "linux",
                    "x64",
                    Some("musl"),
                ),
                "package is \"@keyless/cli-linux-x64\", the naming rule gives \"@keyless/cli-linux-x64-musl\"",
            ),
            (
                row(
                    "aarch64-apple-darwin",
                    "@keyless/cli-darwin-x64",
                    "darwin",
                    "x64",
                    None,
                ),
                "cpu is \"x64\", the triple says \"arm64\"",
            ),
            (
                row(
                    "x86_64-unknown-linux-gnu",
                    "@keyless/cli-linux-x64",
                    "linux",
                    "x64",
                    None,
                ),
                "libc is None, the triple says Some(\"glibc\")",
            ),
            (
                row(
                    "x86_64-pc-windows-msvc",
                    "@keyless/cli-windows-x64",
                    "windows",
                    "x64",
                    None,
                ),
                "os is \"windows\", the triple says \"win32\"",
            ),
            (
                row(
                    "riscv64gc-unknown-linux-gnu",
                    "@keyless/cli-linux-riscv64",
                    "linux",
                    "riscv64",
                    Some("glibc"),
                ),
                "unknown architecture",
            ),
        ];
        for (platform, expected) in cases {
            let err = platform.check().unwrap_err().to_string();
            assert!(err.contains(expected), "{}: {err}", platform.target);
            assert!(
                err.contains(&platform.target),
                "the error names no row: {err}"
            );
        }
    }

    #[test]
    fn a_target_listed_twice_is_refused() {
        let text = r#"{"platforms": [
            {"target": "x86_64-apple-darwin", "package": "@keyless/cli-darwin-x64", "os": "darwin", "cpu": "x64"},
            {"target": "x86_64-apple-darwin", "package": "@keyless/cli-darwin-x64", "os": "darwin", "cpu": "x64"}
        ]}"#;
        let err = parse_platforms(text).unwrap_err().to_string();
        assert_eq!(err, "x86_64-apple-darwin: listed twice");
    }

    #[test]
    fn every_generated_package_and_the_wheel_carry_the_cargo_version() {
        let version = cli_version(&repo_file(CLI_MANIFEST)).unwrap();
        let platforms = shipped_platforms();
        let main_template: Value =
            serde_json::from_str(&repo_file("dist/npm/keyless/package.json")).unwrap();
        let main = main_package_json(&main_template, &version, &platforms, None).unwrap();
        assert_eq!(main["version"], json!(version));
        let optional = main["optionalDependencies"].as_object().unwrap();
        assert_eq!(optional.len(), platforms.len());
        for platform in &platforms {
            assert_eq!(
                optional[&platform.package],
                json!(version),
                "{}",
                platform.package
            );
        }
        let platform_template: Value =
            serde_json::from_str(&repo_file("dist/npm/platform/package.json")).unwrap();
        for platform in &platforms {
            let package =
                platform_package_json(&platform_template, &version, platform, None).unwrap();
            assert_eq!(package["name"], json!(platform.package));
            assert_eq!(package["version"], json!(version), "{}", platform.package);
            assert_eq!(package["os"], json!([platform.os]));
            assert_eq!(package["cpu"], json!([platform.cpu]));
            assert_eq!(
                package.get("libc").cloned(),
                platform.libc.as_ref().map(|libc| json!([libc]))
            );
        }
        // The wheel's version is Cargo.toml's too: maturin reads it because the pyproject
        // declares the version dynamic and writes none of its own.
        let pyproject: toml::Table =
            toml::from_str(&repo_file("dist/python/pyproject.toml")).unwrap();
        let project = pyproject["project"].as_table().unwrap();
        assert!(
            !project.contains_key("version"),
            "pyproject.toml writes a version"
        );
        assert!(
            project["dynamic"]
                .as_array()
                .unwrap()
                .contains(&toml::Value::from("version"))
        );
        assert_eq!(
            pyproject["tool"]["maturin"]["manifest-path"].as_str(),
            Some("../../harness/cli/Cargo.toml")
        );
    }

    #[test]
    fn a_template_that_writes_its_own_version_is_refused() {
        let template = json!({ "name": "keyless", "version": "9.9.9" });
        let err = main_package_json(&template, "0.1.0", &[], None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("writes a version"), "{err}");
    }

    #[test]
    fn the_version_comes_from_the_literal_in_cargo_toml() {
        assert_eq!(
            cli_version("[package]\nname = \"keyless\"\nversion = \"1.2.3\"\n").unwrap(),
            "1.2.3"
        );
        let inherited = cli_version("[package]\nversion.workspace = true\n").unwrap_err();
        assert!(
            inherited.to_string().contains("not a literal"),
            "{inherited}"
        );
    }

    #[test]
    fn cargo_versions_become_pep_440_as_maturin_writes_them() {
        for (cargo, wheel) in [
            ("0.1.0", "0.1.0"),
            ("0.2.0-rc.1", "0.2.0rc1"),
            ("1.0.0-alpha.3", "1.0.0a3"),
            ("1.0.0-beta.12", "1.0.0b12"),
        ] {
            assert_eq!(pep440(cargo).unwrap(), wheel, "{cargo}");
        }
        for refused in ["1.0.0-dev", "1.0.0-rc.x", "1.0.0-nightly.1"] {
            assert!(pep440(refused).is_err(), "{refused} was accepted");
        }
    }

    #[test]
    fn tarball_names_are_what_npm_pack_writes() {
        assert_eq!(npm_tarball_name("keyless", "0.1.0"), "keyless-0.1.0.tgz");
        assert_eq!(
            npm_tarball_name("@keyless/cli-linux-x64-musl", "0.1.0"),
            "keyless-cli-linux-x64-musl-0.1.0.tgz"
        );
    }

    #[test]
    fn the_checksum_file_is_sha256sum_format_sorted_by_name() {
        let files = [
            ("keyless-0.1.0.tgz".to_owned(), b"abc".to_vec()),
            ("SHA-input".to_owned(), Vec::new()),
        ];
        assert_eq!(
            checksums(&files).unwrap(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  SHA-input\n\
             ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  keyless-0.1.0.tgz\n"
        );
        for bad in ["dir/file", "two\nlines", ""] {
            assert!(
                checksums(&[(bad.to_owned(), Vec::new())]).is_err(),
                "{bad:?} was accepted"
            );
        }
    }

    #[test]
    fn the_checksum_file_is_what_sha256sum_checks() {
        let folder = tempfile::tempdir().unwrap();
        let files = [
            ("a.whl".to_owned(), b"wheel".to_vec()),
            ("b.tgz".to_owned(), b"npm".to_vec()),
        ];
        for (name, bytes) in &files {
            std::fs::write(folder.path().join(name), bytes).unwrap();
        }
        std::fs::write(
            folder.path().join(CHECKSUMS_FILE),
            checksums(&files).unwrap(),
        )
        .unwrap();
        let status = Command::new("sha256sum")
            .args(["--check", "--strict", "--quiet", CHECKSUMS_FILE])
            .current_dir(folder.path())
            .status()
            .unwrap();
        assert!(status.success(), "sha256sum --check refused the file");
    }
}
