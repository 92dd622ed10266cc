//! One listed server and its line in the reply to `list servers` (our extension of design
//! section 3.1), written by the masterserver and read by the game's server browser:
//!
//! ```text
//! server: ip: IP port: P kind: K udp: U players: N max: M os: OS url: URL name: NAME
//! ```
//!
//! The name comes last because it may contain spaces; the OS may contain spaces but never
//! " url: ", and the URL none. `port: 0` / `udp: 0` / `kind: unknown` mean the server's join did
//! not say. Also the plain-text table the console prints. Pure formatting and parsing: no I/O,
//! and the parser never panics on any text (it reads what a remote masterserver sent).

use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};

use super::protocol::{parse_digits, validate_name, validate_os, validate_url, ServerKind};

const PREFIX: &str = "server: ";

/// One server as the masterserver lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedServer {
    pub name: String,
    pub os: String,
    pub url: String,
    /// The address its registration connection came from.
    pub ip: IpAddr,
    /// Its TCP port (0: its join did not say).
    pub port: u16,
    pub kind: ServerKind,
    /// A gameserver's UDP port (0: not told).
    pub udp_port: u16,
    pub players: u16,
    pub max_players: u16,
}

impl ListedServer {
    /// `IP:PORT` (`[IP]:PORT` for IPv6): what a player connects to; the IP alone when the
    /// server did not say its port (a design join line): `connect IP` then uses the default
    /// port of the protocol chosen with `net.subsys`.
    pub fn address(&self) -> String {
        if self.port == 0 {
            return self.ip.to_string();
        }
        SocketAddr::new(self.ip, self.port).to_string()
    }

    /// Whether the server said its TCP port when it registered.
    pub fn port_known(&self) -> bool {
        self.port != 0
    }

    /// The key under which lists from several masterservers are merged: address and port (and
    /// the name, when the port is unknown, so two design servers on one host stay apart).
    pub fn dedup_key(&self) -> (IpAddr, u16, String) {
        let name = if self.port == 0 {
            self.name.clone()
        } else {
            String::new()
        };
        (self.ip, self.port, name)
    }

    /// The list line (without terminator).
    pub fn to_line(&self) -> String {
        format!(
            "{PREFIX}ip: {} port: {} kind: {} udp: {} players: {} max: {} os: {} url: {} name: {}",
            self.ip,
            self.port,
            self.kind,
            self.udp_port,
            self.players,
            self.max_players,
            self.os,
            self.url,
            self.name
        )
    }

    /// Parse a list line; `None` if any field is missing, out of order or invalid.
    pub fn parse_line(line: &str) -> Option<ListedServer> {
        let rest = line.strip_prefix(PREFIX)?;
        let (ip, rest) = field(rest, "ip: ")?;
        let (port, rest) = field(rest, "port: ")?;
        let (kind, rest) = field(rest, "kind: ")?;
        let (udp, rest) = field(rest, "udp: ")?;
        let (players, rest) = field(rest, "players: ")?;
        let (max, rest) = field(rest, "max: ")?;
        let rest = rest.strip_prefix("os: ")?;
        let (os, rest) = rest.split_once(" url: ")?;
        let (url, name) = rest.split_once(" name: ")?;
        let players: u16 = parse_digits(players)?;
        let max_players: u16 = parse_digits(max)?;
        if max_players == 0 || players > max_players {
            return None;
        }
        Some(ListedServer {
            name: validate_name(name).ok()?,
            os: validate_os(os).ok()?,
            url: validate_url(url).ok()?,
            ip: ip.parse().ok()?,
            port: parse_port(port)?,
            kind: ServerKind::parse(kind)?,
            udp_port: parse_port(udp)?,
            players,
            max_players,
        })
    }
}

/// `KEY VALUE ` at the start of `text`: the value (up to the next space) and the rest.
fn field<'a>(text: &'a str, key: &str) -> Option<(&'a str, &'a str)> {
    let rest = text.strip_prefix(key)?;
    let (value, rest) = rest.split_once(' ')?;
    (!value.is_empty()).then_some((value, rest))
}

/// A port number 0-65535 ("0": not told).
fn parse_port(text: &str) -> Option<u16> {
    if text == "0" {
        return Some(0);
    }
    parse_digits(text)
}

