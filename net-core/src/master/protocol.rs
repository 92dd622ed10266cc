//! The masterserver's text protocol (design section 3.1): parsing what a slot- or gameserver
//! (or a list client) sends, and the reply strings, exactly as the design spells them.
//!
//! Extensions (docs/server-admin.md, "Masterserver"): the join line may end with
//! ` kind: slotserver|gameserver`, ` port: TCPPORT` and ` udp: UDPPORT` (so a client can reach a
//! listed server), and a client may send `list servers` (answered by [`super::list_line`] lines
//! and `end of list`). A design server never sends either and gets exactly the design's replies.
//!
//! The parsers take untrusted text and must never panic (they are property-tested). Nothing here
//! knows about connections, the list or time.

use std::fmt;

use crate::server::text_fields::{self, printable, JoinHeadError, OS_MARK};

/// Reply: the join was accepted and the server is listed.
pub const JOIN_ACCEPTED: &str = "join accepted";
/// Reply: the list already holds as many servers as configured.
pub const MASTERSERVER_FULL: &str = "masterserver full";
/// Reply: the line could not be parsed (or was not allowed now).
pub const ILLEGAL_REQUEST: &str = "illegal request not processed";
/// Reply: the join's major version is not [`PROTOCOL_MAJOR`].
pub const VERSION_INCOMPATIBLE: &str = "masterserver version incompatible";
/// Reply to `remove me` from a listed server.
pub const REMOVING_YOU: &str = "removing you";
/// Reply to `remove me` from a connection that is not listed.
pub const NOT_JOINED: &str = "you're not even joined";
/// Reply to a players update (the final dot is the design's).
pub const PLAYERS_ACKNOWLEDGED: &str = "players acknowledged.";
/// The request line of the list extension.
pub const LIST_REQUEST: &str = "list servers";
/// The line that ends a list reply.
pub const END_OF_LIST: &str = "end of list";
/// The request line that leaves the list.
pub const REMOVE_ME: &str = "remove me";

/// Longest server name, in bytes (the design: "31 character string").
pub const MAX_NAME_LEN: usize = text_fields::MAX_NAME_LEN;
/// Longest OS name, in bytes (the design: "31 character string").
pub const MAX_OS_LEN: usize = 31;
/// Longest URL, in bytes (the design: "127 character string").
pub const MAX_URL_LEN: usize = 127;
/// Longest line the masterserver reads (terminator excluded). The design's fields take at most
/// 240 bytes; the extension fields need up to 40 more.
pub const MAX_MASTER_LINE_LEN: usize = 511;
/// The only protocol major version spoken.
pub const PROTOCOL_MAJOR: u16 = 1;
/// Sent as the protocol version by the registration client.
pub const PROTOCOL_VERSION: &str = "1.0";

const MAXPLAYERS_MARK: &str = " maxplayers: ";
const URL_MARK: &str = " url: ";

/// What kind of server a listed entry is (the ` kind:` extension).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ServerKind {
    SlotServer,
    GameServer,
    /// The join did not say (a design server).
    Unknown,
}

impl ServerKind {
    /// `slotserver`, `gameserver` or `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerKind::SlotServer => "slotserver",
            ServerKind::GameServer => "gameserver",
            ServerKind::Unknown => "unknown",
        }
    }

    /// The inverse of [`as_str`](Self::as_str).
    pub fn parse(text: &str) -> Option<ServerKind> {
        match text {
            "slotserver" => Some(ServerKind::SlotServer),
            "gameserver" => Some(ServerKind::GameServer),
            "unknown" => Some(ServerKind::Unknown),
            _ => None,
        }
    }
}

impl fmt::Display for ServerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A parsed join line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JoinRequest {
    pub version_major: u16,
    pub version_minor: u16,
    pub name: String,
    pub os: String,
    pub max_players: u16,
    pub url: String,
    pub kind: ServerKind,
    /// The server's TCP port (0: not told).
    pub port: u16,
    /// A gameserver's UDP port (0: not told).
    pub udp_port: u16,
}

