//! `parsecnet demo`: a local match on loopback showing the layers at work. It starts a
//! gameserver (in this process, on free ports) and four bot players (separate `Subsystem`
//! instances driven through the console as a game would), which fly, fire lasers and missiles,
//! chat, and send numbered reliable events. During the run one bot switches protocol at its
//! console (gameserver -> peer -> gameserver) and one switches packet backend (udp -> the trace
//! plugin loaded from its file, recording every datagram -> udp). A status table refreshes in place; Ctrl-C or
//! `--duration` ends it with a summary, and the exit status says whether every check held.

mod bot;
mod servers;
mod table;
mod workdir;

use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use net_core::packet_api::{loader, BackendSpec};
use net_core::server::stop_on_signals;

use bot::{Bot, Scripted};
use servers::ServerThread;

const USAGE: &str = "usage: parsecnet demo [--duration SECONDS]";
const BOT_NAMES: [&str; 4] = ["alpha", "bravo", "charlie", "delta"];
/// The last part of a timed run in which bots stop firing, so what is in flight can settle.
const DRAIN: Duration = Duration::from_secs(2);
const FRAME: Duration = Duration::from_millis(10);

pub fn run_demo(args: &[String]) -> ExitCode {
    let mut duration = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--duration" => match it
                .next()
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|s| (5.0..=86_400.0).contains(s))
            {
                Some(secs) => duration = Some(Duration::from_secs_f64(secs)),
                None => return usage_error("--duration needs a number of seconds (5-86400)"),
            },
            "--help" | "-h" => {
                say!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => return usage_error(&format!("unknown option '{other}'")),
        }
    }
    match demo(duration) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("parsecnet demo: {e}");
            ExitCode::FAILURE
        }
    }
}

fn usage_error(message: &str) -> ExitCode {
    eprintln!("parsecnet demo: {message}\n{USAGE}");
    ExitCode::from(2)
}

/// The console lines every bot starts with.
fn setup_lines(name: &str, gameserver: SocketAddr) -> Vec<String> {
    vec![
        "net.udp.bind 127.0.0.1".into(),
        "net.udp.ipv6 0".into(),
        "net.port 0".into(),
        "net.api udp".into(),
        "net.subsys gameserver".into(),
        format!("name {name}"),
        format!("connect {gameserver}"),
    ]
}

fn at(secs: f64, line: String, milestone: Option<&'static str>) -> Scripted {
    Scripted {
        at: Duration::from_secs_f64(secs),
        line,
        milestone,
    }
}

/// The scripted switches: bravo changes protocol, charlie changes backend to the trace plugin
/// (loaded from its file; it records every datagram to `trace_file`) and back; delta asks the
/// masterserver which servers there are.
fn scripts(
    gameserver: SocketAddr,
    master: SocketAddr,
    plugin: &str,
    trace_file: &Path,
) -> Vec<Vec<Scripted>> {
    vec![
        Vec::new(),
        vec![
            at(4.0, "net.peer.connect_interval 100".into(), None),
            at(
                4.0,
                "net.subsys peer".into(),
                Some("protocol switch to peer"),
            ),
            at(4.1, "connect 127.0.0.1:9".into(), None),
            at(
                9.0,
                "net.subsys gameserver".into(),
                Some("protocol switch back to gameserver"),
            ),
            at(9.1, format!("connect {gameserver}"), None),
        ],
        vec![
            at(6.0, "net.trace.bind 127.0.0.1".into(), None),
            at(6.0, "net.trace.ipv6 0".into(), None),
            at(
                6.0,
                format!("net.trace.file {}", trace_file.display()),
                None,
            ),
            at(
                6.0,
                format!("net.api {plugin}"),
                Some("backend switch to the trace plugin loaded from its file"),
            ),
            at(
                11.0,
                "net.api udp".into(),
                Some("backend switch back to udp"),
            ),
        ],
        vec![
            at(2.0, format!("net.master {master}"), None),
            at(2.0, "servers".into(), None),
        ],
    ]
}

