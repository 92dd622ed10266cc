//! Command-line options shared by the server subcommands (`slotserver` and `gameserver`; the
//! `masterserver` uses the helpers): parsing by hand with clear errors, the per-server defaults,
//! the masterserver registration settings, reading the messages file, and the timestamped log
//! output every server prints.
//!
//! It only turns text into settings; it never opens a socket or starts a server.

use std::ffi::{c_char, c_void, CStr};
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use net_core::master::protocol::{validate_os, validate_url};
use net_core::server::text_protocol::validate_name;
use net_core::server::{utc, RegistrationSettings, MAX_MASTERS};

/// What differs between the servers' command lines.
pub struct ServerDefaults {
    /// The subcommand ("slotserver").
    pub kind: &'static str,
    /// The text protocol's TCP port.
    pub port: u16,
    /// The HTTP list port.
    pub http_port: u16,
}

/// The default masterserver port (design section 3.1).
pub const MASTER_PORT: u16 = 6502;

/// The options every server takes.
#[derive(Clone, Debug)]
pub struct CommonOptions {
    pub bind: IpAddr,
    pub port: u16,
    /// `None`: no HTTP endpoint (`--no-http`).
    pub http_port: Option<u16>,
    pub name: String,
    pub max_players: u8,
    pub messages_file: Option<PathBuf>,
    pub ban_file: Option<PathBuf>,
    pub html_file: Option<PathBuf>,
    pub json_file: Option<PathBuf>,
    /// Masterservers to register with, as `HOST:PORT`.
    pub masters: Vec<String>,
    /// The OS told to masterservers.
    pub os: String,
    /// The URL told to masterservers (`-`: none).
    pub url: String,
    /// How often the player count is re-sent to masterservers as a keep-alive.
    pub master_keepalive: Duration,
    pub idle_timeout: Duration,
    pub handshake_timeout: Duration,
    pub max_per_address: usize,
    pub max_connections: usize,
    /// Bytes per second per connection, datagrams and bytes per second per UDP source.
    pub limits: net_core::server::RateLimits,
}

impl CommonOptions {
    fn defaults(d: &ServerDefaults) -> Self {
        CommonOptions {
            bind: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            port: d.port,
            http_port: Some(d.http_port),
            name: "parsec".to_string(),
            max_players: 16,
            messages_file: None,
            ban_file: None,
            html_file: None,
            json_file: None,
            masters: Vec::new(),
            os: net_core::server::master_links::default_os(),
            url: "-".to_string(),
            master_keepalive: Duration::from_secs(60),
            idle_timeout: Duration::ZERO,
            handshake_timeout: Duration::from_secs(30),
            max_per_address: 20,
            max_connections: 256,
            limits: net_core::server::RateLimits::default(),
        }
    }
}

/// Whether this server has a UDP port (the gameserver), so `--udp-rate` means something.
fn has_udp(d: &ServerDefaults) -> bool {
    d.kind == "gameserver"
}

/// The usage text of the common options (a server appends its own).
pub fn common_usage(d: &ServerDefaults) -> String {
    format!(
        "usage: parsecnet {kind} [options]

options:
  --port N                 TCP port of the text protocol (default {port}; 0: any free port)
  --http-port N            HTTP port of the player list (default {http}; 0: any free port)
  --no-http                no HTTP endpoint
  --bind ADDR              address to listen on (default 0.0.0.0; :: for IPv6)
  --name NAME              server name sent to clients (1-31 printable ASCII; default parsec)
  --max-players N          player slots, 1-16 (default 16)
  --messages FILE          the four lines sent after each join (one per line, up to 4)
  --ban-file FILE          banned addresses and networks (re-read when it changes)
  --html FILE              write the player list as HTML to FILE (replaced atomically)
  --json FILE              write the player list as JSON to FILE (replaced atomically)
  --master HOST[:PORT]     masterserver to register with (up to {masters}; default port {master})
  --url URL                page about this server, linked in masterserver lists (default -: none)
  --os OS                  OS told to masterservers (default {os})
  --master-keepalive S     re-send the player count to masterservers every S seconds
                           (default 60; 0: only on changes)
  --idle-timeout S         remove a joined player silent for S seconds (default 0: never)
  --handshake-timeout S    close a connection not joined, or a line not finished, within S
                           seconds (default 30; 0: never)
  --max-per-address N      connections from one IP address at most (default 20)
  --max-connections N      connections at most (default 256)
  --tcp-rate N             bytes per second one connection may send; a connection sending
                           more is dropped (default {tcp_rate}; 0: no limit)
  --help                   this text",
        kind = d.kind,
        port = d.port,
        http = d.http_port,
        master = MASTER_PORT,
        masters = MAX_MASTERS,
        os = net_core::server::master_links::default_os(),
        tcp_rate = net_core::server::RateLimits::default().tcp_bytes_per_sec,
    )
}

