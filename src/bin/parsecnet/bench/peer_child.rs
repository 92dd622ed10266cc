//! `parsecnet bench child peer NAME`: one game process for the whole-stack measurements. It
//! uses only the library's C API (console lines, `NETs_MaintainNet` through the jump table,
//! `NET_PollEvent`, `NET_RmEvCustom`) and takes commands on stdin, one per line; each command
//! answers with one line (`error ...` on failure):
//!
//! - `exec LINE` -> `ok REPLY`: a console line;
//! - `settle OTHERS SECS` -> `ready slot S ms T`: frames until connected with OTHERS others;
//! - `connect-settle TARGET OTHERS SECS`: `connect TARGET`, then `settle`;
//! - `ping N RELIABLE` -> `rtt NS...` and `counts ...`: N round trips of a 64-byte custom event;
//! - `echo N RELIABLE` -> `counts ...`: answer N pings;
//! - `flood SECS WINDOW` -> `flood echoes E ns T` and `counts ...`: WINDOW reliable events in
//!   flight for SECS, each answered; then a stop event;
//! - `echo-until-stop` -> `counts ...`: answer pings until the stop event;
//! - `idle N` -> `idle ns T`: N frames (`NETs_MaintainNet`, `NET_PollEvent`) with nothing
//!   arriving, T ns each on average;
//! - `stream HZ SECS DRAIN SWITCH_MS` -> `stream sent N switch_ms X`: a numbered reliable event
//!   at HZ for SECS (plus DRAIN seconds of frames), `net.api udp` at SWITCH_MS (-1: none);
//! - `receive-stream SECS SWITCH_MS` -> `received ...`: what arrived of the stream, the longest
//!   gap between deliveries and what was missing or repeated;
//! - `quit`.
//!
//! `counts` are the heap allocations made and the session's packets sent and accepted during
//! the measured loop. The round trips and the flood poll without sleeping (busy frames); the
//! other loops run a frame every millisecond.

use std::io::BufRead;
use std::time::{Duration, Instant};

use parsec_net::game_types::{NET_EVENT_CONNECTED, NET_EVENT_PLAYER_CONNECTED};

use super::alloc_count::allocations;
use super::capi;

/// Custom event types of the benchmark.
pub const PING: u16 = 0x5001;
pub const PONG: u16 = 0x5002;
pub const STOP: u16 = 0x5003;
pub const STREAM: u16 = 0x5004;
/// Payload size of every benchmark event.
pub const EVENT_BYTES: usize = 64;

const FRAME: Duration = Duration::from_millis(1);

pub fn run(args: &[String]) -> Result<(), String> {
    let name = args.first().map_or("bench", String::as_str);
    capi::init()?;
    for line in [
        "net.udp.bind 127.0.0.1",
        "net.udp.ipv6 0",
        "net.port 0",
        "net.api udp",
        &format!("name {name}"),
    ] {
        capi::exec(line)?;
    }
    let node = capi::local_node_text()?;
    let port = node.rsplit(':').next().unwrap_or("0");
    say!("port {port}");
    let mut peer = Peer::default();
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| e.to_string())?;
        let line = line.trim();
        if line == "quit" {
            break;
        }
        match peer.command(line) {
            Ok(reply) => say!("{reply}"),
            Err(e) => say!("error {e}"),
        }
    }
    Ok(())
}

/// What the peer knows between commands.
#[derive(Default)]
struct Peer {
    slot: Option<i32>,
    others: usize,
}

/// Heap allocations and session packets around a measured loop.
struct Counts {
    allocations: u64,
    sent: u64,
    accepted: u64,
}

impl Counts {
    fn start() -> Counts {
        let (sent, accepted) = capi::session_packets();
        Counts {
            allocations: allocations(),
            sent,
            accepted,
        }
    }

    fn line(self) -> String {
        let allocations = allocations() - self.allocations;
        let (sent, accepted) = capi::session_packets();
        format!(
            "counts allocations {allocations} sent {} accepted {}",
            sent - self.sent,
            accepted - self.accepted
        )
    }
}

