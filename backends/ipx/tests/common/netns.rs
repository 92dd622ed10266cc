//! The lab the real-traffic tests run in: two network namespaces joined by a veth pair
//! (`veth-a` with MAC_A in namespace A, `veth-b` with MAC_B in namespace B), both up.
//!
//! How code runs "inside" a namespace: [`Netns::run`] spawns a thread that calls
//! `setns(CLONE_NEWNET)` on itself and then runs the closure. A network namespace is a per-thread
//! property, so the test process and its other threads are untouched, and sockets keep the
//! namespace they were created in for life: a backend socket opened in that thread can be used
//! from the test thread afterwards. External programs (tshark) run under `ip netns exec`.
//!
//! Names carry the test process id (`parsec-ipx-PID-N-a`), namespaces are deleted in `Drop`
//! (also while unwinding from a failed assertion), and namespaces left by a killed earlier run
//! (whose PID no longer exists) are removed when a new lab is made.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

pub const VETH_A: &str = "veth-a";
pub const VETH_B: &str = "veth-b";
pub const MAC_A: [u8; 6] = [0x02, 0x1a, 0x00, 0x00, 0x00, 0x0a];
pub const MAC_B: [u8; 6] = [0x02, 0x1b, 0x00, 0x00, 0x00, 0x0b];

const PREFIX: &str = "parsec-ipx-";
static NEXT: AtomicU32 = AtomicU32::new(0);

fn mac_arg(mac: [u8; 6]) -> String {
    let parts: Vec<String> = mac.iter().map(|b| format!("{b:02x}")).collect();
    parts.join(":")
}

/// Run a program to completion: its stdout, or a line saying what failed.
pub fn run_cmd(program: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "{program} {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The process runs as root (the namespace tests need it).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// One named network namespace; deleted on drop.
pub struct Netns {
    pub name: String,
}

impl Netns {
    fn create(name: String) -> Result<Netns, String> {
        run_cmd("ip", &["netns", "add", &name])?;
        Ok(Netns { name })
    }

    /// Run `f` on a thread that has entered this namespace; its panic is re-raised here.
    pub fn run<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        let path = format!("/run/netns/{}", self.name);
        std::thread::scope(|scope| {
            let worker = scope.spawn(move || {
                let ns = File::open(&path).unwrap_or_else(|e| panic!("open {path}: {e}"));
                // SAFETY: `ns` is an open namespace file; setns only changes this thread.
                let rc = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
                assert_eq!(rc, 0, "setns {path}: {}", std::io::Error::last_os_error());
                f()
            });
            worker
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }

    /// `ip -n NS ARGS...`
    pub fn ip(&self, args: &[&str]) -> Result<String, String> {
        let mut all = vec!["-n", self.name.as_str()];
        all.extend_from_slice(args);
        run_cmd("ip", &all)
    }

    /// A command that runs `program` inside this namespace (`ip netns exec NS program`).
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.name, program]);
        cmd
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = run_cmd("ip", &["netns", "del", &self.name]);
    }
}

/// Delete namespaces of earlier test processes that no longer exist.
fn remove_stale() {
    let Ok(list) = run_cmd("ip", &["netns", "list"]) else {
        return;
    };
    for line in list.lines() {
        let Some(name) = line.split_whitespace().next() else {
            continue;
        };
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let pid = rest.split('-').next().unwrap_or("");
        if !pid.is_empty() && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = run_cmd("ip", &["netns", "del", name]);
        }
    }
}

/// Two namespaces joined by a veth pair. Fields drop in order: the veth goes with namespace A.
pub struct Lab {
    pub a: Netns,
    pub b: Netns,
}

impl Lab {
    /// Build the lab, or print `SKIPPED: <reason>` and return `None` when this process is not
    /// root or the system has no network namespaces / veth.
    pub fn new() -> Option<Lab> {
        if cfg!(any(not(target_os = "linux"), parsec_ipx_unsupported)) {
            println!("SKIPPED: this build has no AF_PACKET support");
            return None;
        }
        if !is_root() {
            println!(
                "SKIPPED: not root (raw frames on veth pairs in network namespaces need root)"
            );
            return None;
        }
        remove_stale();
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let base = format!("{PREFIX}{}-{n}", std::process::id());
        let a = match Netns::create(format!("{base}-a")) {
            Ok(ns) => ns,
            Err(e) => {
                println!("SKIPPED: `ip netns` is unavailable: {e}");
                return None;
            }
        };
        let b = match Netns::create(format!("{base}-b")) {
            Ok(ns) => ns,
            Err(e) => {
                println!("SKIPPED: `ip netns` is unavailable: {e}");
                return None;
            }
        };
        let (mac_a, mac_b) = (mac_arg(MAC_A), mac_arg(MAC_B));
        let created = run_cmd(
            "ip",
            &[
                "link", "add", VETH_A, "netns", &a.name, "address", &mac_a, "type", "veth", "peer",
                "name", VETH_B, "netns", &b.name, "address", &mac_b,
            ],
        );
        if let Err(e) = created {
            println!("SKIPPED: cannot create a veth pair: {e}");
            return None;
        }
        let lab = Lab { a, b };
        lab.a.ip(&["link", "set", VETH_A, "up"]).expect("veth-a up");
        lab.b.ip(&["link", "set", VETH_B, "up"]).expect("veth-b up");
        lab.wait_until_up();
        Some(lab)
    }

    /// Both ends report carrier (LOWER_UP), so frames sent now are not lost.
    fn wait_until_up(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        for (ns, dev) in [(&self.a, VETH_A), (&self.b, VETH_B)] {
            loop {
                let shown = ns.ip(&["-o", "link", "show", dev]).unwrap_or_default();
                if shown.contains("LOWER_UP") {
                    break;
                }
                assert!(Instant::now() < deadline, "{dev} did not come up: {shown}");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        // Deleting one end deletes the pair, even if a socket still holds a namespace open.
        let _ = self.a.ip(&["link", "del", VETH_A]);
    }
}
