//! `c/server_browser.c`: a C game lists servers through `NET_FetchServerList` while its frame
//! loop keeps running. Two masterservers (small stand-ins in this test that speak the
//! documented `list servers` extension; one answers only after 400 ms) and one address where
//! nothing listens: the program must run many frames before `NET_EVENT_SERVER_LIST` arrives,
//! get the merged list (a server both masterservers list appears once) with every field, and
//! the unreachable masterserver named in the event's text. Then the console's `servers`, typed
//! twice through `NET_ConsoleExec` against a third stand-in, must reply with its list both
//! times. Run as built and under AddressSanitizer.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::process::Command;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parsec_net_ffi_tests::process::{run, run_asan, Output};
use parsec_net_ffi_tests::Build;

const TIMEOUT: Duration = Duration::from_secs(60);

/// A stand-in masterserver that answers one `list servers` with `lines` after `delay`.
fn fake_master(
    lines: Vec<String>,
    delay: Duration,
) -> (SocketAddr, JoinHandle<Result<(), String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address");
    listener.set_nonblocking(true).expect("non-blocking");
    let thread = std::thread::spawn(move || {
        let deadline = Instant::now() + TIMEOUT;
        let (stream, _) = loop {
            match listener.accept() {
                Ok(pair) => break pair,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if Instant::now() > deadline {
                        return Err("nobody connected".to_string());
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(e.to_string()),
            }
        };
        stream.set_nonblocking(false).map_err(|e| e.to_string())?;
        stream
            .set_read_timeout(Some(TIMEOUT))
            .map_err(|e| e.to_string())?;
        let mut reader = BufReader::new(stream.try_clone().map_err(|e| e.to_string())?);
        let mut request = String::new();
        reader.read_line(&mut request).map_err(|e| e.to_string())?;
        if request != "list servers\n" {
            return Err(format!("unexpected request {request:?}"));
        }
        std::thread::sleep(delay);
        let mut stream = stream;
        for line in lines {
            stream
                .write_all(format!("{line}\n").as_bytes())
                .map_err(|e| e.to_string())?;
        }
        stream
            .write_all(b"end of list\n")
            .map_err(|e| e.to_string())?;
        Ok(())
    });
    (addr, thread)
}

fn line(name: &str, ip: &str, port: u16, kind: &str, udp: u16, players: u16, max: u16) -> String {
    format!(
        "server: ip: {ip} port: {port} kind: {kind} udp: {udp} players: {players} max: {max} os: linux x86 url: http://{}.example/ name: {name}",
        name.to_lowercase().replace(' ', "-")
    )
}

fn value<'a>(out: &'a Output, key: &str) -> &'a str {
    out.stdout
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("no '{key}' line\n{}", out.transcript()))
}

fn check_browser(program: &std::path::Path, asan: bool) {
    let (slow, slow_thread) = fake_master(
        vec![
            line(
                "Gamma Quadrant",
                "192.0.2.10",
                6581,
                "gameserver",
                6522,
                3,
                16,
            ),
            line("Slot Machine", "192.0.2.11", 6582, "slotserver", 0, 0, 8),
        ],
        Duration::from_millis(400),
    );
    let (fast, fast_thread) = fake_master(
        vec![
            line("Gamma Again", "192.0.2.10", 6581, "gameserver", 6522, 3, 16),
            line("Delta", "2001:db8::7", 7000, "gameserver", 7001, 16, 16),
            "server: this line is broken".to_string(),
        ],
        Duration::ZERO,
    );
    let (console_master, console_thread) = fake_master(
        vec![line(
            "Console Pick",
            "192.0.2.12",
            6582,
            "slotserver",
            0,
            1,
            8,
        )],
        Duration::from_millis(50),
    );
    let dead = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut command = Command::new(program);
    command.args([slow.to_string(), fast.to_string(), dead.to_string()]);
    command.args(["--console", &console_master.to_string(), "Console Pick"]);
    let out = if asan {
        run_asan(command, TIMEOUT)
    } else {
        run(command, TIMEOUT)
    };
    out.assert_success("server_browser");
    let summary = value(&out, "server_browser: ");
    assert!(summary.ends_with(" 0 failed"), "{}", out.transcript());
    assert_eq!(slow_thread.join().unwrap(), Ok(()));
    assert_eq!(fast_thread.join().unwrap(), Ok(()));
    assert_eq!(console_thread.join().unwrap(), Ok(()));

    let frames: u64 = value(&out, "FRAMES_BEFORE_EVENT ").parse().unwrap();
    assert!(
        frames >= 20,
        "the frame loop ran only {frames} frames while the slow masterserver took 400 ms"
    );
    let event = value(&out, "EVENT ");
    assert!(
        event.starts_with("count=3 player_id=-1 data_len=0 errors="),
        "{event}"
    );
    assert!(
        event.contains(&dead.to_string()),
        "the dead masterserver is named: {event}"
    );
    assert_eq!(value(&out, "TOTAL "), "3");
    let servers: Vec<&str> = out
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("SERVER "))
        .collect();
    assert_eq!(
        servers,
        [
            "Gamma Quadrant|192.0.2.10:6581|gameserver|3/16|6581|6522|linux x86|http://gamma-quadrant.example/",
            "Slot Machine|192.0.2.11:6582|slotserver|0/8|6582|0|linux x86|http://slot-machine.example/",
            "Delta|[2001:db8::7]:7000|gameserver|16/16|7000|7001|linux x86|http://delta.example/",
        ],
        "{}",
        out.transcript()
    );
    println!(
        "server_browser{}: {frames} frames ran before the list arrived; {summary}",
        if asan { " (AddressSanitizer)" } else { "" }
    );
}

#[test]
fn a_c_game_lists_servers_while_its_frame_loop_runs() {
    let program = Build::c("c/server_browser.c").build();
    check_browser(&program, false);
}

#[test]
fn a_c_game_lists_servers_under_asan() {
    let program = Build::c("c/server_browser.c").asan().build();
    check_browser(&program, true);
}
