//! The slot/gameserver text protocol (design section 2.3.2): parsing the client's lines and
//! formatting every line the server sends, with the design's exact strings.
//!
//! Extensions (documented in docs/server-admin.md): a join may end with ` port: P` (the client's
//! UDP game port) and ` token: T` (its session token); such an "extended client" gets the
//! server's UDP port and token appended to the accepted line and each player's port and token
//! (or port) appended to list updates: a slotserver tells the player's token, a gameserver a
//! random id in its place (`slots::told_token`). A client without the token gets exactly the
//! design's lines.
//!
//! The parsers take untrusted text and must never panic (they are fuzzed). Nothing here knows
//! about connections, slots or time.

use std::fmt;
use std::net::IpAddr;

pub use super::text_fields::MAX_NAME_LEN;
use super::text_fields::{self, parse_digits, JoinHeadError, OS_MARK};

/// The UDP port a client uses when its join does not say (design section 2.4.1).
pub const DEFAULT_CLIENT_PORT: u16 = 6526;

/// The only protocol major version this server speaks.
pub const PROTOCOL_MAJOR: u16 = 1;

/// Reply: no free slot.
pub const SERVER_FULL: &str = "server full";
/// Reply: the line could not be parsed (or was not allowed now).
pub const INVALID_REQUEST: &str = "you sent an invalid request";
/// Reply: the join's major version is not [`PROTOCOL_MAJOR`].
pub const VERSION_INCOMPATIBLE: &str = "server version incompatible";
/// Reply: the client's address is in the ban list.
pub const BANNED: &str = "you're banned from this server";
/// Reply to `remove me` from a joined client.
pub const REMOVING_YOU: &str = "removing you";
/// Reply to `remove me` (or a rename) from a client that has not joined.
pub const NOT_JOINED: &str = "you're not even joined";
/// Reply to an accepted rename.
pub const NEW_NAME_ACCEPTED: &str = "new name accepted";
/// Reply to a rename (or a join) with a name another player has.
pub const NAME_TAKEN: &str = "name already taken";

/// A parsed client line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientLine {
    /// `version: X.Y join me: NAME os: OS[ port: P][ token: T]`
    Join {
        version_major: u16,
        version_minor: u16,
        name: String,
        os: String,
        port: Option<u16>,
        token: Option<u32>,
    },
    /// `remove me`
    RemoveMe,
    /// `my new name: NAME`
    NewName(String),
}

/// Why a client line was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LineError {
    /// Not one of the protocol's lines.
    Unknown,
    /// A join whose version is not `digits.digits`.
    BadVersion,
    /// A well-formed version this server does not speak (answered `server version incompatible`).
    Incompatible { major: u16, minor: u16 },
    /// A join without `join me:` or `os:` where they belong.
    MalformedJoin,
    /// The name is empty, too long, not printable ASCII or contains " os: ".
    BadName,
    /// The OS is empty, too long or not printable ASCII.
    BadOs,
    /// The ` port:` extension is not a port number 1-65535.
    BadPort,
    /// The ` token:` extension is not a non-zero decimal u32.
    BadToken,
}

impl LineError {
    /// The reply line the server sends for this error.
    pub fn reply(&self) -> &'static str {
        match self {
            LineError::Incompatible { .. } => VERSION_INCOMPATIBLE,
            _ => INVALID_REQUEST,
        }
    }
}

impl From<JoinHeadError> for LineError {
    fn from(e: JoinHeadError) -> Self {
        match e {
            JoinHeadError::BadVersion => LineError::BadVersion,
            JoinHeadError::Incompatible { major, minor } => {
                LineError::Incompatible { major, minor }
            }
            JoinHeadError::MalformedJoin => LineError::MalformedJoin,
        }
    }
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineError::Unknown => f.write_str("unknown request"),
            LineError::BadVersion => f.write_str("malformed version"),
            LineError::Incompatible { major, minor } => {
                write!(f, "incompatible protocol version {major}.{minor}")
            }
            LineError::MalformedJoin => f.write_str("malformed join request"),
            LineError::BadName => f.write_str("invalid player name"),
            LineError::BadOs => f.write_str("invalid OS name"),
            LineError::BadPort => f.write_str("invalid port"),
            LineError::BadToken => f.write_str("invalid token"),
        }
    }
}

const JOIN_PREFIX: &str = "version:";
const PORT_MARK: &str = " port: ";
const TOKEN_MARK: &str = " token: ";
const NEW_NAME_PREFIX: &str = "my new name:";

/// Parse one client line (terminator already removed). Surrounding spaces are ignored.
pub fn parse_client_line(line: &str) -> Result<ClientLine, LineError> {
    let line = line.trim_matches(' ');
    if line == "remove me" {
        return Ok(ClientLine::RemoveMe);
    }
    if let Some(rest) = line.strip_prefix(NEW_NAME_PREFIX) {
        return validate_name(rest).map(ClientLine::NewName);
    }
    if let Some(rest) = line.strip_prefix(JOIN_PREFIX) {
        return parse_join(rest);
    }
    Err(LineError::Unknown)
}

