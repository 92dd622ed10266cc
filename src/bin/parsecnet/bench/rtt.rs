//! Round-trip time of one 64-byte message between two processes on loopback: raw UDP with std
//! sockets (the baseline) against a custom event through the whole stack (C API, jump table,
//! peer protocol, UDP backend, in both processes). The two pairs of processes take turns in
//! rounds, so drift and noise fall on both alike; all four poll without sleeping. The stack's
//! rounds also count the heap allocations of both processes per packet.

use std::time::Duration;

use super::child_process::{field, ChildProcess};
use super::json::Json;
use super::report::{Figure, Section, Target};
use super::sampling::{percentile, sorted};

pub const TITLE: &str = "round trip, 64 bytes";

/// How much to measure.
#[derive(Clone, Copy, Debug)]
pub struct RttPlan {
    pub rounds: usize,
    pub per_round: usize,
    pub warmup: usize,
}

/// The samples (µs) of each kind and the allocation counts of the stack rounds.
#[derive(Debug, Default)]
pub struct RttResult {
    pub udp: Vec<f64>,
    /// Raw UDP whose receives each end with a read that finds the socket empty.
    pub udp_drained: Vec<f64>,
    pub stack: Vec<f64>,
    pub stack_reliable: Vec<f64>,
    pub allocations: u64,
    pub packets: u64,
    pub round_trips: u64,
    /// One turn of each polling loop with nothing arriving (ns), median of the idle rounds.
    pub udp_idle_ns: f64,
    pub stack_idle_ns: f64,
}

/// Loop turns per idle measurement, and how many times each kind is measured.
const IDLE_TURNS: usize = 100_000;
const IDLE_ROUNDS: usize = 3;

/// `idle N` on one child: ns per turn.
fn idle_turn(child: &mut ChildProcess) -> Result<f64, String> {
    let reply = child.ask(
        &format!("idle {IDLE_TURNS}"),
        "idle",
        Duration::from_secs(60),
    )?;
    field::<f64>(&reply, "ns")
}

/// Two whole-stack peer processes connected to each other in a 2-player peer game.
pub struct PeerPair {
    pub a: ChildProcess,
    pub b: ChildProcess,
}

impl PeerPair {
    pub fn start(names: (&str, &str)) -> Result<PeerPair, String> {
        let mut a = ChildProcess::spawn("peer", &[names.0])?;
        let mut b = ChildProcess::spawn("peer", &[names.1])?;
        let wait = Duration::from_secs(20);
        let pa: u16 = a.expect("port", wait)?.parse().map_err(|_| "bad port")?;
        let pb: u16 = b.expect("port", wait)?.parse().map_err(|_| "bad port")?;
        for child in [&mut a, &mut b] {
            child.ask("exec net.peer.connect_interval 50", "ok", wait)?;
        }
        a.ask(&format!("exec connect 127.0.0.1:{pb}"), "ok", wait)?;
        b.ask(&format!("exec connect 127.0.0.1:{pa}"), "ok", wait)?;
        a.send("settle 1 30")?;
        b.send("settle 1 30")?;
        a.expect("ready", Duration::from_secs(40))?;
        b.expect("ready", Duration::from_secs(40))?;
        Ok(PeerPair { a, b })
    }

    pub fn finish(self) {
        self.a.finish();
        self.b.finish();
    }
}

/// Two raw UDP processes that know each other.
struct UdpPair {
    a: ChildProcess,
    b: ChildProcess,
}

impl UdpPair {
    fn start() -> Result<UdpPair, String> {
        let mut a = ChildProcess::spawn("udp", &[])?;
        let mut b = ChildProcess::spawn("udp", &[])?;
        let wait = Duration::from_secs(20);
        let pa = a.expect("port", wait)?;
        let pb = b.expect("port", wait)?;
        a.ask(&format!("peer 127.0.0.1:{pb}"), "ok", wait)?;
        b.ask(&format!("peer 127.0.0.1:{pa}"), "ok", wait)?;
        Ok(UdpPair { a, b })
    }