/// A plain-text table of servers for a console: a header, then one line per server with its
/// name, `P/M` players, kind (a gameserver's UDP port too), address, OS and URL. Each column is
/// as wide as its widest entry, so the columns line up whatever the addresses are. A server
/// that did not say its port is shown at its IP alone, and a note under the table says what
/// `connect IP` does then.
pub fn format_table(servers: &[ListedServer]) -> String {
    if servers.is_empty() {
        return "no servers listed".to_string();
    }
    let rows: Vec<[String; 6]> = servers
        .iter()
        .map(|s| {
            let kind = match s.kind {
                ServerKind::GameServer if s.udp_port != 0 => {
                    format!("{} udp {}", s.kind, s.udp_port)
                }
                _ => s.kind.to_string(),
            };
            [
                s.name.clone(),
                format!("{}/{}", s.players, s.max_players),
                kind,
                s.address(),
                s.os.clone(),
                s.url.clone(),
            ]
        })
        .collect();
    let header = ["name", "players", "kind", "address", "os", "url"].map(String::from);
    let mut widths = [0usize; 6];
    for row in std::iter::once(&header).chain(&rows) {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.len());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let [name, players, kind, address, os, url] = row;
        let _ = writeln!(
            out,
            "{name:<w0$}  {players:>w1$}  {kind:<w2$}  {address:<w3$}  {os:<w4$}  {url}",
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3],
            w4 = widths[4],
        );
    }
    out.pop();
    if servers.iter().any(|s| !s.port_known()) {
        use crate::protocol::server_client::{GAMESERVER_TCP_PORT, SLOTSERVER_PORT};
        let _ = write!(
            out,
            "\n(an address without a port: that server did not say its port; `connect IP` uses \
             the default port of the protocol chosen with net.subsys: slotserver \
             {SLOTSERVER_PORT}, gameserver {GAMESERVER_TCP_PORT})"
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ListedServer {
        ListedServer {
            name: "Gamma Quadrant".into(),
            os: "i586-pc-linux gnu".into(),
            url: "http://gammaquadrant.parsec.org/".into(),
            ip: "192.0.2.7".parse().unwrap(),
            port: 6581,
            kind: ServerKind::GameServer,
            udp_port: 6522,
            players: 3,
            max_players: 16,
        }
    }

    #[test]
    fn line_round_trips() {
        let s = sample();
        let line = s.to_line();
        assert_eq!(
            line,
            "server: ip: 192.0.2.7 port: 6581 kind: gameserver udp: 6522 players: 3 max: 16 \
             os: i586-pc-linux gnu url: http://gammaquadrant.parsec.org/ name: Gamma Quadrant"
        );
        assert_eq!(ListedServer::parse_line(&line), Some(s.clone()));
        let v6 = ListedServer {
            ip: "2001:db8::1".parse().unwrap(),
            port: 0,
            kind: ServerKind::Unknown,
            udp_port: 0,
            ..s
        };
        assert_eq!(ListedServer::parse_line(&v6.to_line()), Some(v6.clone()));
        // A design join says no port: the address is the IP alone, never a port 0.
        assert_eq!(v6.address(), "2001:db8::1");
        assert!(!v6.port_known());
        let v4 = ListedServer {
            port: 0,
            ..sample()
        };
        assert_eq!(v4.address(), "192.0.2.7");
    }

    #[test]
    fn refuses_broken_lines() {
        let good = sample().to_line();
        for bad in [
            good.replace("server: ", "srv: "),
            good.replace("ip: 192.0.2.7", "ip: nowhere"),
            good.replace("players: 3", "players: 30"),
            good.replace("kind: gameserver", "kind: peer"),
            good.replace("port: 6581", "port: 65536"),
            good.replace(" name: Gamma Quadrant", ""),
            good.replace("Gamma Quadrant", &"x".repeat(32)),
            good.replace("udp: 6522 ", ""),
            String::new(),
            "server: ".to_string(),
        ] {
            assert_eq!(ListedServer::parse_line(&bad), None, "{bad}");
        }
    }

    #[test]
    fn table_shows_players_of_max() {
        let table = format_table(&[sample()]);
        assert!(table.contains("3/16"), "{table}");
        assert!(table.contains("192.0.2.7:6581"), "{table}");
        assert_eq!(format_table(&[]), "no servers listed");
    }

    #[test]
    fn a_server_that_said_no_port_is_shown_at_its_ip_with_a_note() {
        let design = ListedServer {
            name: "old".into(),
            ip: "127.0.0.1".parse().unwrap(),
            port: 0,
            kind: ServerKind::Unknown,
            udp_port: 0,
            ..sample()
        };
        let table = format_table(&[sample(), design]);
        assert!(!table.contains(":0 "), "{table}");
        let row = table.lines().find(|l| l.starts_with("old")).unwrap();
        assert!(row.contains("  127.0.0.1  "), "{table}");
        assert!(
            table.ends_with(
                "(an address without a port: that server did not say its port; `connect IP` \
                 uses the default port of the protocol chosen with net.subsys: slotserver 6582, \
                 gameserver 6581)"
            ),
            "{table}"
        );
        assert!(!format_table(&[sample()]).contains("without a port"));
    }

    #[test]
    fn table_columns_line_up() {
        let v6 = ListedServer {
            name: "x".into(),
            ip: "2001:db8::1".parse().unwrap(),
            kind: ServerKind::SlotServer,
            players: 10,
            ..sample()
        };
        let table = format_table(&[sample(), v6]);
        assert_eq!(
            table,
            "name            players  kind                 address             os                 url\n\
             Gamma Quadrant     3/16  gameserver udp 6522  192.0.2.7:6581      i586-pc-linux gnu  http://gammaquadrant.parsec.org/\n\
             x                 10/16  slotserver           [2001:db8::1]:6581  i586-pc-linux gnu  http://gammaquadrant.parsec.org/"
        );
    }
}
