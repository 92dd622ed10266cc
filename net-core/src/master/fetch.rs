//! `ListFetch`: asking up to three masterservers for their lists at once (the `list servers`
//! extension) and merging the answers, as a sans-IO state machine for the game's server browser.
//!
//! Calling order:
//! - [`start`](ListFetch::start) queues a `Connect` for every masterserver;
//! - inputs per masterserver (by index): [`handle_connected`](ListFetch::handle_connected),
//!   [`handle_line`](ListFetch::handle_line), [`handle_closed`](ListFetch::handle_closed);
//!   [`handle_timeout`](ListFetch::handle_timeout) once [`poll_timeout`](ListFetch::poll_timeout)
//!   has come;
//! - outputs: [`poll_command`](ListFetch::poll_command); [`is_done`](ListFetch::is_done) and
//!   then [`result`](ListFetch::result), the merged list (deduplicated by address and port, the
//!   first masterserver's entry winning) and one error text per masterserver that failed.
//!
//! A masterserver fails when it cannot be reached, refuses (`masterserver full`, or `illegal
//! request not processed` from one without the extension), closes before `end of list`, sends
//! more than [`MAX_LISTED`] servers, or does not finish within the timeout; lines that do not parse are
//! skipped and counted. It never touches a socket and never reads a clock.

use std::collections::{HashSet, VecDeque};
use std::time::{Duration, Instant};

use super::list_line::ListedServer;
use super::protocol::{END_OF_LIST, ILLEGAL_REQUEST, LIST_REQUEST, MASTERSERVER_FULL};

/// Most servers taken from one masterserver.
pub const MAX_LISTED: usize = 65_536;

/// What the driver must do for masterserver `master` (an index into the list given to `start`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FetchCommand {
    Connect { master: usize },
    SendLine { master: usize, line: String },
    Close { master: usize },
}

#[derive(Debug)]
enum Query {
    Connecting,
    Listing { servers: Vec<ListedServer> },
    Done { servers: Vec<ListedServer> },
    Failed(String),
}

/// The merged outcome of a fetch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FetchResult {
    pub servers: Vec<ListedServer>,
    /// The masterservers whose list came in, as `HOST:PORT`.
    pub answered: Vec<String>,
    /// `HOST:PORT: what went wrong`, one per failed masterserver.
    pub errors: Vec<String>,
    /// Lines that were not list lines (skipped).
    pub bad_lines: u64,
}

/// One fetch from several masterservers (see the module documentation).
#[derive(Debug)]
pub struct ListFetch {
    masters: Vec<String>,
    queries: Vec<Query>,
    deadline: Instant,
    commands: VecDeque<FetchCommand>,
    bad_lines: u64,
}

impl ListFetch {
    /// Start asking `masters` (`HOST:PORT` texts, used in error messages); everything must be
    /// over within `timeout`.
    pub fn start(now: Instant, masters: Vec<String>, timeout: Duration) -> ListFetch {
        let commands = (0..masters.len())
            .map(|master| FetchCommand::Connect { master })
            .collect();
        let queries = masters.iter().map(|_| Query::Connecting).collect();
        ListFetch {
            masters,
            queries,
            deadline: now + timeout,
            commands,
            bad_lines: 0,
        }
    }

    /// The masterservers asked, by index.
    pub fn masters(&self) -> &[String] {
        &self.masters
    }

    pub fn handle_connected(&mut self, master: usize) {
        if let Some(q @ Query::Connecting) = self.queries.get_mut(master) {
            *q = Query::Listing {
                servers: Vec::new(),
            };
            self.commands.push_back(FetchCommand::SendLine {
                master,
                line: LIST_REQUEST.to_string(),
            });
        }
    }

    pub fn handle_line(&mut self, master: usize, line: &str) {
        let Some(Query::Listing { servers }) = self.queries.get_mut(master) else {
            return;
        };
        if line == MASTERSERVER_FULL || line == ILLEGAL_REQUEST {
            // The design's refusals: no room for this connection, or no `list servers` here
            // (a design masterserver); no list is coming.
            self.fail(master, format!("refused: {line}"));
            return;
        }
        if line == END_OF_LIST {
            let servers = std::mem::take(servers);
            self.queries[master] = Query::Done { servers };
            self.commands.push_back(FetchCommand::Close { master });
            return;
        }
        match ListedServer::parse_line(line) {
            Some(server) if servers.len() < MAX_LISTED => servers.push(server),
            Some(_) => self.fail(master, format!("more than {MAX_LISTED} servers listed")),
            None => {
                self.bad_lines += 1;
                log::debug!(
                    "masterserver {}: not a list line: {line:?}",
                    self.masters[master]
                );
            }
        }
    }

    pub fn handle_closed(&mut self, master: usize, reason: &str) {
        if matches!(
            self.queries.get(master),
            Some(Query::Connecting | Query::Listing { .. })
        ) {
            self.queries[master] = Query::Failed(reason.to_string());
        }
    }

    /// Masterservers still not finished at the deadline fail.
    pub fn handle_timeout(&mut self, now: Instant) {
        if now < self.deadline {
            return;
        }
        for master in 0..self.queries.len() {
            if matches!(
                self.queries[master],
                Query::Connecting | Query::Listing { .. }
            ) {
                self.fail(master, "no complete list in time".to_string());
            }
        }
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        (!self.is_done()).then_some(self.deadline)
    }

