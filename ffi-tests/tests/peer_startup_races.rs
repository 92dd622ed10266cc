//! The peer-to-peer startup election and game loop of SPEC section 6 as real `c/peer_game.c`
//! processes meet it when players do not start in step: each game starts after a random delay of
//! 0-1500 ms (or all at once), with the default peer timings.
//!
//! - 2, 3, 4 and 5 games on 127.0.0.1, each on its own port: the first calls `NETs_Connect()`
//!   with no address, every other one `connect 127.0.0.1:PORT` of a game picked at random among
//!   the ones before it (which may start later than it): up to four end in one game in distinct
//!   slots and each gets everything from every other (`check_all_met`); with five, four do and
//!   the fifth gets one NET_EVENT_ERROR saying the game is full. Four once ended in two games
//!   here in about one run of three (a slave stopped asking its own address when it yielded).
//! - 2, 3, 4 and 5 games on a private namespace LAN (`harness/netns.rs`) that find each other by
//!   broadcast only: the same.
//! - On the LAN, the temporary master (the highest address, with a long connect loop) is killed
//!   (SIGKILL) while the two others wait for their slot: each gets one error event saying the
//!   slot request timed out, connects again (`--connect-tries 2`) and the two end in one game.
//! - Three games on 127.0.0.1 with `net.timeout 3` meet; one picked at random is killed: the two
//!   others each get one PLAYER_DISCONNECTED for its slot, and a newcomer connecting to one of
//!   them picked at random is seated, answered by the survivor of rank 0 (the higher port) and
//!   not the other: all three then list the same players in the same slots.
//! - On the LAN, three games meet by broadcast and a fourth, from a random host, asks by
//!   broadcast after a random delay: only the player of rank 0 (the highest address) answers,
//!   and all four list the same players in the same slots.
//!
//! Every scenario runs once by default; `PEER_RACE_RUNS=N` repeats it N times and
//! `PEER_RACE_SEED=S` fixes the random choices (the seed of each run is printed; with
//! `PEER_RACE_PLAYERS=N` only the runs of N games, whose choices then differ). The namespace
//! scenarios need root; without it they print SKIPPED and pass.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parsec_net_ffi_tests::live::LiveGame;
use parsec_net_ffi_tests::netns::{unavailable, Lan};
use parsec_net_ffi_tests::peer::{
    check_all_met, check_met_each_other, check_ran_well, free_loopback_ports, game_args,
    run_together, Event, GameRun,
};
use parsec_net_ffi_tests::Build;

const NAMES: [&str; 5] = ["ann", "bea", "cid", "dot", "eve"];
/// Long enough for a staggered start, the default 3.3 s connect loop and a 13.4 s slot wait.
const DURATION_MS: u64 = 25_000;
const TIMEOUT: Duration = Duration::from_secs(60);
const WAIT: Duration = Duration::from_secs(30);

/// A small deterministic generator (xorshift64*), seeded per run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The seeds of the runs of one scenario: `PEER_RACE_RUNS` (default 1) of them, from
/// `PEER_RACE_SEED` or the clock.
fn seeds(scenario: &str) -> Vec<u64> {
    let runs: usize = std::env::var("PEER_RACE_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let first = std::env::var("PEER_RACE_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    let seeds = run_seeds(first, runs);
    for (i, seed) in seeds.iter().enumerate() {
        println!("{scenario}: run {i}, PEER_RACE_SEED={seed}");
    }
    seeds
}

/// The seeds of `runs` runs from `first`: odd (the generator's seed) and all different, the
/// first one `first` itself when it is odd (a printed seed replays its run).
fn run_seeds(first: u64, runs: usize) -> Vec<u64> {
    (0..runs as u64)
        .map(|i| (first | 1).wrapping_add(2 * i))
        .collect()
}

#[test]
fn repeated_runs_get_different_seeds() {
    // `first + i | 1` gave runs 0 and 1, 2 and 3... one seed: half the runs repeated choices.
    for first in [0, 1, 1_795_668_805_103_221_312, u64::MAX - 2] {
        let seeds = run_seeds(first, 6);
        let distinct: std::collections::BTreeSet<u64> = seeds.iter().copied().collect();
        assert_eq!(distinct.len(), 6, "from {first}: {seeds:?}");
        assert!(seeds.iter().all(|s| s % 2 == 1), "from {first}: {seeds:?}");
    }
    assert_eq!(
        run_seeds(1_795_668_805_103_221_313, 1),
        [1_795_668_805_103_221_313]
    );
}

/// The numbers of games to run of `all`: only `PEER_RACE_PLAYERS` if set (replaying a run of
/// that many), else all.
fn counts(all: std::ops::RangeInclusive<usize>) -> Vec<usize> {
    match std::env::var("PEER_RACE_PLAYERS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        Some(n) => all.filter(|&c| c == n).collect(),
        None => all.collect(),
    }
}

/// How long the games of a run of `n` stay after they have everything. With five, the four
/// seated stay until the fifth's refusal stands (its connect loop goes on after a refusal, 3.3
/// s, and once more as a slave): a slot freed before then is rightly given to it.
fn linger(n: usize) -> u64 {
    if n > 4 {
        10_000
    } else {
        1500
    }
}

/// Random start delays: all 0 one run in four, else each 0-1500 ms.
fn delays(rng: &mut Rng, n: usize) -> Vec<u64> {
    let together = rng.below(4) == 0;
    (0..n)
        .map(|_| if together { 0 } else { rng.below(1501) })
        .collect()
}

/// Run `check`; if it fails, print every game's whole output first (the failure names one).
fn checked<T>(runs: &[GameRun], check: impl FnOnce() -> T) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(check)) {
        Ok(value) => value,
        Err(panic) => {
            for run in runs {
                println!("=== game {} ===\n{}", run.name, run.output.transcript());
            }
            std::panic::resume_unwind(panic)
        }
    }
}