fn arg<T: std::str::FromStr>(words: &[&str], i: usize, what: &str) -> Result<T, String> {
    words
        .get(i)
        .and_then(|w| w.parse().ok())
        .ok_or_else(|| format!("missing or bad {what}"))
}

fn payload(seq: u64) -> [u8; EVENT_BYTES] {
    let mut data = [0x5Au8; EVENT_BYTES];
    data[..8].copy_from_slice(&seq.to_le_bytes());
    data
}

fn queue(custom_type: u16, seq: u64, reliable: bool) -> Result<(), String> {
    match capi::send_custom(custom_type, &payload(seq), reliable) {
        0 => Ok(()),
        rc => Err(format!("NET_RmEvCustom failed with {rc}")),
    }
}

impl Peer {
    fn command(&mut self, line: &str) -> Result<String, String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.first().copied().unwrap_or("") {
            "exec" => {
                let rest = line.strip_prefix("exec").unwrap_or("").trim();
                capi::exec(rest).map(|out| format!("ok {}", out.replace('\n', " | ")))
            }
            "settle" => {
                let others = arg(&words, 1, "player count")?;
                let secs: f64 = arg(&words, 2, "seconds")?;
                self.settle(others, Instant::now(), secs)
            }
            "connect-settle" => {
                let start = Instant::now();
                let target = words.get(1).ok_or("missing target")?;
                capi::exec(&format!("connect {target}"))?;
                let others = arg(&words, 2, "player count")?;
                let secs: f64 = arg(&words, 3, "seconds")?;
                self.settle(others, start, secs)
            }
            "ping" => {
                let n: usize = arg(&words, 1, "count")?;
                let reliable = arg::<u8>(&words, 2, "reliable flag")? == 1;
                ping(n, reliable)
            }
            "echo" => {
                let n: usize = arg(&words, 1, "count")?;
                let reliable = arg::<u8>(&words, 2, "reliable flag")? == 1;
                echo(Some(n), reliable)
            }
            "echo-until-stop" => echo(None, true),
            "flood" => {
                let secs: f64 = arg(&words, 1, "seconds")?;
                let window: usize = arg(&words, 2, "window")?;
                flood(Duration::from_secs_f64(secs), window)
            }
            "stream" => {
                let hz: f64 = arg(&words, 1, "rate")?;
                let secs: f64 = arg(&words, 2, "seconds")?;
                let drain: f64 = arg(&words, 3, "drain seconds")?;
                let switch_ms: i64 = arg(&words, 4, "switch time")?;
                stream(hz, secs, drain, switch_ms)
            }
            "receive-stream" => {
                let secs: f64 = arg(&words, 1, "seconds")?;
                let switch_ms: i64 = arg(&words, 2, "switch time")?;
                receive_stream(secs, switch_ms)
            }
            "idle" => idle(arg(&words, 1, "count")?),
            other => Err(format!("unknown command '{other}'")),
        }
    }

    /// Frames until this peer has a slot and sees `others` other players.
    fn settle(&mut self, others: usize, start: Instant, secs: f64) -> Result<String, String> {
        let deadline = start + Duration::from_secs_f64(secs);
        let mut event = capi::empty_event();
        loop {
            capi::maintain();
            while capi::poll(&mut event) {
                match event.r#type {
                    NET_EVENT_CONNECTED => {
                        self.slot = Some(event.player_id);
                        self.others = 0;
                    }
                    NET_EVENT_PLAYER_CONNECTED => self.others += 1,
                    _ => {}
                }
            }
            if let Some(slot) = self.slot.filter(|_| self.others >= others) {
                return Ok(format!(
                    "ready slot {slot} ms {:.3}",
                    start.elapsed().as_secs_f64() * 1000.0
                ));
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "not settled after {secs} s (slot {:?}, {} others)",
                    self.slot, self.others
                ));
            }
            std::thread::sleep(FRAME);
        }
    }
}

