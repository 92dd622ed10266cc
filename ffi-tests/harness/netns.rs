//! A small private LAN made of Linux network namespaces, for tests that need real broadcast
//! between separate hosts: one namespace per host, each with an `eth0` (a veth pair) plugged into
//! a bridge that lives in a namespace of its own, so nothing is added to the host's network.
//! Addresses are `10.X.Y.1 ..` in a /24 whose X.Y come from the test's process id.
//!
//! Needs root and `ip` (iproute2); [`unavailable`] says why a test must skip. Dropping the LAN
//! (also while unwinding from a failed assertion) kills whatever still runs in its namespaces
//! and deletes them.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::process::run;

/// The longest one `ip` command may take.
const IP_TIMEOUT: Duration = Duration::from_secs(20);

/// Whether `name arg` runs and succeeds here (a tool such as tshark is installed).
pub fn tool_works(name: &str, arg: &str) -> bool {
    Command::new(name)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether a test that needs `what` (such as "root for network namespaces") is skipped here
/// because namespaces cannot be used; if so it prints `SKIPPED: needs WHAT (why)`.
pub fn skip_without(what: &str) -> bool {
    match unavailable() {
        Some(why) => {
            println!("SKIPPED: needs {what} ({why})");
            true
        }
        None => false,
    }
}

/// Why namespaces cannot be used here, or `None` if they can (root, and `ip netns` works).
pub fn unavailable() -> Option<String> {
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    if uid != "0" {
        return Some(format!("not root (id -u says {uid:?})"));
    }
    match Command::new("ip").args(["netns", "list"]).output() {
        Ok(out) if out.status.success() => None,
        Ok(out) => Some(format!(
            "ip netns list failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Some(format!("cannot run ip: {e}")),
    }
}

/// Run `ip ARGS`; the error names the command and what it printed.
fn ip(args: &[&str]) -> Result<(), String> {
    let mut command = Command::new("ip");
    command.args(args);
    let out = run(command, IP_TIMEOUT);
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {} failed ({}): {}",
            args.join(" "),
            out.status,
            out.stderr.trim()
        ))
    }
}

/// The private LAN.
pub struct Lan {
    bridge: String,
    hosts: Vec<String>,
    /// Every namespace created so far (for cleanup, also of a half-built LAN).
    created: Vec<String>,
    subnet: [u8; 3],
}

impl Lan {
    /// Build a LAN of `hosts` hosts (at most 250). Panics, after removing what it made, if an
    /// `ip` command fails.
    pub fn create(hosts: usize) -> Lan {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        assert!((1..=250).contains(&hosts));
        let pid = std::process::id();
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let prefix = format!("pnffi-{pid}-{n}");
        let mut lan = Lan {
            bridge: format!("{prefix}-br"),
            hosts: (1..=hosts).map(|i| format!("{prefix}-h{i}")).collect(),
            created: Vec::new(),
            subnet: [10, (pid >> 8) as u8, (pid as u8).wrapping_add(n as u8)],
        };
        if let Err(message) = lan.build() {
            panic!("building the namespace LAN failed: {message}");
        }
        lan
    }

    fn build(&mut self) -> Result<(), String> {
        let bridge = self.bridge.clone();
        self.add_namespace(&bridge)?;
        ip(&["-n", &bridge, "link", "set", "lo", "up"])?;
        ip(&["-n", &bridge, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &bridge, "link", "set", "br0", "up"])?;
        for i in 0..self.hosts.len() {
            let host = self.hosts[i].clone();
            let port = format!("v{i}");
            let address = format!("{}/24", self.address(i));
            self.add_namespace(&host)?;
            ip(&[
                "-n", &bridge, "link", "add", &port, "type", "veth", "peer", "name", "eth0",
                "netns", &host,
            ])?;
            ip(&["-n", &bridge, "link", "set", &port, "master", "br0"])?;
            ip(&["-n", &bridge, "link", "set", &port, "up"])?;
            ip(&["-n", &host, "addr", "add", &address, "dev", "eth0"])?;
            ip(&["-n", &host, "link", "set", "eth0", "up"])?;
            ip(&["-n", &host, "link", "set", "lo", "up"])?;
        }
        Ok(())
    }

