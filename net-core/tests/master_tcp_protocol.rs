//! The masterserver over real TCP on 127.0.0.1, spoken to by raw line clients: every line of
//! design section 3.1, good and bad, gets exactly the design's reply; the field limits are the
//! design's; the extensions (`kind:`/`port:`/`udp:`, `list servers`) work; a server stays
//! listed while its connection lives and leaves the list when it closes.

#[path = "master_support.rs"]
mod master_support;

use std::io::Read;
use std::net::TcpStream;
use std::time::Duration;

use master_support::support::*;
use master_support::*;

const ILLEGAL: &str = "illegal request not processed";

#[test]
fn the_design_example_is_accepted_and_listed() {
    let master = start_master(master_config());
    let mut c = master.client();
    c.send("version: 1.0 join me: Gamma_Quadrant os: i586-pc-linux-gnu maxplayers: 16 url: http://gammaquadrant.parsec.org/");
    c.expect("join accepted");
    c.send("players: 3 max: 16");
    c.expect("players acknowledged.");
    let lines = list_over_tcp(master.addrs.tcp);
    assert_eq!(
        lines,
        vec!["server: ip: 127.0.0.1 port: 0 kind: unknown udp: 0 players: 3 max: 16 os: i586-pc-linux-gnu url: http://gammaquadrant.parsec.org/ name: Gamma_Quadrant"]
    );
    c.send("remove me");
    c.expect("removing you");
    c.send("remove me");
    c.expect("you're not even joined");
    assert!(list_over_tcp(master.addrs.tcp).is_empty());
    let summary = master.stop();
    assert_eq!(summary.counter("joins"), 1);
    assert_eq!(summary.counter("removes"), 1);
}

#[test]
fn every_bad_line_gets_the_designs_reply_and_the_connection_stays() {
    let master = start_master(master_config());
    let mut c = master.client();
    for (line, reply) in [
        (
            "version: 2.0 join me: a os: b maxplayers: 4 url: u",
            "masterserver version incompatible",
        ),
        (
            "version: 0.5 anything at all",
            "masterserver version incompatible",
        ),
        (
            "version: x.y join me: a os: b maxplayers: 4 url: u",
            ILLEGAL,
        ),
        ("version: 1.0 join me: a os: b maxplayers: 4", ILLEGAL),
        (
            "version: 1.0 join me: a os: b maxplayers: none url: u",
            ILLEGAL,
        ),
        (
            "version: 1.0 join me: a os: b maxplayers: 0 url: u",
            ILLEGAL,
        ),
        ("version: 1.0 join me:  os: b maxplayers: 4 url: u", ILLEGAL),
        (
            "version: 1.0 join me: a os: b maxplayers: 4 url: u kind: peer",
            ILLEGAL,
        ),
        (
            "version: 1.0 join me: a os: b maxplayers: 4 url: u port: 99999",
            ILLEGAL,
        ),
        ("players: 3 max: 16", ILLEGAL), // not joined: the design's only other reply
        ("hello", ILLEGAL),
        ("", ILLEGAL),
        ("remove me", "you're not even joined"),
        ("REMOVE ME", ILLEGAL),
    ] {
        c.send(line);
        c.expect(reply);
    }
    // The same connection can still join and is then listed.
    c.send(&join_line("after", 8));
    c.expect("join accepted");
    for (line, reply) in [
        ("players: 9 max: 8", ILLEGAL),
        ("players: 1 max: 0", ILLEGAL),
        ("players: one max: 8", ILLEGAL),
        ("players: 8 max: 8", "players acknowledged."),
        (join_line("again", 8).as_str(), ILLEGAL), // a second join on one connection
    ] {
        c.send(line);
        c.expect(reply);
    }
    let lines = list_over_tcp(master.addrs.tcp);
    assert_eq!(lines.len(), 1);
    assert!(lines[0].contains("players: 8 max: 8"), "{}", lines[0]);
    assert!(lines[0].ends_with("name: after"), "{}", lines[0]);
}

#[test]
fn field_limits_are_31_31_and_127_bytes() {
    let master = start_master(master_config());
    let name = "n".repeat(31);
    let os = "o".repeat(31);
    let url = format!("http://{}", "u".repeat(120));
    assert_eq!(url.len(), 127);
    let join = |name: &str, os: &str, url: &str| {
        format!("version: 1.0 join me: {name} os: {os} maxplayers: 16 url: {url}")
    };
    for (line, reply) in [
        (join(&format!("{name}x"), &os, &url), ILLEGAL),
        (join(&name, &format!("{os}x"), &url), ILLEGAL),
        (join(&name, &os, &format!("{url}x")), ILLEGAL),
        (join(&name, &os, &url), "join accepted"),
    ] {
        let mut c = master.client();
        c.send(&line);
        c.expect(reply);
        if reply == "join accepted" {
            let lines = list_over_tcp(master.addrs.tcp);
            assert_eq!(lines.len(), 1);
            assert!(lines[0].ends_with(&format!("name: {name}")));
            assert!(lines[0].contains(&format!("url: {url} ")));
        }
    }
}

