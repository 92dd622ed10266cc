//! The slotserver's text protocol through real TCP connections on 127.0.0.1 against the
//! running runtime: the design's example lines and every reply of design section 2.3.2.

#[path = "server_support.rs"]
mod support;

use std::net::Shutdown;
use std::time::Duration;

use net_core::server::RuntimeConfig;
use support::*;

#[test]
fn design_example_session_join_add_rename_remove() {
    let server = TestServer::start(test_config());
    let mut sid = server.client();
    sid.send("version: 1.0 join me: sid os: powerpc-apple-macos");
    sid.expect("join from sid accepted, slot: 0, server name: TestServer");
    for m in MESSAGES {
        sid.expect(m);
    }

    let mut msh = server.client();
    msh.send("version: 1.0 join me: msh os: i586-pc-linux-gnu");
    msh.expect("join from msh accepted, slot: 1, server name: TestServer");
    for m in MESSAGES {
        msh.expect(m);
    }
    msh.expect("add ip: 127.0.0.1 name: sid in 0");
    sid.expect("add ip: 127.0.0.1 name: msh in 1");

    msh.send("my new name: maverick");
    msh.expect("new name accepted");
    sid.expect("name ip: 127.0.0.1 name: maverick");

    msh.send("remove me");
    msh.expect("removing you");
    sid.expect("remove ip: 127.0.0.1");
    msh.send("remove me");
    msh.expect("you're not even joined");

    let summary = server.stop();
    assert_eq!(summary.counter("joins"), 2);
    assert_eq!(summary.counter("removes"), 1);
    assert_eq!(summary.counter("renames"), 1);
}

#[test]
fn crlf_lines_are_accepted() {
    let server = TestServer::start(test_config());
    let mut c = server.client();
    c.send_raw(b"version: 1.0 join me: dos os: i386-pc-msdos\r\n");
    c.expect("join from dos accepted, slot: 0, server name: TestServer");
}

#[test]
fn server_full_on_the_seventeenth_join() {
    let server = TestServer::start(test_config());
    let mut players: Vec<_> = (0..16u8)
        .map(|i| server.joined(&format!("player{i}"), i))
        .collect();
    let mut late = server.client();
    late.send("version: 1.0 join me: late os: x");
    late.expect("server full");
    // A slot freed by a leaving player is given to the next join.
    players[3].send("remove me");
    players[3].skip_until("removing you");
    late.send("version: 1.0 join me: late os: x");
    late.expect("join from late accepted, slot: 3, server name: TestServer");
}

#[test]
fn invalid_request_and_incompatible_version_replies() {
    let server = TestServer::start(test_config());
    let mut c = server.client();
    c.send("hello");
    c.expect("you sent an invalid request");
    c.send("version: 2.0 join me: future os: x");
    c.expect("server version incompatible");
    c.send("version: 1.0 join me: this-name-is-far-too-long-for-parsec os: x");
    c.expect("you sent an invalid request");
    c.send("my new name: x");
    c.expect("you're not even joined");
    c.send("version: 1.7 join me: ok os: x");
    c.expect("join from ok accepted, slot: 0, server name: TestServer");
    for m in MESSAGES {
        c.expect(m);
    }
    c.send("version: 1.0 join me: twice os: x");
    c.expect("you sent an invalid request");
}

#[test]
fn duplicate_name_gets_name_already_taken() {
    let server = TestServer::start(test_config());
    let mut first = server.joined("ace", 0);
    let mut second = server.client();
    second.send("version: 1.0 join me: ace os: x");
    second.expect("name already taken");
    second.send("version: 1.0 join me: ace2 os: x");
    second.expect("join from ace2 accepted, slot: 1, server name: TestServer");
    first.expect("add ip: 127.0.0.1 name: ace2 in 1");
    first.send("my new name: ace2");
    first.expect("name already taken");
}

