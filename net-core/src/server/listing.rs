//! A snapshot of a server's public player list, and its JSON form (`/players.json`, `--json`).
//!
//! The JSON is written by hand (strings escaped per RFC 8259) so the core needs no serializer.
//! This module only formats: it never does I/O and never reads a clock.

use std::fmt::Write as _;
use std::time::SystemTime;

use super::slots::PlayerRecord;
use super::utc;

/// What the HTML and JSON lists show.
#[derive(Clone, Debug)]
pub struct ServerListing {
    pub server_name: String,
    /// "slotserver" or "gameserver".
    pub kind: String,
    pub max_players: u8,
    /// By slot.
    pub players: Vec<PlayerRecord>,
    /// When the snapshot was taken.
    pub generated: SystemTime,
    /// Extra status lines (e.g. the gameserver's UDP figures); may be empty.
    pub status: Vec<String>,
    /// False in the list written when the server stops: the pages say it is not running.
    pub running: bool,
}

impl ServerListing {
    /// The JSON document: `{"server": {...}, "players": [...], "status": [...]}`.
    pub fn to_json(&self) -> String {
        let mut out = String::from("{\n  \"server\": {");
        let _ = write!(
            out,
            "\"name\": {}, \"kind\": {}, \"player_count\": {}, \"max_players\": {}, \"generated\": {}, \"running\": {}",
            json_string(&self.server_name),
            json_string(&self.kind),
            self.players.len(),
            self.max_players,
            json_string(&utc::rfc3339(self.generated)),
            self.running,
        );
        out.push_str("},\n  \"players\": [");
        for (i, p) in self.players.iter().enumerate() {
            out.push_str(if i == 0 { "\n    " } else { ",\n    " });
            let _ = write!(
                out,
                "{{\"slot\": {}, \"name\": {}, \"address\": {}, \"os\": {}, \"connected_since\": {}, \"connected_since_unix\": {}}}",
                p.slot,
                json_string(&p.name),
                json_string(&p.addr.to_string()),
                json_string(&p.os),
                json_string(&utc::rfc3339(p.since)),
                utc::unix_seconds(p.since),
            );
        }
        out.push_str(if self.players.is_empty() {
            "],\n"
        } else {
            "\n  ],\n"
        });
        out.push_str("  \"status\": [");
        let status: Vec<String> = self.status.iter().map(|s| json_string(s)).collect();
        out.push_str(&status.join(", "));
        out.push_str("]\n}\n");
        out
    }
}

/// A JSON string literal.
pub fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            // Keep "</script>"-style sequences harmless if the JSON is ever embedded in HTML.
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_json_strings() {
        assert_eq!(json_string("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(json_string("\u{1}<b>"), r#""\u0001\u003cb\u003e""#);
    }

    #[test]
    fn empty_listing_is_well_formed() {
        let listing = ServerListing {
            server_name: "S".into(),
            kind: "slotserver".into(),
            max_players: 16,
            players: vec![],
            generated: SystemTime::UNIX_EPOCH,
            status: vec![],
            running: true,
        };
        let json = listing.to_json();
        assert!(json.contains("\"players\": []"), "{json}");
    }
}
