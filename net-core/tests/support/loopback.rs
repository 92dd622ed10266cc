//! Games on UDP loopback for the end-to-end tests that drive the subsystem as the C API does
//! (included by path where needed): console lines that must succeed, and a game bound to
//! 127.0.0.1 on a free port with fast peer timings, so a test takes little wall time.

use std::time::Instant;

use net_core::Subsystem;

/// Run a console line that must succeed; its reply.
pub fn console(sub: &mut Subsystem, line: &str) -> String {
    let reply = sub.console_exec(line, Instant::now());
    assert!(reply.result.is_ok(), "{line}: {}", reply.output);
    reply.output
}

/// A game named `player` on UDP loopback with fast peer timings; returns it and its address.
pub fn loopback_game(player: &str) -> (Subsystem, String) {
    let mut sub = Subsystem::new();
    for line in [
        "net.udp.bind 127.0.0.1",
        "net.udp.ipv6 0",
        "net.port 0",
        "net.api udp",
        "net.peer.connect_interval 40",
        "net.peer.slot_interval 60",
        "net.peer.reply_wait 20",
    ] {
        console(&mut sub, line);
    }
    console(&mut sub, &format!("name {player}"));
    let node = sub.local_node().expect("local node");
    let text = sub.print_node(&node).expect("node text");
    let port = text.rsplit(':').next().expect("a port").to_string();
    (sub, format!("127.0.0.1:{port}"))
}
