//! A backend switch under load: one peer process sends a numbered reliable 64-byte custom event
//! at 60 Hz to the other and, part way through, re-loads its backend (`net.api udp`: the socket
//! is closed and opened again, the game is left and re-entered, unacknowledged events are sent
//! again). The receiver reports the longest gap between two deliveries (the pause), and which
//! numbers never arrived, arrived twice or out of order.

use std::time::Duration;

use super::child_process::field;
use super::json::Json;
use super::report::{Figure, Section, Target};
use super::rtt::PeerPair;

pub const TITLE: &str = "backend switch under a 60 Hz stream";

/// Rate of the stream, in events per second.
const HZ: f64 = 60.0;

#[derive(Clone, Copy, Debug)]
pub struct SwitchPlan {
    /// How long events are sent.
    pub secs: f64,
    /// When (into the stream) the sender switches.
    pub switch_at_ms: u64,
    /// How long frames go on after the last event, so retransmissions can land.
    pub drain_secs: f64,
}

pub fn measure(plan: SwitchPlan) -> Result<Section, String> {
    let mut pair = PeerPair::start(("streamer", "listener"))?;
    let listen = plan.secs + plan.drain_secs + 0.5;
    let wait = Duration::from_secs_f64(listen + 30.0);
    pair.b.send(&format!("receive-stream {listen} -1"))?;
    pair.a.send(&format!(
        "stream {HZ} {} {} {}",
        plan.secs, plan.drain_secs, plan.switch_at_ms
    ))?;
    let sent_line = pair.a.expect("stream", wait)?;
    let received_line = pair.b.expect("received", wait)?;
    let status = pair.a.ask("exec status", "ok", wait).unwrap_or_default();
    pair.finish();

    let sent: u64 = field(&sent_line, "sent")?;
    let refused: u64 = field(&sent_line, "refused")?;
    let switch_call_ms: f64 = field(&sent_line, "switch_ms")?;
    let distinct: u64 = field(&received_line, "distinct")?;
    let repeated: u64 = field(&received_line, "repeated")?;
    let out_of_order: u64 = field(&received_line, "out_of_order")?;
    let max_gap_ms: f64 = field(&received_line, "max_gap_ms")?;
    if switch_call_ms < 0.0 {
        return Err(format!("the sender never switched: {sent_line}"));
    }
    let lost = sent.saturating_sub(distinct);

    let mut s = Section::new("backend_switch", TITLE);
    s.figure(
        Figure::new(
            "pause_ms",
            "longest gap between deliveries",
            max_gap_ms,
            "ms",
        )
        .baseline(1000.0 / HZ),
    );
    s.figure(Figure::new(
        "switch_call_ms",
        "the net.api udp call itself",
        switch_call_ms,
        "ms",
    ));
    s.figure(
        Figure::new("reliable_lost", "reliable events lost", lost as f64, "")
            .target(Target::AtMost(0.0)),
    );
    s.figure(
        Figure::new(
            "reliable_repeated",
            "reliable events delivered twice",
            repeated as f64,
            "",
        )
        .target(Target::AtMost(0.0)),
    );
    s.figure(
        Figure::new(
            "out_of_order",
            "deliveries out of order",
            out_of_order as f64,
            "",
        )
        .target(Target::AtMost(0.0)),
    );
    s.figure(Figure::new(
        "events_sent",
        "reliable events sent",
        sent as f64,
        "",
    ));
    s.note(format!(
        "sender switches `net.api udp` {} ms into a {} s stream at {HZ} Hz (frames every ms), {} s of frames after; baseline of the gap: the stream's own interval",
        plan.switch_at_ms, plan.secs, plan.drain_secs
    ));
    s.note(format!(
        "NET_RmEvCustom refused {refused} times while the sender was re-entering the game (retried next frame, as a game would; not lost)"
    ));
    s.data.push(("sender".into(), Json::str(sent_line)));
    s.data.push(("receiver".into(), Json::str(received_line)));
    s.data.push(("sender_status".into(), Json::str(status)));
    Ok(s)
}