    pub fn poll_command(&mut self) -> Option<FetchCommand> {
        self.commands.pop_front()
    }

    /// The masterservers that have neither answered nor failed yet.
    pub fn unfinished(&self) -> Vec<String> {
        self.queries
            .iter()
            .zip(&self.masters)
            .filter(|(q, _)| matches!(q, Query::Connecting | Query::Listing { .. }))
            .map(|(_, m)| m.clone())
            .collect()
    }

    /// Whether every masterserver has answered or failed.
    pub fn is_done(&self) -> bool {
        self.queries
            .iter()
            .all(|q| matches!(q, Query::Done { .. } | Query::Failed(_)))
    }

    /// The merged list and the errors (meaningful once [`is_done`](Self::is_done)).
    pub fn result(&self) -> FetchResult {
        let mut seen = HashSet::new();
        let mut result = FetchResult {
            bad_lines: self.bad_lines,
            ..FetchResult::default()
        };
        for (master, query) in self.queries.iter().enumerate() {
            match query {
                Query::Done { servers } => {
                    result.answered.push(self.masters[master].clone());
                    for s in servers {
                        if seen.insert(s.dedup_key()) {
                            result.servers.push(s.clone());
                        }
                    }
                }
                Query::Failed(why) => result
                    .errors
                    .push(format!("{}: {why}", self.masters[master])),
                Query::Connecting | Query::Listing { .. } => result
                    .errors
                    .push(format!("{}: unfinished", self.masters[master])),
            }
        }
        result
    }

    fn fail(&mut self, master: usize, why: String) {
        self.queries[master] = Query::Failed(why);
        self.commands.push_back(FetchCommand::Close { master });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::master::protocol::ServerKind;

    fn server(name: &str, ip: &str, port: u16) -> ListedServer {
        ListedServer {
            name: name.into(),
            os: "linux".into(),
            url: "-".into(),
            ip: ip.parse().unwrap(),
            port,
            kind: ServerKind::SlotServer,
            udp_port: 0,
            players: 0,
            max_players: 16,
        }
    }

    fn commands(f: &mut ListFetch) -> Vec<FetchCommand> {
        std::iter::from_fn(|| f.poll_command()).collect()
    }

    #[test]
    fn merges_two_lists_and_reports_the_failed_master() {
        let now = Instant::now();
        let masters = vec!["m0:6502".to_string(), "m1:6502".into(), "m2:6502".into()];
        let mut f = ListFetch::start(now, masters, Duration::from_secs(5));
        assert_eq!(commands(&mut f).len(), 3);
        f.handle_connected(0);
        f.handle_connected(1);
        assert_eq!(
            commands(&mut f),
            vec![
                FetchCommand::SendLine {
                    master: 0,
                    line: "list servers".into()
                },
                FetchCommand::SendLine {
                    master: 1,
                    line: "list servers".into()
                },
            ]
        );
        f.handle_closed(2, "connection refused");
        f.handle_line(0, &server("a", "10.0.0.1", 6582).to_line());
        f.handle_line(0, "garbage");
        f.handle_line(1, &server("a again", "10.0.0.1", 6582).to_line());
        f.handle_line(1, &server("b", "10.0.0.2", 6581).to_line());
        assert!(!f.is_done());
        f.handle_line(0, "end of list");
        f.handle_line(1, "end of list");
        assert!(f.is_done());
        assert_eq!(f.poll_timeout(), None);
        let r = f.result();
        let names: Vec<&str> = r.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(r.errors, vec!["m2:6502: connection refused".to_string()]);
        assert_eq!(r.bad_lines, 1);
    }

    #[test]
    fn a_master_that_refuses_with_masterserver_full_fails_saying_so() {
        let now = Instant::now();
        let mut f = ListFetch::start(now, vec!["m:1".into()], Duration::from_secs(5));
        f.handle_connected(0);
        commands(&mut f);
        f.handle_line(0, "masterserver full");
        assert!(f.is_done());
        assert_eq!(commands(&mut f), vec![FetchCommand::Close { master: 0 }]);
        let r = f.result();
        assert_eq!(
            r.errors,
            vec!["m:1: refused: masterserver full".to_string()]
        );
        assert_eq!(r.bad_lines, 0);
        // A design masterserver does not know `list servers`.
        let mut f = ListFetch::start(now, vec!["old:1".into()], Duration::from_secs(5));
        f.handle_connected(0);
        f.handle_line(0, "illegal request not processed");
        assert!(f.is_done());
        assert_eq!(
            f.result().errors,
            vec!["old:1: refused: illegal request not processed".to_string()]
        );
    }

    #[test]
    fn a_master_that_closes_early_or_stalls_fails() {
        let now = Instant::now();
        let mut f = ListFetch::start(
            now,
            vec!["a:1".into(), "b:2".into()],
            Duration::from_secs(5),
        );
        f.handle_connected(0);
        f.handle_connected(1);
        f.handle_line(0, &server("x", "10.0.0.1", 1).to_line());
        f.handle_closed(0, "closed by the server");
        f.handle_timeout(now + Duration::from_secs(4));
        assert!(!f.is_done());
        f.handle_timeout(now + Duration::from_secs(5));
        assert!(f.is_done());
        let r = f.result();
        assert!(r.servers.is_empty());
        assert_eq!(
            r.errors,
            vec![
                "a:1: closed by the server".to_string(),
                "b:2: no complete list in time".to_string()
            ]
        );
    }
}
