//! The numbered series of reliable custom events that `peer_game --control --series-ms MS`
//! sends (type 600, the number as 4 bytes little-endian, then the sender's name): what each game
//! says it queued (its `SERIES` lines: the number, the library's answer, and who was seated in
//! its game at that moment), what each game received, and the comparison of the two for every
//! sender and receiver: numbers lost, received more than once, out of order, or never sent.

use std::collections::{BTreeMap, HashMap};

use crate::peer::{fields, parse, GameRun};

/// Custom event type of the series.
pub const SERIES_TYPE: u32 = 600;

/// One number the library accepted (`rc=0`).
#[derive(Clone, Debug, PartialEq)]
pub struct Queued {
    pub n: u32,
    /// The names of the other players seated in the sender's game when it queued the number.
    pub seated: Vec<String>,
}

/// What one game's `SERIES` lines say.
#[derive(Clone, Debug, Default)]
pub struct SentSeries {
    /// The accepted numbers, in order.
    pub queued: Vec<Queued>,
    /// How many attempts the library refused, by result code.
    pub refused: BTreeMap<i32, usize>,
    /// A number that was skipped or repeated after being accepted (the game's own rule is
    /// 0, 1, 2, ...), as a message.
    pub gap: Option<String>,
}

/// Read the `SERIES` lines of `stdout`.
pub fn sent(stdout: &str) -> SentSeries {
    let mut series = SentSeries::default();
    for line in stdout.lines() {
        let Some(rest) = line.strip_prefix("SERIES ") else {
            continue;
        };
        let f = fields(rest);
        let get = |key: &str| {
            f.iter()
                .find(|(k, _)| k == key)
                .map_or("", |(_, v)| v.as_str())
        };
        let (Ok(n), Ok(rc)) = (get("n").parse::<u32>(), get("rc").parse::<i32>()) else {
            series
                .gap
                .get_or_insert(format!("unreadable line {line:?}"));
            continue;
        };
        if rc != 0 {
            *series.refused.entry(rc).or_default() += 1;
            continue;
        }
        if n as usize != series.queued.len() {
            series.gap.get_or_insert(format!(
                "number {n} accepted after {} numbers",
                series.queued.len()
            ));
        }
        let seated = get("to")
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        series.queued.push(Queued { n, seated });
    }
    series
}

/// The series numbers a game received (its stdout), by sender name, in the order they arrived.
pub fn received(stdout: &str) -> HashMap<String, Vec<u32>> {
    let mut out: HashMap<String, Vec<u32>> = HashMap::new();
    for event in &parse(stdout).events {
        if event.kind != "CUSTOM" || event.custom != SERIES_TYPE || event.data.len() < 4 {
            continue;
        }
        let n = u32::from_le_bytes([event.data[0], event.data[1], event.data[2], event.data[3]]);
        // `--series-size` pads the name with zero bytes.
        let name = event.data[4..].split(|&b| b == 0).next().unwrap_or(&[]);
        let sender = String::from_utf8_lossy(name).into_owned();
        out.entry(sender).or_default().push(n);
    }
    out
}

/// How the series of one sender reached one receiver.
#[derive(Clone, Debug, Default)]
pub struct Delivery {
    pub sender: String,
    pub receiver: String,
    /// How many numbers the sender's library accepted.
    pub queued: usize,
    /// Accepted while the receiver was seated in the sender's game, never received.
    pub lost_while_seated: Vec<u32>,
    /// Accepted while the receiver was not in the sender's game (e.g. it was switching and
    /// finding the game again), never received.
    pub lost_while_absent: Vec<u32>,
    /// Received more than once: (number, times).
    pub duplicates: Vec<(u32, usize)>,
    /// A number received after a higher one: (earlier, later).
    pub out_of_order: Vec<(u32, u32)>,
    /// Received but never accepted by the sender's library.
    pub never_sent: Vec<u32>,
    /// The last number accepted while the receiver was seated in the sender's game.
    pub last_owed: Option<u32>,
    /// How many of the sender's series events the receiver got (duplicates included).
    pub received: usize,
}

