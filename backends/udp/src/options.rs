//! The `key=value` option lines `open` receives (console variables `net.udp.<key>`), turned into
//! an [`Options`] value. This module must never touch sockets or the network; it only validates
//! text and explains, in one line, what is wrong with a value.
//!
//! Keys: `bind`, `bind6`, `broadcast`, `ipv6`, `rcvbuf`, `sndbuf`, `recvmmsg`. Unknown keys are
//! ignored. A key given with an empty value counts as not given (an unset console variable).
//! When a key appears twice the first line wins (as `option_value` reads it).

use std::net::{Ipv4Addr, Ipv6Addr};

use parsec_backend_abi::helpers::option_value;

/// Whether `open` opens the IPv6 socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ipv6Mode {
    /// Not configured: open IPv6 if the system has it; failing to do so is not an error.
    Auto,
    /// `ipv6=1`: IPv6 is required; failing to open it fails `open`.
    On,
    /// `ipv6=0`: IPv4 only.
    Off,
}

/// Validated options of one socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Local IPv4 address to bind (`bind`, default 0.0.0.0).
    pub bind: Ipv4Addr,
    /// Local IPv6 address to bind (`bind6`, default ::).
    pub bind6: Ipv6Addr,
    /// Address `broadcast_node` returns (`broadcast`, default 255.255.255.255).
    pub broadcast: Ipv4Addr,
    /// `ipv6=0|1`, default [`Ipv6Mode::Auto`].
    pub ipv6: Ipv6Mode,
    /// SO_RCVBUF in bytes (`rcvbuf`), `None` keeps the system default.
    pub rcvbuf: Option<usize>,
    /// SO_SNDBUF in bytes (`sndbuf`), `None` keeps the system default.
    pub sndbuf: Option<usize>,
    /// `recvmmsg=0|1` (default 1): `1` reads bursts of datagrams with one `recvmmsg` (single
    /// datagrams still with `recvfrom`, see `batch.rs`); `0` reads one datagram per system call
    /// always. Diagnostic switch for kernels or sandboxes with a broken `recvmmsg`.
    pub recvmmsg: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            bind: Ipv4Addr::UNSPECIFIED,
            bind6: Ipv6Addr::UNSPECIFIED,
            broadcast: Ipv4Addr::BROADCAST,
            ipv6: Ipv6Mode::Auto,
            rcvbuf: None,
            sndbuf: None,
            recvmmsg: true,
        }
    }
}

/// Largest socket buffer size accepted (the kernel takes an `int`).
const MAX_BUFFER_BYTES: usize = i32::MAX as usize;

fn value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    option_value(text, key).filter(|v| !v.is_empty())
}

fn invalid(key: &str, value: &str, expected: &str) -> String {
    format!("udp: invalid net.udp.{key} \"{value}\": expected {expected}")
}

fn parse_flag(key: &str, v: &str) -> Result<bool, String> {
    match v {
        "0" => Ok(false),
        "1" => Ok(true),
        _ => Err(invalid(key, v, "0 or 1")),
    }
}

fn parse_buffer(key: &str, v: &str) -> Result<usize, String> {
    let expected = format!("a size in bytes from 1 to {MAX_BUFFER_BYTES}");
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid(key, v, &expected));
    }
    match v.parse::<usize>() {
        Ok(n) if (1..=MAX_BUFFER_BYTES).contains(&n) => Ok(n),
        _ => Err(invalid(key, v, &expected)),
    }
}

/// Parse the option lines. Returns a one-line message naming the bad key on error.
pub fn parse(text: &str) -> Result<Options, String> {
    let mut opts = Options::default();
    if let Some(v) = value(text, "bind") {
        opts.bind = v
            .parse()
            .map_err(|_| invalid("bind", v, "an IPv4 address such as 0.0.0.0 or 192.168.1.10"))?;
    }
    let bind6 = value(text, "bind6");
    if let Some(v) = bind6 {
        opts.bind6 = v
            .parse()
            .map_err(|_| invalid("bind6", v, "an IPv6 address such as :: or ::1"))?;
        if opts.bind6.to_ipv4_mapped().is_some() {
            return Err(invalid(
                "bind6",
                v,
                "an IPv6 address (use net.udp.bind for IPv4)",
            ));
        }
    }
    if let Some(v) = value(text, "broadcast") {
        opts.broadcast = v
            .parse()
            .map_err(|_| invalid("broadcast", v, "an IPv4 address such as 255.255.255.255"))?;
    }
    if let Some(v) = value(text, "ipv6") {
        opts.ipv6 = if parse_flag("ipv6", v)? {
            Ipv6Mode::On
        } else {
            Ipv6Mode::Off
        };
    }
    if let Some(v) = value(text, "rcvbuf") {
        opts.rcvbuf = Some(parse_buffer("rcvbuf", v)?);
    }
    if let Some(v) = value(text, "sndbuf") {
        opts.sndbuf = Some(parse_buffer("sndbuf", v)?);
    }
    if let Some(v) = value(text, "recvmmsg") {
        opts.recvmmsg = parse_flag("recvmmsg", v)?;
    }
    if bind6.is_none() {
        narrow_ipv6_to_ipv4_bind(&mut opts);
    }
    Ok(opts)
}

