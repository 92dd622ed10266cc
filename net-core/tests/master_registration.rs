//! Slot- and gameservers registering with real masterservers on 127.0.0.1: a gameserver is
//! listed with its kind and ports, its player count follows players joining and leaving, it
//! leaves the list with `remove me` when stopped, and disappears when its process is killed
//! (the masterserver sees the connection close); a registration comes back when a masterserver
//! is restarted, and a server registers with three masterservers at once.
//!
//! The killed gameserver is this test binary run again as a child process
//! (`child_gameserver_process`, which does nothing unless `PARSEC_TEST_CHILD_MASTER` is set).

#[path = "master_support.rs"]
mod master_support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use master_support::support::*;
use master_support::*;
use net_core::master::MasterConfig;
use net_core::server::RuntimeConfig;

const WAIT: Duration = Duration::from_secs(10);

/// The one listed server's `players`, `max_players` (panics unless exactly one is listed).
fn occupancy(master: &Running) -> Option<(u64, u64)> {
    let servers = listed(master);
    let s = servers.first()?;
    Some((s["players"].as_u64()?, s["max_players"].as_u64()?))
}

fn join_player(server: &Running, name: &str) -> LineClient {
    let mut c = server.client();
    c.send(&format!("version: 1.0 join me: {name} os: test"));
    let accepted = c.line();
    assert!(
        accepted.starts_with(&format!("join from {name} accepted")),
        "{accepted}"
    );
    c
}

#[test]
fn a_gameserver_is_listed_and_its_player_count_follows_joins_and_leaves() {
    let master = start_master(master_config());
    let game = start_gameserver(
        "Gamma Quadrant",
        registration(vec![master.addrs.tcp.to_string()]),
    );
    wait_until("the gameserver to be listed", WAIT, || {
        listed(&master).len() == 1
    });
    let entry = listed(&master)[0].clone();
    assert_eq!(entry["name"], "Gamma Quadrant");
    assert_eq!(entry["kind"], "gameserver");
    assert_eq!(entry["port"], game.addrs.tcp.port());
    assert_eq!(entry["udp_port"], game.addrs.udp.unwrap().port());
    assert_eq!(entry["os"], "test-os");
    assert_eq!(entry["url"], "http://test.example/");
    assert_eq!(occupancy(&master), Some((0, 16)));

    let a = join_player(&game, "alice");
    wait_until("1/16", WAIT, || occupancy(&master) == Some((1, 16)));
    let b = join_player(&game, "bob");
    wait_until("2/16", WAIT, || occupancy(&master) == Some((2, 16)));
    let lines = list_over_tcp(master.addrs.tcp);
    assert!(lines[0].contains("players: 2 max: 16"), "{}", lines[0]);
    drop(a);
    wait_until("1/16 after a leave", WAIT, || {
        occupancy(&master) == Some((1, 16))
    });
    drop(b);
    wait_until("0/16", WAIT, || occupancy(&master) == Some((0, 16)));

    // A graceful stop sends `remove me`: the master counts a remove, not a dropped connection.
    let game_summary = game.stop();
    assert_eq!(game_summary.counter("master_registrations"), 1);
    wait_until("the gameserver to be unlisted", WAIT, || {
        listed(&master).is_empty()
    });
    let summary = master.stop();
    assert_eq!(summary.counter("removes"), 1);
    assert_eq!(summary.counter("dropped_connections"), 0);
    assert!(summary.counter("player_updates") >= 4);
}

#[test]
fn a_slotserver_registers_as_a_slotserver() {
    let master = start_master(master_config());
    let slot = start_slotserver("Slots", registration(vec![master.addrs.tcp.to_string()]));
    wait_until("the slotserver to be listed", WAIT, || {
        listed(&master).len() == 1
    });
    let entry = listed(&master)[0].clone();
    assert_eq!(entry["kind"], "slotserver");
    assert_eq!(entry["port"], slot.addrs.tcp.port());
    assert_eq!(entry["udp_port"], 0);
    let _p = join_player(&slot, "carol");
    wait_until("1/16", WAIT, || occupancy(&master) == Some((1, 16)));
}

