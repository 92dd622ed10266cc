//! Console commands that only report: `help`, `status`, `players`.

use std::fmt::Write as _;
use std::time::Instant;

use super::commands::{no_args, one_arg, BACKEND_OPTION, COMMANDS};
use crate::error::NetResult;
use crate::packet_api::BackendOrigin;
use crate::subsystem::Subsystem;

pub fn help(_sub: &mut Subsystem, _name: &str, args: &str, _now: Instant) -> NetResult<String> {
    if args.is_empty() {
        // A usage too long for the column gets its summary on the next line, in the column.
        const COLUMN: usize = 44;
        let mut out = String::from("commands:\n");
        for c in COMMANDS.iter().chain(std::iter::once(&BACKEND_OPTION)) {
            if c.usage.len() > COLUMN {
                let _ = writeln!(out, "  {}\n  {:COLUMN$} {}", c.usage, "", c.summary);
            } else {
                let _ = writeln!(out, "  {:<COLUMN$} {}", c.usage, c.summary);
            }
        }
        return Ok(out.trim_end().to_string());
    }
    let args = one_arg(args)?;
    match super::find_command(args) {
        Some(c) => Ok(format!("usage: {}\n{}", c.usage, c.summary)),
        None => Err(super::unknown_command(args)),
    }
}

fn yes_no(v: bool) -> &'static str {
    if v {
        "yes"
    } else {
        "no"
    }
}

fn millis(d: Option<std::time::Duration>) -> String {
    d.map_or("-".to_string(), |d| {
        format!("{:.1} ms", d.as_secs_f64() * 1000.0)
    })
}

