//! `c/burst_game.c`: four games, each in its own network namespace on a bridged LAN, find each
//! other by broadcast with no address given, and then each queues in ONE frame 200 reliable
//! custom events of 256 bytes (the largest), a 255-byte chat line and a 257-byte custom event.
//! Over IPX (546-byte payload: one such event per packet) and over UDP (1400 bytes: five): every
//! event reaches every other game exactly once, in order and byte for byte, the chat line too;
//! the 257-byte event is refused with NET_ERR_TOO_LARGE; and over IPX no frame was lost in
//! the receiving socket's queue (`status`'s `binding:` line would say so). Needs root; without
//! it the tests print SKIPPED and pass.

use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::backends::built_backend_dir;
use parsec_net_ffi_tests::netns::{skip_without, Lan};
use parsec_net_ffi_tests::process::{run, Output};
use parsec_net_ffi_tests::Build;

const NAMES: [&str; 4] = ["amy", "bo", "cy", "di"];
/// Events each game queues in one frame: over IPX, 3 x 200 frames arriving at once overflowed
/// the packet socket's default receive queue (about 170 frames).
const BURST: usize = 200;
const TIMEOUT: Duration = Duration::from_secs(60);

fn skip() -> bool {
    skip_without("root for network namespaces")
}

/// Run the four games at once with `setup` console lines, and return their outputs.
fn play(lan: &Lan, setup: &[String]) -> Vec<Output> {
    let program = Build::c("c/burst_game.c").build();
    let backends = built_backend_dir("ipx");
    let commands: Vec<Command> = NAMES
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut command = lan.command(i, &program);
            command.env("PARSEC_NET_BACKEND_PATH", &backends);
            command.args(["--name", name, "--expect", "3", "--burst"]);
            command.arg(BURST.to_string());
            command.args(["--duration", "40000"]);
            for line in setup.iter().map(String::as_str).chain([
                "net.peer.connect_interval 100",
                "net.peer.slot_interval 150",
                "net.peer.reply_wait 50",
            ]) {
                command.args(["--exec", line]);
            }
            command
        })
        .collect();
    let handles: Vec<_> = commands
        .into_iter()
        .map(|command| std::thread::spawn(move || run(command, TIMEOUT)))
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

fn check(outputs: &[Output], ipx: bool) {
    let all: String = outputs.iter().map(Output::transcript).collect();
    let mut slots = Vec::new();
    for out in outputs {
        let text = &out.stdout;
        let fail = |why: &str| panic!("{why}\n{}\n=== all games ===\n{all}", out.transcript());
        if !out.status.success() {
            fail("the game failed");
        }
        let result = text
            .lines()
            .find(|l| l.starts_with("RESULT "))
            .unwrap_or("");
        if !result.starts_with("RESULT complete=yes") {
            fail("the game did not get everything from the three others");
        }
        slots.push(result.rsplit('=').next().unwrap_or("").to_string());
        let queued = format!("ok={BURST} too_large_rc=-8 text_rc=0");
        if !text
            .lines()
            .any(|l| l.starts_with("QUEUED") && l.ends_with(&queued))
        {
            fail(&format!("QUEUED should end with {queued}"));
        }
        let got: Vec<&str> = text.lines().filter(|l| l.starts_with("GOT ")).collect();
        let complete = format!("events={BURST} text=yes bad=0");
        if got.len() != 3 || !got.iter().all(|l| l.ends_with(&complete)) {
            fail(&format!("three GOT lines ending with {complete}"));
        }
        if text.lines().any(|l| l.starts_with("BAD ")) {
            fail("an event arrived damaged or out of order");
        }
        if ipx {
            let binding = text
                .lines()
                .find(|l| l.starts_with("binding: interface eth0, MAC "));
            match binding {
                None => fail("status has no IPX binding line"),
                Some(line) if line.contains("lost") => fail("frames were lost in the queue"),
                Some(_) => {}
            }
        }
    }
    slots.sort();
    assert_eq!(slots, ["0", "1", "2", "3"], "four slots\n{all}");
}

#[test]
fn four_games_burst_large_events_over_ipx() {
    if skip() {
        return;
    }
    let lan = Lan::create(4);
    let outputs = play(
        &lan,
        &["net.ipx.interface eth0".into(), "net.api ipx".into()],
    );
    check(&outputs, true);
}

#[test]
fn four_games_burst_large_events_over_udp_broadcast() {
    if skip() {
        return;
    }
    let lan = Lan::create(4);
    let outputs = play(&lan, &[format!("net.udp.broadcast {}", lan.broadcast())]);
    check(&outputs, false);
}
