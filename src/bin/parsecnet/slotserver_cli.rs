//! `parsecnet slotserver`: runs the slotserver (design section 2.3.2) until SIGINT or SIGTERM:
//! the text protocol on TCP 6582, the player list over HTTP on 8582 and in files, and the
//! registration with up to three masterservers (`--master`).
//!
//! It only turns options into a configuration and starts the runtime; the protocol lives in
//! `net_core::server`.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use net_core::server::{
    runtime, stop_on_signals, BanList, BoundAddrs, RuntimeConfig, SlotServerConfig, SlotServerCore,
};

use crate::server_options::{
    common_usage, install_server_logger, parse_common, read_messages, registration, CommonOptions,
    Parsed, ServerDefaults,
};

const DEFAULTS: ServerDefaults = ServerDefaults {
    kind: "slotserver",
    port: 6582,
    http_port: 8582,
};

pub fn run(args: &[String]) -> ExitCode {
    let options = match parse_common(args, &DEFAULTS, |_, _| Ok(false)) {
        Ok(Parsed::Run(o)) => o,
        Ok(Parsed::Help) => {
            println!("{}", common_usage(&DEFAULTS));
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("parsecnet slotserver: {e}\n{}", common_usage(&DEFAULTS));
            return ExitCode::from(2);
        }
    };
    match serve(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("parsecnet slotserver: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The core's configuration from the options (reads the messages file).
fn core_config(o: &CommonOptions) -> Result<SlotServerConfig, String> {
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

fn serve(o: &CommonOptions) -> Result<(), String> {
    let config = core_config(o)?;
    let runtime_config = RuntimeConfig {
        http: o.http_port.map(|port| SocketAddr::new(o.bind, port)),
        html_file: o.html_file.clone(),
        json_file: o.json_file.clone(),
        ban_file: o.ban_file.clone(),
        registration: registration(o),
        limits: o.limits,
        ..RuntimeConfig::new("slotserver", SocketAddr::new(o.bind, o.port))
    };
    install_server_logger();
    if !o.masters.is_empty() {
        println!("registering with masterserver {}", o.masters.join(", "));
    }
    let stop = Arc::new(AtomicBool::new(false));
    stop_on_signals(&stop).map_err(|e| e.to_string())?;
    let core = SlotServerCore::new(config, BanList::empty());
    let name = o.name.clone();
    let summary = runtime::run(runtime_config, core, None, stop, |addrs| {
        announce(&name, &addrs)
    })
    .map_err(|e| e.to_string())?;
    let counted: Vec<String> = summary
        .counters
        .iter()
        .filter(|(_, v)| *v > 0)
        .map(|(n, v)| format!("{n}={v}"))
        .collect();
    println!("slotserver '{name}' stopped; {}", counted.join(" "));
    Ok(())
}

fn announce(name: &str, addrs: &BoundAddrs) {
    let mut line = format!("slotserver '{name}' listening on TCP {}", addrs.tcp);
    if let Some(http) = addrs.http {
        let host = if http.ip().is_unspecified() {
            "localhost".to_string()
        } else if http.is_ipv6() {
            format!("[{}]", http.ip())
        } else {
            http.ip().to_string()
        };
        line.push_str(&format!(", HTML list at http://{host}:{}/", http.port()));
    }
    println!("{line}");
}