pub fn status(sub: &mut Subsystem, _name: &str, args: &str, now: Instant) -> NetResult<String> {
    no_args(args)?;
    let mut out = String::new();
    let connection = sub
        .protocol_module()
        .map_or("no protocol selected".to_string(), |p| p.describe());
    let _ = writeln!(out, "protocol: {} ({connection})", sub.protocol());
    match sub.packets().backend().cloned() {
        Some(b) => {
            let origin = match b.origin() {
                BackendOrigin::Library(path) => path.display().to_string(),
                BackendOrigin::InProcess => "in-process".to_string(),
            };
            let _ = writeln!(
                out,
                "backend: {} ({origin}), max payload {} bytes, broadcast {}, client-server {}",
                b.name(),
                b.max_payload(),
                yes_no(b.supports_broadcast()),
                yes_no(b.supports_client_server())
            );
        }
        None => out.push_str("backend: none\n"),
    }
    if sub.packets().is_open() {
        let local = match sub.local_node() {
            Ok(node) => sub.print_node(&node).unwrap_or_else(|e| e.message),
            Err(e) => format!("unknown ({e})"),
        };
        let port = sub.packets().port_text();
        let _ = writeln!(out, "socket: open{port}, local node {local}");
        // What the backend says its socket is bound to (an interface, addresses).
        if let Some(binding) = sub.packets().socket_description() {
            let _ = writeln!(out, "binding: {binding}");
        }
    } else {
        let _ = writeln!(
            out,
            "socket: closed (opens on first use, port {})",
            sub.packets().port()
        );
    }
    let session_line = sub.protocol_module().and_then(|p| p.session()).map(|session| {
        let links: Vec<_> = session.links().map(|(_, l)| l).collect();
        let rtts: Vec<_> = links.iter().filter_map(|l| l.rtt()).collect();
        let rtt = (!rtts.is_empty()).then(|| rtts.iter().sum::<std::time::Duration>() / rtts.len() as u32);
        let loss = if links.is_empty() { 0.0 } else { links.iter().map(|l| l.loss()).sum::<f64>() / links.len() as f64 };
        let s = session.stats();
        // Recent rates (about the last few seconds of this game), not averages since start.
        let (sent_rate, accepted_rate) = session.recent_rates(now);
        format!(
            "game: slot {}, {}, {}, RTT {}, loss {:.1}%, packets sent {} ({:.1}/s) accepted {} ({:.1}/s) rejected {}, events sent {} received {}, unacknowledged {}",
            session.my_slot(),
            crate::game::counted(session.players().len() as u64, "other player"),
            if session.is_joined() { "joined" } else { "not joined" },
            millis(rtt),
            loss * 100.0,
            s.packets_sent,
            sent_rate,
            s.packets_accepted,
            accepted_rate,
            s.packets_rejected,
            s.events_sent,
            s.events_received,
            session.unacknowledged()
        )
    });
    // The same fields when there is no game, so a reader always finds them.
    let line = session_line.unwrap_or_else(|| {
        "game: not in a game (slot -, 0 other players, not joined, RTT -, loss -)".to_string()
    });
    let _ = writeln!(out, "{line}");
    if let Some(session) = sub.protocol_module().and_then(|p| p.session()) {
        let s = session.stats();
        let r = session.resume_state().stats();
        let e = session.early_events();
        let _ = writeln!(
            out,
            "links: rebinds {}, impostors refused {}, earlier-session claims refused {}; resumed links {}, events sent again {}, parked {}, given up {}, answer timeouts {}; events before their player {} (delivered unknown {}); players dropped for silence {}, own stalls not counted as their silence {}",
            s.rebinds, s.impostors, s.earlier_claims_refused, r.resumed, r.events_carried, r.parked, r.events_dropped, r.hold_timeouts, e.held, e.released_unknown, s.players_timed_out, s.own_stalls
        );
    }
    let settings = sub.settings();
    let _ = writeln!(
        out,
        "settings: name {}, send frequency {} Hz, rate {}, server {}, masters {}",
        sub.game().name(),
        settings.send_hz,
        if settings.rate == 0 {
            "unlimited".to_string()
        } else {
            format!("{} bytes/s", settings.rate)
        },
        settings.server.as_deref().unwrap_or("none"),
        if settings.masters.is_empty() {
            "none".to_string()
        } else {
            settings.masters.join(", ")
        }
    );
    let s = sub.packets().stats().clone();
    let e = sub.input_errors().clone();
    let _ = writeln!(
        out,
        "datagrams: sent {} ({} bytes), received {} ({} bytes), deferred {}, waiting to send {}, waiting to be read {}",
        s.datagrams_sent,
        s.bytes_sent,
        s.datagrams_received,
        s.bytes_received,
        s.send_deferred,
        sub.packets().outgoing_len(),
        sub.packets().incoming_len()
    );
    let protocol_counters = sub
        .protocol_module()
        .map(|p| {
            p.counters()
                .iter()
                .filter(|(_, v)| *v > 0)
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "errors: send {}, receive {}, oversize {}, queue overflow {}, bad node texts {}, bad console lines {}, game packets without protocol {}",
        s.send_errors,
        s.receive_errors,
        s.oversize_rejected,
        s.queue_overflow,
        e.node_texts,
        e.console_lines,
        e.game_packets_without_protocol
    );
    // Why the counted errors happened: the latest message of each kind, once there was one.
    if let Some(message) = &s.last_send_error {
        let _ = writeln!(out, "last send error: {message}");
    }
    if let Some(message) = &s.last_receive_error {
        let _ = writeln!(out, "last receive error: {message}");
    }
    if !protocol_counters.is_empty() {
        let _ = writeln!(out, "protocol counters: {protocol_counters}");
    }
    let conditions = sub.packets().conditions();
    if !conditions.is_off() {
        let (send, receive) = sub.packets().conditioner_stats();
        let _ = writeln!(
            out,
            "net.sim: {conditions}; send path dropped {} duplicated {} reordered {}; receive path dropped {} duplicated {} reordered {}",
            send.dropped, send.duplicated, send.reordered, receive.dropped, receive.duplicated, receive.reordered
        );
    }
    let g = sub.game().stats();
    let demo = sub.game().demo_status();
    let _ = writeln!(
        out,
        "events for the game: {} queued, {} polled, {} waiting, {} dropped; demo {demo}",
        g.events_queued,
        g.events_polled,
        sub.game().pending_events(),
        g.events_dropped
    );
    let _ = writeln!(
        out,
        "switches: {} done, {} failed; during switches {} queued datagrams sent, {} received kept, {} lost",
        s.switches, s.failed_switches, s.flushed_on_switch, s.drained_on_switch, s.lost_on_switch
    );
    let _ = write!(out, "uptime: {:.1} s", sub.uptime(now).as_secs_f64());
    Ok(out)
}

pub fn players(sub: &mut Subsystem, _name: &str, args: &str, now: Instant) -> NetResult<String> {
    no_args(args)?;
    let Some(session) = sub.protocol_module().and_then(|p| p.session()) else {
        return Ok("not connected to a game".to_string());
    };
    let mut out = format!(
        "{:<5} {:<32} {:<8} {:<28} {:>10} {:>7} {:>10}\n",
        "slot", "name", "joined", "node", "rtt", "loss", "heard"
    );
    let _ = writeln!(
        out,
        "{:<5} {:<32} {:<8} {:<28} {:>10} {:>7} {:>10}",
        session.my_slot(),
        sub.game().name().to_string(),
        yes_no(session.is_joined()),
        "(this client)",
        "-",
        "-",
        "-"
    );
    for p in session.players().iter() {
        let link = session.link(p.slot);
        let node = sub.print_node(&p.node).unwrap_or_else(|_| "?".to_string());
        let _ = writeln!(
            out,
            "{:<5} {:<32} {:<8} {:<28} {:>10} {:>6.1}% {:>8.1} s",
            p.slot,
            p.name.to_string(),
            yes_no(p.joined),
            node,
            millis(link.and_then(|l| l.rtt())),
            link.map_or(0.0, |l| l.loss()) * 100.0,
            now.saturating_duration_since(p.last_heard).as_secs_f64()
        );
    }
    Ok(out.trim_end().to_string())
}