/// An IPv4 address to bind chosen without an IPv6 one means the same restriction for IPv6: an
/// admin who binds 127.0.0.1 to keep the game on this machine must not find it listening on
/// every IPv6 address. A loopback `bind` binds IPv6 to `::1`; any other specific address leaves
/// IPv6 closed unless `ipv6=1` asks for it (then on `::`, as before).
fn narrow_ipv6_to_ipv4_bind(opts: &mut Options) {
    if opts.bind.is_loopback() {
        opts.bind6 = Ipv6Addr::LOCALHOST;
    } else if !opts.bind.is_unspecified() && opts.ipv6 == Ipv6Mode::Auto {
        opts.ipv6 = Ipv6Mode::Off;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ipv4_bind_without_an_ipv6_one_narrows_ipv6_the_same_way() {
        let loopback = parse("bind=127.0.0.1").unwrap();
        assert_eq!(loopback.bind6, Ipv6Addr::LOCALHOST);
        assert_eq!(loopback.ipv6, Ipv6Mode::Auto);
        let lan = parse("bind=192.168.1.10").unwrap();
        assert_eq!(lan.ipv6, Ipv6Mode::Off);
        let lan_and_v6 = parse("bind=192.168.1.10\nipv6=1").unwrap();
        assert_eq!(
            (lan_and_v6.ipv6, lan_and_v6.bind6),
            (Ipv6Mode::On, Ipv6Addr::UNSPECIFIED)
        );
        let both = parse("bind=127.0.0.1\nbind6=::").unwrap();
        assert_eq!(
            both.bind6,
            Ipv6Addr::UNSPECIFIED,
            "an explicit bind6 stands"
        );
        let wildcard = parse("bind=0.0.0.0").unwrap();
        assert_eq!(
            (wildcard.bind6, wildcard.ipv6),
            (Ipv6Addr::UNSPECIFIED, Ipv6Mode::Auto)
        );
    }

    #[test]
    fn defaults_when_empty() {
        assert_eq!(parse("").unwrap(), Options::default());
        assert_eq!(parse("bind=\nipv6=\n").unwrap(), Options::default());
    }

    #[test]
    fn all_keys_and_unknown_ignored() {
        let o = parse(
            "bind=127.0.0.1\nbind6=::1\nbroadcast=127.255.255.255\nipv6=0\nrcvbuf=65536\n\
             sndbuf=4096\nrecvmmsg=0\ncolour=blue",
        )
        .unwrap();
        assert_eq!(o.bind, Ipv4Addr::LOCALHOST);
        assert_eq!(o.bind6, Ipv6Addr::LOCALHOST);
        assert_eq!(o.broadcast, Ipv4Addr::new(127, 255, 255, 255));
        assert_eq!(o.ipv6, Ipv6Mode::Off);
        assert_eq!(o.rcvbuf, Some(65536));
        assert_eq!(o.sndbuf, Some(4096));
        assert!(!o.recvmmsg);
        assert_eq!(parse("ipv6=1").unwrap().ipv6, Ipv6Mode::On);
    }

    #[test]
    fn malformed_values_are_named() {
        for (text, key) in [
            ("bind=localhost", "net.udp.bind"),
            ("bind=::1", "net.udp.bind"),
            ("bind6=1.2.3.4", "net.udp.bind6"),
            ("bind6=::ffff:1.2.3.4", "net.udp.bind6"),
            ("broadcast=255.255.255.256", "net.udp.broadcast"),
            ("ipv6=yes", "net.udp.ipv6"),
            ("rcvbuf=-1", "net.udp.rcvbuf"),
            ("rcvbuf=0", "net.udp.rcvbuf"),
            ("sndbuf=1k", "net.udp.sndbuf"),
            ("sndbuf=99999999999", "net.udp.sndbuf"),
            ("recvmmsg=2", "net.udp.recvmmsg"),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.starts_with("udp: invalid "), "{err}");
            assert!(err.contains(key), "{text}: {err}");
            assert!(!err.contains('\n'));
        }
    }
}
