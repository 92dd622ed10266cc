//! `parsecnet` when its standard output cannot be written, run as the real binary: to a closed
//! pipe (its reader left, as `| head -1` does) it ends quietly, killed by SIGPIPE as a pipe
//! writer is; to a full disk (`/dev/full`) it says so on standard error and exits 1. Never a
//! panic (exit status 101). The console, the program's help and a slotserver are checked.

#![cfg(unix)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

mod support;
use support::processes::LOOPBACK_SLOTSERVER;

const SIGPIPE: i32 = 13;
const FULL_DISK: &str = "cannot write to standard output: No space left on device";

/// Standard output that is a pipe whose reader has already gone: every write fails with EPIPE.
fn closed_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    writer.into()
}

/// Standard output on a full disk, or None where there is no /dev/full.
fn full_disk() -> Option<Stdio> {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .ok()
        .map(Stdio::from)
}

fn parsecnet(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_parsecnet"));
    command
        .args(args)
        .env("PARSEC_NET_LOG", "off")
        .stderr(Stdio::piped());
    command
}

/// Run `args` with `stdout`, `input` on standard input (none: empty), within 20 s.
fn run(args: &[&str], stdout: Stdio, input: &str) -> Output {
    let mut child = parsecnet(args)
        .stdout(stdout)
        .stdin(Stdio::piped())
        .spawn()
        .expect("parsecnet runs");
    let mut stdin = child.stdin.take().expect("stdin");
    // The program may end before it reads everything: a failed write here is no matter.
    let _ = stdin.write_all(input.as_bytes());
    drop(stdin);
    wait_at_most(&mut child, Duration::from_secs(20), args);
    child.wait_with_output().expect("output")
}

fn wait_at_most(child: &mut Child, limit: Duration, what: &[&str]) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("parsecnet {what:?} did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The runs of the checks: what to run and what to feed it.
const RUNS: &[(&[&str], &str)] = &[
    (&["console", "--exec", "status"], ""),
    (
        &["console", "--exec", "net.sendfreq 30; status; players"],
        "",
    ),
    (&["console"], "status\nplayers\n"),
    (&["console", "--help"], ""),
    (&["help"], ""),
    (&["slotserver", "--help"], ""),
    (&["demo", "--help"], ""),
    (&["bench", "--help"], ""),
];

#[test]
fn on_a_full_disk_it_says_so_and_exits_1() {
    if full_disk().is_none() {
        println!("SKIPPED: no /dev/full");
        return;
    }
    for (args, input) in RUNS {
        let out = run(args, full_disk().expect("/dev/full"), input);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(FULL_DISK), "{args:?}: {stderr}");
    }
}

#[test]
fn into_a_closed_pipe_it_ends_quietly_by_sigpipe() {
    for (args, input) in RUNS {
        let out = run(args, closed_pipe(), input);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr, "", "{args:?}: nothing on standard error");
        assert_eq!(
            out.status.signal(),
            Some(SIGPIPE),
            "{args:?}: {:?} {stderr}",
            out.status
        );
    }
}

#[test]
fn piped_into_head_it_never_panics() {
    // The reader takes the first line and leaves while the console may still be writing: it
    // either finished first (status 0) or ends by SIGPIPE.
    let bin = env!("CARGO_BIN_EXE_parsecnet");
    for _ in 0..5 {
        let out = Command::new("sh")
            .arg("-c")
            .arg(r#""$0" console -e "net.sendfreq 30; status; players; help" | head -1"#)
            .arg(bin)
            .env("PARSEC_NET_LOG", "off")
            .output()
            .expect("sh runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert_eq!(stderr, "", "nothing on standard error");
        assert_eq!(stdout.lines().count(), 1, "{stdout}");
    }
}

/// A slotserver on 127.0.0.1, any free port, without HTTP, with `stdout`.
fn slotserver(stdout: Stdio) -> Child {
    parsecnet(LOOPBACK_SLOTSERVER)
        .env("PARSEC_NET_LOG", "error")
        .stdout(stdout)
        .stdin(Stdio::null())
        .spawn()
        .expect("parsecnet slotserver runs")
}

#[test]
fn a_server_into_a_closed_pipe_ends_quietly_by_sigpipe() {
    let mut server = slotserver(closed_pipe());
    let status = wait_at_most(&mut server, Duration::from_secs(20), &["slotserver"]);
    let out = server.wait_with_output().expect("output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.signal(), Some(SIGPIPE), "{status:?} {stderr}");
    assert_eq!(stderr, "");
}

#[test]
fn a_server_on_a_full_disk_serves_says_so_and_exits_1() {
    let Some(stdout) = full_disk() else {
        println!("SKIPPED: no /dev/full");
        return;
    };
    if !Path::new("/bin/kill").exists() && !Path::new("/usr/bin/kill").exists() {
        println!("SKIPPED: no kill command to send SIGTERM");
        return;
    }
    let mut server = slotserver(stdout);
    // Its listening line cannot be written: it logs that and serves on.
    let mut stderr = BufReader::new(server.stderr.take().expect("stderr"));
    let mut first = String::new();
    stderr.read_line(&mut first).expect("a log line");
    assert!(first.contains(FULL_DISK), "{first}");
    std::thread::sleep(Duration::from_millis(200));
    assert!(server.try_wait().expect("wait").is_none(), "it serves on");
    let killed = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let status = wait_at_most(&mut server, Duration::from_secs(20), &["slotserver"]);
    let mut rest = String::new();
    for line in stderr.lines() {
        rest.push_str(&line.expect("stderr"));
        rest.push('\n');
    }
    assert!(!rest.contains("panicked"), "{rest}");
    assert_eq!(status.code(), Some(1), "{status:?} {rest}");
    assert!(
        rest.contains(&format!("parsecnet slotserver: {FULL_DISK}")),
        "{rest}"
    );
}
