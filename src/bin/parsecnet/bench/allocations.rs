//! Steady-state heap allocations per packet, from the counting allocator: both whole-stack
//! processes count their allocations during the measured ping-pong rounds and the windowed echo
//! (after warm-up), and the packets their sessions sent in the same window.

use super::echo::EchoResult;
use super::report::{Figure, Section, Target};
use super::rtt::RttResult;

pub const TITLE: &str = "heap allocations per packet";

pub fn section(rtt: Option<&RttResult>, echo: Option<&EchoResult>) -> Result<Section, String> {
    if rtt.is_none() && echo.is_none() {
        return Err("neither the round trip nor the echo measurement ran".into());
    }
    let mut s = Section::new("allocations", TITLE);
    if let Some(r) = rtt {
        s.figure(
            Figure::new(
                "pingpong_per_packet",
                "ping-pong (both processes)",
                r.allocations as f64 / r.packets.max(1) as f64,
                "allocs/packet",
            )
            .target(Target::AtMost(0.0)),
        );
        s.note(format!(
            "ping-pong: {} allocations over {} packets sent by both sessions ({} round trips, unreliable and reliable)",
            r.allocations, r.packets, r.round_trips
        ));
    }
    if let Some(e) = echo {
        s.figure(
            Figure::new(
                "echo_per_packet",
                "windowed echo (both processes)",
                e.allocations as f64 / e.packets.max(1) as f64,
                "allocs/packet",
            )
            .target(Target::AtMost(0.0)),
        );
        s.note(format!(
            "windowed echo: {} allocations over {} packets sent by both sessions",
            e.allocations, e.packets
        ));
    }
    let (direct, counted) = super::alloc_count::overhead(200_000);
    s.figure(
        Figure::new(
            "counting_cost_ns",
            "64-byte alloc+free with counting",
            counted,
            "ns",
        )
        .baseline(direct),
    );
    s.note("counted: every alloc, alloc_zeroed and realloc of the process (the library, the child's loop, the standard library), between two reads of the counter around the measured loop");
    Ok(s)
}
