//! Console commands that change settings: `net.subsys`, `net.api`, `net.port`, `net.server`,
//! `net.master`, `net.sendfreq`, `net.rate`, `net.timeout`, `net.peer.*` and the backend options
//! `net.BACKEND.OPTION`. Without an argument a setting shows its value.

use std::time::{Duration, Instant};

use super::commands::{number_in, number_word, one_arg};
use crate::error::{ErrorCode, NetError, NetResult};
use crate::master::resolve::split_host_port;
use crate::protocol::ProtocolKind;
use crate::subsystem::settings::{MAX_MASTERS, SEND_HZ_RANGE};
use crate::subsystem::Subsystem;

pub fn net_subsys(sub: &mut Subsystem, _name: &str, args: &str, now: Instant) -> NetResult<String> {
    if args.is_empty() {
        return Ok(format!("net.subsys = {}", sub.protocol()));
    }
    let args = one_arg(args)?;
    let kind = ProtocolKind::from_console_name(args)
        .ok_or_else(|| NetError::invalid(format!("unknown protocol '{}'", args.escape_debug())))?;
    sub.select_protocol(kind, now)
}

pub fn net_api(sub: &mut Subsystem, _name: &str, args: &str, now: Instant) -> NetResult<String> {
    if args.is_empty() {
        let current = sub
            .packets()
            .backend()
            .map_or("none".to_string(), |b| b.name().to_string());
        return Ok(format!("net.api = {current}"));
    }
    sub.switch_backend_in_session(args, now)
}

pub fn net_port(sub: &mut Subsystem, _name: &str, args: &str, _now: Instant) -> NetResult<String> {
    if args.is_empty() {
        return Ok(format!("net.port = {}", sub.packets().port()));
    }
    let args = number_word(args)?;
    let port: u16 = args.parse().map_err(|_| {
        NetError::new(
            ErrorCode::Parse,
            format!("'{}' is not a port number (0-65535)", args.escape_debug()),
        )
    })?;
    sub.set_port(port)
}

/// Check a `HOST[:PORT]` argument: a non-empty host without spaces or control characters, a
/// port in 1-65535 if given, a sane length.
pub(super) fn host_port(args: &str) -> NetResult<String> {
    if args.len() > 255 {
        return Err(NetError::invalid(format!(
            "'{}' is not HOST[:PORT]",
            args.escape_debug()
        )));
    }
    let (host, _) = split_host_port(args, 1)?;
    if let Some(why) = bad_host(&host, args.starts_with('[')) {
        return Err(NetError::invalid(format!(
            "'{}' is not a host name or IP address ({why})",
            host.escape_debug()
        )));
    }
    Ok(args.to_string())
}

/// Why `host` (the host part of `HOST[:PORT]`, without the brackets it had if `bracketed`) can be neither an IP address
/// nor a host name, if it cannot: a dotted number that is no IPv4 address (`256.1.1.1`), a
/// bracketed or colon-separated text that is no IPv6 address, or a name with characters or
/// labels a host name cannot have (`a/b`, `-x-`, `a..b`). A well-formed name that does not
/// resolve is found only when it is looked up (at `connect`, or by `servers`).
fn bad_host(host: &str, bracketed: bool) -> Option<&'static str> {
    use std::net::{Ipv4Addr, Ipv6Addr};
    if bracketed || host.contains(':') {
        // IPv6, optionally with a zone (`fe80::1%eth0`).
        let (addr, zone) = host.split_once('%').unwrap_or((host, "x"));
        let zone_ok = !zone.is_empty()
            && zone
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
        return (addr.parse::<Ipv6Addr>().is_err() || !zone_ok).then_some("bad IPv6 address");
    }
    if host.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return host
            .parse::<Ipv4Addr>()
            .is_err()
            .then_some("bad IPv4 address");
    }
    let name = host.strip_suffix('.').unwrap_or(host);
    if name.len() > 253 {
        return Some("longer than 253 characters");
    }
    for label in name.split('.') {
        if label.is_empty() || label.len() > 63 {
            return Some("empty or over-long label");
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Some("only letters, digits, '-', '_' and '.' may appear");
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Some("a label cannot start or end with '-'");
        }
    }
    None
}