    fn add_namespace(&mut self, name: &str) -> Result<(), String> {
        ip(&["netns", "add", name])?;
        self.created.push(name.to_string());
        Ok(())
    }

    /// The namespace of host `i` (0-based).
    pub fn namespace(&self, i: usize) -> &str {
        &self.hosts[i]
    }

    /// How many hosts the LAN has.
    pub fn hosts(&self) -> usize {
        self.hosts.len()
    }

    /// The namespace holding the bridge and the LAN's end of every host's veth.
    pub fn bridge_namespace(&self) -> &str {
        &self.bridge
    }

    /// The name of host `i`'s veth end in [`Lan::bridge_namespace`] (a port of `br0`).
    pub fn bridge_port(&self, i: usize) -> String {
        format!("v{i}")
    }

    /// The IPv4 address of host `i` (0-based): `10.X.Y.(i + 1)`.
    pub fn address(&self, i: usize) -> String {
        let [a, b, c] = self.subnet;
        format!("{a}.{b}.{c}.{}", i + 1)
    }

    /// The subnet's broadcast address, `10.X.Y.255`.
    pub fn broadcast(&self) -> String {
        let [a, b, c] = self.subnet;
        format!("{a}.{b}.{c}.255")
    }

    /// The MAC address of host `i`'s `eth0` as `ip` prints it (lower case, with colons).
    pub fn eth0_mac(&self, i: usize) -> String {
        let out = Command::new("ip")
            .args(["-n", self.namespace(i), "-br", "link", "show", "eth0"])
            .output()
            .expect("ip runs");
        let text = String::from_utf8_lossy(&out.stdout);
        text.split_whitespace()
            .nth(2)
            .unwrap_or_else(|| panic!("no MAC in {text:?}"))
            .to_lowercase()
    }

    /// tshark on the bridge (`br0`) writing what the capture `filter` lets through into `file`
    /// (pcap), with `options` before the filter; returns once it has started capturing (its
    /// file has a header), or kills it and panics after `timeout`.
    pub fn start_bridge_capture(
        &self,
        options: &[&str],
        filter: &str,
        file: &Path,
        timeout: Duration,
    ) -> Child {
        let _ = std::fs::remove_file(file);
        let mut tshark = Command::new("ip")
            .args([
                "netns",
                "exec",
                self.bridge_namespace(),
                "tshark",
                "-i",
                "br0",
            ])
            .args(options)
            .args(["-f", filter, "-F", "pcap", "-w"])
            .arg(file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("tshark starts");
        let deadline = Instant::now() + timeout;
        while std::fs::metadata(file).map_or(true, |m| m.len() == 0) {
            if Instant::now() > deadline {
                let _ = tshark.kill();
                let _ = tshark.wait();
                panic!("tshark did not start capturing on the bridge");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        tshark
    }

    /// A command running `program` in host `i`'s namespace (`ip netns exec NS program`, which
    /// execs the program in place, so killing the child kills the program).
    pub fn command(&self, i: usize, program: &Path) -> Command {
        let mut command = Command::new("ip");
        command
            .args(["netns", "exec", self.namespace(i)])
            .arg(program);
        command
    }
}

impl Drop for Lan {
    fn drop(&mut self) {
        for name in self.created.iter().rev() {
            // Anything still running in a namespace of ours was started by this test.
            if let Ok(out) = Command::new("ip").args(["netns", "pids", name]).output() {
                for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                    let _ = Command::new("kill").args(["-KILL", pid]).status();
                }
            }
            // Not `ip()`: a drop must not panic (it may run while unwinding).
            match Command::new("ip").args(["netns", "del", name]).output() {
                Ok(out) if out.status.success() => {}
                Ok(out) => eprintln!(
                    "cleanup: ip netns del {name}: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
                Err(e) => eprintln!("cleanup: ip netns del {name}: {e}"),
            }
        }
    }
}
