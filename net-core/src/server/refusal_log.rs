//! [`RefusalLog`]: a rate limit on the log lines of refusals, so a client repeating a refused
//! line (from one address or many) cannot flood a server's log. Only the log lines are limited:
//! the caller counts every refusal and sends every reply as before.
//!
//! Per source address, at most [`RefusalLogLimits::per_address`] refusal lines are logged in a
//! period that starts at its first refusal; the rest are counted, and when the period ends one
//! line says how many were not logged ("153 more refusals from 192.0.2.7 in the last 10 s not
//! logged"). Over all addresses at most [`RefusalLogLimits::global`] lines are logged a period,
//! with one summary line in the same way. Sans-IO: the time comes in as `now`; the owner calls
//! [`handle_timeout`](RefusalLog::handle_timeout) when [`poll_timeout`](RefusalLog::poll_timeout)
//! has come, so a summary is logged when its period ends (or at the next refusal, which ends
//! every period that has passed first). Memory stays bounded: an address is tracked only once
//! one of its lines is logged, and for one period.

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use log::Level;

/// How many refusal lines are logged, and over what period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefusalLogLimits {
    /// The length of a period (per address, and over all addresses).
    pub period: Duration,
    /// At most this many refusal lines from one address a period.
    pub per_address: u32,
    /// At most this many refusal lines from all addresses a period.
    pub global: u32,
}

impl Default for RefusalLogLimits {
    fn default() -> Self {
        RefusalLogLimits {
            period: Duration::from_secs(10),
            per_address: 5,
            global: 50,
        }
    }
}

/// One period: when it started, the lines logged in it, and the refusals not logged.
#[derive(Clone, Copy, Debug)]
struct Period {
    start: Instant,
    logged: u32,
    suppressed: u64,
}

impl Period {
    fn new(start: Instant) -> Period {
        Period {
            start,
            logged: 0,
            suppressed: 0,
        }
    }
}

/// The refusal log limiter of one server core (see the module documentation).
#[derive(Debug)]
pub struct RefusalLog {
    limits: RefusalLogLimits,
    addresses: HashMap<IpAddr, Period>,
    global: Option<Period>,
    /// No period ends before this (a lower bound; `None`: no period is open).
    next_end: Option<Instant>,
    /// No period with refusals not logged ends before this (when a summary is due).
    next_summary: Option<Instant>,
    summaries: u64,
}

impl Default for RefusalLog {
    fn default() -> Self {
        RefusalLog::new(RefusalLogLimits::default())
    }
}

impl RefusalLog {
    pub fn new(limits: RefusalLogLimits) -> RefusalLog {
        RefusalLog {
            limits: RefusalLogLimits {
                period: limits.period.max(Duration::from_millis(1)),
                ..limits
            },
            addresses: HashMap::new(),
            global: None,
            next_end: None,
            next_summary: None,
            summaries: 0,
        }
    }

    /// A refusal from `ip`: `message` is logged at `level` unless a limit is reached, in which
    /// case it is counted for the period's summary line. True when it was logged. A refusal at
    /// a level the log leaves out (`debug` at the default `info`) is neither logged nor counted,
    /// so it takes no room from the lines that are.
    pub fn refused(
        &mut self,
        now: Instant,
        ip: IpAddr,
        level: Level,
        message: fmt::Arguments<'_>,
    ) -> bool {
        if !log::log_enabled!(level) {
            return false;
        }
        if self.next_end.is_some_and(|t| t <= now) {
            self.end_periods(now);
        }
        let period = self.limits.period;
        let global = self.global.get_or_insert_with(|| Period::new(now));
        let global_end = global.start + period;
        self.next_end = Some(self.next_end.map_or(global_end, |t| t.min(global_end)));
        let (suppressed, at) = match self.addresses.get_mut(&ip) {
            Some(a) if a.logged >= self.limits.per_address => (&mut a.suppressed, a.start + period),
            _ if global.logged >= self.limits.global => (&mut global.suppressed, global_end),
            Some(a) => {
                a.logged += 1;
                global.logged += 1;
                log::log!(level, "{message}");
                return true;
            }
            None => {
                global.logged += 1;
                let mut a = Period::new(now);
                a.logged = 1;
                self.addresses.insert(ip, a);
                let end = now + period;
                self.next_end = Some(self.next_end.map_or(end, |t| t.min(end)));
                log::log!(level, "{message}");
                return true;
            }
        };
        *suppressed += 1;
        self.next_summary = Some(self.next_summary.map_or(at, |t| t.min(at)));
        false
    }

    /// When a summary line is due ([`handle_timeout`](Self::handle_timeout) has work).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.next_summary
    }

    /// Log the summary lines of the periods that have ended.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.next_end.is_some_and(|t| t <= now) || self.next_summary.is_some_and(|t| t <= now) {
            self.end_periods(now);
        }
    }

    /// Log the summary lines of every open period at once, however long it has run: the
    /// server is stopping, and refusals not logged would otherwise go unmentioned.
    pub fn flush(&mut self, now: Instant) {
        let mut summaries = 0;
        for (ip, a) in self.addresses.drain() {
            if a.suppressed > 0 {
                summaries += 1;
                log::info!(
                    "... {} more refusals from {ip} in the last {} s not logged (server stopping)",
                    a.suppressed,
                    seconds_since(a.start, now)
                );
            }
        }
        if let Some(g) = self.global.take() {
            if g.suppressed > 0 {
                summaries += 1;
                log::warn!(
                    "... {} more refusals in the last {} s not logged (more than {} refusal lines \
                     from all addresses; server stopping)",
                    g.suppressed,
                    seconds_since(g.start, now),
                    self.limits.global
                );
            }
        }
        self.summaries += summaries;
        self.next_end = None;
        self.next_summary = None;
    }

    /// How many summary lines were logged (for tests and the counters).
    pub fn summaries(&self) -> u64 {
        self.summaries
    }

    /// End every period that has passed (a summary line for each with refusals not logged) and
    /// find when the next ones end.
    fn end_periods(&mut self, now: Instant) {
        let period = self.limits.period;
        let secs = period.as_secs_f64();
        let mut summaries = 0;
        self.addresses.retain(|ip, a| {
            if a.start + period > now {
                return true;
            }
            if a.suppressed > 0 {
                summaries += 1;
                log::info!(
                    "... {} more refusals from {ip} in the last {secs} s not logged",
                    a.suppressed
                );
            }
            false
        });
        if let Some(g) = self.global.filter(|g| g.start + period <= now) {
            if g.suppressed > 0 {
                summaries += 1;
                log::warn!(
                    "... {} more refusals in the last {secs} s not logged (more than {} refusal \
                     lines from all addresses)",
                    g.suppressed,
                    self.limits.global
                );
            }
            self.global = None;
        }
        self.summaries += summaries;
        let open = self.addresses.values().chain(self.global.iter());
        self.next_end = open.clone().map(|p| p.start + period).min();
        self.next_summary = open
            .filter(|p| p.suppressed > 0)
            .map(|p| p.start + period)
            .min();
    }
}

/// Whole tenths of a second from `start` to `now`, for a summary line cut short.
fn seconds_since(start: Instant, now: Instant) -> f64 {
    (now.saturating_duration_since(start).as_secs_f64() * 10.0).round() / 10.0
}
