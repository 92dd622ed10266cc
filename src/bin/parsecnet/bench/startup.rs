//! Peer-to-peer startup: four whole-stack peer processes started together; once each has its
//! socket, all four are told at the same moment to connect (three to the address of the one with
//! the highest port, which wins conflicts; it to the lowest), with the protocol's default timings. Each measures, from its
//! `connect` to the frame in which it holds a slot and sees the three others, how long it took;
//! a run's figure is the slowest of the four (when all are in the game loop).

use std::time::Duration;

use super::child_process::{field, ChildProcess};
use super::json::Json;
use super::report::{Figure, Section};
use super::sampling::{percentile, sorted};

pub const TITLE: &str = "p2p startup, 4 peers";

const PEERS: usize = 4;

/// One run: each peer's time to the game loop, in ms.
fn one_run(run: usize) -> Result<Vec<f64>, String> {
    let mut peers = (0..PEERS)
        .map(|i| ChildProcess::spawn("peer", &[&format!("start{run}p{i}")]))
        .collect::<Result<Vec<_>, _>>()?;
    let wait = Duration::from_secs(20);
    let ports = peers
        .iter_mut()
        .map(|p| p.expect("port", wait))
        .collect::<Result<Vec<_>, _>>()?;
    // The peer with the highest port wins conflicts (higher node address): the others ask it,
    // and it asks the lowest one.
    let numbers: Vec<u16> = ports.iter().map(|p| p.parse().unwrap_or(0)).collect();
    let highest = (0..PEERS).max_by_key(|&i| numbers[i]).unwrap_or(0);
    let lowest = (0..PEERS).min_by_key(|&i| numbers[i]).unwrap_or(0);
    for (i, peer) in peers.iter_mut().enumerate() {
        let target = if i == highest {
            &ports[lowest]
        } else {
            &ports[highest]
        };
        peer.send(&format!(
            "connect-settle 127.0.0.1:{target} {} 30",
            PEERS - 1
        ))?;
    }
    let mut times = Vec::new();
    for peer in &mut peers {
        let ready = peer.expect("ready", Duration::from_secs(40))?;
        times.push(field::<f64>(&ready, "ms")?);
    }
    for peer in peers {
        peer.finish();
    }
    Ok(times)
}

pub fn measure(runs: usize) -> Result<Section, String> {
    let mut all_in = Vec::new();
    let mut per_peer = Vec::new();
    for run in 0..runs {
        let times = one_run(run)?;
        all_in.push(times.iter().copied().fold(0.0, f64::max));
        per_peer.push(Json::nums(times));
    }
    let sorted_all = sorted(all_in.clone());
    let mut s = Section::new("p2p_startup", TITLE);
    s.figure(Figure::new(
        "all_in_p50_ms",
        "all 4 in the game loop, p50 of runs",
        percentile(&sorted_all, 50.0),
        "ms",
    ));
    s.figure(Figure::new(
        "all_in_max_ms",
        "all 4 in the game loop, max of runs",
        percentile(&sorted_all, 100.0),
        "ms",
    ));
    s.figure(Figure::new("runs", "runs", runs as f64, ""));
    s.note(format!(
        "{runs} runs of 4 processes on 127.0.0.1 with default connect timings (requests ~330 ms apart, 10 tries); time from `connect` to holding a slot and seeing the 3 others, slowest peer of each run"
    ));
    s.data
        .push(("per_run_all_in_ms".into(), Json::nums(all_in)));
    s.data
        .push(("per_run_per_peer_ms".into(), Json::Arr(per_peer)));
    Ok(s)
}
