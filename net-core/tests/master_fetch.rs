//! The game's server browser against real masterservers on 127.0.0.1: `net.master` and
//! `servers` on the console, `Subsystem::request_server_list`, the merged list deduplicated by
//! address and port, errors of masterservers that cannot be reached, the `ServerList` event
//! arriving over later `maintain` calls (never inside the call that starts the fetch), and the
//! 5-second refresh rule.

#[path = "master_support.rs"]
mod master_support;

use std::time::{Duration, Instant};

use master_support::support::*;
use master_support::*;
use net_core::session::GameEvent;
use net_core::Subsystem;

/// A registered raw "server" with the extension fields.
fn register(master: &Running, name: &str, port: u16) -> LineClient {
    let mut c = master.client();
    c.send(&format!(
        "version: 1.0 join me: {name} os: linux maxplayers: 8 url: http://{}.example/ kind: gameserver port: {port} udp: 6522",
        name.replace(' ', "-")
    ));
    c.expect("join accepted");
    c
}

/// Run frames until the server-list event arrives; the event and how many frames it took.
fn frames_until_list(sub: &mut Subsystem) -> (GameEvent, u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut frames = 0;
    loop {
        sub.maintain(Instant::now());
        frames += 1;
        while let Some(event) = sub.poll_event() {
            if matches!(event, GameEvent::ServerList { .. }) {
                return (event, frames);
            }
        }
        assert!(Instant::now() < deadline, "no server list event");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn console(sub: &mut Subsystem, line: &str) -> String {
    let reply = sub.console_exec(line, Instant::now());
    assert!(reply.result.is_ok(), "{line}: {}", reply.output);
    reply.output
}

#[test]
fn servers_fetches_merges_and_reports_a_dead_masterserver() {
    let m1 = start_master(master_config());
    let m2 = start_master(master_config());
    let _a = register(&m1, "alpha", 7001);
    let mut b = register(&m1, "beta", 7002);
    b.send("players: 3 max: 8");
    b.expect("players acknowledged.");
    let _b_again = register(&m2, "beta elsewhere", 7002); // the same address and port
    let _c = register(&m2, "gamma", 7003);
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_addr = dead.local_addr().unwrap();
    drop(dead);

    let mut sub = Subsystem::new();
    let reply = sub.console_exec("servers", Instant::now());
    assert!(reply.result.is_err());
    assert!(reply.output.contains("net.master"), "{}", reply.output);
    console(
        &mut sub,
        &format!("net.master {},{},{dead_addr}", m1.addrs.tcp, m2.addrs.tcp),
    );
    let out = console(&mut sub, "servers");
    assert!(out.starts_with("fetching the server list"), "{out}");
    assert!(sub.poll_event().is_none(), "nothing inside the call");
    let (event, frames) = frames_until_list(&mut sub);
    assert!(frames >= 1);
    let GameEvent::ServerList { count, errors } = event else {
        unreachable!()
    };
    assert_eq!(count, 3);
    assert!(errors.contains(&dead_addr.to_string()), "{errors}");
    let list = sub.server_list().servers();
    let names: Vec<&str> = list.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["alpha", "beta", "gamma"],
        "deduplicated, first masterserver wins"
    );
    assert_eq!((list[1].players, list[1].max_players), (3, 8));
    assert_eq!(list[1].address(), "127.0.0.1:7002");
    assert_eq!(list[2].udp_port, 6522);

    // Within 5 s the list is printed without a new fetch.
    let out = console(&mut sub, "servers");
    assert!(out.starts_with("3 servers"), "{out}");
    assert!(
        out.contains("3/8") && out.contains("127.0.0.1:7003"),
        "{out}"
    );
    assert!(!sub.server_list().is_fetching());
    assert!(!sub.request_server_list(Instant::now()).unwrap());
    // Older than 5 s: fetched again.
    let later = Instant::now() + Duration::from_secs(6);
    assert!(sub.request_server_list(later).unwrap());
    assert!(sub.server_list().is_fetching());
}

#[test]
fn a_listing_of_many_servers_arrives_whole() {
    let master = start_master(master_config());
    let _servers: Vec<LineClient> = (0..200)
        .map(|i| register(&master, &format!("s{i:03}"), 10_000 + i))
        .collect();
    let mut sub = Subsystem::new();
    console(&mut sub, &format!("net.master {}", master.addrs.tcp));
    assert!(sub.request_server_list(Instant::now()).unwrap());
    let (event, _) = frames_until_list(&mut sub);
    assert_eq!(
        event,
        GameEvent::ServerList {
            count: 200,
            errors: String::new()
        }
    );
}

#[test]
fn another_masterserver_is_asked_at_once_and_its_list_replaces_the_old() {
    let m1 = start_master(master_config());
    let m2 = start_master(master_config());
    let _a = register(&m1, "alpha", 7001);
    let _b = register(&m2, "beta", 7002);
    let mut sub = Subsystem::new();
    console(&mut sub, &format!("net.master {}", m1.addrs.tcp));
    sub.request_server_list(Instant::now()).unwrap();
    frames_until_list(&mut sub);
    let names = |sub: &Subsystem| -> Vec<String> {
        let list = sub.server_list().servers();
        list.iter().map(|s| s.name.clone()).collect()
    };
    assert_eq!(names(&sub), ["alpha"]);
    // The list is fresh, but it is m1's: after net.master m2 it is not shown as m2's.
    console(&mut sub, &format!("net.master {}", m2.addrs.tcp));
    assert!(
        sub.request_server_list(Instant::now()).unwrap(),
        "a fetch from the new masterserver starts at once"
    );
    let (event, _) = frames_until_list(&mut sub);
    assert_eq!(
        event,
        GameEvent::ServerList {
            count: 1,
            errors: String::new()
        }
    );
    assert_eq!(names(&sub), ["beta"]);
}
