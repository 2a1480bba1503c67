//! What the tests of xtask's long-running commands (`replay-gateway`, `serve`) share: a port to
//! start them on, and stopping them as a person at a terminal does.

use std::io::Read;
use std::process::{Child, Command};

/// A loopback port that was free a moment ago, for a command that takes `--port` (the test then
/// knows where to reach it before it prints anything).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Interrupts `child` as Ctrl-C does (SIGINT) and returns the rest of its stdout, read until it
/// exits, which holds what it prints when it stops.
pub fn interrupt(child: &Child, stdout: &mut impl Read) -> String {
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    rest
}
