//! `parsecnet masterserver`: runs the masterserver (design section 3) until SIGINT or SIGTERM:
//! the registration protocol on TCP 6502, the server list over HTTP on 8502 and in files.
//!
//! It only turns options into a configuration, raises the open-file limit to what the limits
//! need, and starts the runtime; the protocol lives in `net_core::master`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use net_core::master::core::title_is_valid;
use net_core::master::{
    MasterConfig, MasterCore, EXTRA_CONNECTIONS, EXTRA_PER_ADDRESS, MASTER_HTTP_PORT, MASTER_PORT,
};
use net_core::server::fd_limit::raise_open_file_limit;
use net_core::server::{run_core, stop_on_signals, BoundAddrs, RuntimeConfig};

use crate::server_options::{install_server_logger, positive, seconds, ArgCursor, Parsed};
use crate::server_run::{http_url, print_stopped};
use crate::stdout;

/// File descriptors kept free beyond the connection limit (listeners, HTTP, files, logs).
const SPARE_FDS: u64 = 128;

/// What the command line asks for.
#[derive(Clone, Debug)]
struct MasterOptions {
    bind: IpAddr,
    port: u16,
    http_port: Option<u16>,
    html_file: Option<PathBuf>,
    json_file: Option<PathBuf>,
    config: MasterConfig,
    max_per_address_given: bool,
    max_connections_given: bool,
    limits: net_core::server::RateLimits,
}

fn usage() -> String {
    format!(
        "usage: parsecnet masterserver [options]

options:
  --port N                 TCP port of the masterserver protocol (default {MASTER_PORT}; 0: any free port)
  --http-port N            HTTP port of the server list (default {MASTER_HTTP_PORT}; 0: any free port)
  --no-http                no HTTP endpoint
  --bind ADDR              address to listen on (default 0.0.0.0; :: for IPv6)
  --title TEXT             title of the HTML list (default \"Parsec masterserver\")
  --max-servers N          servers listed at most; more get \"masterserver full\" (default 256)
  --html FILE              write the server list as HTML to FILE (replaced atomically)
  --json FILE              write the server list as JSON to FILE (replaced atomically)
  --idle-timeout S         unlist a server whose connection sends nothing for S seconds
                           (default 120; 0: never)
  --handshake-timeout S    close a connection not listed that sends no line for S seconds, and
                           any line not finished within S seconds (default 30; 0: never)
  --max-per-address N      connections from one IP address at most (default: --max-servers
                           + {EXTRA_PER_ADDRESS}); one over a limit is told \"masterserver full\" and closed
  --max-connections N      connections at most (default: --max-servers + {EXTRA_CONNECTIONS})
  --tcp-rate N             bytes per second one connection may send; a connection sending
                           more is dropped (default {tcp_rate}; 0: no limit)
  --help                   this text",
        tcp_rate = net_core::server::RateLimits::default().tcp_bytes_per_sec
    )
}

fn parse(args: &[String]) -> Result<Parsed<MasterOptions>, String> {
    let mut o = MasterOptions {
        bind: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        port: MASTER_PORT,
        http_port: Some(MASTER_HTTP_PORT),
        html_file: None,
        json_file: None,
        config: MasterConfig::default(),
        max_per_address_given: false,
        max_connections_given: false,
        limits: net_core::server::RateLimits::default(),
    };
    let mut cursor = ArgCursor::new(args);
    while let Some(flag) = cursor.next_flag() {
        match flag {
            "--help" | "-h" => return Ok(Parsed::Help),
            "--port" => o.port = cursor.number(flag, "a port number 0-65535")?,
            "--http-port" => o.http_port = Some(cursor.number(flag, "a port number 0-65535")?),
            "--no-http" => o.http_port = None,
            "--bind" => o.bind = cursor.number(flag, "an IPv4 or IPv6 address")?,
            "--title" => {
                let title = cursor.value(flag)?;
                if !title_is_valid(title) {
                    return Err(format!(
                        "--title: '{title}' must be 1-127 bytes without control characters"
                    ));
                }
                o.config.title = title.to_string();
            }
            "--max-servers" => o.config.max_servers = positive(flag, cursor.value(flag)?)?,
            "--html" => o.html_file = Some(PathBuf::from(cursor.value(flag)?)),
            "--json" => o.json_file = Some(PathBuf::from(cursor.value(flag)?)),
            "--idle-timeout" => o.config.idle_timeout = seconds(flag, cursor.value(flag)?)?,
            "--handshake-timeout" => {
                o.config.handshake_timeout = seconds(flag, cursor.value(flag)?)?
            }
            "--max-per-address" => {
                o.config.max_per_address = positive(flag, cursor.value(flag)?)?;
                o.max_per_address_given = true;
            }
            "--max-connections" => {
                o.config.max_connections = positive(flag, cursor.value(flag)?)?;
                o.max_connections_given = true;
            }
            "--tcp-rate" => {
                o.limits.tcp_bytes_per_sec = cursor.number(flag, "a number of bytes")?
            }
            other => return Err(format!("unknown option '{other}'")),
        }
    }
    // By default the list limit refuses first, from one address too (docs/server-admin.md).
    if !o.max_per_address_given {
        o.config.max_per_address = o.config.max_servers + EXTRA_PER_ADDRESS;
    }
    if !o.max_connections_given {
        o.config.max_connections = o.config.max_servers + EXTRA_CONNECTIONS;
    }
    o.config.validate().map_err(|e| e.to_string())?;
    Ok(Parsed::Run(o))
}

pub fn run(args: &[String]) -> ExitCode {
    let options = match parse(args) {
        Ok(Parsed::Run(o)) => o,
        Ok(Parsed::Help) => return stdout::answer("parsecnet masterserver", &usage()),
        Err(e) => {
            stdout::error_line(&format!("parsecnet masterserver: {e}\n{}", usage()));
            return ExitCode::from(2);
        }
    };
    match serve(options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            stdout::error_line(&format!("parsecnet masterserver: {e}"));
            ExitCode::FAILURE
        }
    }
}