impl Delivery {
    /// One line saying what went wrong (or that nothing did).
    pub fn describe(&self) -> String {
        format!(
            "{} -> {}: {} queued, {} received; lost while seated {:?}, not delivered while \
             absent {:?}, duplicates {:?}, out of order {:?}, never sent {:?}",
            self.sender,
            self.receiver,
            self.queued,
            self.received,
            self.lost_while_seated,
            self.lost_while_absent,
            self.duplicates,
            self.out_of_order,
            self.never_sent
        )
    }
}

/// Compare what every finished game of `runs` queued with what every other received.
pub fn deliveries(runs: &[GameRun]) -> Vec<Delivery> {
    let games: Vec<(&str, &str)> = runs
        .iter()
        .map(|r| (r.name.as_str(), r.output.stdout.as_str()))
        .collect();
    compare(&games)
}

/// Each game's name and everything it printed so far.
pub fn outputs(games: &[crate::live::LiveGame]) -> Vec<(String, String)> {
    games
        .iter()
        .map(|g| (g.name().to_string(), g.process.stdout()))
        .collect()
}

/// `compare` over (name, stdout) pairs such as `outputs` gives.
pub fn compare_outputs(outputs: &[(String, String)]) -> Vec<Delivery> {
    let views: Vec<(&str, &str)> = outputs
        .iter()
        .map(|(n, o)| (n.as_str(), o.as_str()))
        .collect();
    compare(&views)
}

/// Compare what every game `(name, stdout)` queued with what every other received.
pub fn compare(games: &[(&str, &str)]) -> Vec<Delivery> {
    let sent: Vec<SentSeries> = games.iter().map(|(_, out)| sent(out)).collect();
    let got: Vec<HashMap<String, Vec<u32>>> = games.iter().map(|(_, out)| received(out)).collect();
    let mut out = Vec::new();
    for (s, (sender, _)) in games.iter().enumerate() {
        for (r, (receiver, _)) in games.iter().enumerate() {
            if s == r {
                continue;
            }
            let arrived = got[r].get(*sender).cloned().unwrap_or_default();
            let mut counts: BTreeMap<u32, usize> = BTreeMap::new();
            for n in &arrived {
                *counts.entry(*n).or_default() += 1;
            }
            let mut delivery = Delivery {
                sender: sender.to_string(),
                receiver: receiver.to_string(),
                queued: sent[s].queued.len(),
                received: arrived.len(),
                ..Delivery::default()
            };
            delivery.last_owed = sent[s]
                .queued
                .iter()
                .rev()
                .find(|q| q.seated.iter().any(|n| n == receiver))
                .map(|q| q.n);
            for queued in &sent[s].queued {
                match counts.get(&queued.n) {
                    None if queued.seated.iter().any(|n| n == receiver) => {
                        delivery.lost_while_seated.push(queued.n)
                    }
                    None => delivery.lost_while_absent.push(queued.n),
                    Some(&times) if times > 1 => delivery.duplicates.push((queued.n, times)),
                    Some(_) => {}
                }
            }
            delivery.never_sent = counts
                .keys()
                .copied()
                .filter(|n| *n as usize >= sent[s].queued.len())
                .collect();
            delivery.out_of_order = arrived
                .windows(2)
                .filter(|pair| pair[1] < pair[0])
                .map(|pair| (pair[0], pair[1]))
                .collect();
            out.push(delivery);
        }
    }
    out
}

/// Tell every game to stop its series (`@series off`), fail a game that does not read it within
/// `read_timeout`, then wait (at most `drain_timeout`) until every number owed while the
/// receiver was seated or away has arrived. Returns how long the drain took (None: not within
/// `drain_timeout`; the checks afterwards say what is missing).
pub fn stop_and_drain(
    games: &mut [crate::live::LiveGame],
    read_timeout: std::time::Duration,
    drain_timeout: std::time::Duration,
) -> Option<std::time::Duration> {
    stop_and_drain_until(games, read_timeout, drain_timeout, |d| {
        d.lost_while_seated.is_empty() && d.lost_while_absent.is_empty()
    })
}

