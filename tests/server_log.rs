//! What an admin reads in a server's log: `parsecnet slotserver` and `parsecnet masterserver`
//! (at the default level, `info`) say who was refused and why for every refusal a client is
//! told about (a full server, a name in use, another protocol version), not only for some of
//! them; `parsecnet gameserver` says in plain words when a joined player sends nothing to its
//! UDP port (a firewall in the way).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A server process on 127.0.0.1, any free port, without HTTP.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start(kind: &str, args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_parsecnet"))
            .args([kind, "--bind", "127.0.0.1", "--port", "0", "--no-http"])
            .args(args)
            .env("PARSEC_NET_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("parsecnet runs");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        // "KIND ['NAME' ]listening on TCP 127.0.0.1:PORT..."
        let addr = line
            .trim_end()
            .split("listening on TCP ")
            .nth(1)
            .and_then(|rest| rest.split([',', ' ']).next())
            .and_then(|a| a.parse().ok());
        let Some(addr) = addr else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no address in {line:?}");
        };
        Server { child, addr }
    }

    /// Send `line` on `stream` and read the one-line reply.
    fn ask(stream: &mut BufReader<TcpStream>, line: &str) -> String {
        stream
            .get_mut()
            .write_all(format!("{line}\n").as_bytes())
            .unwrap();
        let mut reply = String::new();
        stream.read_line(&mut reply).unwrap();
        reply.trim_end().to_string()
    }

    fn connect(&self) -> BufReader<TcpStream> {
        let stream = TcpStream::connect(self.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        BufReader::new(stream)
    }

    /// Stop it (SIGTERM; killed if it has not stopped within 10 s) and return its log.
    fn log(mut self) -> String {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut log = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut log)
            .unwrap();
        log
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn assert_logged(log: &str, expected: &str) {
    assert!(
        log.lines()
            .any(|l| l.contains(" INFO ") && l.contains(expected)),
        "no INFO line with {expected:?} in:\n{log}"
    );
}

#[test]
fn the_slotserver_logs_every_refused_join() {
    let server = Server::start("slotserver", &["--max-players", "2"]);
    let mut sid = server.connect();
    let reply = Server::ask(&mut sid, "version: 1.0 join me: sid os: x");
    assert!(reply.starts_with("join from sid accepted"), "{reply}");
    let mut other = server.connect();
    assert_eq!(
        Server::ask(&mut other, "version: 1.0 join me: sid os: y"),
        "name already taken"
    );
    assert_eq!(
        Server::ask(&mut other, "version: 2.0 join me: future os: y"),
        "server version incompatible"
    );
    let log = server.log();
    assert_logged(
        &log,
        "join of 'sid' from 127.0.0.1 refused: name already taken",
    );
    assert_logged(
        &log,
        "join from 127.0.0.1 refused: server version incompatible (the client speaks version 2.0)",
    );
}

#[test]
fn the_masterserver_logs_every_refused_join() {
    let server = Server::start("masterserver", &["--max-servers", "1"]);
    let mut listed = server.connect();
    let join = |name: &str| format!("version: 1.0 join me: {name} os: x maxplayers: 4 url: -");
    assert_eq!(Server::ask(&mut listed, &join("Alpha")), "join accepted");
    let mut other = server.connect();
    assert_eq!(Server::ask(&mut other, &join("Beta")), "masterserver full");
    assert_eq!(
        Server::ask(
            &mut other,
            "version: 3.1 join me: Gamma os: x maxplayers: 4 url: -"
        ),
        "masterserver version incompatible"
    );
    let log = server.log();
    assert_logged(
        &log,
        "join of 'Beta' from 127.0.0.1 refused: masterserver full",
    );
    assert_logged(
        &log,
        "join from 127.0.0.1 refused: masterserver version incompatible (the server speaks version 3.1)",
    );
}

/// Regression: a player that joined a gameserver over TCP but whose UDP packets never came (a
/// firewall blocking the UDP port) was logged only as `relay: no RE_RESUME from slot 0 in time;
/// sending on`, which tells an admin nothing.
#[test]
fn the_gameserver_says_when_a_joined_player_sends_nothing_over_udp() {
    let server = Server::start("gameserver", &["--udp-port", "0"]);
    let mut sid = server.connect();
    let reply = Server::ask(&mut sid, "version: 1.0 join me: sid os: x");
    assert!(reply.starts_with("join from sid accepted"), "{reply}");
    std::thread::sleep(Duration::from_millis(5_500));
    let log = server.log();
    assert!(
        log.lines().any(|l| l.contains(" WARN ")
            && l.contains("no UDP packet from slot 0 (127.0.0.1:6526) in the 5 s since it joined")
            && l.contains("UDP port")),
        "{log}"
    );
    assert!(!log.contains("RE_RESUME"), "{log}");
}

/// A ban file that changes while the server runs: the log says it was reloaded, with its
/// entries counted in plain words (`1 entry`; it said `1 entries`), and names the player the new
/// list removed.
#[test]
fn a_reloaded_ban_file_is_logged_with_the_player_it_removed() {
    let dir = std::env::temp_dir().join(format!("parsec-ban-log-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bans = dir.join("bans.txt");
    std::fs::write(&bans, "# nobody yet\n").unwrap();
    let server = Server::start("slotserver", &["--ban-file", bans.to_str().unwrap()]);
    let mut sid = server.connect();
    let reply = Server::ask(&mut sid, "version: 1.0 join me: sid os: x");
    assert!(reply.starts_with("join from sid accepted"), "{reply}");
    std::fs::write(&bans, "127.0.0.1   # a test\n").unwrap();
    // The file is checked whenever a client connects: this one is refused at its first line,
    // and sid is removed.
    let mut late = server.connect();
    assert_eq!(
        Server::ask(&mut late, "remove me"),
        "you're banned from this server"
    );
    let log = server.log();
    let _ = std::fs::remove_dir_all(&dir);
    assert_logged(
        &log,
        &format!("ban file {} reloaded: 1 entry", bans.display()),
    );
    assert!(!log.contains("1 entries"), "{log}");
    assert_logged(&log, "'sid' left slot 0 (127.0.0.1): banned");
}
