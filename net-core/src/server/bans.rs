//! The servers' ban list: IPv4/IPv6 addresses and CIDR networks, read from an admin's text file
//! and re-read when the file changes.
//!
//! File format: one address (`192.0.2.7`, `2001:db8::1`) or network (`10.0.0.0/8`,
//! `2001:db8::/32`) per line; `#` starts a comment; blank lines are ignored. A line that does
//! not parse is skipped with a warning (the rest still bans). If the file disappears or cannot
//! be read on a reload, the previous list stays in force.
//!
//! The only I/O here is reading and stat-ing that one file; this module never decides what a
//! connection is told.

use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::error::{ErrorCode, NetError, NetResult};

/// How often the file's modification time is checked (besides on each new connection).
pub const RELOAD_CHECK_INTERVAL: Duration = Duration::from_secs(2);

/// One ban: a network (a single address is a network with a full-length prefix).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BanEntry {
    network: IpAddr,
    prefix_len: u8,
}

impl BanEntry {
    /// Parse `ADDR` or `ADDR/PREFIX`. Host bits below the prefix are ignored.
    pub fn parse(text: &str) -> Result<BanEntry, String> {
        let (addr_text, prefix_text) = match text.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text, None),
        };
        let addr: IpAddr = addr_text
            .parse()
            .map_err(|_| format!("'{addr_text}' is not an IPv4 or IPv6 address"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let mut prefix_len = match prefix_text {
            None => max,
            Some(p) => match p.parse::<u8>() {
                Ok(n) if n <= max && !p.starts_with('+') => n,
                _ => return Err(format!("'/{p}' is not a prefix length 0-{max}")),
            },
        };
        // An IPv4-mapped IPv6 address (`::ffff:192.0.2.7`) is the IPv4 address, as a client's
        // address is matched (`contains`); its prefix counts the 96 bits before the IPv4 part.
        let addr = match addr {
            IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some() => {
                if prefix_len < 96 {
                    return Err(format!(
                        "'{text}': an IPv4-mapped address takes a prefix length 96-128 (or write the IPv4 network)"
                    ));
                }
                prefix_len -= 96;
                addr.to_canonical()
            }
            _ => addr,
        };
        Ok(BanEntry {
            network: mask(addr, prefix_len),
            prefix_len,
        })
    }

    /// Whether `addr` lies in this network (IPv4-mapped IPv6 addresses count as IPv4).
    pub fn contains(&self, addr: IpAddr) -> bool {
        let addr = addr.to_canonical();
        addr.is_ipv4() == self.network.is_ipv4() && mask(addr, self.prefix_len) == self.network
    }
}

impl fmt::Display for BanEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let full = if self.network.is_ipv4() { 32 } else { 128 };
        if self.prefix_len == full {
            write!(f, "{}", self.network)
        } else {
            write!(f, "{}/{}", self.network, self.prefix_len)
        }
    }
}

/// Keep the first `prefix_len` bits of `addr`.
fn mask(addr: IpAddr, prefix_len: u8) -> IpAddr {
    match addr.to_canonical() {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4);
            let kept = bits.checked_shr(32 - u32::from(prefix_len)).unwrap_or(0);
            let masked = kept.checked_shl(32 - u32::from(prefix_len)).unwrap_or(0);
            IpAddr::V4(masked.into())
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            let kept = bits.checked_shr(128 - u32::from(prefix_len)).unwrap_or(0);
            let masked = kept.checked_shl(128 - u32::from(prefix_len)).unwrap_or(0);
            IpAddr::V6(masked.into())
        }
    }
}

/// The file's identity for change detection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FileStamp {
    modified: Option<SystemTime>,
    len: u64,
}

/// What a reload check did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReloadOutcome {
    /// Not checked now (no file, or checked less than the interval ago).
    NotDue,
    /// Checked; the file has not changed.
    Unchanged,
    /// The file changed and was read: the list now has this many entries.
    Reloaded { entries: usize, bad_lines: usize },
    /// The file changed but could not be read: the previous list stays.
    Failed(String),
}

