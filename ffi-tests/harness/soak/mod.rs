//! The soak test of issue 9 (hardening item 6; docs/soak.md): a real `parsecnet gameserver` on
//! 127.0.0.1 and many real `c/peer_game.c` clients that, for the whole run, keep connecting,
//! joining, sending a numbered series of reliable events to the others, unjoining and joining
//! again, leaving (by `disconnect` or by switching to the peer protocol and back), and coming
//! back. The server's resident memory and open file descriptors are sampled from `/proc`; at the
//! end every series is checked (see [`delivery`]) and a summary with the figures is printed.
//! [`SoakConfig::from_env`] reads `SOAK_SECONDS`, `SOAK_CLIENTS` and `SOAK_SEED`.

pub mod client;
pub mod delivery;
pub mod proc_stats;
pub mod rng;

use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::live::LiveGame;
use crate::server::Server;
use crate::Build;

use client::{Counts, SoakClient};
use proc_stats::{growth, Sample, LIMITS};
use rng::Rng;

/// The server's player slots (the most a gameserver has).
const SLOTS: usize = 16;
/// A series number every this many milliseconds from every seated client.
const SERIES_MS: u64 = 250;
/// Frame time of the client games.
const FRAME_MS: u64 = 20;
/// How often the harness looks at the clients.
const TICK: Duration = Duration::from_millis(50);
/// How long the wind-down (everyone leaves) may take.
const WIND_DOWN_TIMEOUT: Duration = Duration::from_secs(40);
/// How long the server may settle after the last client left, before the idle reading.
const SETTLE: Duration = Duration::from_secs(2);
/// How long a client may take to end after `@quit`.
const QUIT_TIMEOUT: Duration = Duration::from_secs(15);

/// What to run.
#[derive(Clone, Copy, Debug)]
pub struct SoakConfig {
    pub clients: usize,
    pub duration: Duration,
    /// How often the server's memory and descriptors are read.
    pub sample_every: Duration,
    pub seed: u64,
}

impl SoakConfig {
    /// The default-suite run: 16 clients for 30 s, unless `SOAK_CLIENTS` / `SOAK_SECONDS` say
    /// otherwise; `SOAK_SEED` repeats a run's random choices.
    pub fn from_env() -> SoakConfig {
        let number = |name: &str, default: u64| -> u64 {
            match std::env::var(name) {
                Ok(text) => text
                    .trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("{name}={text:?} is not a whole number")),
                Err(_) => default,
            }
        };
        let clients = number("SOAK_CLIENTS", 16).clamp(2, 200) as usize;
        let seconds = number("SOAK_SECONDS", 30).max(20);
        let clock = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        SoakConfig {
            clients,
            duration: Duration::from_secs(seconds),
            sample_every: Duration::from_secs(if seconds >= 120 { 2 } else { 1 }),
            seed: number("SOAK_SEED", clock),
        }
    }

    /// How many clients the harness keeps connected at once: all slots when there are more
    /// clients than slots (so some connects meet a full server), else three quarters of them
    /// (so there are always some resting).
    pub fn target_connected(&self) -> usize {
        SLOTS.min((self.clients * 3 / 4).max(2))
    }
}

/// The result of a run.
pub struct SoakOutcome {
    /// The figures, several lines.
    pub summary: String,
    /// Everything that broke the rules (empty: the soak passed).
    pub failures: Vec<String>,
}