/// All games ended in one game with everything from everyone; with five, four did and the
/// fifth, never seated, got one error event saying the game is full.
fn check_outcome(runs: Vec<GameRun>) {
    if runs.len() <= 4 {
        let slots = checked(&runs, || check_all_met(&runs));
        println!("  slots {slots:?}");
        return;
    }
    let names: Vec<String> = runs.iter().map(|r| r.name.clone()).collect();
    let (seated, refused): (Vec<GameRun>, Vec<GameRun>) = runs
        .into_iter()
        .partition(|run| run.report.connected_slot().is_some());
    let all: Vec<&GameRun> = seated.iter().chain(&refused).collect();
    let dump = || {
        for run in &all {
            println!("=== game {} ===\n{}", run.name, run.output.transcript());
        }
    };
    for run in &refused {
        let errors = error_events(run);
        if errors.len() != 1 || !errors[0].text.contains("game full") {
            dump();
            run.fail(&format!(
                "never seated, expected one error event saying the game is full: {errors:?}"
            ));
        }
    }
    if seated.len() != 4 {
        dump();
        panic!(
            "expected four seated players of {names:?}, got {:?}",
            seated.iter().map(|r| &r.name).collect::<Vec<_>>()
        );
    }
    let slots = checked(&seated, || {
        for run in &seated {
            check_ran_well(run);
        }
        check_met_each_other(&seated, &|_, _| true, &[])
    });
    for run in &refused {
        let text = &run
            .report
            .events
            .iter()
            .find(|e| e.kind == "ERROR")
            .expect("checked")
            .text;
        println!("  slots {slots:?}, {} refused: {text:?}", run.name);
    }
}

/// `command` started after `delay_ms` (through `sh`, which execs it in place).
fn delayed(command: Command, delay_ms: u64) -> Command {
    let mut wrapped = Command::new("sh");
    wrapped
        .arg("-c")
        .arg("sleep \"$0\"; exec \"$@\"")
        .arg(format!("{}.{:03}", delay_ms / 1000, delay_ms % 1000))
        .arg(command.get_program())
        .args(command.get_args());
    for (key, value) in command.get_envs() {
        if let Some(value) = value {
            wrapped.env(key, value);
        }
    }
    wrapped
}

fn loopback_lines(port: u16) -> Vec<String> {
    vec![
        "net.udp.bind 127.0.0.1".into(),
        "net.udp.ipv6 0".into(),
        format!("net.port {port}"),
    ]
}

fn staggered_loopback(n: usize, rng: &mut Rng) {
    let program = Build::c("c/peer_game.c").build();
    let ports = free_loopback_ports(n);
    let delays = delays(rng, n);
    let targets: Vec<Option<usize>> = (0..n)
        .map(|i| (i > 0).then(|| rng.below(i as u64) as usize))
        .collect();
    println!("  {n} games on loopback, delays {delays:?} ms, targets {targets:?}");
    let games = (0..n)
        .map(|i| {
            let peer = targets[i].map(|t| format!("127.0.0.1:{}", ports[t]));
            let mut command = Command::new(&program);
            command.args(game_args(
                NAMES[i],
                &loopback_lines(ports[i]),
                peer.as_deref(),
                n.min(4) - 1,
                DURATION_MS,
                linger(n),
            ));
            (NAMES[i].to_string(), delayed(command, delays[i]))
        })
        .collect();
    check_outcome(run_together(games, TIMEOUT, false));
}

