//! Shared helpers of the real-socket masterserver tests (included with `#[path]`; it includes
//! `server_support.rs` as `support`; as a test target of its own it has no tests): a masterserver, slot- or
//! gameserver runtime on a thread bound to 127.0.0.1 port 0, the join lines of the design, and
//! reading the list over TCP (`list servers`) and HTTP (`/servers.json`).

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use net_core::master::{MasterConfig, MasterCore};
use net_core::relay::service::RelayService;
use net_core::relay::{RelayConfig, RelayCore};
use net_core::server::{
    run, run_core, BanList, BoundAddrs, RegistrationSettings, RunSummary, RuntimeConfig,
    SlotServerConfig, SlotServerCore,
};
use net_core::NetResult;

#[path = "server_support.rs"]
pub mod support;

use support::{http_get, loopback, LineClient, IO_TIMEOUT};

/// A server runtime on a thread; stopped (and joined) when dropped.
pub struct Running {
    pub addrs: BoundAddrs,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<NetResult<RunSummary>>>,
}

impl Running {
    /// Run `body(stop, ready)` on a thread and wait for it to report its addresses.
    pub fn spawn(
        body: impl FnOnce(Arc<AtomicBool>, Box<dyn FnOnce(BoundAddrs) + Send>) -> NetResult<RunSummary>
            + Send
            + 'static,
    ) -> Running {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let thread_stop = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            body(
                thread_stop,
                Box::new(move |addrs| {
                    let _ = tx.send(addrs);
                }),
            )
        });
        let addrs = match rx.recv_timeout(IO_TIMEOUT) {
            Ok(addrs) => addrs,
            Err(_) => {
                let result = thread.join();
                panic!("server did not start: {result:?}");
            }
        };
        Running {
            addrs,
            stop,
            thread: Some(thread),
        }
    }

    /// Stop gracefully and return what the run counted.
    pub fn stop(mut self) -> RunSummary {
        match self.stop_and_join() {
            Some(Ok(summary)) => summary,
            Some(Err(problem)) => panic!("{problem}"),
            None => panic!("server already stopped"),
        }
    }

    fn stop_and_join(&mut self) -> Option<Result<RunSummary, String>> {
        self.stop.store(true, Ordering::SeqCst);
        let thread = self.thread.take()?;
        let deadline = Instant::now() + IO_TIMEOUT;
        while !thread.is_finished() {
            if Instant::now() >= deadline {
                return Some(Err("server thread did not stop in time".into()));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Some(match thread.join() {
            Ok(Ok(summary)) => Ok(summary),
            Ok(Err(e)) => Err(format!("server run failed: {e}")),
            Err(_) => Err("server thread panicked".into()),
        })
    }

    pub fn client(&self) -> LineClient {
        LineClient::connect(self.addrs.tcp)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.thread.is_some() {
            let _ = self.stop_and_join();
        }
    }
}

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
