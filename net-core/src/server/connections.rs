//! [`Connections`]: the TCP connections of a sans-IO text-protocol core (the slot/gameserver's
//! and the masterserver's), and what the core asks its driver to do with them. It checks the
//! connection limits when one is accepted, frames each connection's bytes into lines, keeps
//! the times the timeouts are measured from, finds the connections whose first deadline has
//! passed, and queues the lines to send and the connections to close ([`ServerAction`]s).
//! What a connection means to the protocol (a slot, a listed server) is the core's own state
//! `S`, kept beside it. The core's refusals are logged through its [`RefusalLog`].

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use super::expiry::{earliest, Expiry};
use super::lines::{FramedLine, LineBuffer, LineFault};
use super::refusal_log::RefusalLog;
use super::slots::{ConnId, ServerAction};

/// How many connections a core takes, and how long a line may be.
#[derive(Clone, Copy, Debug)]
pub struct ConnectionLimits {
    /// At most this many connections at once (at least 1).
    pub max_connections: usize,
    /// At most this many connections from one IP address at once (at least 1).
    pub max_per_address: usize,
    /// Longest line, without its newline.
    pub max_line_len: usize,
}

/// One connection: its address, its line framing, its clocks and the core's state for it.
#[derive(Debug)]
pub struct Connection<S> {
    /// The peer's address (IPv4-mapped IPv6 shown as IPv4).
    pub ip: IpAddr,
    lines: LineBuffer,
    /// When the first byte of the current unfinished line arrived.
    pub line_started: Option<Instant>,
    /// When bytes last arrived (or the connection was accepted).
    pub last_bytes: Instant,
    /// When the last complete line arrived (or the connection was accepted).
    pub last_line: Instant,
    pub state: S,
}

/// The open connections of one core, by the runtime's id (in the order they came).
#[derive(Debug)]
pub struct Connections<S> {
    conns: BTreeMap<ConnId, Connection<S>>,
    per_address: HashMap<IpAddr, usize>,
    limits: ConnectionLimits,
    actions: VecDeque<ServerAction>,
    accepted: u64,
    refused: u64,
    overlong_lines: u64,
    refusals: RefusalLog,
}

impl<S> Connections<S> {
    pub fn new(limits: ConnectionLimits) -> Connections<S> {
        Connections {
            conns: BTreeMap::new(),
            per_address: HashMap::new(),
            limits: ConnectionLimits {
                max_connections: limits.max_connections.max(1),
                max_per_address: limits.max_per_address.max(1),
                ..limits
            },
            actions: VecDeque::new(),
            accepted: 0,
            refused: 0,
            overlong_lines: 0,
            refusals: RefusalLog::default(),
        }
    }

    /// Where the core logs what it refuses (at most a few lines per address and period).
    pub fn refusals(&mut self) -> &mut RefusalLog {
        &mut self.refusals
    }

    /// When the refusal log has a summary line due (see [`RefusalLog::poll_timeout`]).
    pub fn refusals_timeout(&self) -> Option<Instant> {
        self.refusals.poll_timeout()
    }

    /// Take a new connection with the core's `state` for it, or refuse it (`Err(reason)`,
    /// logged and counted) when the id is in use or a limit is reached.
    pub fn accept(
        &mut self,
        now: Instant,
        conn: ConnId,
        peer: SocketAddr,
        state: S,
    ) -> Result<(), String> {
        let ip = peer.ip().to_canonical();
        let from_ip = self.per_address.get(&ip).copied().unwrap_or(0);
        let refusal = if self.conns.contains_key(&conn) {
            Some(format!("connection id {conn} is already in use"))
        } else if self.conns.len() >= self.limits.max_connections {
            Some(format!(
                "too many connections ({} at most)",
                self.limits.max_connections
            ))
        } else if from_ip >= self.limits.max_per_address {
            Some(format!(
                "too many connections from {ip} ({} at most)",
                self.limits.max_per_address
            ))
        } else {
            None
        };
        if let Some(reason) = refusal {
            self.refused += 1;
            self.refusals.refused(
                now,
                ip,
                log::Level::Info,
                format_args!("refused connection from {peer}: {reason}"),
            );
            return Err(reason);
        }
        self.accepted += 1;
        log::debug!("connection {conn} from {peer}");
        *self.per_address.entry(ip).or_insert(0) += 1;
        self.conns.insert(
            conn,
            Connection {
                ip,
                lines: LineBuffer::new(self.limits.max_line_len),
                line_started: None,
                last_bytes: now,
                last_line: now,
                state,
            },
        );
        Ok(())
    }

    /// Frame bytes received on `conn` into lines (complete ones and faults, in order) and move
    /// its clocks; `None` for a connection that is not open.
    pub fn receive(&mut self, now: Instant, conn: ConnId, bytes: &[u8]) -> Option<Vec<FramedLine>> {
        let c = self.conns.get_mut(&conn)?;
        c.last_bytes = now;
        let framed = c.lines.push(bytes);
        if !framed.is_empty() {
            c.last_line = now;
        }
        if !c.lines.has_unfinished_line() {
            c.line_started = None;
        } else if !framed.is_empty() || c.line_started.is_none() {
            c.line_started = Some(now);
        }
        Some(framed)
    }

