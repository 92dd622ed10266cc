//! A trace of a simulated run for replaying a failing seed: with `SIM_LOG=1` in the environment,
//! the net log lines (debug and above) and every game packet a simulated peer sends or takes
//! are printed on stderr, each with the virtual time and the node it happened on. Without it,
//! nothing is installed and nothing is printed.
#![allow(dead_code)]

use std::cell::Cell;
use std::sync::OnceLock;
use std::time::Instant;

use log::{LevelFilter, Log, Metadata, Record};
use net_core::sim;
use net_core::wire::{decode_packet, WireEvent};
use net_core::Node;

thread_local! {
    /// The node being driven and the virtual time, while a simulated endpoint runs.
    static CONTEXT: Cell<Option<(usize, Instant)>> = const { Cell::new(None) };
    /// The first virtual time seen: times are printed from it.
    static EPOCH: Cell<Option<Instant>> = const { Cell::new(None) };
}

struct Printer;

static ENABLED: OnceLock<bool> = OnceLock::new();

/// Whether `SIM_LOG` asks for the trace (installs the logger the first time it says yes).
pub fn enabled() -> bool {
    *ENABLED.get_or_init(|| {
        let on = std::env::var_os("SIM_LOG").is_some_and(|v| !v.is_empty() && v != "0");
        if on && log::set_logger(&Printer).is_ok() {
            log::set_max_level(LevelFilter::Debug);
        }
        on
    })
}

/// Mark the node and virtual time the following lines belong to.
pub fn enter(index: usize, now: Instant) {
    if enabled() {
        EPOCH.with(|e| {
            if e.get().is_none() {
                e.set(Some(now));
            }
        });
        CONTEXT.with(|c| c.set(Some((index, now))));
    }
}

fn prefix() -> String {
    match CONTEXT.with(Cell::get) {
        Some((index, now)) => {
            let epoch = EPOCH.with(Cell::get).unwrap_or(now);
            let t = now.saturating_duration_since(epoch).as_secs_f64();
            format!("{t:9.4} node {index}")
        }
        None => "        ? node ?".to_string(),
    }
}

/// One line per game packet: its type, sender slot, token, sequence and the events in it.
pub fn packet(direction: &str, other: &Node, data: &[u8]) {
    if !enabled() {
        return;
    }
    let mut events: Vec<WireEvent> = Vec::new();
    let peer = node_text(other);
    let text = match decode_packet(data, &mut events) {
        Ok(p) => {
            let names: Vec<String> = events.iter().map(|e| short(&e.event)).collect();
            format!(
                "{:?} slot {:?} token {:x} seq {} [{}]",
                p.header.kind,
                p.header.sender_slot,
                p.header.token,
                p.header.sequence,
                names.join(", ")
            )
        }
        Err(err) => format!("undecodable: {err:?}"),
    };
    eprintln!("{} {direction} {peer}: {text}", prefix());
}

/// A simulated node by its index (the broadcast node by name).
fn node_text(node: &Node) -> String {
    sim::node_index(node).map_or_else(|| sim::print_node(node), |i| i.to_string())
}

/// An event's variant name and, for the protocol's own events, what they carry.
fn short(event: &net_core::rmev::RemoteEvent) -> String {
    use net_core::rmev::RemoteEvent;
    match event {
        RemoteEvent::PlayerList(list) => {
            let entries: Vec<String> = list
                .iter()
                .map(|e| format!("{}:{:x}@{}", e.slot, e.token, node_text(&e.node)))
                .collect();
            format!("PlayerList[{}]", entries.join(" "))
        }
        RemoteEvent::ConnectQueue(queue) => {
            let entries: Vec<String> = queue
                .iter()
                .map(|r| format!("{:x}@{}", r.token, node_text(&r.node)))
                .collect();
            format!("ConnectQueue[{}]", entries.join(" "))
        }
        RemoteEvent::SendText(text) => format!("SendText({text:?})"),
        // The simulated tests number their series in 4-byte custom events.
        RemoteEvent::Custom {
            custom_type, data, ..
        } => match <[u8; 4]>::try_from(data.as_bytes()) {
            Ok(number) => format!("Custom({custom_type} #{})", u32::from_be_bytes(number)),
            Err(_) => format!("Custom({custom_type}, {} bytes)", data.as_bytes().len()),
        },
        other => {
            let text = format!("{other:?}");
            text.split(['(', ' ', '{']).next().unwrap_or("").to_string()
        }
    }
}

impl Log for Printer {
    fn enabled(&self, _: &Metadata) -> bool {
        true
    }

    fn log(&self, record: &Record) {
        eprintln!("{} {}: {}", prefix(), record.level(), record.args());
    }

    fn flush(&self) {}
}

/// A line of the test's own (what it did to a node).
pub fn log_line(text: &str) {
    if enabled() {
        eprintln!("{} test: {text}", prefix());
    }
}