#[test]
fn the_list_limit_answers_masterserver_full() {
    let master = start_master(master::config_with_max(2));
    let _a = joined(&master, "a");
    let mut b = joined(&master, "b");
    let mut c = master.client();
    c.send(&join_line("c", 16));
    c.expect("masterserver full");
    // A place frees up: the same connection may try again.
    b.send("remove me");
    b.expect("removing you");
    c.send(&join_line("c", 16));
    c.expect("join accepted");
    let names: Vec<String> = listed(&master)
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["a", "c"]);
    assert_eq!(master.stop().counter("joins_refused_full"), 1);
}

mod master {
    use super::*;

    pub fn config_with_max(max_servers: usize) -> net_core::master::MasterConfig {
        net_core::master::MasterConfig {
            max_servers,
            ..master_config()
        }
    }
}

#[test]
fn the_extension_fields_are_listed() {
    let master = start_master(master_config());
    let mut c = master.client();
    c.send("version: 1.0 join me: Red Baron os: x86_64 linux maxplayers: 16 url: http://rb.example/ kind: gameserver port: 6581 udp: 6522");
    c.expect("join accepted");
    let mut s = master.client();
    s.send(
        "version: 1.0 join me: slots os: linux maxplayers: 4 url: - kind: slotserver port: 6582",
    );
    s.expect("join accepted");
    let lines = list_over_tcp(master.addrs.tcp);
    assert_eq!(
        lines,
        vec![
            "server: ip: 127.0.0.1 port: 6581 kind: gameserver udp: 6522 players: 0 max: 16 os: x86_64 linux url: http://rb.example/ name: Red Baron",
            "server: ip: 127.0.0.1 port: 6582 kind: slotserver udp: 0 players: 0 max: 4 os: linux url: - name: slots",
        ]
    );
    let json = listed(&master);
    assert_eq!(json[0]["address"], "127.0.0.1:6581");
    assert_eq!(json[0]["kind"], "gameserver");
    assert_eq!(json[0]["udp_port"], 6522);
    assert_eq!(json[1]["kind"], "slotserver");
}

#[test]
fn a_server_leaves_the_list_when_its_connection_closes() {
    let master = start_master(master_config());
    let a = joined(&master, "a");
    let _b = joined(&master, "b");
    assert_eq!(listed(&master).len(), 2);
    drop(a);
    wait_for("a to be unlisted", || listed(&master).len() == 1);
    assert_eq!(listed(&master)[0]["name"], "b");
    assert_eq!(master.stop().counter("dropped_connections"), 1);
}

#[test]
fn list_requests_come_from_any_connection_and_are_repeatable() {
    let master = start_master(master_config());
    let mut a = joined(&master, "a");
    assert_eq!(list_on(&mut a).len(), 1);
    a.send("players: 2 max: 16");
    a.expect("players acknowledged.");
    let lines = list_on(&mut a);
    assert!(lines[0].contains("players: 2 max: 16"));
    let mut viewer = master.client();
    for _ in 0..3 {
        assert_eq!(list_on(&mut viewer).len(), 1);
    }
    viewer.expect_silence(Duration::from_millis(100));
}

