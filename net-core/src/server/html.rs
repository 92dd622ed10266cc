//! The HTML page of a server's connected players (the design's Figure 3), and replacing a
//! published file atomically so a web server never serves half a page.
//!
//! Every text from a client (names, OS) is HTML-escaped. Rendering never does I/O;
//! [`write_atomically`] is the only function here that touches the file system, and it never
//! leaves a partial file under the published name.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::listing::ServerListing;
use super::utc;

/// Escape text for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The whole page.
pub fn render(listing: &ServerListing) -> String {
    let name = escape(&listing.server_name);
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"refresh\" content=\"30\">\n<link rel=\"icon\" href=\"data:,\">\n\
         <title>{name}: players</title>\n\
         <style>{STYLE}</style>\n\
         </head>\n<body>\n<h1>{name}</h1>\n<p>{kind}: {count}/{max} players</p>\n{fresh}",
        kind = escape(&listing.kind),
        count = listing.players.len(),
        max = listing.max_players,
        fresh = freshness(listing.generated, listing.running, "server"),
    );
    if listing.players.is_empty() {
        out.push_str("<p>No players are connected.</p>\n");
    } else {
        out.push_str(
            "<table>\n<tr><th>Slot</th><th>Name</th><th>Address</th><th>OS</th>\
             <th>Connected since (UTC)</th></tr>\n",
        );
        for p in &listing.players {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                p.slot,
                escape(&p.name),
                escape(&p.addr.to_string()),
                escape(&p.os),
                utc::rfc3339(p.since),
            );
        }
        out.push_str("</table>\n");
    }
    if !listing.status.is_empty() {
        out.push_str("<pre>\n");
        for line in &listing.status {
            let _ = writeln!(out, "{}", escape(line));
        }
        out.push_str("</pre>\n");
    }
    out.push_str("</body>\n</html>\n");
    out
}

/// The style of the published pages: a bordered table whose cells do not wrap (a time stamp or
/// `x86_64-linux` broken over two lines is hard to read).
pub const STYLE: &str = "body{font-family:sans-serif}table{border-collapse:collapse}\
     td,th{border:1px solid #999;padding:2px 8px;text-align:left;white-space:nowrap}\
     .stopped{color:#a00}";

/// How fresh a published page is, said at its top: the time it was made and that it reloads
/// itself, or, for the page written when the server stops, that the server is not running (an
/// empty list alone would look like a running server nobody plays on). `what` names the
/// server ("server", "masterserver").
pub fn freshness(generated: std::time::SystemTime, running: bool, what: &str) -> String {
    let at = utc::rfc3339(generated);
    if running {
        format!(
            "<p id=\"updated\"><small>List as of {at} (UTC); this page reloads every 30 seconds.</small></p>\n"
        )
    } else {
        format!(
            "<p id=\"stopped\" class=\"stopped\"><strong>This {what} stopped at {at} (UTC) and is not \
             running: the list stays empty until it is started again.</strong></p>\n"
        )
    }
}

/// Replace `path` with `contents`: written to a temporary file in the same directory, flushed
/// to disk, then renamed over `path` (atomic on POSIX file systems). On failure the temporary
/// file is removed and `path` is unchanged.
pub fn write_atomically(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let file_name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other(format!("'{}' names no file", path.display())))?;
    let mut temp_name = std::ffi::OsString::from(".");
    temp_name.push(file_name);
    temp_name.push(format!(
        ".tmp-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let temp: PathBuf = path.with_file_name(temp_name);
    let result = (|| {
        let mut file = std::fs::File::create(&temp)?;
        file.write_all(contents)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::slots::PlayerRecord;
    use std::time::{Duration, SystemTime};

    fn listing(names: &[&str]) -> ServerListing {
        ServerListing {
            server_name: "Gamma <Q>".into(),
            kind: "slotserver".into(),
            max_players: 16,
            players: names
                .iter()
                .enumerate()
                .map(|(i, n)| PlayerRecord {
                    slot: i as u8,
                    name: n.to_string(),
                    os: "linux".into(),
                    addr: "10.0.0.1".parse().unwrap(),
                    game_port: 6526,
                    moved_to: None,
                    token: 0,
                    told_token: 0,
                    extended: false,
                    conn: i as u64,
                    since: SystemTime::UNIX_EPOCH + Duration::from_secs(86_400),
                })
                .collect(),
            generated: SystemTime::UNIX_EPOCH,
            status: vec![],
            running: true,
        }
    }

    #[test]
    fn names_are_escaped() {
        let page = render(&listing(&["<b>bold</b>", "a&b"]));
        assert!(page.contains("&lt;b&gt;bold&lt;/b&gt;"));
        assert!(page.contains("a&amp;b"));
        assert!(page.contains("Gamma &lt;Q&gt;"));
        assert!(!page.contains("<b>"));
        assert!(page.contains("1970-01-02T00:00:00Z"));
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp_file() {
        let dir = std::env::temp_dir().join(format!("parsec-html-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("players.html");
        write_atomically(&path, b"one").unwrap();
        write_atomically(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let entries: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(entries.len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
