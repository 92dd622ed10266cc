//! A game killed (SIGKILL, a crash) while recording leaves a demo file that holds everything up
//! to its last frame: `parsecnet console` records a gameserver game, is killed once it has
//! printed the connection, and the file plays those events and says its end record is missing. (The
//! recorder buffered its records and wrote them only at `stop`, so such a file was empty.)

use net_core::demo::{decode_demo, DemoItem};
use net_core::session::GameEvent;

mod support;

use support::processes::{ConsoleProcess, ServerProcess};

#[test]
fn a_console_killed_while_recording_leaves_a_demo_up_to_its_last_frame() {
    let server = ServerProcess::loopback_gameserver(&["--no-http", "--name", "rec"]);
    let path = std::env::temp_dir().join(format!("pnet-killed-{}.demo", std::process::id()));
    let _ = std::fs::remove_file(&path);

    let mut game = ConsoleProcess::start();
    for command in [
        format!("record {}", path.display()),
        "net.subsys gameserver".to_string(),
        "net.port 0".to_string(),
        "name rita".to_string(),
        format!("connect {}", server.tcp),
    ] {
        game.send(&command);
    }
    // The console prints a frame's events after the frame: once it printed the connection and
    // the server's welcome, the frame that delivered them has ended.
    game.wait_until("of the connection and the server's welcome", |seen| {
        seen.iter().any(|l| l == "* connected: you are player 0")
            && seen.iter().any(|l| l.starts_with("[server] "))
    });
    game.kill();

    let bytes = std::fs::read(&path).expect("the file is there");
    let _ = std::fs::remove_file(&path);
    let contents = decode_demo(&bytes).unwrap_or_else(|e| {
        panic!(
            "the file ({} bytes) is not a demo: {}",
            bytes.len(),
            e.message
        )
    });
    let broken = contents.broken.expect("no end record");
    assert!(
        broken.reason.contains("without an end record"),
        "{}",
        broken.reason
    );
    assert!(
        contents
            .items
            .iter()
            .any(|(_, item)| *item == DemoItem::Event(GameEvent::Connected { slot: 0 })),
        "{:?}",
        contents.items
    );
    assert!(
        contents
            .items
            .iter()
            .any(|(_, item)| matches!(item, DemoItem::Event(GameEvent::ServerMessage { .. }))),
        "{:?}",
        contents.items
    );
}