#[test]
fn html_and_json_are_served_and_written_to_files() {
    let dir = temp_dir("master-files");
    let html = dir.join("servers.html");
    let json = dir.join("servers.json");
    let runtime = net_core::server::RuntimeConfig {
        http: Some(loopback()),
        html_file: Some(html.clone()),
        json_file: Some(json.clone()),
        ..net_core::server::RuntimeConfig::new("masterserver", loopback())
    };
    let master = start_master_with(master_config(), runtime);
    wait_for("the empty list file", || {
        read_text(&html).contains("No servers")
    });
    let mut c = master.client();
    c.send("version: 1.0 join me: <b>Bold</b> & Co os: linux maxplayers: 16 url: http://bold.example/?a=1&b=2");
    c.expect("join accepted");
    c.send("players: 5 max: 16");
    c.expect("players acknowledged.");
    wait_for("the server in both files", || {
        read_text(&html).contains("5/16") && read_text(&json).contains("Bold")
    });
    let page = read_text(&html);
    assert!(page.contains(
        "<a href=\"http://bold.example/?a=1&amp;b=2\" rel=\"nofollow noopener\">&lt;b&gt;Bold&lt;/b&gt; &amp; Co</a>"
    ), "{page}");
    assert!(!page.contains("<b>Bold"));
    let http = master.addrs.http.unwrap();
    for path in ["/", "/servers.html", "/index.html"] {
        let (code, body) = http_get(http, path);
        assert_eq!(code, 200, "{path}");
        assert!(body.contains("5/16"), "{path}");
    }
    assert_eq!(http_get(http, "/players.html").0, 404);
    let (code, body) = http_get(http, "/servers.json");
    assert_eq!(code, 200);
    for doc in [body, read_text(&json)] {
        let value: serde_json::Value = serde_json::from_str(&doc).expect("valid JSON");
        assert_eq!(value["masterserver"]["server_count"], 1);
        assert_eq!(value["servers"][0]["name"], "<b>Bold</b> & Co");
        assert_eq!(value["servers"][0]["players"], 5);
        assert_eq!(value["servers"][0]["max_players"], 16);
        assert_eq!(value["servers"][0]["url"], "http://bold.example/?a=1&b=2");
    }
    assert!(read_text(&html).contains("this page reloads every 30 seconds"));
    drop(master);
    assert!(
        read_text(&html).contains("No servers"),
        "emptied at shutdown"
    );
    // The emptied list says the masterserver stopped (an empty list alone looks like a
    // running masterserver nobody registered with).
    let page = read_text(&html);
    assert!(
        page.contains("This masterserver stopped at ") && page.contains("is not running"),
        "{page}"
    );
    let value: serde_json::Value = serde_json::from_str(&read_text(&json)).unwrap();
    assert_eq!(value["masterserver"]["running"], false);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn with_default_limits_256_servers_from_one_address_are_listed_then_masterserver_full() {
    let master = start_master(net_core::master::MasterConfig::default());
    let mut clients = Vec::new();
    for i in 0..257 {
        let mut c = master.client();
        c.send(&join_line(&format!("S{i}"), 4));
        let reply = c.line();
        let want = if i < 256 {
            "join accepted"
        } else {
            "masterserver full"
        };
        assert_eq!(reply, want, "join {i} from 127.0.0.1");
        clients.push(c);
    }
    assert_eq!(list_over_tcp(master.addrs.tcp).len(), 256);
    drop(clients);
    let summary = master.stop();
    assert_eq!(summary.counter("joins"), 256);
    assert_eq!(summary.counter("joins_refused_full"), 1);
    assert_eq!(summary.counter("refused_at_accept"), 0);
}

#[test]
fn a_connection_over_the_address_limit_is_told_masterserver_full_and_closed() {
    let master = start_master(net_core::master::MasterConfig {
        max_per_address: 2,
        ..master_config()
    });
    let mut kept: Vec<LineClient> = (0..2).map(|_| master.client()).collect();
    kept[0].send(&join_line("first", 4));
    kept[0].expect("join accepted");
    // The third from 127.0.0.1 gets the design's refusal, then the close; whatever it sent is
    // not processed.
    let mut refused = TcpStream::connect(master.addrs.tcp).unwrap();
    refused
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let _ = std::io::Write::write_all(
        &mut refused,
        format!("{}\n", join_line("third", 4)).as_bytes(),
    );
    let mut got = Vec::new();
    let _ = refused.read_to_end(&mut got);
    assert_eq!(String::from_utf8_lossy(&got), "masterserver full\n");
    let lines = list_on(&mut kept[1]);
    assert_eq!(lines.len(), 1, "only the first is listed: {lines:?}");
    let summary = master.stop();
    assert_eq!(summary.counter("refused_at_accept"), 1);
}

/// Regression: a connection that sends its lines and closes its sending side at once (`printf
/// 'list servers\n' | nc -N host 6502`) got no reply when the end of its stream arrived with
/// the lines. A last line without its "\n" is taken as a line.
#[test]
fn a_connection_that_closes_its_sending_side_still_gets_its_replies() {
    let master = start_master(master_config());
    let _listed = joined(&master, "Alpha");
    for _ in 0..20 {
        let mut brief = master.client();
        brief.send(&join_line("Brief", 8));
        brief.send("players: 2 max: 8");
        brief.send("list servers");
        brief.stream.shutdown(std::net::Shutdown::Write).unwrap();
        brief.expect("join accepted");
        brief.expect("players acknowledged.");
        assert!(brief.line().ends_with("name: Alpha"));
        assert!(brief.line().ends_with(
            "players: 2 max: 8 os: i586-pc-linux-gnu url: http://Brief.example/ name: Brief"
        ));
        brief.expect("end of list");
        brief.expect_closed(Duration::from_secs(3));
    }
    let mut unfinished = master.client();
    unfinished.send_raw(b"remove me");
    unfinished
        .stream
        .shutdown(std::net::Shutdown::Write)
        .unwrap();
    unfinished.expect("you're not even joined");
    unfinished.expect_closed(Duration::from_secs(3));
    wait_until(
        "the brief servers to be unlisted",
        Duration::from_secs(3),
        || list_over_tcp(master.addrs.tcp).len() == 1,
    );
}