/// A parsed request line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MasterRequest {
    Join(JoinRequest),
    RemoveMe,
    Players { players: u16, max: u16 },
    ListServers,
}

/// Why a request line was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestError {
    /// Not one of the protocol's lines.
    Unknown,
    /// A join whose version is not `digits.digits`.
    BadVersion,
    /// A well-formed version this masterserver does not speak.
    Incompatible { major: u16, minor: u16 },
    /// A join whose fields are missing or out of order.
    MalformedJoin,
    /// The name is empty, longer than 31 bytes, not printable ASCII or contains " os: ".
    BadName,
    /// The OS is empty, longer than 31 bytes, not printable ASCII or contains " url: ".
    BadOs,
    /// `maxplayers:` is not a number 1-65535.
    BadMaxPlayers,
    /// The URL is empty, longer than 127 bytes, or not printable ASCII without spaces.
    BadUrl,
    /// An extension field is unknown, repeated, or has a bad value.
    BadExtension,
    /// `players: P max: M` with P or M out of range (M 1-65535, P 0-M).
    BadPlayers,
}

impl RequestError {
    /// The reply the masterserver sends for this error.
    pub fn reply(&self) -> &'static str {
        match self {
            RequestError::Incompatible { .. } => VERSION_INCOMPATIBLE,
            _ => ILLEGAL_REQUEST,
        }
    }
}

impl From<JoinHeadError> for RequestError {
    fn from(e: JoinHeadError) -> Self {
        match e {
            JoinHeadError::BadVersion => RequestError::BadVersion,
            JoinHeadError::Incompatible { major, minor } => {
                RequestError::Incompatible { major, minor }
            }
            JoinHeadError::MalformedJoin => RequestError::MalformedJoin,
        }
    }
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestError::Unknown => f.write_str("unknown request"),
            RequestError::BadVersion => f.write_str("malformed version"),
            RequestError::Incompatible { major, minor } => {
                write!(f, "incompatible protocol version {major}.{minor}")
            }
            RequestError::MalformedJoin => f.write_str("malformed join request"),
            RequestError::BadName => f.write_str("invalid server name"),
            RequestError::BadOs => f.write_str("invalid OS name"),
            RequestError::BadMaxPlayers => f.write_str("invalid maxplayers"),
            RequestError::BadUrl => f.write_str("invalid URL"),
            RequestError::BadExtension => f.write_str("invalid extension field"),
            RequestError::BadPlayers => f.write_str("invalid players update"),
        }
    }
}

/// Parse one request line (terminator removed). Surrounding spaces are ignored.
pub fn parse_request(line: &str) -> Result<MasterRequest, RequestError> {
    let line = line.trim_matches(' ');
    if line == REMOVE_ME {
        return Ok(MasterRequest::RemoveMe);
    }
    if line == LIST_REQUEST {
        return Ok(MasterRequest::ListServers);
    }
    if let Some(rest) = line.strip_prefix("players:") {
        return parse_players(rest);
    }
    if let Some(rest) = line.strip_prefix("version:") {
        return parse_join(rest).map(MasterRequest::Join);
    }
    Err(RequestError::Unknown)
}

/// The text after `players:`: ` P max: M`.
fn parse_players(rest: &str) -> Result<MasterRequest, RequestError> {
    let (players, max) = rest
        .trim_start_matches(' ')
        .split_once(" max:")
        .ok_or(RequestError::BadPlayers)?;
    let players: u16 =
        parse_digits(players.trim_end_matches(' ')).ok_or(RequestError::BadPlayers)?;
    let max: u16 = parse_digits(max.trim_matches(' ')).ok_or(RequestError::BadPlayers)?;
    if max == 0 || players > max {
        return Err(RequestError::BadPlayers);
    }
    Ok(MasterRequest::Players { players, max })
}

