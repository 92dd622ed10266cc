//! The masterserver's published list (the design's Figure 4) as HTML and as JSON: each server's
//! name linked to its URL, `P/M` players, OS, address and kind.
//!
//! Every text a server sent is escaped; a URL becomes a link only when it is `http://` or
//! `https://` (never `javascript:` and the like). Pure formatting: no I/O, no clock.

use std::fmt::Write as _;
use std::time::SystemTime;

use crate::server::html::{escape, freshness, STYLE};
use crate::server::listing::json_string;
use crate::server::utc;

use super::core::ListedEntry;

/// A snapshot of the list to render.
#[derive(Debug)]
pub struct MasterListing<'a> {
    pub title: &'a str,
    pub max_servers: usize,
    pub servers: Vec<&'a ListedEntry>,
    pub generated: SystemTime,
    /// False in the list written when the masterserver stops: the pages say it is not running.
    pub running: bool,
}

/// Whether a URL may be a link target.
pub fn is_web_url(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

impl MasterListing<'_> {
    /// The whole HTML page.
    pub fn to_html(&self) -> String {
        let title = escape(self.title);
        let mut out = String::with_capacity(1024 + self.servers.len() * 300);
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta http-equiv=\"refresh\" content=\"30\">\n<link rel=\"icon\" href=\"data:,\">\n<title>{title}</title>\n\
             <style>{STYLE}</style>\n\
             </head>\n<body>\n<h1>{title}</h1>\n<p id=\"count\">{count} of at most {max} servers listed</p>\n{fresh}",
            count = self.servers.len(),
            max = self.max_servers,
            fresh = freshness(self.generated, self.running, "masterserver"),
        );
        if self.servers.is_empty() {
            out.push_str("<p>No servers are listed.</p>\n");
        } else {
            out.push_str(
                "<table id=\"servers\">\n<tr><th>Server</th><th>Players</th><th>OS</th>\
                 <th>Address</th><th>Kind</th><th>Listed since (UTC)</th></tr>\n",
            );
            for entry in &self.servers {
                let s = &entry.server;
                let name = escape(&s.name);
                let name_cell = if is_web_url(&s.url) {
                    format!(
                        "<a href=\"{}\" rel=\"nofollow noopener\">{name}</a>",
                        escape(&s.url)
                    )
                } else if s.url.is_empty() || s.url == "-" {
                    name
                } else {
                    // Not a web address (`www.example.org`, `ftp://...`): shown, never linked.
                    format!("{name} <small>({})</small>", escape(&s.url))
                };
                let kind = if s.udp_port != 0 {
                    format!("{} (UDP {})", s.kind, s.udp_port)
                } else {
                    s.kind.to_string()
                };
                let _ = writeln!(
                    out,
                    "<tr><td>{name_cell}</td><td>{}/{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    s.players,
                    s.max_players,
                    escape(&s.os),
                    escape(&s.address()),
                    escape(&kind),
                    utc::rfc3339(entry.since),
                );
            }
            out.push_str("</table>\n");
        }
        out.push_str("</body>\n</html>\n");
        out
    }

    /// The JSON document: `{"masterserver": {...}, "servers": [...]}`.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(256 + self.servers.len() * 320);
        let _ = write!(
            out,
            "{{\n  \"masterserver\": {{\"title\": {}, \"server_count\": {}, \"max_servers\": {}, \"generated\": {}, \"running\": {}}},\n  \"servers\": [",
            json_string(self.title),
            self.servers.len(),
            self.max_servers,
            json_string(&utc::rfc3339(self.generated)),
            self.running,
        );
        for (i, entry) in self.servers.iter().enumerate() {
            let s = &entry.server;
            out.push_str(if i == 0 { "\n    " } else { ",\n    " });
            let _ = write!(
                out,
                "{{\"name\": {}, \"players\": {}, \"max_players\": {}, \"os\": {}, \"url\": {}, \
                 \"address\": {}, \"ip\": {}, \"port\": {}, \"port_known\": {}, \"kind\": {}, \
                 \"udp_port\": {}, \"listed_since\": {}, \"listed_since_unix\": {}}}",
                json_string(&s.name),
                s.players,
                s.max_players,
                json_string(&s.os),
                json_string(&s.url),
                json_string(&s.address()),
                json_string(&s.ip.to_string()),
                s.port,
                s.port_known(),
                json_string(s.kind.as_str()),
                s.udp_port,
                json_string(&utc::rfc3339(entry.since)),
                utc::unix_seconds(entry.since),
            );
        }
        out.push_str(if self.servers.is_empty() {
            "]\n}\n"
        } else {
            "\n  ]\n}\n"
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::master::list_line::ListedServer;
    use crate::master::protocol::ServerKind;

    fn entry(name: &str, url: &str) -> ListedEntry {
        ListedEntry {
            server: ListedServer {
                name: name.into(),
                os: "linux".into(),
                url: url.into(),
                ip: "192.0.2.1".parse().unwrap(),
                port: 6581,
                kind: ServerKind::GameServer,
                udp_port: 6522,
                players: 3,
                max_players: 16,
            },
            since: SystemTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn links_only_web_urls_and_escapes_everything() {
        let a = entry("<b>x</b>", "http://a.example/?q=\"1\"&r=2");
        let b = entry("plain", "javascript:alert(1)");
        let listing = MasterListing {
            title: "M & M",
            max_servers: 256,
            servers: vec![&a, &b],
            generated: SystemTime::UNIX_EPOCH,
            running: true,
        };
        let html = listing.to_html();
        assert!(html.contains(
            "<a href=\"http://a.example/?q=&quot;1&quot;&amp;r=2\" rel=\"nofollow noopener\">&lt;b&gt;x&lt;/b&gt;</a>"
        ));
        assert!(!html.contains("href=\"javascript"), "{html}");
        assert!(
            html.contains("<td>plain <small>(javascript:alert(1))</small></td>"),
            "a URL that is not a web address is shown as text: {html}"
        );
        assert!(html.contains("<td>3/16</td>"));
        assert!(html.contains("192.0.2.1:6581"));
        assert!(html.contains("gameserver (UDP 6522)"));
        assert!(html.contains("M &amp; M"));
    }

    #[test]
    fn a_server_that_said_no_port_is_listed_at_its_ip_alone() {
        let mut design = entry("old", "-");
        design.server.port = 0;
        design.server.kind = ServerKind::Unknown;
        design.server.udp_port = 0;
        let listing = MasterListing {
            title: "t",
            max_servers: 256,
            servers: vec![&design],
            generated: SystemTime::UNIX_EPOCH,
            running: true,
        };
        let html = listing.to_html();
        assert!(html.contains("<td>192.0.2.1</td>"), "{html}");
        assert!(!html.contains("192.0.2.1:0"), "{html}");
        let json = listing.to_json();
        assert!(
            json.contains(
                "\"address\": \"192.0.2.1\", \"ip\": \"192.0.2.1\", \"port\": 0, \"port_known\": false,"
            ),
            "{json}"
        );
        let known = entry("new", "-");
        let listing = MasterListing {
            servers: vec![&known],
            ..listing
        };
        assert!(listing
            .to_json()
            .contains("\"address\": \"192.0.2.1:6581\", \"ip\": \"192.0.2.1\", \"port\": 6581, \"port_known\": true,"));
    }

    #[test]
    fn empty_json_is_well_formed() {
        let listing = MasterListing {
            title: "t",
            max_servers: 1,
            servers: vec![],
            generated: SystemTime::UNIX_EPOCH,
            running: true,
        };
        assert!(listing.to_json().contains("\"servers\": []"));
    }
}