/// The text after `version:`.
fn parse_join(rest: &str) -> Result<ClientLine, LineError> {
    let (major, minor, rest) = text_fields::join_head(rest, PROTOCOL_MAJOR)?;
    let (name, tail) = match rest.split_once(OS_MARK) {
        Some(parts) => parts,
        // "... os:" with nothing after it: the OS is missing.
        None if rest.ends_with(OS_MARK.trim_end()) => return Err(LineError::BadOs),
        None => return Err(LineError::MalformedJoin),
    };
    let name = validate_name(name)?;
    let (os, port, token) = split_extensions(tail)?;
    let os = text_fields::printable(os, MAX_NAME_LEN).ok_or(LineError::BadOs)?;
    Ok(ClientLine::Join {
        version_major: major,
        version_minor: minor,
        name,
        os,
        port,
        token,
    })
}

/// Split `OS[ port: P][ token: T]` into its parts.
fn split_extensions(tail: &str) -> Result<(&str, Option<u16>, Option<u32>), LineError> {
    let mut os = tail;
    let mut token = None;
    let mut port = None;
    if let Some((before, value)) = tail.rsplit_once(TOKEN_MARK) {
        let value: u32 =
            parse_digits(value.trim_end_matches(' '), 10).ok_or(LineError::BadToken)?;
        if value == 0 {
            return Err(LineError::BadToken);
        }
        token = Some(value);
        os = before;
    }
    if let Some((before, value)) = os.rsplit_once(PORT_MARK) {
        let value: u16 = parse_digits(value.trim_end_matches(' '), 5).ok_or(LineError::BadPort)?;
        if value == 0 {
            return Err(LineError::BadPort);
        }
        port = Some(value);
        os = before;
    }
    if os.contains(TOKEN_MARK) || os.contains(PORT_MARK) {
        // Extensions out of order or repeated.
        return Err(LineError::MalformedJoin);
    }
    Ok((os, port, token))
}

/// Check a player name (surrounding spaces removed): 1-31 bytes of printable ASCII, and not
/// containing " os: " (it could not be sent in a join line).
pub fn validate_name(name: &str) -> Result<String, LineError> {
    text_fields::name(name).ok_or(LineError::BadName)
}

/// `version: 1.0 join me: NAME os: OS[ port: P][ token: T]`: the join line a client sends
/// (ours always with both extensions).
pub fn join_request(name: &str, os: &str, port: Option<u16>, token: Option<u32>) -> String {
    let mut line = format!("version: 1.0 join me: {name} os: {os}");
    if let Some(port) = port {
        line.push_str(&format!("{PORT_MARK}{port}"));
    }
    if let Some(token) = token {
        line.push_str(&format!("{TOKEN_MARK}{token}"));
    }
    line
}

/// What an extended client is told about the server in its accepted line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerExtension {
    /// The server's UDP game port (0: none, a slotserver).
    pub udp_port: u16,
    /// The server's session token for this run.
    pub token: u32,
}

/// What an extended receiver is told about another player in `add` lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlayerExtension {
    /// The player's UDP game port.
    pub port: u16,
    /// The player's session token (0: the player did not give one).
    pub token: u32,
}

/// `join from NAME accepted, slot: N, server name: SERVER[ udp: U token: S]`
pub fn join_accepted(
    name: &str,
    slot: u8,
    server_name: &str,
    ext: Option<ServerExtension>,
) -> String {
    let mut line = format!("join from {name} accepted, slot: {slot}, server name: {server_name}");
    if let Some(ext) = ext {
        line.push_str(&format!(" udp: {} token: {}", ext.udp_port, ext.token));
    }
    line
}

/// `add ip: IP name: NAME in SLOT[ port: P token: T]`
pub fn add_player(ip: IpAddr, name: &str, slot: u8, ext: Option<PlayerExtension>) -> String {
    let mut line = format!("add ip: {ip} name: {name} in {slot}");
    if let Some(ext) = ext {
        line.push_str(&format!(" port: {} token: {}", ext.port, ext.token));
    }
    line
}

/// `remove ip: IP[ port: P]`
pub fn remove_player(ip: IpAddr, port: Option<u16>) -> String {
    let mut line = format!("remove ip: {ip}");
    if let Some(port) = port {
        line.push_str(&format!(" port: {port}"));
    }
    line
}