/// `n` frames with nothing arriving: what one turn of the polling loop costs.
fn idle(n: usize) -> Result<String, String> {
    let mut event = capi::empty_event();
    let start = Instant::now();
    for _ in 0..n {
        capi::maintain();
        while capi::poll(&mut event) {}
    }
    let per_frame = start.elapsed().as_nanos() as f64 / n.max(1) as f64;
    Ok(format!("idle ns {per_frame:.1}"))
}

/// `n` round trips, busy-polling; prints the RTTs (ns) and returns the counts line.
fn ping(n: usize, reliable: bool) -> Result<String, String> {
    let mut rtts: Vec<u64> = Vec::with_capacity(n);
    let mut event = capi::empty_event();
    let counts = Counts::start();
    let limit = Duration::from_secs(10);
    for seq in 0..n as u64 {
        let start = Instant::now();
        queue(PING, seq, reliable)?;
        'wait: loop {
            capi::maintain();
            while capi::poll(&mut event) {
                if capi::custom_of(&event) == Some((PONG, seq)) {
                    break 'wait;
                }
            }
            if start.elapsed() > limit {
                return Err(format!("no answer to ping {seq} within 10 s"));
            }
        }
        rtts.push(start.elapsed().as_nanos() as u64);
    }
    let counts = counts.line();
    let text: Vec<String> = rtts.iter().map(u64::to_string).collect();
    say!("rtt {}", text.join(" "));
    Ok(counts)
}

/// Answer `n` pings (None: until the stop event), busy-polling.
fn echo(n: Option<usize>, reliable: bool) -> Result<String, String> {
    let mut event = capi::empty_event();
    let counts = Counts::start();
    let mut answered = 0usize;
    let mut last_heard = Instant::now();
    loop {
        // One clock reading per frame, as a game would take.
        let frame_start = Instant::now();
        capi::maintain();
        while capi::poll(&mut event) {
            match capi::custom_of(&event) {
                Some((PING, seq)) => {
                    // The answer goes out with the next frame, as a game's would.
                    queue(PONG, seq, reliable || event.flags != 0)?;
                    answered += 1;
                    last_heard = frame_start;
                }
                Some((STOP, _)) => return Ok(format!("{} answered {answered}", counts.line())),
                _ => {}
            }
        }
        if n.is_some_and(|n| answered >= n) {
            // Let the last answer leave.
            capi::maintain();
            return Ok(format!("{} answered {answered}", counts.line()));
        }
        if frame_start.saturating_duration_since(last_heard) > Duration::from_secs(10) {
            return Err(format!("no ping for 10 s after {answered}"));
        }
    }
}

/// `window` reliable pings in flight for `duration`, each answered pong replaced by a new ping.
fn flood(duration: Duration, window: usize) -> Result<String, String> {
    let mut event = capi::empty_event();
    let mut next_seq = 0u64;
    let mut expected = 0u64;
    for _ in 0..window {
        queue(PING, next_seq, true)?;
        next_seq += 1;
    }
    let counts = Counts::start();
    let start = Instant::now();
    let end = start + duration;
    let mut sending = true;
    let mut last_progress = Instant::now();
    while expected < next_seq {
        // One clock reading per frame, as a game would take.
        let frame_start = Instant::now();
        capi::maintain();
        while capi::poll(&mut event) {
            if let Some((PONG, seq)) = capi::custom_of(&event) {
                if seq != expected {
                    return Err(format!("pong {seq} arrived, {expected} expected"));
                }
                expected += 1;
                last_progress = frame_start;
                if sending {
                    queue(PING, next_seq, true)?;
                    next_seq += 1;
                }
            }
        }
        if sending && frame_start >= end {
            sending = false;
        }
        if frame_start.saturating_duration_since(last_progress) > Duration::from_secs(10) {
            return Err(format!("no pong for 10 s after {expected}"));
        }
    }
    let elapsed = start.elapsed();
    let counts = counts.line();
    queue(STOP, 0, true)?;
    for _ in 0..100 {
        capi::maintain();
    }
    say!("flood echoes {expected} ns {}", elapsed.as_nanos());
    Ok(counts)
}

