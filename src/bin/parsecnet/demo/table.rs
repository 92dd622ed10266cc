//! The demo's live status table: one row per bot (protocol, backend, slot, RTT, loss, packets
//! and events per second, what it last did), redrawn in place on a terminal and printed as
//! plain progress lines otherwise.

use std::fmt::Write as _;
use std::time::Duration;

use super::bot::Bot;

/// Render the table.
pub fn render(elapsed: Duration, header: &[String], bots: &[Bot]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "parsec-net demo, {:.1} s", elapsed.as_secs_f64());
    for line in header {
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(
        out,
        "{:<8} {:<11} {:<10} {:>4} {:>9} {:>6} {:>8} {:>9}  last",
        "bot", "protocol", "backend", "slot", "rtt", "loss", "pkts/s", "events/s"
    );
    for bot in bots {
        let protocol = bot.sub.protocol().to_string();
        let backend = bot
            .sub
            .packets()
            .backend()
            .map_or("-".to_string(), |b| b.name().to_string());
        let session = bot.sub.protocol_module().and_then(|p| p.session());
        let slot = session.map_or("-".to_string(), |s| s.my_slot().to_string());
        let links: Vec<_> = session
            .map(|s| s.links().map(|(_, l)| l).collect())
            .unwrap_or_default();
        let rtts: Vec<Duration> = links.iter().filter_map(|l| l.rtt()).collect();
        let rtt = if rtts.is_empty() {
            "-".to_string()
        } else {
            format!(
                "{:.1} ms",
                rtts.iter().sum::<Duration>().as_secs_f64() * 1000.0 / rtts.len() as f64
            )
        };
        let loss = if links.is_empty() {
            0.0
        } else {
            links.iter().map(|l| l.loss()).sum::<f64>() / links.len() as f64
        };
        let mut last = bot.last_line.clone();
        last.truncate(60);
        let _ = writeln!(
            out,
            "{:<8} {:<11} {:<10} {:>4} {:>9} {:>5.1}% {:>8.0} {:>9.0}  {}",
            bot.name,
            protocol,
            backend,
            slot,
            rtt,
            loss * 100.0,
            bot.packets_per_s,
            bot.events_per_s,
            last
        );
    }
    out
}

/// One line of progress for a non-terminal output.
pub fn progress_line(elapsed: Duration, bots: &[Bot]) -> String {
    let parts: Vec<String> = bots
        .iter()
        .map(|b| {
            let slot = b
                .sub
                .protocol_module()
                .and_then(|p| p.session())
                .map_or("-".to_string(), |s| s.my_slot().to_string());
            let backend = b
                .sub
                .packets()
                .backend()
                .map_or("-".to_string(), |b| b.name().to_string());
            format!(
                "{} {}/{} slot {} {:.0} pkt/s",
                b.name,
                b.sub.protocol(),
                backend,
                slot,
                b.packets_per_s
            )
        })
        .collect();
    format!("[{:5.1} s] {}", elapsed.as_secs_f64(), parts.join(" | "))
}