fn demo(duration: Option<Duration>) -> Result<bool, String> {
    let dir = workdir::make()?;
    let players_html = dir.join("players.html");
    let servers_html = dir.join("servers.html");
    let stop = Arc::new(AtomicBool::new(false));
    stop_on_signals(&stop).map_err(|e| e.to_string())?;
    // Quiet library logs unless asked: the table is the output.
    if std::env::var_os("PARSEC_NET_LOG").is_none() {
        log::set_max_level(log::LevelFilter::Error);
    }
    let master = ServerThread::masterserver(servers_html.clone())?;
    let server = ServerThread::gameserver(players_html.clone(), master.addrs.tcp)?;
    let gs = server.addrs.tcp;
    let plugin = loader::locate(&BackendSpec::Name("trace".into())).map_err(|e| e.to_string())?;
    let plugin = plugin.display().to_string();
    let trace_file = dir.join("charlie.trace");
    let start = Instant::now();
    let scripts = scripts(gs, master.addrs.tcp, &plugin, &trace_file);
    // When each switch is due, so a run stopped early can tell a switch that failed from one
    // whose time had not come.
    let schedule: Vec<(&'static str, Duration)> = scripts
        .iter()
        .flatten()
        .filter_map(|s| s.milestone.map(|m| (m, s.at)))
        .collect();
    let mut bots = Vec::new();
    for (i, (name, script)) in BOT_NAMES.iter().zip(scripts).enumerate() {
        bots.push(Bot::new(
            i as u8,
            name,
            &setup_lines(name, gs),
            script,
            start,
        )?);
    }
    let header = vec![
        format!(
            "masterserver on TCP {}, server list: http://{}/ (file {})",
            master.addrs.tcp,
            master.addrs.http.map_or("-".into(), |a| a.to_string()),
            servers_html.display()
        ),
        format!(
            "gameserver 'demo' on TCP {} UDP {}, registered with the masterserver; player list: http://{}/ (file {})",
            gs,
            server.addrs.udp.map_or("-".into(), |a| a.to_string()),
            server.addrs.http.map_or("-".into(), |a| a.to_string()),
            players_html.display()
        ),
        "four bots (alpha, bravo, charlie, delta) play as games do: each is the library's game-code layer on a protocol (column protocol) over a packet backend (column backend)".to_string(),
        "at 4 s bravo switches protocol gameserver -> peer at its console (it waits alone as a peer; the others stay on the gameserver), and back at 9 s".to_string(),
        "at 6 s charlie switches backend udp -> the trace plugin, loaded from its file and recording every datagram, and back to udp at 11 s".to_string(),
        format!(
            "Ctrl-C ends the run with a summary{}",
            duration.map_or(String::new(), |d| format!(
                " (it ends by itself after {} s)",
                d.as_secs_f64()
            ))
        ),
    ];
    let terminal = std::io::stdout().is_terminal();
    if !terminal {
        // Without a terminal the table becomes one progress line a second: say once what runs
        // where (the addresses to open in a browser) and what will happen.
        say!("parsec-net demo");
        for line in &header {
            say!("{line}");
        }
    }
    let mut next_draw = start;
    let mut interrupted = false;
    loop {
        let now = Instant::now();
        let elapsed = now - start;
        let ending = duration.is_some_and(|d| elapsed + DRAIN >= d);
        for bot in bots.iter_mut() {
            bot.frame(now, ending);
        }
        if duration.is_some_and(|d| elapsed >= d) {
            break;
        }
        if stop.load(Ordering::SeqCst) {
            interrupted = true;
            break;
        }
        if now >= next_draw {
            draw(terminal, elapsed, &header, &bots);
            next_draw = now
                + if terminal {
                    Duration::from_millis(250)
                } else {
                    Duration::from_secs(1)
                };
        }
        std::thread::sleep(FRAME);
    }
    let stopped_at = start.elapsed();
    if interrupted {
        // Stopped by Ctrl-C: as in the last seconds of a timed run, the bots stop firing and
        // what is in flight is given up to DRAIN to arrive, so the summary counts as lost only
        // what really was (a second Ctrl-C exits at once).
        let settle_until = Instant::now() + DRAIN;
        while Instant::now() < settle_until
            && bots
                .iter()
                .any(|b| b.unacknowledged() > 0 || (b.asked_servers && b.servers_found.is_none()))
        {
            let now = Instant::now();
            for bot in bots.iter_mut() {
                bot.frame(now, true);
            }
            std::thread::sleep(FRAME);
        }
    }
    let elapsed = start.elapsed();
    draw(terminal, elapsed, &header, &bots);
    let traced = std::fs::read_to_string(&trace_file).map_or(0, |t| t.lines().count());
    let ok = summary(
        elapsed,
        &bots,
        traced,
        interrupted.then_some(stopped_at),
        stopped_at,
        &schedule,
    );
    for bot in bots.iter_mut() {
        bot.sub.shutdown();
    }
    drop(server);
    drop(master);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(ok)
}

fn draw(terminal: bool, elapsed: Duration, header: &[String], bots: &[Bot]) {
    let mut out = std::io::stdout().lock();
    if terminal {
        // Home the cursor and clear the screen, then draw the table.
        let _ = write!(out, "\x1b[H\x1b[J{}", table::render(elapsed, header, bots));
    } else {
        let _ = writeln!(out, "{}", table::progress_line(elapsed, bots));
    }
    let _ = out.flush();
}

/// One switch check: done, failed, or not reached because the run was stopped before it was due.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Check {
    Held,
    Failed,
    NotDue,
}

impl Check {
    fn text(self) -> &'static str {
        match self {
            Check::Held => "yes",
            Check::Failed => "no",
            Check::NotDue => "not reached (the run ended before it was due)",
        }
    }
}

