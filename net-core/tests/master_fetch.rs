//! The game's server browser against real masterservers on 127.0.0.1: `net.master` and
//! `servers` on the console, `Subsystem::request_server_list`, the merged list deduplicated by
//! address and port, errors of masterservers that cannot be reached, and the 5-second refresh
//! rule. `servers` answers with the list itself (it waits up to 2 s for the masterservers; a
//! slower one is answered later by the `ServerList` event); `request_server_list`
//! (`NET_FetchServerList`) never waits: its event arrives over later `maintain` calls.

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

/// An address where nothing listens.
fn dead_address() -> std::net::SocketAddr {
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    dead.local_addr().unwrap()
}

#[test]
fn servers_answers_with_the_list_on_its_first_call() {
    let master = start_master(master_config());
    let mut a = register(&master, "alpha", 7001);
    a.send("players: 3 max: 8");
    a.expect("players acknowledged.");
    let _b = register(&master, "Beta Quadrant", 7002);
    let mut sub = Subsystem::new();
    console(&mut sub, &format!("net.master {}", master.addrs.tcp));
    let out = console(&mut sub, "servers");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        format!("2 servers listed by {}:", master.addrs.tcp),
        "{out}"
    );
    assert!(lines[1].starts_with("name "), "a header line: {out}");
    let alpha = lines.iter().find(|l| l.starts_with("alpha ")).expect(&out);
    for field in ["3/8", "127.0.0.1:7001", "http://alpha.example/"] {
        assert!(alpha.contains(field), "{field} missing: {out}");
    }
    let beta = lines
        .iter()
        .find(|l| l.starts_with("Beta Quadrant "))
        .expect(&out);
    for field in ["0/8", "127.0.0.1:7002", "http://Beta-Quadrant.example/"] {
        assert!(beta.contains(field), "{field} missing: {out}");
    }
    assert_eq!(lines.len(), 4, "{out}");
    // Games that listen for the event still get it.
    assert_eq!(
        sub.poll_event(),
        Some(GameEvent::ServerList {
            count: 2,
            errors: String::new()
        })
    );
    // Asked again without a frame in between: the same list, not "fetching...".
    let again = console(&mut sub, "servers");
    assert!(again.starts_with("2 servers listed by "), "{again}");
    assert!(again.contains("(fetched 0 s ago)"), "{again}");
    assert!(again.contains("127.0.0.1:7001"), "{again}");
}

#[test]
fn an_unreachable_masterserver_is_a_one_line_error_naming_it() {
    let dead = dead_address();
    let mut sub = Subsystem::new();
    console(&mut sub, &format!("net.master {dead}"));
    let started = Instant::now();
    let reply = sub.console_exec("servers", Instant::now());
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "refused at once"
    );
    assert_eq!(
        reply.result.map_err(|e| e.code),
        Err(net_core::ErrorCode::Io),
        "{}",
        reply.output
    );
    assert!(!reply.output.contains('\n'), "{}", reply.output);
    assert!(
        reply
            .output
            .starts_with(&format!("servers: no list from masterserver {dead}: ")),
        "{}",
        reply.output
    );
    // Asked again while that failed fetch is younger than 5 s: the same error, not an empty
    // list "listed by" nobody.
    let again = sub.console_exec("servers", Instant::now());
    assert_eq!(
        again.result.map_err(|e| e.code),
        Err(net_core::ErrorCode::Io),
        "{}",
        again.output
    );
    assert_eq!(again.output, reply.output);
}

