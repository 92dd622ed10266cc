//! `NET_EVENT_ERROR` as SPEC section 4 promises it ("text says what went wrong, e.g. a timeout in
//! the slot-request loop or a refusal by a server"), seen by C games:
//!
//! - `c/slot_timeout.c`: a peer-to-peer slave whose temporary master is killed while it waits
//!   for its slot gets one error event saying so, is not connected, and can connect again;
//! - `c/server_refusal.c`: a `parsecnet gameserver` and `slotserver` that are full, that have a
//!   player of the same name, or that ban the client's address refuse it; the game gets one error
//!   event holding the server's words, no CONNECTED, and can connect again.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::live::Running;
use parsec_net_ffi_tests::peer::free_loopback_ports;
use parsec_net_ffi_tests::process::run;
use parsec_net_ffi_tests::server::Server;
use parsec_net_ffi_tests::Build;

const TIMEOUT: Duration = Duration::from_secs(60);
const HOLD_TIMEOUT: Duration = Duration::from_secs(20);

#[test]
fn a_slave_whose_temporary_master_dies_gets_an_error_event_and_can_connect_again() {
    let program = Build::c("c/slot_timeout.c").build();
    let mut ports = free_loopback_ports(2);
    ports.sort_unstable();
    let mut command = Command::new(program);
    command.args([ports[0].to_string(), ports[1].to_string()]);
    run(command, TIMEOUT).assert_checks_passed("slot_timeout", "slot_timeout");
}

fn start(kind: &str, extra: &[&str]) -> Server {
    let mut args = vec!["--port", "0", "--no-http", "--bind", "127.0.0.1"];
    if kind == "gameserver" {
        args.extend(["--udp-port", "0"]);
    }
    args.extend(extra);
    Server::start(kind, &args)
}

fn command(program: &Path, kind: &str, server: &Server, name: &str, mode: &[&str]) -> Command {
    let mut command = Command::new(program);
    command
        .args([kind, &server.tcp.to_string(), name])
        .args(mode);
    command
}

/// A game that connects and stays until its stdin closes.
fn holder(program: &Path, kind: &str, server: &Server, name: &str) -> Running {
    let game = Running::spawn(
        name,
        command(program, kind, server, name, &["--hold"]),
        false,
    );
    if game
        .wait_for_line(0, HOLD_TIMEOUT, |l| l.starts_with("CONNECTED "))
        .is_none()
    {
        panic!("{name} did not connect to the {kind}:\n{}", game.stdout());
    }
    game
}

fn expect_refused(program: &Path, kind: &str, server: &Server, name: &str, words: &str) {
    let out = run(
        command(program, kind, server, name, &["--refused", words]),
        TIMEOUT,
    );
    out.assert_checks_passed(
        "server_refusal",
        &format!("{kind}: {name} refused ({words})"),
    );
}

fn refusals(kind: &str) {
    let program = Build::c("c/server_refusal.c").build();

    let full = start(kind, &["--max-players", "1"]);
    let mut first = holder(&program, kind, &full, "first");
    expect_refused(&program, kind, &full, "second", "server full");
    first.kill();
    full.stop();

    let server = start(kind, &[]);
    let mut same = holder(&program, kind, &server, "same");
    expect_refused(&program, kind, &server, "same", "name already taken");
    same.kill();
    server.stop();

    let dir = std::env::temp_dir().join(format!("pn-refusal-{}-{kind}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let bans = dir.join("bans.txt");
    std::fs::write(&bans, "127.0.0.1\n").expect("writing the ban file");
    let banning = start(kind, &["--ban-file", bans.to_str().expect("a UTF-8 path")]);
    expect_refused(&program, kind, &banning, "banned", "banned");
    banning.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_gameserver_refusal_reaches_the_game_as_an_error_event() {
    refusals("gameserver");
}

#[test]
fn a_slotserver_refusal_reaches_the_game_as_an_error_event() {
    refusals("slotserver");
}
