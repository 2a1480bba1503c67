//! The binary: `gateway-under-test --config FILE --port 0` serves on 127.0.0.1, prints its
//! address, and exits cleanly on Ctrl-C (SIGINT); a bad config names the key and exits non-zero.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

const BINARY: &str = env!("CARGO_BIN_EXE_gateway-under-test");

fn write_config(dir: &std::path::Path, text: &str) -> std::path::PathBuf {
    let path = dir.join("gateway.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test]
async fn the_binary_prints_its_address_serves_and_stops_on_ctrl_c() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "home = \"home\"\n[auth.password_hash]\nmemory_kib = 8\niterations = 1\nparallelism = 1\n",
    );
    let mut child = Command::new(BINARY)
        .args(["--config", config.to_str().unwrap(), "--port", "0"])
        .env("RUST_LOG", "warn")
        .env_remove("DEER_FLOW_HOME")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("Failed to start the gateway binary");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("gateway-under-test listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let health: serde_json::Value = reqwest::get(format!("{url}/health"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        health,
        serde_json::json!({"status": "healthy", "service": "deer-flow-gateway"})
    );
    assert!(
        dir.path().join("home/db/deerflow.db").exists(),
        "home is relative to the config file"
    );

    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let exit = loop {
        if let Some(exit) = child.try_wait().unwrap() {
            break exit;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the gateway did not stop on SIGINT"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(exit.success(), "{exit:?}");
}

#[test]
fn a_bad_config_exits_non_zero_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "[auth]\ntoken_expiry_days = 99\n");
    let output = Command::new(BINARY)
        .args(["--config", config.to_str().unwrap()])
        .output()
        .expect("Failed to start the gateway binary");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("auth.token_expiry_days"), "{stderr}");
}

#[test]
fn the_example_config_loads() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("gateway.example.toml");
    let env = |name: &str| (name == "OPENAI_API_KEY").then(|| "sk-example".to_string());
    let config =
        gateway_under_test::Config::load(&path, &env).expect("the example config is valid");
    assert_eq!(config.models[0].use_, "openai");
}