#[test]
fn a_killed_gameserver_disappears_from_the_list() {
    let master = start_master(master_config());
    let exe = std::env::current_exe().expect("test binary");
    let mut child = Command::new(exe)
        .args([
            "--exact",
            "child_gameserver_process",
            "--nocapture",
            "--include-ignored",
        ])
        .env("PARSEC_TEST_CHILD_MASTER", master.addrs.tcp.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the child gameserver");
    let stdout = child.stdout.take().expect("child stdout");
    let mut lines = BufReader::new(stdout).lines();
    let ready = lines
        .by_ref()
        .map_while(Result::ok)
        .find(|l| l.starts_with("READY "))
        .expect("the child reports READY");
    let game_port: u16 = ready["READY ".len()..].parse().expect("port");
    wait_until("the child to be listed", WAIT, || {
        listed(&master).len() == 1
    });
    assert_eq!(listed(&master)[0]["port"], game_port);
    assert_eq!(listed(&master)[0]["name"], "Doomed");
    child.kill().expect("kill the child");
    let _ = child.wait();
    wait_until("the killed server to be unlisted", WAIT, || {
        listed(&master).is_empty()
    });
    let summary = master.stop();
    assert_eq!(
        summary.counter("dropped_connections"),
        1,
        "seen as a closed connection"
    );
    assert_eq!(
        summary.counter("removes"),
        0,
        "a killed server sends no remove me"
    );
}

/// Run by `a_killed_gameserver_disappears_from_the_list` as a child process.
#[test]
#[ignore = "runs only as a child process of a_killed_gameserver_disappears_from_the_list"]
fn child_gameserver_process() {
    let Ok(master) = std::env::var("PARSEC_TEST_CHILD_MASTER") else {
        println!("only runs as a child process");
        return;
    };
    let game = start_gameserver("Doomed", registration(vec![master]));
    println!("READY {}", game.addrs.tcp.port());
    // Until the parent kills this process (or closes stdin).
    let mut rest = String::new();
    let _ = std::io::stdin().read_line(&mut rest);
    drop(game);
}

#[test]
fn the_registration_comes_back_after_a_masterserver_restart() {
    let master = start_master(master_config());
    let port = master.addrs.tcp;
    let _game = start_gameserver("Phoenix", registration(vec![port.to_string()]));
    wait_until("listed", WAIT, || listed(&master).len() == 1);
    drop(master);
    // The same port again (the registration only knows HOST:PORT).
    let master = start_master_with(
        master_config(),
        RuntimeConfig {
            http: Some(loopback()),
            ..RuntimeConfig::new("masterserver", port)
        },
    );
    wait_until("listed again", WAIT, || listed(&master).len() == 1);
    assert_eq!(listed(&master)[0]["name"], "Phoenix");
}

#[test]
fn a_server_registers_with_three_masterservers() {
    let masters: Vec<Running> = (0..3).map(|_| start_master(master_config())).collect();
    let addrs = masters.iter().map(|m| m.addrs.tcp.to_string()).collect();
    let game = start_gameserver("Everywhere", registration(addrs));
    for m in &masters {
        wait_until("listed", WAIT, || listed(m).len() == 1);
    }
    let _p = join_player(&game, "dave");
    for m in &masters {
        wait_until("1/16 everywhere", WAIT, || occupancy(m) == Some((1, 16)));
    }
    assert_eq!(game.stop().counter("master_registrations"), 3);
    for m in &masters {
        wait_until("unlisted everywhere", WAIT, || listed(m).is_empty());
    }
}

#[test]
fn an_unreachable_or_full_masterserver_does_not_stop_the_server() {
    let full = start_master(MasterConfig {
        max_servers: 1,
        ..master_config()
    });
    let _occupant = joined(&full, "occupant");
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_addr = dead.local_addr().unwrap();
    drop(dead);
    let good = start_master(master_config());
    let game = start_gameserver(
        "Stubborn",
        registration(vec![
            dead_addr.to_string(),
            full.addrs.tcp.to_string(),
            good.addrs.tcp.to_string(),
        ]),
    );
    wait_until("listed by the good one", WAIT, || listed(&good).len() == 1);
    let _p = join_player(&game, "erin");
    wait_until("1/16", WAIT, || occupancy(&good) == Some((1, 16)));
    std::thread::sleep(Duration::from_millis(500));
    let summary = game.stop();
    assert!(
        summary.counter("master_refusals") >= 1,
        "masterserver full was seen"
    );
    assert!(summary.counter("master_losses") >= 2, "and retried");
    assert_eq!(listed(&full).len(), 1, "the occupant is still the only one");
}
