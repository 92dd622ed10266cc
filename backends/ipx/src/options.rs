//! The `key=value` option lines `open` receives (console variables `net.ipx.<key>`), turned into
//! an [`Options`] value. This module must never touch sockets or interfaces; it only validates
//! text and explains, in one line, what is wrong with a value.
//!
//! Keys:
//! - `interface=IFACE`: the network interface to send and receive on (default: the first
//!   interface that is up, not loopback, and Ethernet);
//! - `network=HEX`: this socket's IPX network number, 1 to 8 hexadecimal digits, optionally
//!   prefixed `0x` (default 00000000; FFFFFFFF, the all-networks broadcast, is refused).
//!
//! Unknown keys are ignored. A key given with an empty value counts as not given (an unset
//! console variable). When a key appears twice the first line wins (as `option_value` reads it).

use parsec_backend_abi::helpers::option_value;

/// Longest interface name Linux accepts (IFNAMSIZ - 1).
pub const MAX_INTERFACE_NAME: usize = 15;

/// Validated options of one socket.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// `interface`: the interface name, `None` to pick the first suitable one.
    pub interface: Option<String>,
    /// `network`: the IPX network number (big-endian bytes).
    pub network: [u8; 4],
}

fn value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    option_value(text, key).filter(|v| !v.is_empty())
}

fn invalid(key: &str, value: &str, expected: &str) -> String {
    format!("ipx: invalid net.ipx.{key} \"{value}\": expected {expected}")
}

fn parse_interface(v: &str) -> Result<String, String> {
    let ok = v.len() <= MAX_INTERFACE_NAME
        && v != "."
        && v != ".."
        && v.bytes()
            .all(|c| c.is_ascii_graphic() && c != b'/' && c != b':');
    if ok {
        Ok(v.to_string())
    } else {
        Err(invalid(
            "interface",
            v,
            "an interface name of 1 to 15 characters such as eth0",
        ))
    }
}

fn parse_network(v: &str) -> Result<[u8; 4], String> {
    let expected = "1 to 8 hexadecimal digits such as 00000000 or 1A2B (not FFFFFFFF)";
    let digits = v
        .strip_prefix("0x")
        .or_else(|| v.strip_prefix("0X"))
        .unwrap_or(v);
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|c| c.is_ascii_hexdigit()) {
        return Err(invalid("network", v, expected));
    }
    match u32::from_str_radix(digits, 16) {
        Ok(u32::MAX) | Err(_) => Err(invalid("network", v, expected)),
        Ok(n) => Ok(n.to_be_bytes()),
    }
}

/// Parse the option lines. Returns a one-line message naming the bad key on error.
pub fn parse(text: &str) -> Result<Options, String> {
    let mut opts = Options::default();
    if let Some(v) = value(text, "interface") {
        opts.interface = Some(parse_interface(v)?);
    }
    if let Some(v) = value(text, "network") {
        opts.network = parse_network(v)?;
    }
    Ok(opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_when_empty() {
        assert_eq!(parse("").unwrap(), Options::default());
        assert_eq!(parse("interface=\nnetwork=\n").unwrap(), Options::default());
    }

    #[test]
    fn all_keys_and_unknown_ignored() {
        let o = parse("interface=veth-a1\nnetwork=0000ABCD\ncolour=blue\nbind=1.2.3.4").unwrap();
        assert_eq!(o.interface.as_deref(), Some("veth-a1"));
        assert_eq!(o.network, [0, 0, 0xab, 0xcd]);
        assert_eq!(parse("network=1").unwrap().network, [0, 0, 0, 1]);
        assert_eq!(parse("network=0x1a2B").unwrap().network, [0, 0, 0x1a, 0x2b]);
        assert_eq!(
            parse("network=FFFFFFFE").unwrap().network,
            [0xff, 0xff, 0xff, 0xfe]
        );
        assert_eq!(
            parse("interface=a\ninterface=b").unwrap().interface,
            Some("a".to_string())
        );
        let longest = "a".repeat(MAX_INTERFACE_NAME);
        assert_eq!(
            parse(&format!("interface={longest}")).unwrap().interface,
            Some(longest)
        );
    }

    #[test]
    fn malformed_values_are_named() {
        for (text, key) in [
            ("interface=eth0 eth1", "net.ipx.interface"),
            ("interface=a/b", "net.ipx.interface"),
            ("interface=eth0:1", "net.ipx.interface"),
            ("interface=..", "net.ipx.interface"),
            ("interface=sixteen-chars-xx", "net.ipx.interface"),
            ("interface=\u{e9}th0", "net.ipx.interface"),
            ("network=123456789", "net.ipx.network"),
            ("network=0x", "net.ipx.network"),
            ("network=G", "net.ipx.network"),
            ("network=-1", "net.ipx.network"),
            ("network=+1", "net.ipx.network"),
            ("network=ffffffff", "net.ipx.network"),
            ("network=00:00", "net.ipx.network"),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.starts_with("ipx: invalid "), "{err}");
            assert!(err.contains(key), "{text}: {err}");
            assert!(!err.contains('\n'));
        }
    }
}