/// The ban list, optionally tied to the file it came from.
#[derive(Clone, Debug, Default)]
pub struct BanList {
    entries: Vec<BanEntry>,
    path: Option<PathBuf>,
    stamp: Option<FileStamp>,
    last_check: Option<Instant>,
    /// The last reload failure reported (so a missing file is logged once, not every 2 s).
    last_failure: Option<String>,
}

impl BanList {
    /// An empty list with no file.
    pub fn empty() -> Self {
        BanList::default()
    }

    /// Parse the file format; returns the list and a message per line that was skipped.
    pub fn parse(text: &str) -> (BanList, Vec<String>) {
        let (entries, problems) = parse_entries(text);
        (
            BanList {
                entries,
                ..BanList::default()
            },
            problems,
        )
    }

    /// Read the ban file; later [`reload_if_changed`](Self::reload_if_changed) calls re-read it
    /// when its modification time or size changes. Lines that do not parse are logged and skipped.
    pub fn load(path: &Path) -> NetResult<BanList> {
        let (stamp, text) = read_file(path).map_err(|e| NetError::new(ErrorCode::Io, e))?;
        let (entries, problems) = parse_entries(&text);
        for problem in &problems {
            log::warn!("ban file {}: {problem}", path.display());
        }
        Ok(BanList {
            entries,
            path: Some(path.to_path_buf()),
            stamp: Some(stamp),
            last_check: None,
            last_failure: None,
        })
    }

    /// The entries in force.
    pub fn entries(&self) -> &[BanEntry] {
        &self.entries
    }

    /// The file the list is read from, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Whether `addr` is banned.
    pub fn is_banned(&self, addr: IpAddr) -> bool {
        self.entries.iter().any(|e| e.contains(addr))
    }

    /// Add an entry at run time (not written to the file; a reload of a changed file replaces it).
    pub fn add(&mut self, entry: BanEntry) {
        if !self.entries.contains(&entry) {
            self.entries.push(entry);
        }
    }

    /// When the next periodic check is due (`None`: no file, or never checked yet: the first
    /// [`reload_if_changed`](Self::reload_if_changed) call starts the schedule).
    pub fn next_check(&self) -> Option<Instant> {
        self.path.as_ref()?;
        self.last_check.map(|t| t + RELOAD_CHECK_INTERVAL)
    }

    /// Re-read the file if it changed. `force` checks even if the last check was less than
    /// [`RELOAD_CHECK_INTERVAL`] ago (a new connection does that).
    pub fn reload_if_changed(&mut self, now: Instant, force: bool) -> ReloadOutcome {
        let Some(path) = self.path.clone() else {
            return ReloadOutcome::NotDue;
        };
        if !force {
            if let Some(last) = self.last_check {
                if now.saturating_duration_since(last) < RELOAD_CHECK_INTERVAL {
                    return ReloadOutcome::NotDue;
                }
            }
        }
        self.last_check = Some(now);
        let stamp = match stamp_of(&path) {
            Ok(stamp) => stamp,
            Err(e) => return self.note_failure(&path, e),
        };
        if Some(stamp) == self.stamp {
            return ReloadOutcome::Unchanged;
        }
        match read_file(&path) {
            Ok((stamp, text)) => {
                let (entries, problems) = parse_entries(&text);
                for problem in &problems {
                    log::warn!("ban file {}: {problem}", path.display());
                }
                log::info!(
                    "ban file {} reloaded: {}",
                    path.display(),
                    count_entries(entries.len())
                );
                self.entries = entries;
                self.stamp = Some(stamp);
                self.last_failure = None;
                ReloadOutcome::Reloaded {
                    entries: self.entries.len(),
                    bad_lines: problems.len(),
                }
            }
            Err(e) => self.note_failure(&path, e),
        }
    }

    fn note_failure(&mut self, path: &Path, message: String) -> ReloadOutcome {
        if self.last_failure.as_deref() != Some(message.as_str()) {
            log::warn!(
                "ban file {}: {message}; keeping the previous {}",
                path.display(),
                count_entries(self.entries.len())
            );
            self.last_failure = Some(message.clone());
        }
        ReloadOutcome::Failed(message)
    }
}

