//! The `parsecnet` servers (`slotserver`, `gameserver`) as child processes: started with the
//! options a test gives (ports 0, bound to 127.0.0.1), their bound addresses read from the line
//! they print on start, stopped with SIGTERM at the end (or killed on drop), and the sockets the
//! process holds read from `/proc`, which tells whether it has any UDP socket at all.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::live::Running;
use crate::paths::{paths, stale_binary};
use crate::process::Output;

/// How long a server may take to print the line with its addresses.
const START_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a server may take to stop after SIGTERM.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// `target/<profile>/parsecnet`, or a panic saying how to build it when it is missing or
/// older than the code it is built from.
pub fn parsecnet() -> PathBuf {
    let path = paths().profile_dir.join("parsecnet");
    if !path.is_file() {
        panic!(
            "the parsecnet binary is missing ({}): build it with `cargo build --workspace` \
             before `cargo test -p parsec-net-ffi-tests` (a test-only build does not make it)",
            path.display()
        );
    }
    let repo = paths()
        .source_dir
        .parent()
        .expect("ffi-tests is in the repository");
    let sources = [
        "src",
        "net-core/src",
        "Cargo.toml",
        "net-core/Cargo.toml",
        "build.rs",
    ]
    .map(|p| repo.join(p));
    if let Some(reason) = stale_binary(&path, &sources) {
        panic!(
            "{} {reason}: run `cargo build --workspace` before the tests (a test-only build \
             does not rebuild it, and the test would run the old program)",
            path.display()
        );
    }
    path
}

/// A `c/peer_game.c` command (`program`) for a game of `server` on loopback: `--name NAME`,
/// `flags`, the console lines `net.udp.bind 127.0.0.1`, `net.udp.ipv6 0` (with `trace` also
/// `net.trace.bind 127.0.0.1`, `net.trace.ipv6 0`), `net.port 0` and `net.subsys KIND` as
/// `--exec` lines, `--peer` the server's TCP address and `--duration` (the time to meet the
/// others). A test adds its own options (further `--exec` lines run after these).
pub fn game_command(
    program: &Path,
    name: &str,
    flags: &[&str],
    kind: &str,
    trace: bool,
    server: &Server,
    duration: Duration,
) -> Command {
    let mut command = Command::new(program);
    command.args(["--name", name]).args(flags);
    let subsys = format!("net.subsys {kind}");
    let mut lines = vec!["net.udp.bind 127.0.0.1", "net.udp.ipv6 0"];
    if trace {
        lines.extend(["net.trace.bind 127.0.0.1", "net.trace.ipv6 0"]);
    }
    lines.extend(["net.port 0", &subsys]);
    for line in lines {
        command.args(["--exec", line]);
    }
    command.args(["--peer", &server.tcp.to_string()]);
    command.args(["--duration", &duration.as_millis().to_string()]);
    command
}

/// A running server.
pub struct Server {
    process: Running,
    /// The text protocol's TCP address.
    pub tcp: SocketAddr,
    /// The game packets' UDP address (a gameserver's), if it printed one.
    pub udp: Option<SocketAddr>,
    /// The line it printed on start.
    pub announce: String,
}

impl Server {
    /// Start a `slotserver` or `gameserver` named `name` on 127.0.0.1 with ports picked by the
    /// system (TCP, and a gameserver's UDP), no HTTP endpoint, and `extra` options.
    pub fn start_on_loopback(kind: &str, name: &str, extra: &[&str]) -> Server {
        let mut args = vec![
            "--port",
            "0",
            "--no-http",
            "--bind",
            "127.0.0.1",
            "--name",
            name,
        ];
        if kind == "gameserver" {
            args.extend(["--udp-port", "0"]);
        }
        args.extend(extra);
        Server::start(kind, &args)
    }

    /// Start `parsecnet KIND ARGS` and wait for its "KIND 'NAME' listening on TCP A:P[, UDP
    /// A:P]..." line.
    pub fn start(kind: &str, args: &[&str]) -> Server {
        let mut command = Command::new(parsecnet());
        command.arg(kind).args(args);
        // Quiet but not silent: warnings and errors still reach the failure output.
        command.env("PARSEC_NET_LOG", "info");
        let process = Running::spawn(kind, command, false);
        let prefix = format!("{kind} '");
        let Some(at) = process.wait_for_line(0, START_TIMEOUT, |l| {
            l.starts_with(&prefix) && l.contains(" listening on TCP ")
        }) else {
            panic!(
                "{kind} did not print its addresses within {START_TIMEOUT:?}\n{}",
                process.finish(STOP_TIMEOUT).transcript()
            );
        };
        let announce = process.lines_from(at).remove(0);
        let address_after = |marker: &str| -> Option<SocketAddr> {
            let rest = &announce[announce.find(marker)? + marker.len()..];
            let end = rest.find([',', ' ']).unwrap_or(rest.len());
            rest[..end].parse().ok()
        };
        let Some(tcp) = address_after(" TCP ") else {
            panic!("{kind}: no TCP address in {announce:?}");
        };
        let udp = address_after(" UDP ");
        Server {
            process,
            tcp,
            udp,
            announce,
        }
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Whether the server is still running.
    pub fn is_running(&mut self) -> bool {
        !self.process.has_exited()
    }

    /// What it printed on stdout so far.
    pub fn stdout(&self) -> String {
        self.process.stdout()
    }

    /// The sockets of the server process in the kernel table `table` (`udp`, `udp6`, `tcp`,
    /// `tcp6`), as `(local address, inode)`.
    pub fn sockets(&self, table: &str) -> Vec<(String, u64)> {
        sockets_of(self.pid(), table)
    }

    /// Stop it with SIGTERM (a graceful stop) and wait for it to exit; everything it printed.
    pub fn stop(self) -> Output {
        self.process.signal("TERM");
        self.process.finish(STOP_TIMEOUT)
    }
}

/// The inodes of the sockets process `pid` holds open (from `/proc/PID/fd`).
pub fn socket_inodes(pid: u32) -> Vec<u64> {
    let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|target| {
            let text = target.to_string_lossy().into_owned();
            text.strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .collect()
}

/// The sockets of process `pid` that appear in the kernel table `table` of its network
/// namespace (`/proc/PID/net/TABLE`), as `(local address in the table's hex form, inode)`.
///
/// The table is read three times and the results joined: the kernel hands it out a page at a
/// time and finds where it left off by counting lines, so a socket closed elsewhere between two
/// pages makes the next page skip a line (another test's sockets come and go meanwhile).
pub fn sockets_of(pid: u32, table: &str) -> Vec<(String, u64)> {
    let mine = socket_inodes(pid);
    let mut found: Vec<(String, u64)> = Vec::new();
    for _ in 0..3 {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(Ok(inode))) = (fields.get(1), fields.get(9).map(|f| f.parse()))
            else {
                continue;
            };
            if mine.contains(&inode) && !found.iter().any(|(_, known)| *known == inode) {
                found.push((local.to_string(), inode));
            }
        }
    }
    found
}