/// The help line of `--udp-rate` (a gameserver option: a slotserver has no UDP port).
pub fn udp_rate_usage() -> String {
    let d = net_core::server::RateLimits::default();
    format!(
        "  --udp-rate N[,BYTES]     datagrams (and bytes) per second one UDP source may send; more is
                           dropped (default {},{}; 0: no limit)",
        d.udp_datagrams_per_sec, d.udp_bytes_per_sec,
    )
}

/// Walks the arguments; gives an option's value or says it is missing.
pub struct ArgCursor<'a> {
    args: std::slice::Iter<'a, String>,
}

impl<'a> ArgCursor<'a> {
    pub fn new(args: &'a [String]) -> Self {
        ArgCursor { args: args.iter() }
    }

    /// The next argument (an option name), if any.
    pub fn next_flag(&mut self) -> Option<&'a str> {
        self.args.next().map(String::as_str)
    }

    pub fn value(&mut self, flag: &str) -> Result<&'a str, String> {
        self.args
            .next()
            .map(String::as_str)
            .ok_or_else(|| format!("{flag} needs a value"))
    }

    pub fn number<T: std::str::FromStr>(&mut self, flag: &str, what: &str) -> Result<T, String> {
        let text = self.value(flag)?;
        text.parse()
            .map_err(|_| format!("{flag}: '{text}' is not {what}"))
    }
}

/// What the command line asks for.
pub enum Parsed<T> {
    Run(T),
    Help,
}

/// Parse the common options; `extra` is offered every option it does not know first and
/// returns `Ok(true)` if it took it (a server's own options).
pub fn parse_common(
    args: &[String],
    defaults: &ServerDefaults,
    mut extra: impl FnMut(&str, &mut ArgCursor) -> Result<bool, String>,
) -> Result<Parsed<CommonOptions>, String> {
    let mut o = CommonOptions::defaults(defaults);
    let mut cursor = ArgCursor { args: args.iter() };
    while let Some(arg) = cursor.args.next() {
        let flag = arg.as_str();
        match flag {
            "--help" | "-h" => return Ok(Parsed::Help),
            "--port" => o.port = cursor.number(flag, "a port number 0-65535")?,
            "--http-port" => o.http_port = Some(cursor.number(flag, "a port number 0-65535")?),
            "--no-http" => o.http_port = None,
            "--bind" => o.bind = cursor.number(flag, "an IPv4 or IPv6 address")?,
            "--name" => {
                let name = cursor.value(flag)?;
                o.name = validate_name(name).map_err(|_| {
                    format!(
                        "--name: '{name}' must be 1-31 printable ASCII characters, without \" os: \" (it would end the name in a masterserver's join line)"
                    )
                })?;
            }
            "--max-players" => {
                o.max_players = cursor.number(flag, "a number 1-16")?;
                if !(1..=16).contains(&o.max_players) {
                    return Err(format!("--max-players: {} is not 1-16", o.max_players));
                }
            }
            "--messages" => o.messages_file = Some(PathBuf::from(cursor.value(flag)?)),
            "--ban-file" => o.ban_file = Some(PathBuf::from(cursor.value(flag)?)),
            "--html" => o.html_file = Some(PathBuf::from(cursor.value(flag)?)),
            "--json" => o.json_file = Some(PathBuf::from(cursor.value(flag)?)),
            "--master" => {
                if o.masters.len() >= MAX_MASTERS {
                    return Err(format!("--master: at most {MAX_MASTERS} masterservers"));
                }
                let text = cursor.value(flag)?;
                let master = parse_master(text)?;
                // Registered twice, the server would be listed twice by the same masterserver.
                if o.masters.iter().any(|m| m.eq_ignore_ascii_case(&master)) {
                    return Err(format!(
                        "--master: '{text}' is given twice (as {master}); a server registers once with each masterserver"
                    ));
                }
                o.masters.push(master);
            }
            "--url" => {
                let url = cursor.value(flag)?;
                o.url = validate_url(url).map_err(|_| {
                    format!(
                        "--url: '{url}' must be 1-127 printable ASCII characters without spaces"
                    )
                })?;
            }
            "--os" => {
                let os = cursor.value(flag)?;
                o.os = validate_os(os).map_err(|_| {
                    format!(
                        "--os: '{os}' must be 1-31 printable ASCII characters, without \" maxplayers: \" or \" url: \" (they would end the OS in a masterserver's join line)"
                    )
                })?;
            }
            "--master-keepalive" => o.master_keepalive = seconds(flag, cursor.value(flag)?)?,
            "--idle-timeout" => o.idle_timeout = seconds(flag, cursor.value(flag)?)?,
            "--handshake-timeout" => o.handshake_timeout = seconds(flag, cursor.value(flag)?)?,
            "--max-per-address" => o.max_per_address = positive(flag, cursor.value(flag)?)?,
            "--max-connections" => o.max_connections = positive(flag, cursor.value(flag)?)?,
            "--tcp-rate" => {
                o.limits.tcp_bytes_per_sec = cursor.number(flag, "a number of bytes")?
            }
            "--udp-rate" if has_udp(defaults) => {
                let text = cursor.value(flag)?;
                let (datagrams, bytes) = match text.split_once(',') {
                    Some((d, b)) => (d, Some(b)),
                    None => (text, None),
                };
                let number = |t: &str| {
                    t.parse::<u32>().map_err(|_| {
                        format!("{flag}: '{text}' is not DATAGRAMS or DATAGRAMS,BYTES (numbers)")
                    })
                };
                o.limits.udp_datagrams_per_sec = number(datagrams)?;
                if let Some(bytes) = bytes {
                    o.limits.udp_bytes_per_sec = number(bytes)?;
                }
            }
            other => {
                if !extra(other, &mut cursor)? {
                    return Err(format!("unknown option '{other}'"));
                }
            }
        }
    }
    Ok(Parsed::Run(o))
}