/// Switch the backend (re-opening UDP) at `switch_ms` into a loop; returns how long it took.
fn maybe_switch(start: Instant, switch_ms: i64, done: &mut bool) -> Result<Option<f64>, String> {
    if *done || switch_ms < 0 || start.elapsed() < Duration::from_millis(switch_ms as u64) {
        return Ok(None);
    }
    *done = true;
    let before = Instant::now();
    capi::exec("net.api udp")?;
    Ok(Some(before.elapsed().as_secs_f64() * 1000.0))
}

/// Send a numbered reliable event at `hz` for `secs`, then keep the frames going for `drain`.
fn stream(hz: f64, secs: f64, drain: f64, switch_ms: i64) -> Result<String, String> {
    let mut event = capi::empty_event();
    let start = Instant::now();
    let interval = Duration::from_secs_f64(1.0 / hz);
    let (send_end, end) = (
        start + Duration::from_secs_f64(secs),
        start + Duration::from_secs_f64(secs + drain),
    );
    let mut next_send = start;
    let mut sent = 0u64;
    let mut switched = false;
    let mut switch_took = -1.0;
    let mut refused = 0u64;
    while Instant::now() < end {
        let now = Instant::now();
        if now >= next_send && now < send_end {
            // A full queue while reconnecting is the game's to retry: try again next frame.
            if capi::send_custom(STREAM, &payload(sent), true) == 0 {
                sent += 1;
                next_send += interval;
            } else {
                refused += 1;
            }
        }
        if let Some(ms) = maybe_switch(start, switch_ms, &mut switched)? {
            switch_took = ms;
        }
        capi::maintain();
        while capi::poll(&mut event) {}
        std::thread::sleep(FRAME);
    }
    Ok(format!(
        "stream sent {sent} refused {refused} switch_ms {switch_took:.3}"
    ))
}

/// Receive the stream for `secs`: count, gaps, missing and repeated numbers.
fn receive_stream(secs: f64, switch_ms: i64) -> Result<String, String> {
    let mut event = capi::empty_event();
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(secs);
    let mut seen: Vec<bool> = Vec::new();
    let (mut received, mut repeated, mut out_of_order) = (0u64, 0u64, 0u64);
    let mut last: Option<(Instant, u64)> = None;
    let mut max_gap = Duration::ZERO;
    let mut gap_at = 0u64;
    let mut switched = false;
    let mut switch_took = -1.0;
    while Instant::now() < end {
        if let Some(ms) = maybe_switch(start, switch_ms, &mut switched)? {
            switch_took = ms;
        }
        capi::maintain();
        let now = Instant::now();
        while capi::poll(&mut event) {
            let Some((STREAM, seq)) = capi::custom_of(&event) else {
                continue;
            };
            received += 1;
            let i = seq as usize;
            if seen.len() <= i {
                seen.resize(i + 1, false);
            }
            if seen[i] {
                repeated += 1;
            }
            seen[i] = true;
            if let Some((at, prev)) = last {
                if seq != prev + 1 {
                    out_of_order += 1;
                }
                if now - at > max_gap {
                    max_gap = now - at;
                    gap_at = seq;
                }
            }
            last = Some((now, seq));
        }
        std::thread::sleep(FRAME);
    }
    let distinct = seen.iter().filter(|s| **s).count();
    Ok(format!(
        "received {received} distinct {distinct} highest {} repeated {repeated} out_of_order {out_of_order} max_gap_ms {:.3} gap_before {gap_at} switch_ms {switch_took:.3}",
        seen.len() as i64 - 1,
        max_gap.as_secs_f64() * 1000.0
    ))
}
