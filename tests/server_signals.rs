//! The admin guide's signals, on the real `parsecnet slotserver` (127.0.0.1, ports chosen by
//! the system): the first SIGINT or SIGTERM stops it gracefully (here it is waiting for a
//! masterserver's `removing you`), a second one exits at once with status 1 and without the
//! counters of a graceful stop.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::{Child, ChildStdout, ExitStatus, Stdio};
use std::sync::mpsc;

mod support;
use support::processes::loopback_slotserver;

/// A masterserver that accepts the join and never answers `remove me`; sends each line it gets.
fn silent_master() -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut writer = stream.try_clone().unwrap();
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if line.starts_with("version: ") {
                let _ = writer.write_all(b"join accepted\n");
            } else if line.starts_with("players: ") {
                let _ = writer.write_all(b"players acknowledged.\n");
            }
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (addr, rx)
}

/// Reads the server's log until it says it is registered (it has read `join accepted`).
fn wait_registered(child: &mut Child) {
    let mut log = BufReader::new(child.stderr.take().unwrap()).lines();
    loop {
        let line = log
            .next()
            .expect("the log goes on until registered")
            .unwrap();
        if line.contains("registered with masterserver 127.0.0.1:") {
            break;
        }
    }
    // Keep reading so the server never blocks on a full pipe.
    std::thread::spawn(move || log.for_each(drop));
}

/// A slotserver on 127.0.0.1 registered with `master`, its log at info; returns once the log
/// says it is registered, with its standard output.
fn registered_slotserver(master: &str) -> (Child, ChildStdout) {
    let mut child = loopback_slotserver()
        .args(["--master", master])
        .env("PARSEC_NET_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("parsecnet runs");
    wait_registered(&mut child);
    let stdout = child.stdout.take().unwrap();
    (child, stdout)
}

/// Waits for the server to exit; its exit status and every line it printed.
fn wait_printed(mut child: Child, stdout: ChildStdout) -> (ExitStatus, Vec<String>) {
    let status = child.wait().unwrap();
    let printed = BufReader::new(stdout).lines().map(Result::unwrap).collect();
    (status, printed)
}

#[test]
fn a_second_signal_during_the_graceful_stop_exits_at_once_with_status_1() {
    let (master, lines) = silent_master();
    let (child, stdout) = registered_slotserver(&master);
    let next = |what: &str| {
        lines
            .recv_timeout(std::time::Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("the masterserver got no {what}"))
    };
    let join = next("join line");
    assert!(join.starts_with("version: 1.0 join me: parsec"), "{join}");
    // The first signal (SIGINT, Ctrl-C): the server says `remove me` and waits for the reply.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    loop {
        let line = next("remove me");
        if line == "remove me" {
            break;
        }
    }
    // The second one, within the 2 s it waits for `removing you`: out at once.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let (status, printed) = wait_printed(child, stdout);
    assert_eq!(status.code(), Some(1), "{printed:?}");
    assert!(
        printed.iter().all(|l| !l.contains(" stopped;")),
        "a graceful stop's counters: {printed:?}"
    );
    assert!(
        printed[0].contains("listening on TCP 127.0.0.1:"),
        "{printed:?}"
    );
}

#[test]
fn one_signal_stops_gracefully_with_status_0_and_the_counters() {
    let (master, lines) = silent_master();
    let (child, stdout) = registered_slotserver(&master);
    let join = lines
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("a join line");
    assert!(join.starts_with("version: 1.0 join me: parsec"), "{join}");
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let (status, printed) = wait_printed(child, stdout);
    assert_eq!(status.code(), Some(0), "{printed:?}");
    assert!(
        printed
            .iter()
            .any(|l| l.starts_with("slotserver 'parsec' stopped; ")
                && l.contains("master_registrations=1")),
        "{printed:?}"
    );
}