pub fn net_server(
    sub: &mut Subsystem,
    _name: &str,
    args: &str,
    _now: Instant,
) -> NetResult<String> {
    if args.is_empty() {
        return Ok(format!(
            "net.server = {}",
            sub.settings().server.as_deref().unwrap_or("none")
        ));
    }
    let args = one_arg(args)?;
    let server = host_port(args)?;
    sub.settings_mut().server = Some(server.clone());
    Ok(format!("net.server = {server}"))
}

/// `net.master`: the masterserver to ask for the server list (SPEC: "masterserver to use").
/// A value replaces the previous one; `HOST[:PORT],HOST[:PORT]` asks up to [`MAX_MASTERS`] at
/// once (the same one twice is asked once); `clear` empties it. A refused value changes nothing.
pub fn net_master(
    sub: &mut Subsystem,
    _name: &str,
    args: &str,
    _now: Instant,
) -> NetResult<String> {
    // A keyword, read in any letter case (`CLEAR` is no host to ask).
    if args.eq_ignore_ascii_case("clear") {
        sub.settings_mut().masters.clear();
        return Ok("net.master = none (cleared)".to_string());
    }
    if !args.is_empty() {
        sub.settings_mut().masters = master_list(args)?;
    }
    let masters = &sub.settings().masters;
    Ok(format!(
        "net.master = {}",
        if masters.is_empty() {
            "none".to_string()
        } else {
            masters.join(",")
        }
    ))
}

/// Parse `HOST[:PORT][,HOST[:PORT]...]` (spaces after the commas allowed): at most
/// [`MAX_MASTERS`] different masterservers, in the order given.
fn master_list(args: &str) -> NetResult<Vec<String>> {
    let mut masters: Vec<String> = Vec::new();
    let mut seen = Vec::new();
    for part in args.split(',') {
        // Spaces after a comma are allowed; a space inside an entry starts an extra argument.
        let master = host_port(one_arg(part.trim())?)?;
        let key = same_master_key(split_host_port(&master, crate::master::MASTER_PORT)?);
        if !seen.contains(&key) {
            seen.push(key);
            masters.push(master);
        }
    }
    if masters.len() > MAX_MASTERS {
        return Err(NetError::new(
            ErrorCode::Full,
            format!(
                "at most {MAX_MASTERS} masterservers, {} given",
                masters.len()
            ),
        ));
    }
    Ok(masters)
}

/// What tells two `net.master` entries apart without a name lookup (the console must not block
/// on one): a host name in any letter case and with or without its final dot is one host, and
/// an IP address is compared as an address (`[::1]` and `[0:0::1]`). Names that only resolve to
/// the same address (`localhost` and `127.0.0.1`) stay two entries here; asking both costs a
/// second connection, and the merged list shows each server once (docs/decisions.md).
fn same_master_key((host, port): (String, u16)) -> (String, u16) {
    let host = match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.to_string(),
        Err(_) => host.trim_end_matches('.').to_ascii_lowercase(),
    };
    (host, port)
}

pub fn net_sendfreq(
    sub: &mut Subsystem,
    _name: &str,
    args: &str,
    _now: Instant,
) -> NetResult<String> {
    if args.is_empty() {
        return Ok(format!("net.sendfreq = {} Hz", sub.settings().send_hz));
    }
    let (lo, hi) = SEND_HZ_RANGE;
    let hz = number_in(args, lo.into(), hi.into(), "Hz")? as u32;
    sub.settings_mut().set_send_hz(hz)?;
    if sub.apply_rates_to_game() {
        return Ok(format!("net.sendfreq = {hz} Hz (in this game from now on)"));
    }
    Ok(format!("net.sendfreq = {hz} Hz (from the next connect)"))
}

pub fn net_rate(sub: &mut Subsystem, _name: &str, args: &str, _now: Instant) -> NetResult<String> {
    if args.is_empty() {
        return Ok(format!("net.rate = {} bytes/s", sub.settings().rate));
    }
    let rate = number_in(args, 0, 100_000_000, "bytes per second")? as u32;
    sub.settings_mut().rate = rate;
    sub.apply_rates_to_game();
    Ok(format!("net.rate = {rate} bytes/s"))
}

