//! A two-peer game over `net.api ipx` as an outside test plays it (SPEC section 7): two
//! `parsecnet console` games, each in its own network namespace on a private bridged LAN
//! (`harness/netns.rs`), find each other by IPX broadcast and chat, while tshark captures the
//! LAN's bridge. Every frame must decode as IPX (EtherType 0x8137, checksum 0xFFFF, packet type
//! 4, the IPX length field equal to the frame less its 14-byte Ethernet header), come from one
//! of the two namespaces' `eth0` MACs on socket 0x197E (port 6526), and there must be
//! broadcasts and unicasts both ways. Over IPX, `net.subsys slotserver` and `gameserver` are
//! refused with a message saying IPX is peer-to-peer only. Needs root and tshark; without
//! them the test prints SKIPPED and passes.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::netns::{tool_works, unavailable, Lan};
use parsec_net_ffi_tests::process::run;
use parsec_net_ffi_tests::server::parsecnet;

const GAME_TIMEOUT: Duration = Duration::from_secs(60);
/// How long tshark may take to start capturing (it writes its file header then).
const CAPTURE_START_TIMEOUT: Duration = Duration::from_secs(30);

/// The console script of one game: IPX, a quick peer startup, a chat line, the refusals.
fn script(name: &str) -> String {
    [
        "net.api ipx",
        "net.peer.connect_interval 100",
        "net.peer.slot_interval 150",
        "net.peer.reply_wait 50",
        &format!("name {name}"),
        "connect",
        "wait 4000",
        &format!("say hello from {name}"),
        "wait 2000",
        "net.subsys slotserver",
        "net.subsys gameserver",
        "quit",
    ]
    .join("; ")
}

#[test]
fn two_console_games_over_ipx_send_frames_tshark_decodes_as_ipx() {
    if let Some(why) = unavailable() {
        println!("SKIPPED: {why}");
        return;
    }
    if !tool_works("tshark", "--version") {
        println!("SKIPPED: tshark is not installed");
        return;
    }
    let lan = Lan::create(2);
    let macs = [lan.eth0_mac(0), lan.eth0_mac(1)];
    let file = std::env::temp_dir().join(format!("ipx-console-{}.pcap", std::process::id()));
    let mut tshark =
        lan.start_bridge_capture(&[], "ether proto 0x8137", &file, CAPTURE_START_TIMEOUT);

    let program = parsecnet();
    let games: Vec<_> = ["alpha", "beta"]
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut command = lan.command(i, Path::new(&program));
            command.args(["console", "--exec", &script(name)]);
            command.env("PARSEC_NET_LOG", "warn");
            std::thread::spawn(move || run(command, GAME_TIMEOUT))
        })
        .collect();
    let outputs: Vec<_> = games.into_iter().map(|g| g.join().unwrap()).collect();
    // SIGINT: tshark writes what it has and exits.
    let _ = Command::new("kill")
        .args(["-INT", &tshark.id().to_string()])
        .status();
    let _ = tshark.wait();

    for (out, (me, other)) in outputs.iter().zip([("alpha", "beta"), ("beta", "alpha")]) {
        let stdout = &out.stdout;
        assert!(
            stdout.contains("packet backend ipx active on IPX socket 197E (port 6526)"),
            "{stdout}"
        );
        assert!(stdout.contains("* connected: you are player"), "{stdout}");
        assert!(
            stdout.contains(&format!("<{other}> hello from {other}")),
            "{me} did not hear {other}: {stdout}"
        );
        let refusals = stdout
            .lines()
            .filter(|l| l.starts_with("net.subsys: ipx supports only the peer-to-peer protocol"))
            .count();
        assert_eq!(refusals, 2, "{stdout}");
    }

    let decoded = Command::new("tshark")
        .arg("-r")
        .arg(&file)
        .args(["-T", "fields", "-E", "separator=|", "-E", "occurrence=f"])
        .args(["-e", "frame.len", "-e", "eth.type", "-e", "ipx.checksum"])
        .args([
            "-e",
            "ipx.len",
            "-e",
            "ipx.packet_type",
            "-e",
            "ipx.src.node",
        ])
        .args([
            "-e",
            "ipx.dst.node",
            "-e",
            "ipx.src.socket",
            "-e",
            "ipx.dst.socket",
        ])
        .output()
        .expect("tshark reads the capture");
    let _ = std::fs::remove_file(&file);
    let text = String::from_utf8_lossy(&decoded.stdout);
    let number = |field: &str| -> u64 {
        let field = field.trim();
        match field.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => field.parse(),
        }
        .unwrap_or_else(|_| panic!("not a number: {field:?} in {text}"))
    };
    let mut broadcasts = [0u32; 2];
    let mut unicasts = [0u32; 2];
    for line in text.lines() {
        let f: Vec<&str> = line.split('|').collect();
        assert_eq!(f.len(), 9, "{line}");
        assert_eq!(number(f[1]), 0x8137, "EtherType: {line}");
        assert_eq!(number(f[2]), 0xffff, "checksum: {line}");
        assert_eq!(number(f[3]) + 14, number(f[0]), "IPX length: {line}");
        assert!(number(f[3]) > 30, "a payload: {line}");
        assert_eq!(number(f[4]), 4, "packet type: {line}");
        assert_eq!(number(f[7]), 0x197e, "source socket: {line}");
        assert_eq!(number(f[8]), 0x197e, "destination socket: {line}");
        let from = macs
            .iter()
            .position(|m| *m == f[5].to_lowercase())
            .unwrap_or_else(|| panic!("source node of neither game {macs:?}: {line}"));
        let to = f[6].to_lowercase();
        if to == "ff:ff:ff:ff:ff:ff" {
            broadcasts[from] += 1;
        } else {
            assert_eq!(to, macs[1 - from], "unicast to the other game: {line}");
            unicasts[from] += 1;
        }
    }
    assert!(
        broadcasts.iter().any(|&n| n > 0),
        "no broadcast startup: {text}"
    );
    assert!(
        unicasts.iter().all(|&n| n > 0),
        "unicasts {unicasts:?}: {text}"
    );
}
