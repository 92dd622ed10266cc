//! The C measurement tools of `tools/` that docs/benchmarks.md quotes figures from still build
//! with warnings as errors and still measure: `udp_pingpong` runs every receive mode, with
//! `syscall_timing.so` preloaded, and the timing report counts exactly the calls a ping-pong
//! makes. `uring_pingpong` is built (and run once) where liburing is installed. No figure is
//! asserted: only that each is there and is a positive number of nanoseconds.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// Round trips each ping-pong times here (`PINGPONG_ROUNDS`; 20,000 by default), and the
/// warm-up ones before them (tools/pingpong.h). Short, so the spinning pairs stay brief when
/// other tests share the two cores.
const ROUNDS: u64 = 2_000;
const WARMUP: u64 = 1_000;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("measurement_tools")
        .join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// Runs `command` to its end, killing it after `limit`.
fn run(mut command: Command, limit: Duration) -> Output {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{command:?} did not finish within {limit:?}");
        }
        sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

fn compile(source: &str, output: &Path, extra: &[&str]) {
    let mut cc = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()));
    cc.args(["-O2", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(output)
        .arg(repo().join(source))
        .args(extra);
    let out = run(cc, Duration::from_secs(120));
    assert!(
        out.status.success(),
        "{source} does not compile:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The p50 and p99 of a ping-pong's "LABEL: p50 N ns, p99 N ns" line.
fn percentiles(stdout: &str) -> (u64, u64) {
    let line = stdout.lines().last().unwrap_or_default();
    let number = |mark: &str| -> u64 {
        let rest = line
            .split(mark)
            .nth(1)
            .unwrap_or_else(|| panic!("no {mark:?} in {line:?}"));
        rest.split(" ns")
            .next()
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no number after {mark:?} in {line:?}"))
    };
    (number("p50 "), number("p99 "))
}

/// `NAME: N calls, median M ns, p90 P ns` from a syscall_timing report: (N, M, P).
fn series(report: &str, name: &str) -> (u64, u64, u64) {
    let line = report
        .lines()
        .find(|l| l.starts_with(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("no {name:?} series in:\n{report}"));
    let words: Vec<&str> = line[name.len() + 1..].split_whitespace().collect();
    let number = |i: usize| words.get(i).and_then(|w| w.parse::<u64>().ok());
    match (number(0), number(3), number(6)) {
        (Some(count), Some(median), Some(p90)) => (count, median, p90),
        _ => panic!("malformed series line {line:?}"),
    }
}

#[test]
fn udp_pingpong_measures_every_mode_and_syscall_timing_counts_its_calls() {
    let dir = scratch("udp");
    let pingpong = dir.join("udp_pingpong");
    let timing = dir.join("syscall_timing.so");
    compile("tools/udp_pingpong.c", &pingpong, &[]);
    compile(
        "tools/syscall_timing.c",
        &timing,
        &["-shared", "-fPIC", "-ldl"],
    );

    for mode in 0..=4 {
        let reports = dir.join(format!("mode{mode}"));
        fs::create_dir_all(&reports).unwrap();
        let mut command = Command::new(&pingpong);
        command
            .arg(mode.to_string())
            .env("PINGPONG_ROUNDS", ROUNDS.to_string())
            .env("LD_PRELOAD", &timing)
            .env("SYSCALL_TIMING_DIR", &reports);
        let out = run(command, Duration::from_secs(120));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "mode {mode}: {out:?}");
        assert!(stdout.contains(&format!("mode {mode} (")), "{stdout}");
        let (p50, p99) = percentiles(&stdout);
        assert!(p50 > 0 && p99 >= p50, "mode {mode}: {stdout}");

        // The timing pinger writes the report; the echoer leaves by _exit and writes none.
        let files: Vec<_> = fs::read_dir(&reports).unwrap().flatten().collect();
        assert_eq!(files.len(), 1, "mode {mode}: one report expected");
        let report = fs::read_to_string(files[0].path()).unwrap();
        let all = ROUNDS + WARMUP;
        assert_eq!(series(&report, "sendto").0, all, "{report}");
        assert_eq!(series(&report, "receive, datagram").0, all, "{report}");
        // Every send but the first follows a receive that returned the answer before it.
        let (turns, median, p90) = series(&report, "datagram received -> next sendto");
        assert_eq!(turns, all - 1, "{report}");
        assert!(median > 0 && p90 >= median, "{report}");
        if mode == 3 {
            // The draining read: at least one empty read after every datagram.
            assert!(series(&report, "receive, empty").0 >= all, "{report}");
        }
    }
}

#[test]
fn uring_pingpong_builds_where_liburing_is_installed() {
    if !Path::new("/usr/include/liburing.h").exists() {
        println!("SKIPPED: liburing-dev is not installed (tools/uring_pingpong.c needs it)");
        return;
    }
    let dir = scratch("uring");
    let pingpong = dir.join("uring_pingpong");
    compile("tools/uring_pingpong.c", &pingpong, &["-luring"]);

    let out = run(Command::new(&pingpong), Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(2), "no MODE is a usage error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage"));
    let mut command = Command::new(&pingpong);
    command.arg("0").env("PINGPONG_ROUNDS", "12x");
    let out = run(command, Duration::from_secs(30));
    assert_eq!(
        out.status.code(),
        Some(2),
        "a bad PINGPONG_ROUNDS is refused"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("PINGPONG_ROUNDS must be"));

    // Mode 0 is the recvfrom reference and needs no io_uring from the kernel.
    let mut command = Command::new(&pingpong);
    command.arg("0").env("PINGPONG_ROUNDS", ROUNDS.to_string());
    let out = run(command, Duration::from_secs(120));
    assert!(out.status.success(), "{out:?}");
    let (p50, p99) = percentiles(&String::from_utf8_lossy(&out.stdout));
    assert!(p50 > 0 && p99 >= p50);
}