/// `HOST[:PORT]` (IPv6 as `[ADDR]:PORT`), normalized to `HOST:PORT`.
fn parse_master(text: &str) -> Result<String, String> {
    // The same reading as the console's `net.master`: a bare IPv6 address (`::1`) is a host.
    let (host, port) = net_core::master::resolve::split_host_port(text, MASTER_PORT)
        .map_err(|_| format!("--master: '{text}' is not HOST[:PORT]"))?;
    Ok(net_core::master::resolve::join_host_port(&host, port))
}

/// The registration settings for the runtime (`None` without `--master`).
pub fn registration(o: &CommonOptions) -> Option<RegistrationSettings> {
    if o.masters.is_empty() {
        return None;
    }
    Some(RegistrationSettings {
        os: o.os.clone(),
        url: o.url.clone(),
        keepalive: o.master_keepalive,
        ..RegistrationSettings::new(o.masters.clone())
    })
}

/// Seconds (fractions allowed), 0 to one day.
pub fn seconds(flag: &str, text: &str) -> Result<Duration, String> {
    match text.parse::<f64>() {
        Ok(s) if (0.0..=86_400.0).contains(&s) => Ok(Duration::from_secs_f64(s)),
        _ => Err(format!(
            "{flag}: '{text}' is not a number of seconds 0-86400"
        )),
    }
}

/// A count 1 to 1,000,000.
pub fn positive(flag: &str, text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if (1..=1_000_000).contains(&n) => Ok(n),
        _ => Err(format!("{flag}: '{text}' is not a number 1-1000000")),
    }
}

/// The four message lines from a file: up to 4 lines (missing ones are empty), each at most
/// 255 bytes of text without control characters. Blank lines after the fourth (an editor's
/// trailing empty line) are ignored; a fifth line with text is an error.
pub fn read_messages(path: &std::path::Path) -> Result<[String; 4], String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("messages file {}: {e}", path.display()))?;
    let mut lines: Vec<&str> = text.lines().collect();
    while lines.len() > 4 && lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    if lines.len() > 4 {
        return Err(format!(
            "messages file {}: {} lines; at most 4 are sent",
            path.display(),
            lines.len()
        ));
    }
    let mut messages: [String; 4] = Default::default();
    for (i, line) in lines.iter().enumerate() {
        if line.len() > 255 || line.chars().any(char::is_control) {
            return Err(format!(
                "messages file {} line {}: at most 255 bytes without control characters",
                path.display(),
                i + 1
            ));
        }
        messages[i] = line.to_string();
    }
    Ok(messages)
}

/// Send the library's log lines to stderr with an RFC 3339 UTC time stamp. `PARSEC_NET_LOG`
/// (off, error, warn, info, debug, trace) sets the level; a server defaults to info.
pub fn install_server_logger() {
    let level = match std::env::var("PARSEC_NET_LOG").ok().as_deref() {
        Some("off") => 0,
        Some("error") => parsec_net::logging::NET_LOG_ERROR,
        Some("warn") => parsec_net::logging::NET_LOG_WARN,
        Some("debug") => parsec_net::logging::NET_LOG_DEBUG,
        Some("trace") => parsec_net::logging::NET_LOG_TRACE,
        _ => parsec_net::logging::NET_LOG_INFO,
    };
    parsec_net::logging::NET_SetLogCallback(Some(log_line), std::ptr::null_mut(), level);
}

