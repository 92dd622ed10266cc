//! Shared helpers of the real-socket masterserver tests (included with `#[path]`; it includes
//! `server_support.rs` as `support`; as a test target of its own it has no tests): a
//! masterserver, slot- or gameserver runtime on a thread bound to 127.0.0.1 port 0 (through
//! `support::Running`), the join lines of the design, and reading the list over TCP (`list
//! servers`) and HTTP (`/servers.json`).

#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use net_core::master::{MasterConfig, MasterCore};
use net_core::relay::service::RelayService;
use net_core::relay::{RelayConfig, RelayCore};
use net_core::server::{
    run, run_core, BanList, RegistrationSettings, RuntimeConfig, SlotServerConfig, SlotServerCore,
};

#[path = "server_support.rs"]
pub mod support;

pub use support::Running;
use support::{http_get, loopback, LineClient};

/// A masterserver configuration for tests: short timeouts, generous connection limits.
pub fn master_config() -> MasterConfig {
    MasterConfig {
        title: "Test masterserver".into(),
        max_servers: 256,
        idle_timeout: Duration::from_secs(120),
        handshake_timeout: Duration::from_secs(10),
        max_per_address: 512,
        max_connections: 1024,
    }
}

/// A masterserver with its HTTP endpoint, both on 127.0.0.1 port 0.
pub fn start_master(config: MasterConfig) -> Running {
    start_master_with(
        config,
        RuntimeConfig {
            http: Some(loopback()),
            ..RuntimeConfig::new("masterserver", loopback())
        },
    )
}

pub fn start_master_with(config: MasterConfig, runtime: RuntimeConfig) -> Running {
    Running::spawn(move |stop, ready| run_core(runtime, MasterCore::new(config), None, stop, ready))
}

/// Registration settings for tests: fast keep-alive off, short backoff.
pub fn registration(masters: Vec<String>) -> RegistrationSettings {
    RegistrationSettings {
        url: "http://test.example/".into(),
        os: "test-os".into(),
        backoff_min: Duration::from_millis(100),
        backoff_max: Duration::from_millis(400),
        ..RegistrationSettings::new(masters)
    }
}

pub fn slot_config(name: &str) -> SlotServerConfig {
    SlotServerConfig {
        server_name: name.into(),
        max_players: 16,
        handshake_timeout: Duration::from_secs(10),
        max_per_address: 64,
        max_connections: 128,
        ..SlotServerConfig::default()
    }
}

/// A gameserver (the relay as its UDP service) registering with `masters`.
pub fn start_gameserver(name: &str, settings: RegistrationSettings) -> Running {
    let config = slot_config(name);
    Running::spawn(move |stop, ready| {
        let relay = RelayCore::new(RelayConfig {
            server_token: config.server_token,
            ..RelayConfig::default()
        });
        let runtime = RuntimeConfig {
            udp: Some(loopback()),
            registration: Some(settings),
            ..RuntimeConfig::new("gameserver", loopback())
        };
        let core = SlotServerCore::new(config, BanList::empty());
        run_core(
            runtime,
            core,
            Some(Box::new(RelayService::new(relay))),
            stop,
            ready,
        )
    })
}

/// A slotserver registering with `masters`.
pub fn start_slotserver(name: &str, settings: RegistrationSettings) -> Running {
    let config = slot_config(name);
    Running::spawn(move |stop, ready| {
        let runtime = RuntimeConfig {
            registration: Some(settings),
            ..RuntimeConfig::new("slotserver", loopback())
        };
        run(
            runtime,
            SlotServerCore::new(config, BanList::empty()),
            None,
            stop,
            ready,
        )
    })
}

/// The design's join line.
pub fn join_line(name: &str, max: u16) -> String {
    format!("version: 1.0 join me: {name} os: i586-pc-linux-gnu maxplayers: {max} url: http://{name}.example/")
}

/// A raw client that joined the masterserver as `name`.
pub fn joined(master: &Running, name: &str) -> LineClient {
    let mut c = master.client();
    c.send(&join_line(name, 16));
    c.expect("join accepted");
    c
}

/// `list servers` on a fresh connection: the `server:` lines (until `end of list`).
pub fn list_over_tcp(addr: SocketAddr) -> Vec<String> {
    let mut c = LineClient::connect(addr);
    list_on(&mut c)
}

/// `list servers` on an open connection.
pub fn list_on(c: &mut LineClient) -> Vec<String> {
    c.send("list servers");
    let mut lines = Vec::new();
    loop {
        let line = c.line();
        if line == "end of list" {
            return lines;
        }
        assert!(line.starts_with("server: "), "not a list line: {line}");
        lines.push(line);
    }
}

/// `/servers.json` of the masterserver, parsed.
pub fn servers_json(master: &Running) -> serde_json::Value {
    let (code, body) = http_get(master.addrs.http.expect("HTTP bound"), "/servers.json");
    assert_eq!(code, 200);
    serde_json::from_str(&body).expect("valid JSON")
}

/// The listed servers of `/servers.json`.
pub fn listed(master: &Running) -> Vec<serde_json::Value> {
    servers_json(master)["servers"]
        .as_array()
        .expect("servers array")
        .clone()
}

/// Wait (up to `within`) until `check` holds, polling.
pub fn wait_until(what: &str, within: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}
