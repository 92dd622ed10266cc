//! A capture tool decodes the backend's frames as IPX: tshark captures on veth-b (inside
//! namespace B; confirmed capturing by probe frames it must show before anything is sent) while
//! the backend sends a unicast, a broadcast, and a reply; the test checks tshark's IPX fields against what
//! was sent. Needs root and tshark (installed with apt-get when missing; else SKIPPED).

#![cfg(target_os = "linux")]

mod common;

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::netns::{is_root, run_cmd, Lab, MAC_A, MAC_B, VETH_A, VETH_B};
use common::wire::{ipx_frame, Addr, Injector};
use common::{node, node_text, Sock};

const NETWORK: u32 = 0x0000_abcd;
const SOCKET: u16 = 0x869c;
/// IPX socket of the frames that show tshark is capturing (never the backend's).
const PROBE_SOCKET: u16 = 0x0001;
/// The IPX fields asked from tshark, in output order.
const FIELDS: [&str; 11] = [
    "eth.type",
    "ipx.checksum",
    "ipx.len",
    "ipx.packet_type",
    "ipx.hops",
    "ipx.dst.net",
    "ipx.dst.node",
    "ipx.dst.socket",
    "ipx.src.net",
    "ipx.src.node",
    "ipx.src.socket",
];

/// tshark's path, installing the Debian package when root and it is missing; `Err` says why not.
fn ensure_tshark() -> Result<(), String> {
    if run_cmd("tshark", &["--version"]).is_ok() {
        return Ok(());
    }
    if !is_root() {
        return Err("tshark is not installed and installing it needs root".to_string());
    }
    let install = || {
        // Bounded: `timeout` ends apt-get after 5 minutes; a held dpkg lock is waited for 60 s.
        Command::new("timeout")
            .args(["300", "apt-get", "install", "-y", "-q"])
            .args([
                "--no-install-recommends",
                "-o",
                "DPkg::Lock::Timeout=60",
                "tshark",
            ])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run apt-get: {e}"))
    };
    let mut out = install()?;
    if !out.status.success() {
        let _ = run_cmd("timeout", &["300", "apt-get", "update", "-q"]);
        out = install()?;
    }
    if !out.status.success() {
        return Err(format!(
            "apt-get install tshark failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    run_cmd("tshark", &["--version"]).map(|_| ())
}

/// One tshark field value in a comparable form: numbers (tshark writes some in hex, some in
/// decimal, depending on the field and version) as decimal, anything else in lower case.
fn normalize(field: &str) -> String {
    let field = field.trim().to_lowercase();
    let number = match field.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => field.parse::<u64>().ok(),
    };
    number.map_or(field, |n| n.to_string())
}

/// A running capture, killed on drop (also when a test assertion fails).
struct Capture {
    child: Child,
}

impl Drop for Capture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn tshark_decodes_the_frames_as_ipx() {
    let Some(lab) = Lab::new() else { return };
    if let Err(why) = ensure_tshark() {
        println!("SKIPPED: {why}");
        return;
    }
    let known = run_cmd("tshark", &["-G", "fields"]).expect("tshark -G fields");
    for field in FIELDS {
        assert!(
            known.lines().any(|l| l.split('\t').nth(2) == Some(field)),
            "tshark does not know the field {field}"
        );
    }

    let a_opts = format!("interface={VETH_A}\nnetwork={NETWORK:08X}");
    let b_opts = format!("interface={VETH_B}\nnetwork={NETWORK:08X}");
    let a = lab.a.run(|| Sock::open(0, &a_opts)).expect("open a");
    let b = lab.b.run(|| Sock::open(0, &b_opts)).expect("open b");

    let mut cmd = lab.b.command("tshark");
    cmd.args(["-i", VETH_B, "-f", "ether proto 0x8137"])
        .args(["-a", "duration:120", "-l", "-n", "-T", "fields"])
        .args(["-E", "separator=|", "-E", "occurrence=f"]);
    for field in FIELDS {
        cmd.args(["-e", field]);
    }
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tshark");
    let mut capture = Capture { child };
    let stderr = capture.child.stderr.take().expect("stderr");
    let stderr_reader = std::thread::spawn(move || {
        let mut all = String::new();
        let _ = BufReader::new(stderr).read_to_string(&mut all);
        all
    });
    let stdout = capture.child.stdout.take().expect("stdout");
    let (line_tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line_tx.send(line).is_err() {
                break;
            }
        }
    });

    // tshark prints "Capturing on" before its capture process really captures; so probe frames
    // (IPX socket 0x0001, which the backend ignores) go out until tshark shows one.
    let injector = lab.a.run(|| Injector::open(VETH_A));
    let probe_to = Addr {
        network: NETWORK,
        node: [0xff; 6],
        socket: PROBE_SOCKET,
    };
    let probe_from = Addr {
        network: NETWORK,
        node: MAC_A,
        socket: PROBE_SOCKET,
    };
    let probe = ipx_frame(probe_to, probe_from, b"probe");
    let is_probe = |line: &str| line.contains(&format!("|0x{PROBE_SOCKET:04x}|"));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        injector.send(&probe);
        match lines.recv_timeout(Duration::from_millis(200)) {
            Ok(line) if is_probe(&line) => break,
            Ok(line) => panic!("unexpected frame before the test sent any: {line}"),
            Err(_) => {}
        }
        if Instant::now() > deadline {
            let _ = capture.child.kill();
            let said = stderr_reader.join().unwrap_or_default();
            panic!("tshark showed no frame within 60 s: {said}");
        }
    }

    let b_node = node(&node_text(NETWORK, MAC_B, SOCKET));
    a.send_ok(&b_node, b"0123456789");
    let big = vec![0x42u8; 546];
    a.send_ok(&a.broadcast_node(0).unwrap(), &big);
    assert!(b.receive_within(Duration::from_secs(3)).is_some());
    assert!(b.receive_within(Duration::from_secs(3)).is_some());
    b.send_ok(&a.local_node(), b"x");

    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while got.len() < 3 {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if is_probe(&line) => {}
            Ok(line) => got.push(line),
            Err(_) => break,
        }
    }
    let _ = capture.child.kill();
    let _ = capture.child.wait();
    let said = stderr_reader.join().unwrap_or_default();
    let text = got.join("\n");
    println!("tshark rows:\n{text}");
    assert_eq!(got.len(), 3, "stdout:\n{text}\nstderr:\n{said}");
    let rows: Vec<Vec<String>> = got
        .iter()
        .map(|l| l.split('|').map(normalize).collect())
        .collect();

    let mac = |m: [u8; 6]| {
        m.iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(":")
    };
    let net = format!("0x{NETWORK:08x}");
    let sock = format!("0x{SOCKET:04x}");
    let row = |dst_mac: String, src_mac: String, len: usize| -> Vec<String> {
        [
            "0x8137".to_string(),
            "0xffff".to_string(),
            len.to_string(),
            "4".to_string(),
            "0".to_string(),
            net.clone(),
            dst_mac,
            sock.clone(),
            net.clone(),
            src_mac,
            sock.clone(),
        ]
        .iter()
        .map(|f| normalize(f))
        .collect()
    };
    let broadcast_mac = "ff:ff:ff:ff:ff:ff".to_string();
    let want = [
        row(mac(MAC_B), mac(MAC_A), 30 + 10),
        row(broadcast_mac, mac(MAC_A), 30 + 546),
        row(mac(MAC_A), mac(MAC_B), 30 + 1),
    ];
    for (got, want) in rows.iter().zip(want.iter()) {
        let named: Vec<String> = FIELDS
            .iter()
            .zip(got.iter())
            .map(|(f, v)| format!("{f}={v}"))
            .collect();
        assert_eq!(got, want, "{}", named.join(" "));
    }
}