    /// `n` round trips; with `drain`, each receive ends with a read that finds nothing.
    fn round(&mut self, n: usize, drain: bool) -> Result<Vec<f64>, String> {
        let wait = Duration::from_secs(30) + Duration::from_millis(n as u64);
        let drain = u8::from(drain);
        self.b.send(&format!("echo {n} {drain}"))?;
        let rtts = rtt_line(&self.a.ask(&format!("ping {n} {drain}"), "rtt", wait)?)?;
        self.a.expect("done", wait)?;
        self.b.expect("done", wait)?;
        Ok(rtts)
    }
}

/// Counts of one whole-stack round.
struct StackRound {
    rtts: Vec<f64>,
    allocations: u64,
    packets: u64,
}

fn stack_round(pair: &mut PeerPair, n: usize, reliable: bool) -> Result<StackRound, String> {
    let wait = Duration::from_secs(30) + Duration::from_millis(n as u64);
    let flag = u8::from(reliable);
    pair.b.send(&format!("echo {n} {flag}"))?;
    let rtts = rtt_line(&pair.a.ask(&format!("ping {n} {flag}"), "rtt", wait)?)?;
    let a = pair.a.expect("counts", wait)?;
    let b = pair.b.expect("counts", wait)?;
    let allocations = field::<u64>(&a, "allocations")? + field::<u64>(&b, "allocations")?;
    let packets = field::<u64>(&a, "sent")? + field::<u64>(&b, "sent")?;
    Ok(StackRound {
        rtts,
        allocations,
        packets,
    })
}

/// RTTs in µs from an `rtt NS NS ...` reply (already stripped of "rtt").
fn rtt_line(rest: &str) -> Result<Vec<f64>, String> {
    rest.split_whitespace()
        .map(|w| {
            w.parse::<f64>()
                .map(|ns| ns / 1000.0)
                .map_err(|_| format!("bad RTT '{w}'"))
        })
        .collect()
}

/// Run the interleaved rounds.
pub fn measure(plan: RttPlan) -> Result<RttResult, String> {
    let mut udp = UdpPair::start()?;
    let mut stack = PeerPair::start(("pinger", "echoer"))?;
    udp.round(plan.warmup, false)?;
    udp.round(plan.warmup, true)?;
    stack_round(&mut stack, plan.warmup, false)?;
    stack_round(&mut stack, plan.warmup, true)?;
    let mut result = RttResult::default();
    for round in 0..plan.rounds {
        // Alternate which kind goes first, so neither always follows the other.
        let order: [u8; 4] = if round % 2 == 0 {
            [0, 1, 2, 3]
        } else {
            [3, 2, 1, 0]
        };
        for kind in order {
            match kind {
                0 => result.udp.extend(udp.round(plan.per_round, false)?),
                3 => result.udp_drained.extend(udp.round(plan.per_round, true)?),
                _ => {
                    let reliable = kind == 2;
                    let r = stack_round(&mut stack, plan.per_round, reliable)?;
                    if reliable {
                        result.stack_reliable.extend(r.rtts);
                    } else {
                        result.stack.extend(r.rtts);
                    }
                    result.allocations += r.allocations;
                    result.packets += r.packets;
                    result.round_trips += plan.per_round as u64;
                }
            }
        }
    }
    let (mut udp_idle, mut stack_idle) = (Vec::new(), Vec::new());
    for _ in 0..IDLE_ROUNDS {
        udp_idle.push(idle_turn(&mut udp.a)?);
        stack_idle.push(idle_turn(&mut stack.a)?);
    }
    result.udp_idle_ns = percentile(&sorted(udp_idle), 50.0);
    result.stack_idle_ns = percentile(&sorted(stack_idle), 50.0);
    udp.a.finish();
    udp.b.finish();
    stack.finish();
    Ok(result)
}