fn serve(o: MasterOptions) -> Result<(), String> {
    install_server_logger();
    let wanted = o.config.max_connections as u64 + SPARE_FDS;
    match raise_open_file_limit(wanted) {
        Ok(limit) if limit < wanted => log::warn!(
            "the open-file limit is {limit}, below the {wanted} that --max-connections {} needs; \
             raise the hard limit (ulimit -Hn) or lower --max-connections",
            o.config.max_connections
        ),
        Ok(_) => {}
        Err(e) => log::warn!("{e}"),
    }
    let runtime_config = RuntimeConfig {
        http: o.http_port.map(|port| SocketAddr::new(o.bind, port)),
        html_file: o.html_file.clone(),
        json_file: o.json_file.clone(),
        limits: o.limits,
        ..RuntimeConfig::new("masterserver", SocketAddr::new(o.bind, o.port))
    };
    let stop = Arc::new(AtomicBool::new(false));
    stop_on_signals(&stop).map_err(|e| e.to_string())?;
    let max = o.config.max_servers;
    let core = MasterCore::new(o.config);
    let mut unwritten = None;
    let summary = run_core(runtime_config, core, None, stop, |addrs| {
        unwritten = stdout::announce(&listening_line(max, &addrs));
    })
    .map_err(|e| e.to_string())?;
    if let Some(err) = unwritten {
        return Err(stdout::problem(&err));
    }
    print_stopped("masterserver", &summary)
}

/// `masterserver listening on TCP A:P (at most N servers)[, server list at URL ...]`.
fn listening_line(max_servers: usize, addrs: &BoundAddrs) -> String {
    let mut line = format!(
        "masterserver listening on TCP {} (at most {max_servers} servers)",
        addrs.tcp
    );
    if let Some(http) = addrs.http {
        line.push_str(&format!(
            ", server list at {} and /servers.json",
            http_url(http)
        ));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn parse_ok(args: &[&str]) -> MasterOptions {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse(&args) {
            Ok(Parsed::Run(o)) => o,
            Ok(Parsed::Help) => panic!("help"),
            Err(e) => panic!("{e}"),
        }
    }

    fn parse_err(args: &[&str]) -> String {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse(&args) {
            Err(e) => e,
            _ => panic!("{args:?} was accepted"),
        }
    }

    #[test]
    fn defaults_are_the_designs() {
        let o = parse_ok(&[]);
        assert_eq!((o.port, o.http_port), (6502, Some(8502)));
        assert_eq!(o.config.max_servers, 256);
        assert_eq!(o.config.max_connections, 256 + EXTRA_CONNECTIONS);
        assert_eq!(o.config.idle_timeout, Duration::from_secs(120));
    }

    #[test]
    fn the_list_limit_refuses_before_the_address_limit_by_default() {
        // SPEC section 6: `masterserver full` at 256, from one address too (a test host, many
        // servers behind one NAT address), with room for that address's list readers.
        for args in [&[][..], &["--max-servers", "1000"][..]] {
            let o = parse_ok(args);
            let c = &o.config;
            assert!(
                c.max_per_address >= c.max_servers + 64,
                "{args:?}: {} per address for {} servers",
                c.max_per_address,
                c.max_servers
            );
            assert!(
                c.max_connections >= c.max_per_address + 128,
                "{args:?}: one address must not hold every connection"
            );
        }
        let o = parse_ok(&["--max-per-address", "8"]);
        assert_eq!(o.config.max_per_address, 8, "admins can lower it");
    }

    #[test]
    fn limits_follow_the_options() {
        let o = parse_ok(&["--max-servers", "10000", "--port", "0", "--no-http"]);
        assert_eq!(o.config.max_servers, 10_000);
        assert_eq!(o.config.max_connections, 10_000 + EXTRA_CONNECTIONS);
        assert_eq!(o.http_port, None);
        let o = parse_ok(&["--max-servers", "10", "--max-connections", "5"]);
        assert_eq!(o.config.max_connections, 5);
    }

    #[test]
    fn errors_name_the_option() {
        for (args, needle) in [
            (&["--max-servers", "0"][..], "--max-servers"),
            (&["--idle-timeout", "x"][..], "--idle-timeout"),
            (&["--port"][..], "--port needs a value"),
            (
                &["--title", ""][..],
                "--title: '' must be 1-127 bytes without control characters",
            ),
            (&["--title", &"t".repeat(128)][..], "--title: 'ttt"),
            (&["--name", "x"][..], "unknown option '--name'"),
        ] {
            let err = parse_err(args);
            assert!(err.contains(needle), "{args:?}: {err}");
        }
    }
}