    /// The peer of `conn` will send nothing more: its unfinished last line, if any, framed as
    /// if its "\n" had come.
    pub fn finish_line(&mut self, conn: ConnId) -> Option<FramedLine> {
        self.conns.get_mut(&conn)?.lines.finish()
    }

    /// Forget a connection; returns what was kept for it.
    pub fn remove(&mut self, conn: ConnId) -> Option<Connection<S>> {
        let c = self.conns.remove(&conn)?;
        if let Some(n) = self.per_address.get_mut(&c.ip) {
            *n -= 1;
            if *n == 0 {
                self.per_address.remove(&c.ip);
            }
        }
        Some(c)
    }

    /// Forget a connection and ask the driver to close it after what is queued for it;
    /// returns what was kept for it (`None`: it was not open, and nothing is asked).
    pub fn close(&mut self, conn: ConnId, reason: &str) -> Option<Connection<S>> {
        let c = self.remove(conn)?;
        log::debug!("closing connection {conn} from {}: {reason}", c.ip);
        self.push(ServerAction::Close {
            conn,
            reason: reason.to_string(),
        });
        Some(c)
    }

    /// Close every connection (after what is queued for each), in the order they came.
    pub fn close_all(&mut self, reason: &str) {
        self.per_address.clear();
        for conn in std::mem::take(&mut self.conns).into_keys() {
            self.push(ServerAction::Close {
                conn,
                reason: reason.to_string(),
            });
        }
    }

    /// Answer a line that broke the framing with `reply`. True when the core must close the
    /// connection: an overlong line (counted), whose sender does not keep to the protocol.
    pub fn refuse_line(&mut self, conn: ConnId, fault: LineFault, reply: &str) -> bool {
        self.send(conn, reply);
        let overlong = fault == LineFault::Overlong;
        // A branch, not `+= u64::from(overlong)`: rustc 1.95 (LLVM 22.1) release builds dropped
        // that add once this was inlined into the masterserver's line handling, so overlong
        // lines were refused and closed but never counted (net-core/tests/master_core.rs, run
        // with release code generation by tools/test.sh's `checked` profile, catches it).
        if overlong {
            self.overlong_lines += 1;
        }
        overlong
    }

    /// Queue one line for `conn` (the driver appends the newline).
    pub fn send(&mut self, conn: ConnId, line: &str) {
        self.push(ServerAction::SendLine {
            conn,
            line: line.to_string(),
        });
    }

    /// Queue ready lines shared with other connections.
    pub fn send_shared(&mut self, conn: ConnId, bytes: Arc<[u8]>) {
        self.push(ServerAction::SendShared { conn, bytes });
    }

    /// Queue anything else for the driver (e.g. [`ServerAction::ListChanged`]).
    pub fn push(&mut self, action: ServerAction) {
        self.actions.push_back(action);
    }

    /// The next thing for the driver to do.
    pub fn poll_action(&mut self) -> Option<ServerAction> {
        self.actions.pop_front()
    }

    pub fn get(&self, conn: ConnId) -> Option<&Connection<S>> {
        self.conns.get(&conn)
    }

    pub fn get_mut(&mut self, conn: ConnId) -> Option<&mut Connection<S>> {
        self.conns.get_mut(&conn)
    }

    pub fn contains(&self, conn: ConnId) -> bool {
        self.conns.contains_key(&conn)
    }

