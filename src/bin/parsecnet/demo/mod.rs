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
    let dir = std::env::temp_dir().join(format!("parsecnet-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
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
    let mut bots = Vec::new();
    for (i, (name, script)) in BOT_NAMES
        .iter()
        .zip(scripts(gs, master.addrs.tcp, &plugin, &trace_file))
        .enumerate()
    {
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
        "bravo switches protocol at 4 s and back at 9 s; charlie switches backend to the trace plugin (by path) at 6 s and back to udp at 11 s".to_string(),
    ];
    let terminal = std::io::stdout().is_terminal();
    let mut next_draw = start;
    loop {
        let now = Instant::now();
        let elapsed = now - start;
        let ending = duration.is_some_and(|d| elapsed + DRAIN >= d);
        for bot in bots.iter_mut() {
            bot.frame(now, ending);
        }
        if duration.is_some_and(|d| elapsed >= d) || stop.load(Ordering::SeqCst) {
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
    let elapsed = start.elapsed();
    draw(terminal, elapsed, &header, &bots);
    let traced = std::fs::read_to_string(&trace_file).map_or(0, |t| t.lines().count());
    let ok = summary(elapsed, &bots, traced);
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

/// Print the summary; true if every check held.
fn summary(elapsed: Duration, bots: &[Bot], traced: usize) -> bool {
    say!("\nsummary after {:.1} s:", elapsed.as_secs_f64());
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
            "  {:<8} saw {:<24} fired {} lasers and {} missiles, sent {} numbered reliable events, received {} events, connected {} times",
            bot.name,
            bot.seen.join(", "),
            s.lasers,
            s.missiles,
            s.tracked_sent,
            s.events_received,
            s.connects
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
    let protocol_switched = switches
        .iter()
        .filter(|(w, _)| w.starts_with("protocol switch"))
        .count()
        == 2;
    let backend_switched = switches
        .iter()
        .filter(|(w, _)| w.starts_with("backend switch"))
        .count()
        == 2;
    say!("  events: {sent} numbered reliable events sent, {received} events received by the bots");
    say!("  lost reliable events: {lost} (unacknowledged at the end), refused: {refused}, out of order or repeated: {disorder}");
    say!("  the trace plugin recorded {traced} datagrams of charlie's while it was loaded");
    let listed = bots.iter().filter_map(|b| b.servers_found).max();
    say!(
        "  servers the masterserver listed when delta asked: {}",
        listed.map_or("no answer".to_string(), |n| n.to_string())
    );
    say!(
        "  all four players saw each other: {}; protocol switch: {}; backend switch: {}",
        yes_no(all_seen),
        yes_no(protocol_switched),
        yes_no(backend_switched && traced > 0)
    );
    let ok = all_seen
        && listed.is_some_and(|n| n >= 1)
        && protocol_switched
        && backend_switched
        && traced > 0
        && lost == 0
        && refused == 0;
    say!(
        "  result: {}",
        if ok {
            "every check held"
        } else {
            "SOME CHECKS FAILED"
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