#[test]
fn staggered_games_on_loopback_with_explicit_targets_meet_in_one_game_and_a_fifth_is_refused() {
    for seed in seeds("loopback") {
        let mut rng = Rng(seed);
        for n in counts(2..=5) {
            staggered_loopback(n, &mut rng);
        }
    }
}

/// `n` games on the LAN, started after random delays, finding each other by broadcast.
fn staggered_broadcast(n: usize, rng: &mut Rng) {
    let program = Build::c("c/peer_game.c").build();
    let lan = Lan::create(n);
    let delays = delays(rng, n);
    println!("  {n} games by broadcast, delays {delays:?} ms");
    let setup = vec![format!("net.udp.broadcast {}", lan.broadcast())];
    let games = (0..n)
        .map(|i| {
            let mut command = lan.command(i, &program);
            command.args(game_args(
                NAMES[i],
                &setup,
                None,
                n.min(4) - 1,
                DURATION_MS,
                linger(n),
            ));
            (NAMES[i].to_string(), delayed(command, delays[i]))
        })
        .collect();
    let runs = run_together(games, TIMEOUT, false);
    check_outcome(runs);
}

#[test]
fn staggered_games_finding_each_other_by_broadcast_meet_in_one_game_and_a_fifth_is_refused() {
    if let Some(why) = unavailable() {
        println!("SKIPPED: needs root for network namespaces ({why})");
        return;
    }
    for seed in seeds("broadcast") {
        let mut rng = Rng(seed);
        for n in counts(2..=5) {
            staggered_broadcast(n, &mut rng);
        }
    }
}

fn live(command: Command, name: &str) -> LiveGame {
    LiveGame::spawn(name, command, false)
}

fn live_args(name: &str, setup: &[String], peer: Option<&str>, expect: usize) -> Vec<String> {
    let mut args = game_args(name, setup, peer, expect, 120_000, 500);
    args.push("--control".into());
    args
}

