//! A game killed (SIGKILL, a crash) while recording leaves a demo file that holds everything up
//! to its last frame: `parsecnet console` records a gameserver game, is killed once it has
//! printed the connection, and the file plays those events and says its end record is missing. (The
//! recorder buffered its records and wrote them only at `stop`, so such a file was empty.)

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use net_core::demo::{decode_demo, DemoItem};
use net_core::session::GameEvent;

/// Only a hung run waits this long for a line.
const LIMIT: Duration = Duration::from_secs(30);

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn gameserver() -> (Killed, SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_parsecnet"))
        .args(["gameserver", "--bind", "127.0.0.1", "--port", "0"])
        .args(["--no-http", "--udp-port", "0", "--name", "rec"])
        .env("PARSEC_NET_LOG", "off")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("parsecnet runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let tcp = line
        .split("on TCP ")
        .nth(1)
        .and_then(|rest| rest.split([',', ' ']).next())
        .and_then(|a| a.parse().ok());
    let server = Killed(child);
    let tcp = tcp.unwrap_or_else(|| panic!("no address in {line:?}"));
    (server, tcp)
}

#[test]
fn a_console_killed_while_recording_leaves_a_demo_up_to_its_last_frame() {
    let (_server, at) = gameserver();
    let path = std::env::temp_dir().join(format!("pnet-killed-{}.demo", std::process::id()));
    let _ = std::fs::remove_file(&path);

    let mut child = Command::new(env!("CARGO_BIN_EXE_parsecnet"))
        .arg("console")
        .env("PARSEC_NET_LOG", "off")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("parsecnet console runs");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut game = Killed(child);
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    for command in [
        format!("record {}", path.display()),
        "net.subsys gameserver".to_string(),
        "net.port 0".to_string(),
        "name rita".to_string(),
        format!("connect {at}"),
    ] {
        writeln!(stdin, "{command}").unwrap();
    }
    // The console prints a frame's events after the frame: once it printed the connection and
    // the server's welcome, the frame that delivered them has ended.
    let mut seen = Vec::new();
    let deadline = Instant::now() + LIMIT;
    while !(seen.iter().any(|l| l == "* connected: you are player 0")
        && seen.iter().any(|l: &String| l.starts_with("[server] ")))
    {
        match lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => seen.push(line),
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                panic!("the game did not connect; it said:\n{}", seen.join("\n"))
            }
        }
    }
    game.0.kill().expect("SIGKILL");
    let _ = game.0.wait();

    let bytes = std::fs::read(&path).expect("the file is there");
    let _ = std::fs::remove_file(&path);
    let contents = decode_demo(&bytes).unwrap_or_else(|e| {
        panic!(
            "the file ({} bytes) is not a demo: {}",
            bytes.len(),
            e.message
        )
    });
    let broken = contents.broken.expect("no end record");
    assert!(
        broken.reason.contains("without an end record"),
        "{}",
        broken.reason
    );
    assert!(
        contents
            .items
            .iter()
            .any(|(_, item)| *item == DemoItem::Event(GameEvent::Connected { slot: 0 })),
        "{:?}",
        contents.items
    );
    assert!(
        contents
            .items
            .iter()
            .any(|(_, item)| matches!(item, DemoItem::Event(GameEvent::ServerMessage { .. }))),
        "{:?}",
        contents.items
    );
}