/// Run the soak.
pub fn run(config: &SoakConfig) -> SoakOutcome {
    let program = Build::c("c/peer_game.c").build();
    let slots = SLOTS.to_string();
    let server = Server::start(
        "gameserver",
        &[
            "--port",
            "0",
            "--udp-port",
            "0",
            "--no-http",
            "--bind",
            "127.0.0.1",
            "--name",
            "soak",
            "--max-players",
            &slots,
            "--max-per-address",
            "256",
        ],
    );
    let pid = server.pid();
    println!(
        "soak: {} clients for {:?} against {} (seed {}; SOAK_SEED={} repeats the choices)",
        config.clients, config.duration, server.tcp, config.seed, config.seed
    );
    let address = server.tcp.to_string();
    std::thread::sleep(Duration::from_millis(500));
    let idle_before = proc_stats::sample(pid, Duration::ZERO);
    let mut failures = Vec::new();
    let mut rng = Rng::new(config.seed);

    let start = Instant::now();
    let mut clients: Vec<SoakClient> = (0..config.clients)
        .map(|i| {
            let name = format!("soak{i:02}");
            let game = LiveGame::spawn(
                &name,
                client_command(&program, &name, &address, config),
                false,
            );
            SoakClient::new(game, Instant::now())
        })
        .collect();

    let mut samples: Vec<Sample> = Vec::new();
    let mut next_sample = start;
    let target = config.target_connected();
    let mut server_alive = true;
    while start.elapsed() < config.duration && server_alive {
        let now = Instant::now();
        for client in clients.iter_mut() {
            client.step(now, &mut rng);
        }
        let mut connected = clients.iter().filter(|c| c.occupies_slot()).count();
        while connected < target {
            let ready: Vec<usize> = (0..clients.len())
                .filter(|&i| clients[i].ready_to_connect(now))
                .collect();
            if ready.is_empty() {
                break;
            }
            clients[ready[rng.below(ready.len())]].connect(&address, now);
            connected += 1;
        }
        if now >= next_sample {
            next_sample += config.sample_every;
            match proc_stats::sample(pid, start.elapsed()) {
                Some(sample) => samples.push(sample),
                None => {
                    failures.push("the gameserver's /proc entry is gone".to_string());
                    server_alive = false;
                }
            }
            for client in clients.iter_mut() {
                if client.game.process.has_exited() {
                    failures.push(format!("client {} exited during the soak", client.name()));
                    server_alive = false;
                }
            }
        }
        std::thread::sleep(TICK);
    }
    let ran_for = start.elapsed();

    // Wind down: everyone stops its series and leaves once quiet; late connections leave too.
    let wind_down = Instant::now();
    for client in clients.iter_mut() {
        client.wind_down(wind_down);
    }
    while clients.iter().any(SoakClient::occupies_slot) && wind_down.elapsed() < WIND_DOWN_TIMEOUT {
        let now = Instant::now();
        for client in clients.iter_mut() {
            client.step(now, &mut rng);
            client.leave_if_seated(now);
        }
        std::thread::sleep(TICK);
    }
    let still: Vec<&str> = clients
        .iter()
        .filter(|c| c.occupies_slot())
        .map(|c| c.name())
        .collect();
    if !still.is_empty() {
        failures.push(format!(
            "still connected {WIND_DOWN_TIMEOUT:?} into the wind-down: {still:?}"
        ));
    }
    std::thread::sleep(SETTLE);
    let idle_after = proc_stats::sample(pid, start.elapsed());

    let outputs: Vec<String> = clients.iter().map(|c| c.game.process.stdout()).collect();
    let verdict = delivery::judge(&clients, &outputs);
    failures.extend(verdict.failures.iter().cloned());
    let mut totals = Counts::default();
    for client in &clients {
        add(&mut totals, &client.counts);
        for problem in &client.problems {
            failures.push(format!("client {}: {problem}", client.name()));
        }
    }
    check_cycled(&totals, &verdict, &mut failures);

    for client in clients.iter_mut() {
        let _ = client.game.process.send("@quit");
    }
    for client in clients {
        let name = client.name().to_string();
        let run = client.into_game().finish(QUIT_TIMEOUT);
        if !run.output.status.success() {
            failures.push(format!("client {name} ended with {}", run.output.status));
        }
    }
    let server_output = server.stop();
    if !server_output.status.success() {
        failures.push(format!(
            "the gameserver ended with {} after SIGTERM",
            server_output.status
        ));
    }
    let server_said: Vec<&str> = server_output
        .stdout
        .lines()
        .skip_while(|l| !l.contains(" stopped;"))
        .collect();
    // Every client leaves with `remove me`; a joined connection that closed without it reaching
    // the server is a lost leave.
    let dropped = server_counter(&server_said, "dropped_connections");
    if dropped > 0 {
        failures.push(format!(
            "the gameserver counted {dropped} dropped connections: leaves whose `remove me` it \
             never read"
        ));
    }

    let growth_line = match growth(&samples, ran_for.min(config.duration), LIMITS) {
        Ok(g) => {
            if !g.within_limits() {
                failures.push(format!("the gameserver grew: {}", g.describe()));
            }
            g.describe()
        }
        Err(why) => {
            failures.push(why.clone());
            why
        }
    };
    let idle_line = match (idle_before, idle_after) {
        (Some(before), Some(after)) => {
            if after.fds > before.fds {
                failures.push(format!(
                    "the idle gameserver holds more file descriptors after the soak ({}) than \
                     before it ({})",
                    after.fds, before.fds
                ));
            }
            format!(
                "idle before: {} KiB, {} fds; idle after: {} KiB, {} fds",
                before.rss_kib, before.fds, after.rss_kib, after.fds
            )
        }
        _ => {
            failures.push("no idle reading of the gameserver".to_string());
            "idle readings missing".to_string()
        }
    };
    let summary = format!(
        "soak: {} clients, {:?} (seed {}), up to {} connected at once on {} slots\n\
         cycles: {} connect attempts, {} joins, {} refused (server full), {} connect timeouts, \
         {} unjoins, {} rejoins, {} disconnects, {} protocol switches\n\
         series: {} numbers accepted, {} (number, receiver) pairs owed, {} events delivered, {} \
         excused (receiver left), {} not owed and not delivered (receiver absent)\n\
         gameserver: {growth_line}\n{idle_line}\n{}",
        config.clients,
        ran_for,
        config.seed,
        target,
        SLOTS,
        totals.connect_attempts,
        totals.joins,
        totals.refused,
        totals.connect_timeouts,
        totals.unjoins,
        totals.rejoins,
        totals.disconnects,
        totals.switches,
        verdict.accepted,
        verdict.owed,
        verdict.delivered,
        verdict.excused,
        verdict.not_owed_lost,
        server_said.join("\n")
    );
    SoakOutcome { summary, failures }
}