/// The text after `version:`.
fn parse_join(rest: &str) -> Result<JoinRequest, RequestError> {
    let (major, minor, rest) = text_fields::join_head(rest, PROTOCOL_MAJOR)?;
    let (name, rest) = rest
        .split_once(OS_MARK)
        .ok_or(RequestError::MalformedJoin)?;
    let name = validate_name(name)?;
    let (os, rest) = rest
        .split_once(MAXPLAYERS_MARK)
        .ok_or(RequestError::MalformedJoin)?;
    let os = validate_os(os)?;
    let (max_players, rest) = match rest.split_once(URL_MARK) {
        Some(parts) => parts,
        // "... url:" with nothing after it: the URL is missing.
        None if rest.ends_with(URL_MARK.trim_end()) => return Err(RequestError::BadUrl),
        None => return Err(RequestError::MalformedJoin),
    };
    let max_players: u16 = parse_digits(max_players.trim_matches(' '))
        .filter(|&n| n > 0)
        .ok_or(RequestError::BadMaxPlayers)?;
    let rest = rest.trim_matches(' ');
    let (url, extensions) = match rest.split_once(' ') {
        Some((url, ext)) => (url, ext),
        None => (rest, ""),
    };
    let url = validate_url(url)?;
    let (kind, port, udp_port) = parse_extensions(extensions)?;
    Ok(JoinRequest {
        version_major: major,
        version_minor: minor,
        name,
        os,
        max_players,
        url,
        kind,
        port,
        udp_port,
    })
}

/// ` kind: K port: P udp: U`, each optional and at most once, in any order.
fn parse_extensions(text: &str) -> Result<(ServerKind, u16, u16), RequestError> {
    let mut kind = None;
    let mut port = None;
    let mut udp = None;
    let mut words = text.split(' ').filter(|w| !w.is_empty());
    while let Some(key) = words.next() {
        let value = words.next().ok_or(RequestError::BadExtension)?;
        let slot_value = match key {
            "kind:" => {
                let k = ServerKind::parse(value)
                    .filter(|k| *k != ServerKind::Unknown)
                    .ok_or(RequestError::BadExtension)?;
                set_once(&mut kind, k)?;
                continue;
            }
            "port:" => &mut port,
            "udp:" => &mut udp,
            _ => return Err(RequestError::BadExtension),
        };
        let number: u16 = parse_digits(value)
            .filter(|&n| n > 0)
            .ok_or(RequestError::BadExtension)?;
        set_once(slot_value, number)?;
    }
    Ok((
        kind.unwrap_or(ServerKind::Unknown),
        port.unwrap_or(0),
        udp.unwrap_or(0),
    ))
}

fn set_once<T>(slot: &mut Option<T>, value: T) -> Result<(), RequestError> {
    if slot.is_some() {
        return Err(RequestError::BadExtension);
    }
    *slot = Some(value);
    Ok(())
}

/// A decimal number of 1-5 ASCII digits (no sign, no spaces) that fits `T`: every number of
/// this protocol (ports, player counts) is a u16.
pub(crate) fn parse_digits<T: std::str::FromStr>(text: &str) -> Option<T> {
    text_fields::parse_digits(text, 5)
}

/// A server name: 1-31 printable ASCII bytes, not containing " os: ".
pub fn validate_name(name: &str) -> Result<String, RequestError> {
    text_fields::name(name).ok_or(RequestError::BadName)
}

/// An OS name: 1-31 printable ASCII bytes, not containing " url: " or " maxplayers: " (not even
/// at its ends: it could not be listed or read back from a join line).
pub fn validate_os(os: &str) -> Result<String, RequestError> {
    let os = printable(os, MAX_OS_LEN).ok_or(RequestError::BadOs)?;
    // Not even at its ends: "x maxplayers:" would be read as "x" in a join line, and "x url:"
    // as "x" in a list line.
    if text_fields::holds_mark(&os, URL_MARK) || text_fields::holds_mark(&os, MAXPLAYERS_MARK) {
        return Err(RequestError::BadOs);
    }
    Ok(os)
}

