//! The `parsecnet` program as the outside tests run it: a server whose ports the system chose,
//! read from the line it prints when it listens, and a `parsecnet console` fed through a pipe,
//! whose output lines arrive on a channel. Both are killed when dropped.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// Only a hung run waits this long for a line or an answer.
pub const LIMIT: Duration = Duration::from_secs(30);

/// The arguments of a slotserver on 127.0.0.1, on a port the system chooses, without HTTP.
pub const LOOPBACK_SLOTSERVER: &[&str] = &[
    "slotserver",
    "--bind",
    "127.0.0.1",
    "--port",
    "0",
    "--no-http",
];

/// `parsecnet slotserver` on 127.0.0.1, on a port the system chooses, without HTTP; the caller
/// adds the rest (its log level, pipes, more arguments).
pub fn loopback_slotserver() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_parsecnet"));
    command.args(LOOPBACK_SLOTSERVER);
    command
}

/// A `parsecnet` server (`masterserver`, `slotserver`, `gameserver`); killed when dropped.
pub struct ServerProcess {
    child: Child,
    /// Where its TCP protocol listens (an unspecified bind address is given as 127.0.0.1).
    pub tcp: SocketAddr,
    /// Where its HTTP lists are served, unless it runs with `--no-http`.
    pub http: Option<SocketAddr>,
    /// A gameserver's UDP game port.
    pub udp: Option<SocketAddr>,
}

impl ServerProcess {
    /// `parsecnet KIND ARGS`, with its log off; returns once it printed where it listens
    /// ("KIND ['NAME' ]listening on TCP ADDR[, UDP ...], ... http://ADDR/..."; a server with
    /// `--master` first says where it registers).
    pub fn start(kind: &str, args: &[&str]) -> ServerProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_parsecnet"))
            .arg(kind)
            .args(args)
            .env("PARSEC_NET_LOG", "off")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("parsecnet runs");
        let mut reader = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while line.is_empty() || line.starts_with("registering") {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
        }
        let tcp = address_after(&line, "on TCP ");
        let http = address_after(&line, "http://");
        let udp = address_after(&line, "UDP ");
        let Some(tcp) = tcp else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no TCP address in {line:?}");
        };
        ServerProcess {
            child,
            tcp,
            http,
            udp,
        }
    }

    /// `parsecnet gameserver` on 127.0.0.1, its TCP and UDP ports chosen by the system, with
    /// `more` arguments.
    pub fn loopback_gameserver(more: &[&str]) -> ServerProcess {
        let base = ["--bind", "127.0.0.1", "--port", "0", "--udp-port", "0"];
        ServerProcess::start("gameserver", &[&base[..], more].concat())
    }

    /// `GET path` over HTTP/1.0: the head and the body.
    pub fn get(&self, path: &str) -> (String, String) {
        let mut stream = TcpStream::connect(self.http.expect("the server serves HTTP")).unwrap();
        stream.set_read_timeout(Some(LIMIT)).unwrap();
        write!(stream, "GET {path} HTTP/1.0\r\nHost: test\r\n\r\n").unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
        (head.to_string(), body.to_string())
    }
}

impl ServerProcess {
    /// Send it SIGTERM (a graceful stop) and wait until it has exited.
    pub fn terminate(&mut self) {
        send_signal(&self.child, "-TERM");
        let _ = self.child.wait();
    }

    /// Stop it (SIGSTOP) or let it go on (SIGCONT): `signal("-STOP")`.
    pub fn signal(&self, signal: &str) {
        send_signal(&self.child, signal);
    }

    /// End it at once, as a crash would (SIGKILL).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The address printed after `marker` in `line`; a host the tests cannot dial (`[::]`,
/// `0.0.0.0`, `localhost`) is given as 127.0.0.1.
fn address_after(line: &str, marker: &str) -> Option<SocketAddr> {
    let text = line.split(marker).nth(1)?.split([',', ' ', '/']).next()?;
    let (host, port) = text.rsplit_once(':')?;
    let port: u16 = port.trim().parse().ok()?;
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let ip = match host.trim_matches(['[', ']']).parse::<IpAddr>() {
        Ok(ip) if ip.is_unspecified() => loopback,
        Ok(ip) => ip,
        Err(_) if host == "localhost" => loopback,
        Err(_) => return None,
    };
    Some(SocketAddr::new(ip, port))
}

/// `parsecnet console` reading commands from a pipe; killed when dropped.
pub struct ConsoleProcess {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    /// Every line it printed so far (for the failure messages).
    pub seen: Vec<String>,
}

impl ConsoleProcess {
    pub fn start() -> ConsoleProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_parsecnet"))
            .arg("console")
            .env("PARSEC_NET_LOG", "off")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("parsecnet console runs");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        ConsoleProcess {
            child,
            stdin,
            lines,
            seen: Vec::new(),
        }
    }

    /// Type `command`.
    pub fn send(&mut self, command: &str) {
        writeln!(self.stdin, "{command}").unwrap();
    }

    /// Wait until the lines printed so far satisfy `done`.
    #[track_caller]
    pub fn wait_until(&mut self, what: &str, done: impl Fn(&[String]) -> bool) {
        let deadline = Instant::now() + LIMIT;
        while !done(&self.seen) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => panic!(
                    "no line {what}; the console said:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }

    /// Wait for a new line that `wanted` accepts and return it.
    #[track_caller]
    pub fn expect(&mut self, what: &str, wanted: impl Fn(&str) -> bool) -> String {
        let from = self.seen.len();
        self.wait_until(what, |seen| seen[from..].iter().any(|l| wanted(l)));
        self.seen[from..]
            .iter()
            .find(|l| wanted(l))
            .cloned()
            .expect("found")
    }

    /// Stop it (SIGSTOP) or let it go on (SIGCONT): `signal("-STOP")`.
    pub fn signal(&self, signal: &str) {
        send_signal(&self.child, signal);
    }

    /// End it at once, as a crash would (SIGKILL).
    pub fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
        let _ = self.child.wait();
    }
}

impl Drop for ConsoleProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `kill SIGNAL PID` (`"-STOP"`, `"-CONT"`, `"-TERM"`) for a child process.
fn send_signal(child: &Child, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill {signal}: {status}");
}