/// Whether the switches whose names start with `prefix` held: all of them done, or, in a run
/// that ended at `end` (a short `--duration`, Ctrl-C), every one that was due done and some
/// not due yet.
fn switch_check(
    prefix: &str,
    done: usize,
    schedule: &[(&'static str, Duration)],
    end: Duration,
) -> Check {
    let planned: Vec<Duration> = schedule
        .iter()
        .filter(|(m, _)| m.starts_with(prefix))
        .map(|(_, at)| *at)
        .collect();
    if done >= planned.len() {
        return Check::Held;
    }
    let due = planned.iter().filter(|at| **at <= end).count();
    if done >= due {
        Check::NotDue
    } else {
        Check::Failed
    }
}

/// `n` and the noun, plural unless `n` is 1.
fn count(n: u64, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// Print the summary; true if every check held that was due by `end`, when the run ended (by
/// `--duration` or, at `stopped_at`, by Ctrl-C).
fn summary(
    elapsed: Duration,
    bots: &[Bot],
    traced: usize,
    stopped_at: Option<Duration>,
    end: Duration,
    schedule: &[(&'static str, Duration)],
) -> bool {
    match stopped_at {
        Some(at) => say!(
            "\nsummary after {:.1} s (stopped by Ctrl-C at {:.1} s):",
            elapsed.as_secs_f64(),
            at.as_secs_f64()
        ),
        None => say!("\nsummary after {:.1} s:", elapsed.as_secs_f64()),
    }
    let mut all_seen = true;
    let (mut sent, mut lost, mut refused, mut disorder, mut received) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    for bot in bots {
        let others: Vec<&str> = BOT_NAMES
            .iter()
            .copied()
            .filter(|n| *n != bot.name)
            .collect();
        let saw_all = others.iter().all(|n| bot.seen.iter().any(|s| s == n));
        all_seen &= saw_all;
        let s = &bot.stats;
        sent += s.tracked_sent;
        refused += s.tracked_refused;
        disorder += s.out_of_order;
        received += s.events_received;
        lost += bot.unacknowledged() as u64;
        say!(
            "  {:<8} saw {:<24} fired {} and {}, sent {}, received {}, connected {}",
            bot.name,
            bot.seen.join(", "),
            count(s.lasers, "laser"),
            count(s.missiles, "missile"),
            count(s.tracked_sent, "numbered reliable event"),
            count(s.events_received, "event"),
            match s.connects {
                1 => "once".to_string(),
                n => format!("{n} times"),
            }
        );
        for err in &s.errors {
            say!("           error: {err}");
        }
    }
    let switches: Vec<&(&str, String)> = bots
        .iter()
        .flat_map(|b| b.stats.milestones.iter())
        .collect();
    for (what, line) in &switches {
        say!("  done: {what} ({line})");
    }
    let done = |prefix: &str| {
        switches
            .iter()
            .filter(|(w, _)| w.starts_with(prefix))
            .count()
    };
    let protocol = switch_check("protocol switch", done("protocol switch"), schedule, end);
    let mut backend = switch_check("backend switch", done("backend switch"), schedule, end);
    if backend == Check::Held && traced == 0 {
        backend = Check::Failed;
    }
    say!("  events: {sent} numbered reliable events sent, {received} events received by the bots");
    say!("  lost reliable events: {lost} (unacknowledged at the end), refused: {refused}, out of order or repeated: {disorder}");
    say!("  the trace plugin recorded {traced} datagrams of charlie's while it was loaded");
    let listed = bots.iter().filter_map(|b| b.servers_found).max();
    let asked = bots.iter().any(|b| b.asked_servers);
    say!(
        "  servers the masterserver listed when delta asked: {}",
        match listed {
            Some(n) => n.to_string(),
            None if asked => "no answer".to_string(),
            None => "not asked (the run ended before 2 s)".to_string(),
        }
    );
    say!(
        "  all four players saw each other: {}; protocol switch: {}; backend switch: {}",
        yes_no(all_seen),
        protocol.text(),
        backend.text()
    );
    let servers_ok = listed.is_some_and(|n| n >= 1) || !asked;
    let ok = all_seen
        && servers_ok
        && protocol != Check::Failed
        && backend != Check::Failed
        && lost == 0
        && refused == 0;
    let early = protocol == Check::NotDue || backend == Check::NotDue || !asked;
    say!(
        "  result: {}",
        match (ok, early) {
            (true, false) => "every check held",
            (true, true) => "every check that was due held (the run ended before the others were due: run it for 15 s or more to see them all)",
            (false, _) => "SOME CHECKS FAILED",
        }
    );
    ok
}

fn yes_no(v: bool) -> &'static str {
    if v {
        "yes"
    } else {
        "no"
    }
}