/// The RTT section: p50/p99 of each kind and the ratios against raw UDP.
pub fn section(plan: RttPlan, r: &RttResult) -> Section {
    let mut s = Section::new("rtt", TITLE);
    let (udp, drained, stack, reliable) = (
        sorted(r.udp.clone()),
        sorted(r.udp_drained.clone()),
        sorted(r.stack.clone()),
        sorted(r.stack_reliable.clone()),
    );
    let p = |v: &[f64], q: f64| percentile(v, q);
    s.figure(Figure::new(
        "udp_p50_us",
        "raw UDP p50 (baseline)",
        p(&udp, 50.0),
        "µs",
    ));
    s.figure(Figure::new(
        "udp_p99_us",
        "raw UDP p99 (baseline)",
        p(&udp, 99.0),
        "µs",
    ));
    s.figure(
        Figure::new("stack_p50_us", "whole stack p50", p(&stack, 50.0), "µs")
            .baseline(p(&udp, 50.0)),
    );
    s.figure(
        Figure::new("stack_p99_us", "whole stack p99", p(&stack, 99.0), "µs")
            .baseline(p(&udp, 99.0)),
    );
    s.figure(
        Figure::new(
            "ratio_p50",
            "whole stack / raw UDP, p50",
            p(&stack, 50.0) / p(&udp, 50.0),
            "",
        )
        .target(Target::AtMost(1.15)),
    );
    s.figure(Figure::new(
        "ratio_p99",
        "whole stack / raw UDP, p99",
        p(&stack, 99.0) / p(&udp, 99.0),
        "",
    ));
    s.figure(
        Figure::new(
            "drained_p50_us",
            "raw UDP + draining read p50 (floor)",
            p(&drained, 50.0),
            "µs",
        )
        .baseline(p(&udp, 50.0)),
    );
    s.figure(Figure::new(
        "floor_ratio_p50",
        "floor / raw UDP, p50",
        p(&drained, 50.0) / p(&udp, 50.0),
        "",
    ));
    s.figure(
        Figure::new(
            "reliable_p50_us",
            "whole stack, reliable event, p50",
            p(&reliable, 50.0),
            "µs",
        )
        .baseline(p(&udp, 50.0)),
    );
    s.figure(
        Figure::new(
            "reliable_p99_us",
            "whole stack, reliable event, p99",
            p(&reliable, 99.0),
            "µs",
        )
        .baseline(p(&udp, 99.0)),
    );
    s.figure(Figure::new(
        "reliable_ratio_p50",
        "reliable / raw UDP, p50",
        p(&reliable, 50.0) / p(&udp, 50.0),
        "",
    ));
    s.figure(Figure::new(
        "udp_idle_ns",
        "raw UDP: empty poll (one recvfrom)",
        r.udp_idle_ns,
        "ns",
    ));
    s.figure(
        Figure::new(
            "stack_idle_ns",
            "whole stack: empty frame (MaintainNet+PollEvent)",
            r.stack_idle_ns,
            "ns",
        )
        .baseline(r.udp_idle_ns),
    );
    s.note(format!(
        "{} rounds of {} round trips per kind after {} warm-up ones; kinds alternate by round",
        plan.rounds, plan.per_round, plan.warmup
    ));
    s.note("baseline: two processes, std UDP sockets on 127.0.0.1, 64-byte datagram echoed");
    s.note("floor: the baseline with every receive followed by a read that finds the socket empty, which a game frame must make so as not to leave an arrived datagram for the next frame (docs/benchmarks.md); the stack's ratio cannot go below it");
    s.note("whole stack: two processes in a 2-player peer game over the UDP backend on 127.0.0.1; NET_RmEvCustom of 64 bytes (flags 0; reliable: NET_SEND_RELIABLE), NETs_MaintainNet through the jump table, NET_PollEvent; the echo is queued when polled and leaves with the next frame");
    s.note("all four processes poll without sleeping (no wait call in the C API); RTT from before the send call to the poll that returns the answer");
    s.note(format!("empty poll / empty frame: one turn of each side's polling loop with nothing arriving, mean of {IDLE_TURNS}, median of {IDLE_ROUNDS} alternating runs; a datagram waits on average half a turn before it is noticed, on each side"));
    s.data.push(("udp_us".into(), quantiles(&udp)));
    s.data.push(("udp_drained_us".into(), quantiles(&drained)));
    s.data.push(("stack_us".into(), quantiles(&stack)));
    s.data
        .push(("stack_reliable_us".into(), quantiles(&reliable)));
    s
}

/// Percentiles 0, 1, ..., 100 (plus 99.9) of sorted samples, for plots and the JSON file.
pub fn quantiles(sorted: &[f64]) -> Json {
    let mut pairs: Vec<(String, Json)> = (0..=100)
        .map(|q| (format!("p{q}"), Json::Num(percentile(sorted, f64::from(q)))))
        .collect();
    pairs.push(("p99.9".into(), Json::Num(percentile(sorted, 99.9))));
    pairs.push(("samples".into(), Json::Num(sorted.len() as f64)));
    Json::Obj(pairs)
}