pub fn net_timeout(
    sub: &mut Subsystem,
    _name: &str,
    args: &str,
    _now: Instant,
) -> NetResult<String> {
    if args.is_empty() {
        return Ok(format!(
            "net.timeout = {} s",
            sub.settings().peer_timeout.as_secs()
        ));
    }
    let secs = number_in(args, 2, 3600, "seconds")?;
    sub.settings_mut().peer_timeout = Duration::from_secs(secs);
    Ok(format!("net.timeout = {secs} s (from the next connect)"))
}

/// `net.peer.*`: the peer-to-peer timings (used from the next connect).
pub fn peer_timing(
    sub: &mut Subsystem,
    name: &str,
    args: &str,
    _now: Instant,
) -> NetResult<String> {
    let timings = &mut sub.settings_mut().peer;
    let key = name.trim_start_matches("net.peer.");
    if args.is_empty() {
        let value = match key {
            "connect_tries" => timings.connect_tries.to_string(),
            "connect_interval" => format!("{} ms", timings.connect_interval.as_millis()),
            "slot_tries" => timings.slot_tries.to_string(),
            "slot_interval" => format!("{} ms", timings.slot_interval.as_millis()),
            _ => format!("{} ms", timings.reply_wait.as_millis()),
        };
        return Ok(format!("{name} = {value}"));
    }
    match key {
        "connect_tries" => timings.connect_tries = number_in(args, 1, 1000, "tries")? as u32,
        "connect_interval" => {
            timings.connect_interval = Duration::from_millis(number_in(args, 10, 60_000, "ms")?)
        }
        "slot_tries" => timings.slot_tries = number_in(args, 1, 1000, "tries")? as u32,
        "slot_interval" => {
            timings.slot_interval = Duration::from_millis(number_in(args, 10, 60_000, "ms")?)
        }
        _ => timings.reply_wait = Duration::from_millis(number_in(args, 1, 60_000, "ms")?),
    }
    let mut reply = format!("{name} = {args} (from the next connect)");
    if key != "reply_wait" {
        if let Some(warning) = slot_wait_warning(timings) {
            reply.push_str("; ");
            reply.push_str(&warning);
        }
    }
    Ok(reply)
}

/// A slave waits `slot_tries` x `slot_interval` for its slot, from when it yields; its master
/// seats it only when its own connect loop (`connect_tries` x `connect_interval`) ends, which
/// can be a whole loop later. A slot wait not longer than that loop lets a slave give up (an
/// error event) before it can be seated: the setting is kept, and the reply says so.
fn slot_wait_warning(timings: &crate::protocol::peer::PeerTimings) -> Option<String> {
    let slot_wait = timings.slot_interval.as_millis() * u128::from(timings.slot_tries);
    let connect_loop = timings.connect_interval.as_millis() * u128::from(timings.connect_tries);
    (slot_wait <= connect_loop).then(|| {
        format!(
            "warning: a slave now waits {slot_wait} ms for its slot ({} x {} ms), not longer than the {connect_loop} ms connect loop ({} x {} ms) its master runs before seating it, so it can give up first; make net.peer.slot_tries x net.peer.slot_interval longer",
            timings.slot_tries,
            timings.slot_interval.as_millis(),
            timings.connect_tries,
            timings.connect_interval.as_millis()
        )
    })
}

pub fn backend_option(
    sub: &mut Subsystem,
    name: &str,
    args: &str,
    _now: Instant,
) -> NetResult<String> {
    let mut parts = name.splitn(3, '.');
    let (_, backend, key) = (
        parts.next(),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
    );
    if args.is_empty() {
        let current = sub.backend_options().get(backend).and_then(|o| o.get(key));
        return Ok(match current {
            Some(v) => format!("{name} = {v}"),
            None => format!("{name} is not set"),
        });
    }
    sub.set_backend_option(backend, key, args)
}

/// `net.sim`: the link conditioner on both paths.
pub fn net_sim(sub: &mut Subsystem, _name: &str, args: &str, _now: Instant) -> NetResult<String> {
    if args.is_empty() {
        return Ok(format!("net.sim = {}", sub.packets().conditions()));
    }
    let conditions = crate::packet_api::Conditions::parse(args)?;
    sub.set_conditions(conditions);
    Ok(format!("net.sim = {conditions} (send and receive)"))
}