#[test]
fn banned_address_is_refused_and_a_reloaded_ban_file_unbans_without_restart() {
    let dir = temp_dir("bans-reload");
    let ban_file = dir.join("bans.txt");
    std::fs::write(&ban_file, "# test bans\n127.0.0.1\n").unwrap();
    let runtime = RuntimeConfig {
        ban_file: Some(ban_file.clone()),
        ..RuntimeConfig::new("slotserver", loopback())
    };
    let server = TestServer::start_with(test_config(), runtime);
    let mut banned = server.client();
    banned.send("version: 1.0 join me: troll os: x");
    banned.expect("you're banned from this server");
    banned.expect_closed(Duration::from_secs(3));

    std::fs::write(&ban_file, "# forgiven\n").unwrap();
    let mut welcome = server.client();
    welcome.send("version: 1.0 join me: troll os: x");
    welcome.expect("join from troll accepted, slot: 0, server name: TestServer");

    let summary = server.stop();
    assert_eq!(summary.counter("banned_refusals"), 1);
    assert!(summary.counter("ban_reloads") >= 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn extended_client_learns_ports_and_tokens() {
    let server = TestServer::start(test_config());
    let mut design = server.joined("plain", 0);
    let mut ext = server.client();
    ext.send("version: 1.0 join me: ext os: linux port: 7100 token: 31337");
    ext.expect("join from ext accepted, slot: 1, server name: TestServer udp: 0 token: 777");
    for m in MESSAGES {
        ext.expect(m);
    }
    ext.expect("add ip: 127.0.0.1 name: plain in 0 port: 6526 token: 0");
    design.expect("add ip: 127.0.0.1 name: ext in 1");
    design.send("remove me");
    design.expect("removing you");
    ext.expect("remove ip: 127.0.0.1 port: 6526");
}

#[test]
fn stopping_the_server_closes_every_connection() {
    let server = TestServer::start(test_config());
    let mut joined = server.joined("a", 0);
    let mut idle = server.client();
    let summary = server.stop();
    joined.expect_closed(Duration::from_secs(1));
    idle.expect_closed(Duration::from_secs(1));
    assert_eq!(summary.counter("joins"), 1);
}

/// Regression: a client that sends its lines and closes its sending side at once (`printf
/// 'remove me\n' | nc -N host 6582`) got no reply when the end of its stream arrived with the
/// lines: the server dropped the connection, and the replies queued for it, on reading the end.
/// A last line without its "\n" is taken as a line.
#[test]
fn a_client_that_closes_its_sending_side_still_gets_its_replies() {
    let server = TestServer::start(test_config());
    let mut watcher = server.joined("watcher", 0);
    for _ in 0..20 {
        let mut brief = server.client();
        brief.send_raw(b"version: 1.0 join me: brief os: x\nmy new name: brief2\nremove me\n");
        brief.stream.shutdown(Shutdown::Write).unwrap();
        brief.expect("join from brief accepted, slot: 1, server name: TestServer");
        for m in MESSAGES {
            brief.expect(m);
        }
        brief.expect("add ip: 127.0.0.1 name: watcher in 0");
        brief.expect("new name accepted");
        brief.expect("removing you");
        brief.expect_closed(Duration::from_secs(3));
        watcher.expect("add ip: 127.0.0.1 name: brief in 1");
        watcher.expect("name ip: 127.0.0.1 name: brief2");
        watcher.expect("remove ip: 127.0.0.1");
    }
    let mut unfinished = server.client();
    unfinished.send_raw(b"remove me");
    unfinished.stream.shutdown(Shutdown::Write).unwrap();
    unfinished.expect("you're not even joined");
    unfinished.expect_closed(Duration::from_secs(3));
    // A joined player that closes its side leaves, as with a full close.
    let mut leaving = server.joined("leaving", 1);
    leaving.expect("add ip: 127.0.0.1 name: watcher in 0");
    watcher.expect("add ip: 127.0.0.1 name: leaving in 1");
    leaving.stream.shutdown(Shutdown::Write).unwrap();
    leaving.expect_closed(Duration::from_secs(3));
    watcher.expect("remove ip: 127.0.0.1");
}