/// `stop_and_drain` for games whose checks excuse what was queued while a receiver was away
/// (it had left to switch, or not come back yet): such numbers never arrive, so waiting for them
/// would only wait out `drain_timeout`. The drain is over when every number owed to a receiver
/// while it was seated has arrived, except for the receivers in `left`, which really left a game
/// (the checks afterwards decide what they may miss: what was on its way to them when they
/// left): from each sender whose game such a receiver is seated in at the end (its last number
/// was owed to the receiver), that last number has arrived. The stream is ordered, so nothing
/// owed before that number is still on its way; a sender whose game it left for good owes it
/// nothing more.
pub fn stop_and_drain_owed(
    games: &mut [crate::live::LiveGame],
    left: &[&str],
    read_timeout: std::time::Duration,
    drain_timeout: std::time::Duration,
) -> Option<std::time::Duration> {
    stop_and_drain_until(games, read_timeout, drain_timeout, |d| {
        owed_arrived(d, left)
    })
}

/// The drain rule of `stop_and_drain_owed` for one (sender, receiver) pair.
pub fn owed_arrived(d: &Delivery, left: &[&str]) -> bool {
    if left.contains(&d.receiver.as_str()) {
        d.last_owed
            .is_none_or(|n| n as usize + 1 != d.queued || !d.lost_while_seated.contains(&n))
    } else {
        d.lost_while_seated.is_empty()
    }
}

/// Stop every game's series, then wait (at most `drain_timeout`) until `drained` holds for
/// every (sender, receiver) pair.
fn stop_and_drain_until(
    games: &mut [crate::live::LiveGame],
    read_timeout: std::time::Duration,
    drain_timeout: std::time::Duration,
    drained: impl Fn(&Delivery) -> bool,
) -> Option<std::time::Duration> {
    for game in games.iter_mut() {
        game.send("@series off");
    }
    for game in games.iter() {
        let read = game
            .process
            .wait_for_line(0, read_timeout, |l| l == "CONTROL line=\"@series off\"");
        if read.is_none() {
            game.fail("did not read @series off");
        }
    }
    let drain_start = std::time::Instant::now();
    while drain_start.elapsed() < drain_timeout {
        if compare_outputs(&outputs(games)).iter().all(&drained) {
            return Some(drain_start.elapsed());
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `SERIES` lines for numbers 0.. with the names seated at each, and the events of the
    /// numbers `got` from `sender`.
    fn game(seated: &[&str], sender: &str, got: &[u32]) -> String {
        let mut out = String::new();
        for (n, to) in seated.iter().enumerate() {
            out += &format!("SERIES n={n} rc=0 slot=0 to=\"{to}\"\n");
        }
        for n in got {
            let mut data: Vec<u8> = n.to_le_bytes().to_vec();
            data.extend(sender.as_bytes());
            let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
            out += &format!(
                "EVENT type=CUSTOM player=1 object=0 class=0 target=0 flags=1 list=0 \
                 custom={SERIES_TYPE} pos=0,0,0 dir=0,0,0 orient=0,0,0,0 data={hex} text=\"\"\n"
            );
        }
        out
    }

    fn pair(seated: &[&str], got: &[u32]) -> Delivery {
        let ann = game(seated, "", &[]);
        let bob = game(&[], "ann", got);
        compare(&[("ann", &ann), ("bob", &bob)])
            .into_iter()
            .find(|d| d.sender == "ann")
            .expect("ann -> bob")
    }

    #[test]
    fn the_owed_drain_waits_for_what_is_owed_and_not_for_what_never_comes() {
        // bob away for 1 and 2 (not owed), seated again for 3: drained once 3 arrived.
        let seated = ["bob", "", "", "bob"];
        let d = pair(&seated, &[0, 3]);
        assert_eq!(
            (d.last_owed, d.lost_while_absent.clone()),
            (Some(3), vec![1, 2])
        );
        assert!(owed_arrived(&d, &[]) && owed_arrived(&d, &["bob"]));
        assert!(!owed_arrived(&pair(&seated, &[0]), &[]));
        assert!(!owed_arrived(&pair(&seated, &[0]), &["bob"]));
        // 1 was on its way when bob left and never came: excused only for a player that left.
        let seated = ["bob", "bob", "", "bob"];
        assert!(!owed_arrived(&pair(&seated, &[0, 3]), &[]));
        assert!(owed_arrived(&pair(&seated, &[0, 3]), &["bob"]));
        assert!(!owed_arrived(&pair(&seated, &[0]), &["bob"]));
        // bob left ann's game for good: nothing more is owed to him.
        let seated = ["bob", "bob", "", ""];
        assert!(owed_arrived(&pair(&seated, &[0]), &["bob"]));
        assert!(!owed_arrived(&pair(&seated, &[0]), &[]));
    }
}