extern "C" fn log_line(level: i32, message: *const c_char, _user: *mut c_void) {
    if message.is_null() {
        return;
    }
    // SAFETY: the library passes a NUL-terminated line that lives for the call.
    let text = unsafe { CStr::from_ptr(message) }.to_string_lossy();
    let level = match level {
        parsec_net::logging::NET_LOG_ERROR => "ERROR",
        parsec_net::logging::NET_LOG_WARN => "WARN ",
        parsec_net::logging::NET_LOG_INFO => "INFO ",
        parsec_net::logging::NET_LOG_DEBUG => "DEBUG",
        _ => "TRACE",
    };
    // A log line that cannot be written is dropped: the server serves on.
    crate::stdout::error_line(&format!(
        "{} {level} {text}",
        utc::rfc3339_millis(SystemTime::now())
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: ServerDefaults = ServerDefaults {
        kind: "slotserver",
        port: 6582,
        http_port: 8582,
    };

    fn parse(args: &[&str]) -> Result<CommonOptions, String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse_common(&args, &D, |_, _| Ok(false))? {
            Parsed::Run(o) => Ok(o),
            Parsed::Help => Err("help".into()),
        }
    }

    #[test]
    fn only_the_gameserver_takes_and_lists_the_udp_rate() {
        let game = ServerDefaults {
            kind: "gameserver",
            port: 6581,
            http_port: 8581,
        };
        let args: Vec<String> = ["--udp-rate", "50,9000"].map(String::from).to_vec();
        match parse_common(&args, &game, |_, _| Ok(false)) {
            Ok(Parsed::Run(o)) => {
                assert_eq!(o.limits.udp_datagrams_per_sec, 50);
                assert_eq!(o.limits.udp_bytes_per_sec, 9000);
            }
            _ => panic!("the gameserver takes --udp-rate"),
        }
        // Listed with the gameserver's own options (gameserver_cli), not the common ones.
        assert!(udp_rate_usage().contains("--udp-rate N[,BYTES]"));
        assert!(!common_usage(&game).contains("--udp-rate"));
        // A slotserver has no UDP port: the option is unknown there, and not listed.
        assert_eq!(
            parse(&["--udp-rate", "50"]).err().as_deref(),
            Some("unknown option '--udp-rate'")
        );
        assert!(!common_usage(&D).contains("--udp-rate"));
    }

    #[test]
    fn defaults_let_one_address_fill_every_slot() {
        // All of the most slots a server can have (16) from one address (a LAN party behind
        // one NAT address, a test host), and one more connection so a 17th player hears
        // `server full` rather than a silent close.
        let o = parse(&[]).unwrap();
        assert!(
            o.max_per_address > net_core::rmev::MAX_SLOTS,
            "{}",
            o.max_per_address
        );
        assert!(o.max_connections > o.max_per_address);
    }

    #[test]
    fn defaults_and_values() {
        let o = parse(&[]).unwrap();
        assert_eq!((o.port, o.http_port, o.max_players), (6582, Some(8582), 16));
        let o = parse(&[
            "--port",
            "0",
            "--name",
            "My Server",
            "--max-players",
            "8",
            "--bind",
            "::1",
            "--master",
            "master.example",
            "--master",
            "[::1]:7000",
            "--master",
            "::1",
            "--idle-timeout",
            "1.5",
            "--no-http",
        ])
        .unwrap();
        assert_eq!(o.port, 0);
        assert_eq!(o.name, "My Server");
        assert_eq!(o.max_players, 8);
        assert_eq!(o.bind.to_string(), "::1");
        assert_eq!(
            o.masters,
            vec!["master.example:6502", "[::1]:7000", "[::1]:6502"]
        );
        assert_eq!(o.idle_timeout, Duration::from_millis(1500));
        assert_eq!(o.http_port, None);
        let r = registration(&o).expect("registration settings");
        assert_eq!(r.masters, o.masters);
        assert_eq!(r.url, "-");
        assert!(registration(&parse(&[]).unwrap()).is_none());
    }

    #[test]
    fn errors_name_the_option() {
        for (args, needle) in [
            (&["--port"][..], "--port needs a value"),
            (&["--port", "70000"][..], "--port: '70000'"),
            (&["--max-players", "17"][..], "--max-players"),
            (
                &["--name", "a name that is far too long for parsec"][..],
                "--name",
            ),
            (&["--bind", "nowhere"][..], "--bind"),
            (&["--master", "host:port"][..], "--master"),
            (
                &[
                    "--master", "a", "--master", "b", "--master", "c", "--master", "d",
                ][..],
                "at most 3",
            ),
            (&["--url", "http://a b"][..], "--url"),
            (&["--os", &"x".repeat(32)][..], "--os"),
            (&["--idle-timeout", "-1"][..], "--idle-timeout"),
            (&["--frobnicate"][..], "unknown option '--frobnicate'"),
        ] {
            let err = parse(args).err().unwrap();
            assert!(err.contains(needle), "{args:?}: {err}");
        }
        assert_eq!(parse(&["--help"]).err().unwrap(), "help");
    }
}
