//! The delivery rule of the soak test (docs/soak.md): every series number a sender's library
//! accepted while the receiver was seated in the sender's game must arrive exactly once and in
//! order, unless the receiver left around that moment. Precisely: a number is excused when the
//! sender queued it no more than [`BEFORE_LEAVE`] before the harness told the receiver to leave,
//! or after that (until the receiver's next CONNECTED, at most [`AFTER_LEAVE`] later), because it
//! may still have been on its way when the receiver's connection closed. Senders stop their own
//! series [`super::client::QUIET_BEFORE_LEAVING`] before they leave, so a sender's leaving excuses
//! nothing. Duplicates, reordering and numbers that were never sent are never excused, and
//! numbers queued while the receiver was not in the sender's game are not owed.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::series::{compare, Delivery};

use super::client::SoakClient;

/// A number queued at most this long before the receiver was told to leave is excused.
pub const BEFORE_LEAVE: Duration = Duration::from_secs(2);
/// A number queued after the receiver was told to leave (while the sender still saw it) is
/// excused up to the receiver's next connection, at most this long.
pub const AFTER_LEAVE: Duration = Duration::from_secs(10);

/// Figures and failures of the delivery check.
#[derive(Debug, Default)]
pub struct DeliveryVerdict {
    /// Numbers the senders' libraries accepted (each goes to everyone seated).
    pub accepted: usize,
    /// (number, receiver) pairs owed: the receiver was seated when the number was accepted.
    pub owed: usize,
    /// Series events received (all receivers, duplicates included).
    pub delivered: usize,
    /// Owed pairs excused because the receiver left around then, and not received.
    pub excused: usize,
    /// Numbers accepted while the receiver was not in the sender's game, and not received.
    pub not_owed_lost: usize,
    /// One line per broken delivery.
    pub failures: Vec<String>,
}

/// Apply the rule to every pair of clients, with each client's stdout `outputs[i]`.
pub fn judge(clients: &[SoakClient], outputs: &[String]) -> DeliveryVerdict {
    let names: Vec<&str> = clients.iter().map(|c| c.name()).collect();
    let views: Vec<(&str, &str)> = names
        .iter()
        .zip(outputs)
        .map(|(n, o)| (*n, o.as_str()))
        .collect();
    let index: HashMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let series_lines: Vec<HashMap<u32, usize>> =
        outputs.iter().map(|o| accepted_lines(o)).collect();
    let mut verdict = DeliveryVerdict {
        accepted: series_lines.iter().map(HashMap::len).sum(),
        ..DeliveryVerdict::default()
    };
    let sent: Vec<crate::series::SentSeries> =
        outputs.iter().map(|o| crate::series::sent(o)).collect();
    for (i, series) in sent.iter().enumerate() {
        if let Some(gap) = &series.gap {
            verdict.failures.push(format!(
                "{}: its series is not 0, 1, 2, ...: {gap}",
                names[i]
            ));
        }
    }
    for d in compare(&views) {
        let (s, r) = (index[d.sender.as_str()], index[d.receiver.as_str()]);
        verdict.delivered += d.received;
        verdict.owed += sent[s]
            .queued
            .iter()
            .filter(|q| q.seated.iter().any(|n| n == &d.receiver))
            .count();
        verdict.not_owed_lost += d.lost_while_absent.len();
        let mut unexcused = Vec::new();
        for &n in &d.lost_while_seated {
            let queued_at = series_lines[s].get(&n).and_then(|&i| clients[s].seen_at(i));
            let receiver = &clients[r];
            if queued_at.is_some_and(|at| excused(&receiver.leaves, &receiver.connected_at, at)) {
                verdict.excused += 1;
            } else {
                unexcused.push(n);
            }
        }
        if !unexcused.is_empty()
            || !d.duplicates.is_empty()
            || !d.out_of_order.is_empty()
            || !d.never_sent.is_empty()
        {
            verdict.failures.push(describe(&d, &unexcused));
        }
    }
    verdict
}

/// Whether a number queued at `queued_at` is excused for a receiver told to leave at `leaves`
/// and seen connecting at `connected_at`.
fn excused(leaves: &[Instant], connected_at: &[Instant], queued_at: Instant) -> bool {
    leaves.iter().any(|&left| {
        let back = connected_at
            .iter()
            .copied()
            .find(|&c| c > left)
            .unwrap_or(left + AFTER_LEAVE)
            .min(left + AFTER_LEAVE);
        queued_at + BEFORE_LEAVE >= left && queued_at <= back
    })
}

/// The stdout line index of every accepted series number (`SERIES n=N rc=0 ...`).
fn accepted_lines(stdout: &str) -> HashMap<u32, usize> {
    stdout
        .lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let rest = line.strip_prefix("SERIES n=")?;
            let (n, rest) = rest.split_once(' ')?;
            rest.starts_with("rc=0 ").then(|| (n.parse().ok(), i))
        })
        .filter_map(|(n, i)| Some((n?, i)))
        .collect()
}

/// One line about a broken delivery (lists shortened).
fn describe(d: &Delivery, unexcused: &[u32]) -> String {
    fn short<T: std::fmt::Debug>(items: &[T]) -> String {
        if items.len() <= 12 {
            format!("{items:?}")
        } else {
            format!("{:?} ... ({} in all)", &items[..12], items.len())
        }
    }
    format!(
        "{} -> {}: {} queued, {} received; lost while both seated {}, duplicates {}, out of \
         order {}, never sent {}",
        d.sender,
        d.receiver,
        d.queued,
        d.received,
        short(unexcused),
        short(&d.duplicates),
        short(&d.out_of_order),
        short(&d.never_sent)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_numbers_queued_around_a_leave_of_the_receiver_are_excused() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let leaves = [t0 + s(10)];
        let back = [t0 + s(1), t0 + s(14)];
        assert!(!excused(&leaves, &back, t0 + s(7)), "3 s before the leave");
        assert!(excused(&leaves, &back, t0 + s(9)), "1 s before the leave");
        assert!(excused(&leaves, &back, t0 + s(13)), "gone, not back yet");
        assert!(!excused(&leaves, &back, t0 + s(15)), "back again");
        assert!(excused(&leaves, &[], t0 + s(19)), "never back: 9 s after");
        assert!(!excused(&leaves, &[], t0 + s(21)), "never back: 11 s after");
        assert!(!excused(&[], &[], t0 + s(9)), "no leave at all");
    }

    #[test]
    fn accepted_numbers_are_found_by_line() {
        let out =
            "EVENT type=X\nSERIES n=0 rc=-3 slot=-1 to=\"\"\nSERIES n=0 rc=0 slot=2 to=\"a\"\n\
                   SERIES n=1 rc=0 slot=2 to=\"\"\n";
        let lines = accepted_lines(out);
        assert_eq!((lines[&0], lines[&1], lines.len()), (2, 3, 2));
    }
}
