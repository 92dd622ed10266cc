//! `parsecnet console --exec "net.master ...; servers"` prints the server list (it used to print
//! only "fetching..." and exit): against a real `parsecnet masterserver` on 127.0.0.1 with a
//! server registered, the reply holds the list once; against a stand-in masterserver slower
//! than `servers` waits, the reply says so and the list is printed when it arrives, before the
//! program exits; an unreachable masterserver is a one-line error and exit status 1.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

fn console(script: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_parsecnet"))
        .args(["console", "--exec", script])
        .env("PARSEC_NET_LOG", "off")
        .output()
        .expect("parsecnet runs")
}

/// `parsecnet masterserver` on 127.0.0.1, any free port; killed when dropped.
struct Master {
    child: Child,
    addr: SocketAddr,
}

impl Master {
    fn start() -> Master {
        let mut child = Command::new(env!("CARGO_BIN_EXE_parsecnet"))
            .args([
                "masterserver",
                "--bind",
                "127.0.0.1",
                "--port",
                "0",
                "--no-http",
            ])
            .env("PARSEC_NET_LOG", "off")
            .stdout(Stdio::piped())
            .spawn()
            .expect("parsecnet masterserver runs");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        // "masterserver listening on TCP 127.0.0.1:PORT (at most 256 servers)"
        let addr = line
            .split_whitespace()
            .nth(4)
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("no address in {line:?}"));
        Master { child, addr }
    }
}

impl Drop for Master {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn exec_servers_prints_the_list() {
    let master = Master::start();
    let mut server = TcpStream::connect(master.addr).unwrap();
    server
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    server
        .write_all(
            b"version: 1.0 join me: Gamma Quadrant os: linux maxplayers: 8 \
              url: http://gamma.example/ kind: gameserver port: 6581 udp: 6522\n\
              players: 2 max: 8\n",
        )
        .unwrap();
    let mut reader = BufReader::new(&server);
    for expected in ["join accepted\n", "players acknowledged.\n"] {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert_eq!(line, expected);
    }

    let out = console(&format!("net.master {}; servers", master.addr));
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(&format!("1 server listed by {}:", master.addr)),
        "{text}"
    );
    let row = text
        .lines()
        .find(|l| l.starts_with("Gamma Quadrant "))
        .unwrap_or_else(|| panic!("no server line in {text}"));
    for field in ["2/8", "127.0.0.1:6581", "http://gamma.example/"] {
        assert!(row.contains(field), "{field}: {row}");
    }
    assert_eq!(
        text.matches("Gamma Quadrant").count(),
        1,
        "the list once, not again as the event: {text}"
    );
}

#[test]
fn exec_servers_prints_a_slow_list_when_it_arrives() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let slow = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut request = String::new();
        BufReader::new(&stream).read_line(&mut request).unwrap();
        std::thread::sleep(Duration::from_millis(2500));
        (&stream)
            .write_all(
                b"server: ip: 192.0.2.9 port: 6582 kind: slotserver udp: 0 players: 1 max: 4 \
                  os: linux url: - name: Slowpoke\nend of list\n",
            )
            .unwrap();
        request
    });
    let out = console(&format!("net.master {addr}; servers"));
    let text = stdout(&out);
    assert_eq!(slow.join().unwrap(), "list servers\n");
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(&format!("no answer from {addr} within 2 s; still fetching")),
        "{text}"
    );
    assert!(text.contains("* server list: 1 server"), "{text}");
    assert!(text.contains("Slowpoke") && text.contains("1/4"), "{text}");
}

#[test]
fn exec_servers_with_no_masterserver_listening_fails_in_one_line() {
    let dead = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let out = console(&format!("net.master {dead}; servers"));
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let error = text.lines().last().unwrap();
    assert!(
        error.starts_with(&format!("servers: no list from masterserver {dead}: ")),
        "{text}"
    );
}

#[test]
fn a_server_registered_with_the_design_join_line_is_listed_at_its_ip_and_connect_uses_the_default_port(
) {
    let master = Master::start();
    let mut server = TcpStream::connect(master.addr).unwrap();
    server
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    // Exactly the design's line: no ` port:` extension.
    server
        .write_all(
            b"version: 1.0 join me: Old Timer os: linux maxplayers: 8 url: http://old.example/\n",
        )
        .unwrap();
    let mut line = String::new();
    BufReader::new(&server).read_line(&mut line).unwrap();
    assert_eq!(line, "join accepted\n");

    let out = console(&format!(
        "net.master {}; servers; net.subsys gameserver; connect 127.0.0.1",
        master.addr
    ));
    let text = stdout(&out);
    let row = text
        .lines()
        .find(|l| l.starts_with("Old Timer "))
        .unwrap_or_else(|| panic!("no server line in {text}"));
    assert!(row.contains("  127.0.0.1  "), "the IP alone: {row}");
    assert!(!text.contains("127.0.0.1:0"), "{text}");
    assert!(
        text.contains("(an address without a port: that server did not say its port;"),
        "{text}"
    );
    // What the note says: `connect IP` goes to the protocol's default port.
    assert!(
        text.contains("connecting to the gameserver at 127.0.0.1:6581"),
        "{text}"
    );
}