/// `name ip: IP name: NAME[ port: P]`
pub fn rename_player(ip: IpAddr, name: &str, port: Option<u16>) -> String {
    let mut line = format!("name ip: {ip} name: {name}");
    if let Some(port) = port {
        line.push_str(&format!(" port: {port}"));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn join(name: &str, os: &str, port: Option<u16>, token: Option<u32>) -> ClientLine {
        ClientLine::Join {
            version_major: 1,
            version_minor: 0,
            name: name.into(),
            os: os.into(),
            port,
            token,
        }
    }

    #[test]
    fn parses_the_design_example() {
        assert_eq!(
            parse_client_line("version: 1.0 join me: sid os: powerpc-apple-macos"),
            Ok(join("sid", "powerpc-apple-macos", None, None))
        );
    }

    #[test]
    fn parses_extensions_and_names_with_spaces() {
        assert_eq!(
            parse_client_line("version: 1.3 join me:  Red Baron  os: linux port: 7000 token: 42"),
            Ok(ClientLine::Join {
                version_major: 1,
                version_minor: 3,
                name: "Red Baron".into(),
                os: "linux".into(),
                port: Some(7000),
                token: Some(42),
            })
        );
        assert_eq!(
            parse_client_line("version: 1.0 join me: a os: b token: 9"),
            Ok(join("a", "b", None, Some(9)))
        );
    }

    #[test]
    fn other_versions_are_incompatible_whatever_follows() {
        assert_eq!(
            parse_client_line("version: 2.0 join me: sid os: x"),
            Err(LineError::Incompatible { major: 2, minor: 0 })
        );
        assert_eq!(
            parse_client_line("version: 0.9 something new"),
            Err(LineError::Incompatible { major: 0, minor: 9 })
        );
        assert_eq!(
            parse_client_line("version: x.0 join me: a os: b"),
            Err(LineError::BadVersion)
        );
    }

    #[test]
    fn refuses_bad_names_os_ports_and_tokens() {
        let long = "x".repeat(32);
        for (line, err) in [
            (
                format!("version: 1.0 join me: {long} os: b"),
                LineError::BadName,
            ),
            (
                "version: 1.0 join me:  os: b".to_string(),
                LineError::BadName,
            ),
            ("version: 1.0 join me: a os:".to_string(), LineError::BadOs),
            (
                "version: 1.0 join me: a os: é".to_string(),
                LineError::BadOs,
            ),
            (
                "version: 1.0 join me: a os: b port: 0".to_string(),
                LineError::BadPort,
            ),
            (
                "version: 1.0 join me: a os: b port: 70000".to_string(),
                LineError::BadPort,
            ),
            (
                "version: 1.0 join me: a os: b token: 0".to_string(),
                LineError::BadToken,
            ),
            (
                "version: 1.0 join me: a os: b token: -1".to_string(),
                LineError::BadToken,
            ),
            (
                "version: 1.0 join me: a os: b token: 1 port: 2".to_string(),
                LineError::BadToken,
            ),
            (
                "version: 1.0 join me: a os: b token: 1 token: 2".to_string(),
                LineError::MalformedJoin,
            ),
            (
                "version: 1.0 join us: a os: b".to_string(),
                LineError::MalformedJoin,
            ),
            ("my new name: ".to_string(), LineError::BadName),
            ("my new name: a os: b".to_string(), LineError::BadName),
            ("hello".to_string(), LineError::Unknown),
            ("".to_string(), LineError::Unknown),
        ] {
            assert_eq!(parse_client_line(&line), Err(err), "{line}");
        }
    }

    #[test]
    fn parses_remove_and_rename() {
        assert_eq!(parse_client_line("remove me"), Ok(ClientLine::RemoveMe));
        assert_eq!(
            parse_client_line("my new name: maverick"),
            Ok(ClientLine::NewName("maverick".into()))
        );
    }

    #[test]
    fn formats_the_design_lines() {
        let ip: IpAddr = "192.168.1.1".parse().unwrap();
        assert_eq!(
            join_accepted("sid", 2, "TestServer", None),
            "join from sid accepted, slot: 2, server name: TestServer"
        );
        assert_eq!(
            add_player(ip, "msh", 0, None),
            "add ip: 192.168.1.1 name: msh in 0"
        );
        assert_eq!(remove_player(ip, None), "remove ip: 192.168.1.1");
        assert_eq!(
            rename_player(ip, "maverick", None),
            "name ip: 192.168.1.1 name: maverick"
        );
    }

    #[test]
    fn formats_the_extended_lines() {
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let server = ServerExtension {
            udp_port: 6522,
            token: 77,
        };
        assert_eq!(
            join_accepted("sid", 0, "S", Some(server)),
            "join from sid accepted, slot: 0, server name: S udp: 6522 token: 77"
        );
        let player = PlayerExtension {
            port: 6526,
            token: 0,
        };
        assert_eq!(
            add_player(ip, "a", 3, Some(player)),
            "add ip: 10.0.0.1 name: a in 3 port: 6526 token: 0"
        );
        assert_eq!(remove_player(ip, Some(5)), "remove ip: 10.0.0.1 port: 5");
        assert_eq!(
            rename_player(ip, "b", Some(5)),
            "name ip: 10.0.0.1 name: b port: 5"
        );
    }
}
