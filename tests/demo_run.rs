//! `parsecnet demo --duration 20` (the README's main command) exits 0 with a summary showing all
//! four players saw each other, both switches happened and no reliable event was lost.

use std::process::Command;

#[test]
fn the_demo_runs_for_20_seconds_and_every_check_holds() {
    let out = Command::new(env!("CARGO_BIN_EXE_parsecnet"))
        .args(["demo", "--duration", "20"])
        .env("PARSEC_NET_LOG", "off")
        .output()
        .expect("parsecnet runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}\n{stdout}\n{stderr}",
        out.status
    );
    for expected in [
        "all four players saw each other: yes; protocol switch: yes; backend switch: yes",
        "lost reliable events: 0",
        "done: protocol switch to peer",
        "done: protocol switch back to gameserver",
        "done: backend switch back to udp",
        "result: every check held",
        "done: backend switch to the trace plugin loaded from its file",
        "servers the masterserver listed when delta asked: 1",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
    // The trace plugin really carried charlie's traffic while it was loaded.
    let traced: usize = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("the trace plugin recorded "))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no trace line in:\n{stdout}"));
    assert!(traced > 100, "only {traced} datagrams traced:\n{stdout}");
    // Progress was visible from the first second (one line a second when not a terminal).
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("[  0.") || l.starts_with("[  1.")),
        "{stdout}"
    );
}
