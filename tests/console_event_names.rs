//! `parsecnet console` prints each event with the name its sender had when it happened: a
//! player who joins, says something and renames itself within one frame is shown with its old
//! name on the chat line, and with the new one on what it does after the rename.

use std::process::Command;
use std::time::Duration;

use net_core::demo::{encode_end, encode_header, encode_item, DemoItem};
use net_core::rmev::{ChatText, PlayerName, RemoteEvent};
use net_core::session::GameEvent;

fn name(text: &str) -> PlayerName {
    PlayerName::new(text.as_bytes()).expect("a valid name")
}

fn say(slot: u8, text: &str) -> GameEvent {
    GameEvent::Remote {
        slot,
        event: RemoteEvent::SendText(ChatText::new(text.as_bytes()).expect("a valid line")),
    }
}

#[test]
fn chat_in_the_frame_of_a_rename_shows_the_name_the_sender_had() {
    // A recording whose events all fall in the first frame of its playback: the player table
    // says "alice" for slot 1 by the time the console prints any of them.
    let events = [
        GameEvent::Connected { slot: 0 },
        GameEvent::PlayerConnected {
            slot: 1,
            name: name("al"),
        },
        GameEvent::PlayerJoined { slot: 1 },
        say(1, "hi there"),
        GameEvent::PlayerName {
            slot: 1,
            name: name("alice"),
        },
        say(1, "call me alice"),
        GameEvent::PlayerUnjoined { slot: 1, flag: 0 },
    ];
    let mut demo = Vec::new();
    encode_header(0, &mut demo);
    for event in events {
        encode_item(Duration::ZERO, &DemoItem::Event(event), &mut demo).expect("encodes");
    }
    encode_end(Duration::ZERO, &mut demo).expect("encodes");
    let path = std::env::temp_dir().join(format!("pn-event-names-{}.demo", std::process::id()));
    std::fs::write(&path, &demo).expect("demo written");

    let out = Command::new(env!("CARGO_BIN_EXE_parsecnet"))
        .args([
            "console",
            "--exec",
            &format!("play {}; wait 100", path.display()),
        ])
        .env("PARSEC_NET_LOG", "off")
        .output()
        .expect("parsecnet runs");
    let _ = std::fs::remove_file(&path);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{:?}\n{stdout}", out.status);
    let lines: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with('<') || l.starts_with("* "))
        .collect();
    assert_eq!(
        lines,
        [
            "* connected: you are player 0",
            "* al (player 1) connected",
            "* al (player 1) joined the game",
            "<al> hi there",
            "* player 1 is called alice",
            "<alice> call me alice",
            "* alice (player 1) left the game (flag 0)",
        ],
        "{stdout}"
    );
}