    pub fn len(&self) -> usize {
        self.conns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (ConnId, &Connection<S>)> {
        self.conns.iter().map(|(&id, c)| (id, c))
    }

    /// Each connection's first deadline and why, from the core's `deadlines_of` (connections
    /// without one are left out).
    pub fn first_deadlines<'a, const N: usize>(
        &'a self,
        deadlines_of: impl Fn(&Connection<S>) -> [(Option<Instant>, Expiry); N] + 'a,
    ) -> impl Iterator<Item = (ConnId, Instant, Expiry)> + 'a {
        self.iter()
            .filter_map(move |(id, c)| earliest(&deadlines_of(c)).map(|(at, why)| (id, at, why)))
    }

    /// `connections_accepted`, `connections_refused` and `overlong_lines` since the start.
    pub fn named_counts(&self) -> [(&'static str, u64); 3] {
        [
            ("connections_accepted", self.accepted),
            ("connections_refused", self.refused),
            ("overlong_lines", self.overlong_lines),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::lines::LineFault;
    use std::time::Duration;

    fn peer(last: u8, port: u16) -> SocketAddr {
        SocketAddr::from(([10, 0, 0, last], port))
    }

    fn table(max_connections: usize, max_per_address: usize) -> Connections<u8> {
        Connections::new(ConnectionLimits {
            max_connections,
            max_per_address,
            max_line_len: 8,
        })
    }

    #[test]
    fn limits_refuse_and_count_and_a_removal_frees_the_address() {
        let now = Instant::now();
        let mut t = table(3, 2);
        assert!(t.accept(now, 1, peer(1, 1000), 0).is_ok());
        assert!(t.accept(now, 2, peer(1, 1001), 0).is_ok());
        let err = t.accept(now, 3, peer(1, 1002), 0).unwrap_err();
        assert!(err.contains("from 10.0.0.1 (2 at most)"), "{err}");
        let err = t.accept(now, 2, peer(2, 1000), 0).unwrap_err();
        assert!(err.contains("already in use"), "{err}");
        assert!(t.accept(now, 4, peer(2, 1000), 0).is_ok());
        let err = t.accept(now, 5, peer(3, 1000), 0).unwrap_err();
        assert!(err.contains("too many connections (3 at most)"), "{err}");
        assert_eq!(t.named_counts()[0], ("connections_accepted", 3));
        assert_eq!(t.named_counts()[1], ("connections_refused", 3));
        assert!(t.close(1, "bye").is_some());
        assert!(
            t.accept(now, 6, peer(1, 1003), 0).is_ok(),
            "the address has room again"
        );
        t.close_all("stopping");
        let closed: Vec<ConnId> = std::iter::from_fn(|| t.poll_action())
            .map(|a| match a {
                ServerAction::Close { conn, .. } => conn,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(closed, vec![1, 2, 4, 6]);
        assert!(t.is_empty());
        assert!(t.accept(now, 7, peer(1, 1004), 0).is_ok());
        assert!(
            t.accept(now, 8, peer(1, 1005), 0).is_ok(),
            "close_all forgot the counts"
        );
    }

    #[test]
    fn a_faulty_line_is_answered_and_an_overlong_one_is_to_be_closed() {
        let now = Instant::now();
        let mut t = table(10, 10);
        t.accept(now, 1, peer(1, 1), 0).unwrap();
        assert!(!t.refuse_line(1, LineFault::ControlBytes, "invalid"));
        assert!(!t.refuse_line(1, LineFault::NotUtf8, "invalid"));
        assert!(t.refuse_line(1, LineFault::Overlong, "invalid"));
        assert_eq!(t.named_counts()[2], ("overlong_lines", 1));
        t.close(1, "overlong");
        let actions: Vec<ServerAction> = std::iter::from_fn(|| t.poll_action()).collect();
        assert_eq!(actions.len(), 4, "{actions:?}");
        assert!(actions[..3]
            .iter()
            .all(|a| matches!(a, ServerAction::SendLine { conn: 1, line } if line == "invalid")));
        assert!(matches!(actions[3], ServerAction::Close { conn: 1, .. }));
        assert!(t.close(1, "again").is_none(), "closing twice asks nothing");
        assert!(t.poll_action().is_none());
    }

    #[test]
    fn mapped_ipv6_counts_as_its_ipv4_address() {
        let now = Instant::now();
        let mut t = table(10, 1);
        assert!(t.accept(now, 1, peer(9, 1), 0).is_ok());
        let mapped: SocketAddr = "[::ffff:10.0.0.9]:2".parse().unwrap();
        assert!(t.accept(now, 2, mapped, 0).is_err());
        assert_eq!(t.get(1).unwrap().ip, IpAddr::from([10, 0, 0, 9]));
    }

    #[test]
    fn receive_frames_lines_and_moves_the_clocks() {
        let start = Instant::now();
        let mut t = table(10, 10);
        t.accept(start, 1, peer(1, 1), 7).unwrap();
        let later = start + Duration::from_secs(1);
        assert_eq!(t.receive(later, 1, b"jo").unwrap(), vec![]);
        let c = t.get(1).unwrap();
        assert_eq!(
            (c.line_started, c.last_bytes, c.last_line),
            (Some(later), later, start)
        );
        let last = later + Duration::from_secs(1);
        let lines = t.receive(last, 1, b"in\nabcdefghij\n").unwrap();
        assert_eq!(
            lines,
            vec![Ok("join".to_string()), Err(LineFault::Overlong)]
        );
        let c = t.get(1).unwrap();
        assert_eq!(
            (c.line_started, c.last_bytes, c.last_line),
            (None, last, last)
        );
        assert_eq!(c.state, 7);
        assert!(
            t.receive(last, 2, b"x\n").is_none(),
            "not an open connection"
        );
    }

    #[test]
    fn first_deadlines_name_each_connections_earliest() {
        let now = Instant::now();
        let mut t = table(10, 10);
        t.accept(now, 1, peer(1, 1), 2).unwrap();
        t.accept(now, 2, peer(2, 1), 0).unwrap();
        let s = Duration::from_secs(1);
        let found: Vec<_> = t
            .first_deadlines(|c| {
                [
                    (
                        (c.state > 0).then(|| now + s * u32::from(c.state)),
                        Expiry::Idle,
                    ),
                    (Some(now + s * 3), Expiry::Handshake),
                ]
            })
            .collect();
        assert_eq!(
            found,
            vec![
                (1, now + s * 2, Expiry::Idle),
                (2, now + s * 3, Expiry::Handshake)
            ]
        );
    }
}
