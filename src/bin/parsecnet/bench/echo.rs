//! Windowed echo between two whole-stack peer processes: one keeps 64 reliable 64-byte custom
//! events in flight, the other answers each with a reliable event; every answer lets a new one
//! go. The figure, events per second, counts the reliable events delivered both ways
//! (each round trip is two: the ping and its answer); round trips per second are shown beside
//! it. Both processes also count their heap allocations during the flood.

use std::time::Duration;

use super::child_process::field;
use super::report::{Figure, Section, Target};
use super::rtt::PeerPair;

pub const TITLE: &str = "windowed echo, reliable 64 B";

/// Reliable events kept in flight by the sender.
pub const WINDOW: usize = 64;

/// What the flood did.
#[derive(Debug, Default)]
pub struct EchoResult {
    pub echoes: u64,
    pub secs: f64,
    pub allocations: u64,
    pub packets: u64,
}

pub fn measure(secs: f64) -> Result<EchoResult, String> {
    let mut pair = PeerPair::start(("flooder", "answerer"))?;
    let wait = Duration::from_secs_f64(secs + 30.0);
    // Warm-up floods first (link RTT estimate, queues, recycled buffers and id lists): the
    // collections reach their working size over about a second of flooding; the measured
    // flood then shows the steady state.
    let warm_up = [(secs.min(0.5) / 2.0, false), (secs.min(1.0), false)];
    for (flood_secs, measured) in warm_up.into_iter().chain([(secs, true)]) {
        pair.b.send("echo-until-stop")?;
        let flood = pair
            .a
            .ask(&format!("flood {flood_secs} {WINDOW}"), "flood", wait)?;
        let a = pair.a.expect("counts", wait)?;
        let b = pair.b.expect("counts", wait)?;
        if measured {
            let echoes: u64 = field(&flood, "echoes")?;
            let ns: f64 = field(&flood, "ns")?;
            let result = EchoResult {
                echoes,
                secs: ns / 1e9,
                allocations: field::<u64>(&a, "allocations")? + field::<u64>(&b, "allocations")?,
                packets: field::<u64>(&a, "sent")? + field::<u64>(&b, "sent")?,
            };
            pair.finish();
            return Ok(result);
        }
    }
    unreachable!("the measured flood returns")
}

pub fn section(secs: f64, r: &EchoResult) -> Section {
    let mut s = Section::new("echo", TITLE);
    let rate = r.echoes as f64 / r.secs;
    s.figure(
        Figure::new(
            "events_per_s",
            "reliable events delivered per second (both ways)",
            2.0 * rate,
            "/s",
        )
        .target(Target::AtLeast(1.5e6)),
    );
    s.figure(Figure::new(
        "echoes_per_s",
        "round trips (ping + answer) per second",
        rate,
        "/s",
    ));
    s.figure(Figure::new(
        "events_per_packet",
        "reliable events per packet sent",
        2.0 * r.echoes as f64 / r.packets.max(1) as f64,
        "",
    ));
    s.note(format!(
        "{WINDOW} reliable events in flight for {secs} s between two peer processes on 127.0.0.1; both busy-poll NETs_MaintainNet + NET_PollEvent; every answer is checked to come in order"
    ));
    s.data.push((
        "raw".into(),
        super::json::Json::obj([
            ("echoes", super::json::Json::Num(r.echoes as f64)),
            ("seconds", super::json::Json::Num(r.secs)),
            ("packets", super::json::Json::Num(r.packets as f64)),
            ("allocations", super::json::Json::Num(r.allocations as f64)),
        ]),
    ));
    s
}