/// A URL: 1-127 printable ASCII bytes without spaces.
pub fn validate_url(url: &str) -> Result<String, RequestError> {
    let ok = !url.is_empty()
        && url.len() <= MAX_URL_LEN
        && url.bytes().all(|b| (0x21..=0x7e).contains(&b));
    if ok {
        Ok(url.to_string())
    } else {
        Err(RequestError::BadUrl)
    }
}

/// What a server sends to join (the registration client's line).
pub fn join_line(join: &JoinRequest) -> String {
    let mut line = format!(
        "version: {}.{} join me: {} os: {} maxplayers: {} url: {}",
        join.version_major, join.version_minor, join.name, join.os, join.max_players, join.url
    );
    if join.kind != ServerKind::Unknown {
        line.push_str(&format!(" kind: {}", join.kind));
    }
    if join.port != 0 {
        line.push_str(&format!(" port: {}", join.port));
    }
    if join.udp_port != 0 {
        line.push_str(&format!(" udp: {}", join.udp_port));
    }
    line
}

/// `players: P max: M`
pub fn players_line(players: u16, max: u16) -> String {
    format!("players: {players} max: {max}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = "version: 1.0 join me: Gamma_Quadrant os: i586-pc-linux-gnu maxplayers: 16 url: http://gammaquadrant.parsec.org/";

    fn join(name: &str, os: &str, max: u16, url: &str) -> JoinRequest {
        JoinRequest {
            version_major: 1,
            version_minor: 0,
            name: name.into(),
            os: os.into(),
            max_players: max,
            url: url.into(),
            kind: ServerKind::Unknown,
            port: 0,
            udp_port: 0,
        }
    }

    #[test]
    fn parses_the_design_example() {
        assert_eq!(
            parse_request(EXAMPLE),
            Ok(MasterRequest::Join(join(
                "Gamma_Quadrant",
                "i586-pc-linux-gnu",
                16,
                "http://gammaquadrant.parsec.org/"
            )))
        );
        assert_eq!(
            join_line(&join(
                "Gamma_Quadrant",
                "i586-pc-linux-gnu",
                16,
                "http://gammaquadrant.parsec.org/"
            )),
            EXAMPLE
        );
    }

    #[test]
    fn parses_the_extensions_in_any_order() {
        let line = format!("{EXAMPLE} udp: 6522 kind: gameserver port: 6581");
        let Ok(MasterRequest::Join(j)) = parse_request(&line) else {
            panic!("not a join");
        };
        assert_eq!(
            (j.kind, j.port, j.udp_port),
            (ServerKind::GameServer, 6581, 6522)
        );
        let canonical = join_line(&j);
        assert_eq!(
            canonical,
            format!("{EXAMPLE} kind: gameserver port: 6581 udp: 6522")
        );
        assert_eq!(parse_request(&canonical), Ok(MasterRequest::Join(j)));
    }

    #[test]
    fn parses_players_remove_and_list() {
        assert_eq!(
            parse_request("players: 3 max: 16"),
            Ok(MasterRequest::Players {
                players: 3,
                max: 16
            })
        );
        assert_eq!(parse_request("remove me"), Ok(MasterRequest::RemoveMe));
        assert_eq!(
            parse_request(" list servers "),
            Ok(MasterRequest::ListServers)
        );
        for bad in [
            "players: 17 max: 16",
            "players: 1 max: 0",
            "players: x max: 2",
            "players: 3",
            "players: -1 max: 2",
            "players: 1 max: 99999",
        ] {
            assert_eq!(parse_request(bad), Err(RequestError::BadPlayers), "{bad}");
        }
    }

    #[test]
    fn field_limits_are_the_designs() {
        let j = |name: &str, os: &str, url: &str| {
            parse_request(&format!(
                "version: 1.0 join me: {name} os: {os} maxplayers: 4 url: {url}"
            ))
        };
        assert!(j(&"n".repeat(31), &"o".repeat(31), &"u".repeat(127)).is_ok());
        assert_eq!(j(&"n".repeat(32), "o", "u"), Err(RequestError::BadName));
        assert_eq!(j("n", &"o".repeat(32), "u"), Err(RequestError::BadOs));
        assert_eq!(j("n", "o", &"u".repeat(128)), Err(RequestError::BadUrl));
    }

    #[test]
    fn refuses_malformed_joins() {
        for (line, err) in [
            (
                "version: 2.0 join me: a os: b maxplayers: 1 url: u",
                RequestError::Incompatible { major: 2, minor: 0 },
            ),
            (
                "version: 0.9 anything",
                RequestError::Incompatible { major: 0, minor: 9 },
            ),
            (
                "version: x join me: a os: b maxplayers: 1 url: u",
                RequestError::BadVersion,
            ),
            (
                "version: 1.0 join me: a os: b maxplayers: 1",
                RequestError::MalformedJoin,
            ),
            (
                "version: 1.0 join me: a os: b url: u",
                RequestError::MalformedJoin,
            ),
            (
                "version: 1.0 join us: a os: b maxplayers: 1 url: u",
                RequestError::MalformedJoin,
            ),
            (
                "version: 1.0 join me:  os: b maxplayers: 1 url: u",
                RequestError::BadName,
            ),
            (
                "version: 1.0 join me: a os: b maxplayers: 0 url: u",
                RequestError::BadMaxPlayers,
            ),
            (
                "version: 1.0 join me: a os: b maxplayers: 70000 url: u",
                RequestError::BadMaxPlayers,
            ),
            (
                "version: 1.0 join me: a os: b maxplayers: 1 url: ",
                RequestError::BadUrl,
            ),
            (
                "version: 1.0 join me: a os: b url: c maxplayers: 1 url: u",
                RequestError::BadOs,
            ),
            (
                "version: 1.0 join me: a os: b maxplayers: 1 url: u kind: peer",
                RequestError::BadExtension,
            ),
            (
                "version: 1.0 join me: a os: b maxplayers: 1 url: u port: 0",
                RequestError::BadExtension,
            ),
            (
                "version: 1.0 join me: a os: b maxplayers: 1 url: u port: 1 port: 2",
                RequestError::BadExtension,
            ),
            (
                "version: 1.0 join me: a os: b maxplayers: 1 url: u color: red",
                RequestError::BadExtension,
            ),
            (
                "version: 1.0 join me: a os: b maxplayers: 1 url: u port:",
                RequestError::BadExtension,
            ),
            (
                "version: 1.0 join me: a os: é maxplayers: 1 url: u",
                RequestError::BadOs,
            ),
            ("hello", RequestError::Unknown),
            ("", RequestError::Unknown),
            ("remove me please", RequestError::Unknown),
        ] {
            assert_eq!(parse_request(line), Err(err.clone()), "{line}");
            let reply = err.reply();
            assert!(reply == ILLEGAL_REQUEST || reply == VERSION_INCOMPATIBLE);
        }
    }

    /// Regression (fuzz: master_lines): a server named "os: a", or with the OS "a maxplayers:",
    /// passed the checks but its join line did not parse (illegal request); an OS "x url:"
    /// made its list line unreadable. The checks now refuse them.
    #[test]
    fn names_and_os_that_their_lines_could_not_carry_are_refused() {
        assert_eq!(validate_name("os: a"), Err(RequestError::BadName));
        assert_eq!(validate_name("a os:"), Err(RequestError::BadName));
        for os in ["a maxplayers:", "maxplayers: 4", "x url:", "url: y", "url:"] {
            assert_eq!(validate_os(os), Err(RequestError::BadOs), "{os:?}");
        }
        assert_eq!(validate_os("x url"), Ok("x url".to_string()));
        let join = JoinRequest {
            version_major: 1,
            version_minor: 0,
            name: "gq".into(),
            os: "linux".into(),
            max_players: 4,
            url: "http://x".into(),
            kind: ServerKind::GameServer,
            port: 6581,
            udp_port: 6522,
        };
        assert_eq!(
            parse_request(&join_line(&join)),
            Ok(MasterRequest::Join(join))
        );
    }
}