fn parse_entries(text: &str) -> (Vec<BanEntry>, Vec<String>) {
    let mut entries = Vec::new();
    let mut problems = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let content = line.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        match BanEntry::parse(content) {
            Ok(entry) => {
                if !entries.contains(&entry) {
                    entries.push(entry);
                }
            }
            Err(e) => problems.push(format!("line {}: {e} (skipped)", number + 1)),
        }
    }
    (entries, problems)
}

fn stamp_of(path: &Path) -> Result<FileStamp, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read: {e}"))?;
    Ok(FileStamp {
        modified: meta.modified().ok(),
        len: meta.len(),
    })
}

/// Largest ban file read (a runaway file must not exhaust memory).
const MAX_FILE_BYTES: u64 = 4 << 20;

fn read_file(path: &Path) -> Result<(FileStamp, String), String> {
    let stamp = stamp_of(path)?;
    if stamp.len > MAX_FILE_BYTES {
        return Err(format!("larger than {MAX_FILE_BYTES} bytes"));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read: {e}"))?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    Ok((stamp, text))
}

/// `1 entry`, `N entries`: how many entries a ban list holds, as the log says it.
fn count_entries(n: usize) -> String {
    if n == 1 {
        "1 entry".to_string()
    } else {
        format!("{n} entries")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn addresses_and_networks_match() {
        let (list, problems) = BanList::parse(
            "# admins' list\n192.0.2.7\n10.0.0.0/8  # the lab\n\n2001:db8::/32\n::1\n",
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert!(list.is_banned(ip("192.0.2.7")));
        assert!(!list.is_banned(ip("192.0.2.8")));
        assert!(list.is_banned(ip("10.255.1.2")));
        assert!(list.is_banned(ip("::ffff:10.1.1.1")), "v4-mapped v6 is v4");
        assert!(list.is_banned(ip("2001:db8:1::5")));
        assert!(!list.is_banned(ip("2001:db9::5")));
        assert!(list.is_banned(ip("::1")));
        assert!(!list.is_banned(ip("127.0.0.1")));
    }

    #[test]
    fn bad_lines_are_skipped_and_reported() {
        let (list, problems) =
            BanList::parse("1.2.3.4\nnonsense\n1.2.3.0/33\n::/129\n5.6.7.8/+8\n");
        assert_eq!(list.entries().len(), 1);
        assert_eq!(problems.len(), 4, "{problems:?}");
        assert!(problems[0].starts_with("line 2:"));
    }

    #[test]
    fn prefix_zero_bans_everything_of_that_family() {
        let (list, _) = BanList::parse("0.0.0.0/0");
        assert!(list.is_banned(ip("8.8.8.8")));
        assert!(!list.is_banned(ip("2001:db8::1")));
    }

    #[test]
    fn host_bits_are_masked_and_display_round_trips() {
        let e = BanEntry::parse("10.1.2.3/8").unwrap();
        assert_eq!(e.to_string(), "10.0.0.0/8");
        assert_eq!(BanEntry::parse("::1").unwrap().to_string(), "::1");
    }

    /// Regression (fuzz: ban_file): an IPv4-mapped line (`::ffff:1.2.3.4`) kept its IPv6
    /// prefix length (128) on the IPv4 address it became: a debug build panicked on the
    /// overflow reading the file, and a release build banned every IPv4 client.
    #[test]
    fn an_ipv4_mapped_line_bans_that_ipv4_address_only() {
        let (list, problems) = BanList::parse(
            "::ffff:1.2.3.4
::ffff:10.0.0.0/104
",
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert!(list.is_banned(ip("1.2.3.4")));
        assert!(list.is_banned(ip("::ffff:1.2.3.4")));
        assert!(!list.is_banned(ip("1.2.3.5")));
        assert!(list.is_banned(ip("10.9.8.7")));
        assert!(!list.is_banned(ip("11.0.0.1")));
        let names: Vec<String> = list.entries().iter().map(|e| e.to_string()).collect();
        assert_eq!(names, ["1.2.3.4", "10.0.0.0/8"]);
        let (_, problems) = BanList::parse(
            "::ffff:1.2.3.4/95
",
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
    }
}
