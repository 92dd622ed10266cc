//! What the server subcommands do around the runtime: the slot and gameserver core and runtime
//! configurations from the common options, running until SIGINT or SIGTERM, and the two lines
//! every server prints (where it listens, and what it counted when it stopped). A server whose
//! standard output cannot take these lines ends as `stdout` says: quietly by SIGPIPE when the
//! reader left; else it serves on and exits 1 when stopped.
//!
//! The protocol and the event loop live in `net_core::server`; the options are parsed in
//! `server_options`.

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use net_core::server::{
    runtime, stop_on_signals, BanList, BoundAddrs, RunSummary, RuntimeConfig, SlotServerConfig,
    SlotServerCore, UdpService,
};

use crate::server_options::{install_server_logger, read_messages, registration, CommonOptions};
use crate::stdout;

/// The slot core's configuration from the options (reads the messages file).
pub fn slot_core_config(o: &CommonOptions) -> Result<SlotServerConfig, String> {
    let mut config = SlotServerConfig {
        server_name: o.name.clone(),
        max_players: o.max_players,
        udp_port: 0,
        idle_timeout: o.idle_timeout,
        handshake_timeout: o.handshake_timeout,
        max_per_address: o.max_per_address,
        max_connections: o.max_connections,
        ..SlotServerConfig::default()
    };
    if let Some(path) = &o.messages_file {
        config.messages = read_messages(path)?;
    }
    config.validate().map_err(|e| e.to_string())?;
    Ok(config)
}

/// Run a slotserver (`udp` None) or gameserver (`udp`: the UDP port and its service) until a
/// signal stops it, printing where it listens; returns what it counted (an error if those lines
/// could not be written).
pub fn serve_slots(
    o: &CommonOptions,
    kind: &'static str,
    config: SlotServerConfig,
    udp: Option<(u16, Box<dyn UdpService>)>,
) -> Result<RunSummary, String> {
    let (udp_port, service) = match udp {
        Some((port, service)) => (Some(port), Some(service)),
        None => (None, None),
    };
    let runtime_config = RuntimeConfig {
        http: o.http_port.map(|port| SocketAddr::new(o.bind, port)),
        udp: udp_port.map(|port| SocketAddr::new(o.bind, port)),
        html_file: o.html_file.clone(),
        json_file: o.json_file.clone(),
        ban_file: o.ban_file.clone(),
        registration: registration(o),
        limits: o.limits,
        ..RuntimeConfig::new(kind, SocketAddr::new(o.bind, o.port))
    };
    install_server_logger();
    let mut unwritten = None;
    let stop = Arc::new(AtomicBool::new(false));
    stop_on_signals(&stop).map_err(|e| e.to_string())?;
    let core = SlotServerCore::new(config, BanList::empty());
    let name = o.name.clone();
    let masters = o.masters.clone();
    let summary = runtime::run(runtime_config, core, service, stop, |addrs| {
        // The listening line first (a reader that takes one line gets it), then the
        // masterservers, once the server really runs.
        unwritten = stdout::announce(&listening_line(kind, &name, &addrs));
        if !masters.is_empty() && unwritten.is_none() {
            unwritten = stdout::announce(&format!(
                "registering with masterserver {}",
                masters.join(", ")
            ));
        }
    })
    .map_err(|e| e.to_string())?;
    match unwritten {
        Some(err) => Err(stdout::problem(&err)),
        None => Ok(summary),
    }
}

/// `KIND 'NAME' listening on TCP A:P[, UDP A:P][, HTML list at URL]`.
fn listening_line(kind: &str, name: &str, addrs: &BoundAddrs) -> String {
    let mut line = format!("{kind} '{name}' listening on TCP {}", addrs.tcp);
    if let Some(udp) = addrs.udp {
        line.push_str(&format!(", UDP {udp}"));
    }
    if let Some(http) = addrs.http {
        line.push_str(&format!(", HTML list at {}", http_url(http)));
    }
    line
}

/// The address a browser on this machine uses for a bound HTTP endpoint: `localhost` for an
/// unspecified address, brackets around IPv6.
pub fn http_url(http: SocketAddr) -> String {
    let host = if http.ip().is_unspecified() {
        "localhost".to_string()
    } else if http.is_ipv6() {
        format!("[{}]", http.ip())
    } else {
        http.ip().to_string()
    };
    format!("http://{host}:{}/", http.port())
}

/// `WHAT stopped; NAME=N ...` with the counters above zero, then the service's status lines.
/// A closed standard output ends the program quietly; another failure is the error.
pub fn print_stopped(what: &str, summary: &RunSummary) -> Result<(), String> {
    let counted: Vec<String> = summary
        .counters
        .iter()
        .filter(|(_, v)| *v > 0)
        .map(|(n, v)| format!("{n}={v}"))
        .collect();
    let mut text = if counted.is_empty() {
        format!("{what} stopped; nothing was counted (no connections)")
    } else {
        format!("{what} stopped; {}", counted.join(" "))
    };
    for line in &summary.status {
        text.push_str(&format!("\n  {line}"));
    }
    stdout::line(&text).map_err(|e| stdout::problem(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_a_host_a_browser_can_reach() {
        assert_eq!(
            http_url("0.0.0.0:8582".parse().unwrap()),
            "http://localhost:8582/"
        );
        assert_eq!(
            http_url("127.0.0.1:8581".parse().unwrap()),
            "http://127.0.0.1:8581/"
        );
        assert_eq!(http_url("[::1]:80".parse().unwrap()), "http://[::1]:80/");
        assert_eq!(http_url("[::]:80".parse().unwrap()), "http://localhost:80/");
    }

    #[test]
    fn the_listening_line_names_each_bound_endpoint() {
        let addrs = BoundAddrs {
            tcp: "0.0.0.0:6581".parse().unwrap(),
            udp: Some("0.0.0.0:6522".parse().unwrap()),
            http: Some("0.0.0.0:8581".parse().unwrap()),
        };
        assert_eq!(
            listening_line("gameserver", "Gamma", &addrs),
            "gameserver 'Gamma' listening on TCP 0.0.0.0:6581, UDP 0.0.0.0:6522, \
             HTML list at http://localhost:8581/"
        );
    }
}