/// The command of one client: loopback, gameserver protocol, connecting to `server` at once,
/// kept running and driven on stdin, sending its series when told.
fn client_command(
    program: &std::path::Path,
    name: &str,
    server: &str,
    config: &SoakConfig,
) -> Command {
    let mut command = Command::new(program);
    command.args(["--name", name, "--control", "--expect", "1"]);
    command.args(["--series-ms", &SERIES_MS.to_string()]);
    command.args(["--frame-ms", &FRAME_MS.to_string()]);
    let whole_run = config.duration + WIND_DOWN_TIMEOUT;
    command.args(["--duration", &whole_run.as_millis().to_string()]);
    for line in [
        "net.udp.bind 127.0.0.1",
        "net.udp.ipv6 0",
        "net.port 0",
        "net.subsys gameserver",
    ] {
        command.args(["--exec", line]);
    }
    command.args(["--peer", server]);
    command
}

/// `NAME=N` from the server's stop summary (0 when absent: it prints only counters above 0).
fn server_counter(lines: &[&str], name: &str) -> u64 {
    let key = format!("{name}=");
    lines
        .iter()
        .flat_map(|l| l.split_whitespace())
        .find_map(|word| word.strip_prefix(key.as_str()))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn add(total: &mut Counts, one: &Counts) {
    total.connect_attempts += one.connect_attempts;
    total.joins += one.joins;
    total.refused += one.refused;
    total.connect_timeouts += one.connect_timeouts;
    total.unjoins += one.unjoins;
    total.rejoins += one.rejoins;
    total.disconnects += one.disconnects;
    total.switches += one.switches;
}

/// The soak really cycled: clients joined, unjoined, disconnected and switched protocol, and
/// series numbers were owed and delivered (so a run that did nothing cannot pass).
fn check_cycled(totals: &Counts, verdict: &delivery::DeliveryVerdict, failures: &mut Vec<String>) {
    for (what, count) in [
        ("joins", totals.joins),
        ("unjoins", totals.unjoins),
        ("disconnects", totals.disconnects),
        ("protocol switches", totals.switches),
        ("owed series numbers", verdict.owed),
        ("delivered series events", verdict.delivered),
    ] {
        if count == 0 {
            failures.push(format!("the soak did not cycle: no {what}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::server_counter;

    #[test]
    fn counters_are_read_from_the_stop_summary_and_absent_ones_are_zero() {
        let said = [
            "gameserver 'soak' stopped; joins=302 removes=298 dropped_connections=4",
            "  relay: 0 clients",
        ];
        assert_eq!(server_counter(&said, "dropped_connections"), 4);
        assert_eq!(server_counter(&said, "joins"), 302);
        assert_eq!(
            server_counter(&said, "connections"),
            0,
            "a prefix is not a match"
        );
        assert_eq!(server_counter(&said[..1], "udp_datagrams_in"), 0);
    }
}