/// Wait until `game`'s `status` contains `needle`.
fn wait_status(game: &mut LiveGame, needle: &str) {
    for _ in 0..600 {
        let (_, reply) = game.exec("status");
        if reply.contains(needle) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    game.fail(&format!("status never said {needle:?}"));
}

fn master_killed(rng: &mut Rng) {
    let program = Build::c("c/peer_game.c").build();
    let lan = Lan::create(3);
    let mut setup = vec![
        format!("net.udp.broadcast {}", lan.broadcast()),
        "net.peer.slot_tries 20".to_string(),
        "net.peer.slot_interval 300".to_string(),
    ];
    // The master (the highest address) collects requests for 10 s before it seats anyone.
    let mut master_setup = setup.clone();
    master_setup.push("net.peer.connect_tries 40".into());
    master_setup.push("net.peer.connect_interval 250".into());
    setup.push("net.peer.connect_tries 10".into());
    let mut master_command = lan.command(2, &program);
    master_command.args(live_args("cid", &master_setup, None, 2));
    let mut master = live(master_command, "cid");
    let delays = delays(rng, 2);
    println!("  slaves start after {delays:?} ms");
    let mut slaves: Vec<LiveGame> = (0..2)
        .map(|i| {
            let mut command = lan.command(i, &program);
            command.args(live_args(NAMES[i], &setup, None, 1));
            command.args(["--connect-tries", "2"]);
            live(delayed(command, delays[i]), NAMES[i])
        })
        .collect();
    for slave in &mut slaves {
        wait_status(slave, "waiting for a slot");
    }
    std::thread::sleep(Duration::from_millis(rng.below(1000)));
    master.process.kill();
    for slave in &slaves {
        if !slave.wait_complete(WAIT) {
            slave.fail("did not meet the other slave after the master died");
        }
    }
    let runs: Vec<GameRun> = slaves.into_iter().map(|g| g.quit(WAIT)).collect();
    for run in &runs {
        let errors = error_events(run);
        if errors.len() != 1 || !errors[0].text.contains("slot") {
            run.fail(&format!(
                "expected one error event about the slot request: {errors:?}"
            ));
        }
    }
    let slots = check_met_each_other(&runs, &|_, _| true, &[]);
    println!("  slots after the master died {slots:?}");
}

#[test]
fn slaves_whose_temporary_master_is_killed_time_out_connect_again_and_meet() {
    if let Some(why) = unavailable() {
        println!("SKIPPED: needs root for network namespaces ({why})");
        return;
    }
    for seed in seeds("master_killed") {
        master_killed(&mut Rng(seed));
    }
}

/// The `replies sent` protocol counter in `game`'s `status` (0 when not shown).
fn replies_sent(game: &mut LiveGame) -> u64 {
    let (_, reply) = game.exec("status");
    reply
        .split(&[',', ':', '\n'][..])
        .map(str::trim)
        .find_map(|part| part.strip_prefix("replies sent "))
        .and_then(|n| n.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// slot -> name of every player `game` lists now, with its own.
fn table(game: &mut LiveGame) -> BTreeMap<i32, String> {
    let summary = game.summary_now();
    let mut table: BTreeMap<i32, String> = summary
        .players
        .iter()
        .map(|p| (p.slot, p.name.clone()))
        .collect();
    table.insert(summary.slot, summary.name.clone());
    table
}

/// Fails unless every game met the others.
fn meet_all(games: &[LiveGame]) {
    for game in games {
        if !game.wait_complete(WAIT) {
            game.fail("did not meet the others");
        }
    }
}

/// Waits until `newcomer` is seated and each of `games` saw it join after its line `marks[i]`.
fn wait_seated(newcomer: &LiveGame, games: &[LiveGame], marks: &[usize]) {
    let at = newcomer.wait_event_where(0, WAIT, |e| e.kind == "CONNECTED");
    let slot = newcomer.report().events[at].player;
    for (game, mark) in games.iter().zip(marks) {
        game.wait_event(*mark, "PLAYER_JOINED", slot, WAIT);
    }
}

/// The replies each game sent since it had sent `before`.
fn replies_since(games: &mut [LiveGame], before: &[u64]) -> Vec<u64> {
    games
        .iter_mut()
        .map(replies_sent)
        .zip(before)
        .map(|(after, before)| after - before)
        .collect()
}

/// Fails unless every game soon lists the same `players` players in the same slots (names
/// from the game).
fn tables_agree(games: &mut [LiveGame], players: usize) {
    let mut tables = Vec::new();
    for _ in 0..50 {
        tables = games.iter_mut().map(table).collect::<Vec<_>>();
        if tables.iter().all(|t| t.len() == players && *t == tables[0]) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    if !tables.iter().all(|t| t.len() == players && *t == tables[0]) {
        games[0].fail(&format!("the player tables disagree: {tables:?}"));
    }
    println!("  tables agree: {:?}", tables[0]);
}

/// The ERROR events the run polled.
fn error_events(run: &GameRun) -> Vec<&Event> {
    run.report
        .events
        .iter()
        .filter(|e| e.kind == "ERROR")
        .collect()
}

/// Fails if the run polled an ERROR event.
fn no_error_event(run: &GameRun) {
    if let Some(error) = run.report.events.iter().find(|e| e.kind == "ERROR") {
        run.fail(&format!("an error event: {}", error.text));
    }
}

fn killed_and_newcomer(rng: &mut Rng, program: &Path) {
    let ports = free_loopback_ports(4);
    let setup = |i: usize| {
        let mut lines = loopback_lines(ports[i]);
        lines.push("net.timeout 3".into());
        lines
    };
    let delays = delays(rng, 3);
    let mut games: Vec<LiveGame> = (0..3)
        .map(|i| {
            let peer = (i > 0).then(|| format!("127.0.0.1:{}", ports[0]));
            let mut command = Command::new(program);
            command.args(live_args(NAMES[i], &setup(i), peer.as_deref(), 2));
            live(delayed(command, delays[i]), NAMES[i])
        })
        .collect();
    meet_all(&games);
    let victim = rng.below(3) as usize;
    let victim_slot = games[victim].report().connected_slot().expect("seated");
    let mut dead = games.remove(victim);
    dead.process.kill();
    for game in &games {
        game.wait_event(0, "PLAYER_DISCONNECTED", victim_slot, WAIT);
    }
    let host = rng.below(2) as usize;
    let host_port = ports[[0, 1, 2]
        .iter()
        .copied()
        .filter(|&i| i != victim)
        .nth(host)
        .expect("two left")];
    println!(
        "  {} killed (slot {victim_slot}); dot connects to port {host_port}",
        NAMES[victim]
    );
    let survivors: Vec<usize> = (0..3).filter(|&i| i != victim).collect();
    let replies_before: Vec<u64> = games.iter_mut().map(replies_sent).collect();
    let marks: Vec<usize> = games.iter().map(|g| g.process.line_count()).collect();
    let mut command = Command::new(program);
    command.args(live_args(
        "dot",
        &setup(3),
        Some(&format!("127.0.0.1:{host_port}")),
        2,
    ));
    let newcomer = live(command, "dot");
    wait_seated(&newcomer, &games, &marks);
    // The rank-0 survivor (the higher node: the higher port on 127.0.0.1) answers; the other
    // one only forwards the request to it and defers (SPEC 6: rank r answers after r x
    // wait-interval unless it snoops another peer's reply first).
    let replies = replies_since(&mut games, &replies_before);
    let highest = if ports[survivors[0]] > ports[survivors[1]] {
        0
    } else {
        1
    };
    println!("  newcomer answered: replies sent by the survivors {replies:?}, rank 0 is {highest}");
    if replies[highest] == 0 || replies[1 - highest] != 0 {
        games[1 - highest].fail(&format!(
            "the newcomer should be answered by the rank-0 survivor ({}) only: replies {replies:?}",
            games[highest].name()
        ));
    }
    games.push(newcomer);
    // Every one lists the same players in the same slots (names from the game).
    tables_agree(&mut games, 3);
    for game in games {
        let run = game.quit(WAIT);
        let disconnects = run
            .report
            .events
            .iter()
            .filter(|e| e.kind == "PLAYER_DISCONNECTED" && e.player == victim_slot)
            .count();
        if run.name != "dot" && disconnects != 1 {
            run.fail(&format!(
                "{disconnects} PLAYER_DISCONNECTED for the killed slot {victim_slot}"
            ));
        }
        no_error_event(&run);
    }
}

#[test]
fn a_killed_player_is_dropped_and_a_newcomer_is_seated_by_the_rest() {
    let program = Build::c("c/peer_game.c").build();
    for seed in seeds("killed_newcomer") {
        killed_and_newcomer(&mut Rng(seed), &program);
    }
}

/// Three games meet by broadcast on the LAN (random delays); a fourth starts after a random
/// 0-1500 ms and asks by broadcast, so every player hears it: the player of rank 0 (the highest
/// address) answers, the others hear its reply (or defer) and send none; all four then list
/// the same players in the same slots.
fn broadcast_newcomer(rng: &mut Rng, program: &Path) {
    let lan = Lan::create(4);
    let setup = vec![format!("net.udp.broadcast {}", lan.broadcast())];
    let delays = delays(rng, 3);
    // Which host the newcomer is on: its address may be above or below the others'.
    let newcomer_host = rng.below(4) as usize;
    let hosts: Vec<usize> = (0..4).filter(|&h| h != newcomer_host).collect();
    let mut games: Vec<LiveGame> = hosts
        .iter()
        .enumerate()
        .map(|(i, &host)| {
            let mut command = lan.command(host, program);
            command.args(live_args(NAMES[i], &setup, None, 2));
            live(delayed(command, delays[i]), NAMES[i])
        })
        .collect();
    meet_all(&games);
    let replies_before: Vec<u64> = games.iter_mut().map(replies_sent).collect();
    let marks: Vec<usize> = games.iter().map(|g| g.process.line_count()).collect();
    let wait = rng.below(1501);
    println!(
        "  started after {delays:?} ms on hosts {hosts:?}; dot on host {newcomer_host} after \
         {wait} ms more"
    );
    std::thread::sleep(Duration::from_millis(wait));
    let mut command = lan.command(newcomer_host, program);
    command.args(live_args("dot", &setup, None, 2));
    let newcomer = live(command, "dot");
    wait_seated(&newcomer, &games, &marks);
    let replies = replies_since(&mut games, &replies_before);
    // The hosts' addresses rise with their index: the last of `hosts` has rank 0.
    let top = games.len() - 1;
    println!(
        "  replies sent to the newcomer {replies:?} (rank 0: {})",
        games[top].name()
    );
    if replies[top] == 0 || replies[..top].iter().any(|&n| n != 0) {
        games[top].fail(&format!(
            "the newcomer should be answered by the rank-0 player only: replies {replies:?}"
        ));
    }
    games.push(newcomer);
    tables_agree(&mut games, 4);
    for game in games {
        let run = game.quit(WAIT);
        no_error_event(&run);
    }
}

#[test]
fn a_newcomer_asking_by_broadcast_is_answered_by_the_player_of_rank_0() {
    if let Some(why) = unavailable() {
        println!("SKIPPED: needs root for network namespaces ({why})");
        return;
    }
    let program = Build::c("c/peer_game.c").build();
    for seed in seeds("broadcast_newcomer") {
        broadcast_newcomer(&mut Rng(seed), &program);
    }
}