#[test]
fn servers_merges_several_masterservers_and_names_the_dead_one() {
    let m1 = start_master(master_config());
    let m2 = start_master(master_config());
    let _a = register(&m1, "alpha", 7001);
    let mut b = register(&m1, "beta", 7002);
    b.send("players: 3 max: 8");
    b.expect("players acknowledged.");
    let _b_again = register(&m2, "beta elsewhere", 7002); // the same address and port
    let _c = register(&m2, "gamma", 7003);
    let dead = dead_address();

    let mut sub = Subsystem::new();
    let reply = sub.console_exec("servers", Instant::now());
    assert!(reply.result.is_err());
    assert!(reply.output.contains("net.master"), "{}", reply.output);
    console(
        &mut sub,
        &format!("net.master {},{},{dead}", m1.addrs.tcp, m2.addrs.tcp),
    );
    let out = console(&mut sub, "servers");
    // The sources named are the masterservers that answered; the dead one has its own line.
    let header = format!("3 servers listed by {}, {}:", m1.addrs.tcp, m2.addrs.tcp);
    assert!(out.starts_with(&header), "{out}");
    assert!(
        out.contains("3/8") && out.contains("127.0.0.1:7003"),
        "{out}"
    );
    assert!(!out.contains("beta elsewhere"), "deduplicated: {out}");
    let last = out.lines().last().unwrap();
    assert!(last.starts_with(&format!("! {dead}: ")), "{out}");
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
}

#[test]
fn the_c_api_fetch_never_waits_and_refreshes_after_5_s() {
    let master = start_master(master_config());
    let _a = register(&master, "alpha", 7001);
    let mut sub = Subsystem::new();
    console(&mut sub, &format!("net.master {}", master.addrs.tcp));
    assert!(sub.request_server_list(Instant::now()).unwrap());
    assert!(sub.poll_event().is_none(), "nothing inside the call");
    assert!(sub.server_list().servers().is_empty());
    let (event, frames) = frames_until_list(&mut sub);
    assert!(frames >= 1);
    assert_eq!(
        event,
        GameEvent::ServerList {
            count: 1,
            errors: String::new()
        }
    );
    // Within 5 s the list is kept without a new fetch.
    assert!(!sub.server_list().is_fetching());
    assert!(!sub.request_server_list(Instant::now()).unwrap());
    // Older than 5 s: fetched again.
    let later = Instant::now() + Duration::from_secs(6);
    assert!(sub.request_server_list(later).unwrap());
    assert!(sub.server_list().is_fetching());
}

/// A stand-in masterserver that answers one `list servers` with `lines` after `delay`.
fn slow_master(
    lines: Vec<String>,
    delay: Duration,
) -> (std::net::SocketAddr, std::thread::JoinHandle<()>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let thread = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut request = String::new();
        BufReader::new(&stream).read_line(&mut request).unwrap();
        assert_eq!(request, "list servers\n");
        std::thread::sleep(delay);
        let mut stream = stream;
        for line in lines {
            let _ = stream.write_all(format!("{line}\n").as_bytes());
        }
        let _ = stream.write_all(b"end of list\n");
    });
    (addr, thread)
}

#[test]
fn a_masterserver_slower_than_2_s_is_answered_by_the_event() {
    let line = "server: ip: 192.0.2.9 port: 6581 kind: gameserver udp: 6522 players: 1 max: 4 \
                os: linux url: http://slow.example/ name: Slowpoke";
    let (addr, thread) = slow_master(vec![line.to_string()], Duration::from_millis(2600));
    let mut sub = Subsystem::new();
    console(&mut sub, &format!("net.master {addr}"));
    let started = Instant::now();
    let out = console(&mut sub, "servers");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(1900) && waited < Duration::from_millis(2600),
        "waited {waited:?}"
    );
    assert_eq!(
        out,
        format!(
            "no answer from {addr} within 2 s; still fetching: the list is shown when it arrives"
        )
    );
    assert!(sub.poll_event().is_none());
    let (event, _) = frames_until_list(&mut sub);
    assert_eq!(
        event,
        GameEvent::ServerList {
            count: 1,
            errors: String::new()
        }
    );
    thread.join().unwrap();
    let out = console(&mut sub, "servers");
    assert!(
        out.starts_with(&format!("1 server listed by {addr} (fetched ")),
        "{out}"
    );
    assert!(out.contains("Slowpoke") && out.contains("1/4"), "{out}");
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
