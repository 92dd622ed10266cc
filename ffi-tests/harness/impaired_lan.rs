//! A namespace LAN (`netns.rs`) whose switch damages traffic the way `tc netem` does: delay with
//! jitter, loss, duplication and reordering, on both directions of every impaired host's veth.
//!
//! The kernel here is built without `sch_netem` (`CONFIG_NET_SCH_NETEM` is not set and it loads
//! no modules), so the LAN's bridge is replaced by `netem_hub.c`: the veths' LAN ends leave `br0`
//! and the hub, running in the bridge namespace, switches the Ethernet frames between them
//! through AF_PACKET sockets, passing each frame through a netem-like stage when it leaves a host
//! and again when it reaches one (exactly where `tc qdisc add dev eth0 root netem ...` in the
//! host's namespace and `tc qdisc add dev vI root netem ...` on the LAN end would act). The
//! programs under test still talk through their own kernel's sockets, veths and IP stack; only
//! the queueing discipline is a separate process. The hub's counters show what it did, so a test
//! can prove that the damage really happened.
//!
//! Dropping the LAN stops the hub and deletes the namespaces (also while unwinding).

use std::process::Command;
use std::time::Duration;

use crate::compile::Build;
use crate::live::Running;
use crate::netns::Lan;

/// How long the hub may take to open its sockets.
const START_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the hub may take to print its counters.
const STATS_TIMEOUT: Duration = Duration::from_secs(5);

/// What each impaired direction of a veth does, in netem's terms.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Impairment {
    /// `delay MS`.
    pub delay_ms: u32,
    /// `delay MS JITTER`: a uniform offset in [-JITTER, JITTER) (the total at least 0).
    pub jitter_ms: u32,
    /// `loss PCT`.
    pub loss_pct: f64,
    /// `duplicate PCT`.
    pub duplicate_pct: f64,
    /// `reorder PCT CORRELATION`: a frame is sent at once, ahead of the delayed ones.
    pub reorder_pct: f64,
    pub reorder_correlation_pct: f64,
}

impl Impairment {
    /// Issue 9's `netem delay 50ms 100ms loss 20% duplicate 5% reorder 25% 50%`.
    pub const ISSUE_9: Impairment = Impairment {
        delay_ms: 50,
        jitter_ms: 100,
        loss_pct: 20.0,
        duplicate_pct: 5.0,
        reorder_pct: 25.0,
        reorder_correlation_pct: 50.0,
    };

    /// The same written as a netem qdisc's options (for messages).
    pub fn as_netem(&self) -> String {
        format!(
            "netem delay {}ms {}ms loss {}% duplicate {}% reorder {}% {}%",
            self.delay_ms,
            self.jitter_ms,
            self.loss_pct,
            self.duplicate_pct,
            self.reorder_pct,
            self.reorder_correlation_pct
        )
    }

    fn hub_args(&self) -> Vec<String> {
        [
            ("--delay", self.delay_ms.to_string()),
            ("--jitter", self.jitter_ms.to_string()),
            ("--loss", self.loss_pct.to_string()),
            ("--duplicate", self.duplicate_pct.to_string()),
            ("--reorder", self.reorder_pct.to_string()),
            (
                "--reorder-correlation",
                self.reorder_correlation_pct.to_string(),
            ),
        ]
        .into_iter()
        .flat_map(|(option, value)| [option.to_string(), value])
        .collect()
    }
}

/// What one impaired direction of one host's veth did to the frames through it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StageStats {
    /// The host's index.
    pub host: usize,
    /// `true`: frames the host sent; `false`: frames to the host.
    pub from_host: bool,
    pub frames: u64,
    pub dropped: u64,
    pub duplicated: u64,
    /// Sent at once by the reorder rule.
    pub reordered: u64,
    /// Left after a frame that arrived later (by the reorder rule or the jitter).
    pub overtaken: u64,
    pub max_delay_ms: u64,
    /// Not impaired (ARP, or a clean port).
    pub passed: u64,
    pub send_errors: u64,
}

impl StageStats {
    /// One line for the test's output.
    pub fn describe(&self) -> String {
        format!(
            "host {} {}: {} frames, {} dropped, {} duplicated, {} sent ahead, {} overtaken, \
             longest delay {} ms, {} passed unimpaired, {} send errors",
            self.host,
            if self.from_host { "sent" } else { "received" },
            self.frames,
            self.dropped,
            self.duplicated,
            self.reordered,
            self.overtaken,
            self.max_delay_ms,
            self.passed,
            self.send_errors
        )
    }
}

/// The counters of every stage, added up.
pub fn totals(stats: &[StageStats]) -> StageStats {
    let mut sum = StageStats::default();
    for s in stats {
        sum.frames += s.frames;
        sum.dropped += s.dropped;
        sum.duplicated += s.duplicated;
        sum.reordered += s.reordered;
        sum.overtaken += s.overtaken;
        sum.max_delay_ms = sum.max_delay_ms.max(s.max_delay_ms);
        sum.passed += s.passed;
        sum.send_errors += s.send_errors;
    }
    sum
}

/// The LAN with its impairing switch.
pub struct ImpairedLan {
    // Declared first, so it is dropped (killed) before the namespaces go.
    hub: Running,
    lan: Lan,
    impairment: Impairment,
    seed: u64,
}

impl ImpairedLan {
    /// A LAN of `hosts` hosts whose veths are impaired by `impairment` in both directions where
    /// `impaired(host)` holds (the others pass frames unchanged). Panics, after removing what it
    /// made, if the hub cannot start.
    pub fn create(
        hosts: usize,
        impairment: Impairment,
        impaired: impl Fn(usize) -> bool,
    ) -> ImpairedLan {
        let program = Build::c("harness/netem_hub.c").build();
        let lan = Lan::create(hosts);
        let bridge = lan.bridge_namespace().to_string();
        for i in 0..hosts {
            let port = lan.bridge_port(i);
            ip(&["-n", &bridge, "link", "set", &port, "nomaster"]);
        }
        ip(&["-n", &bridge, "link", "set", "br0", "down"]);
        // A seed that differs between runs, printed so a failing run's damage can be told.
        let seed = u64::from(std::process::id()) ^ now_nanos();
        let mut command = Command::new("ip");
        command
            .args(["netns", "exec", &bridge])
            .arg(&program)
            .args(impairment.hub_args())
            .args(["--seed", &(seed % 1_000_000_007).to_string()])
            .args(["--max-seconds", "600"]);
        for i in 0..hosts {
            let port = lan.bridge_port(i);
            command.arg(if impaired(i) {
                port
            } else {
                format!("{port}:clean")
            });
        }
        let hub = Running::spawn("netem_hub", command, false);
        if hub
            .wait_for_line(0, START_TIMEOUT, |l| l.starts_with("READY "))
            .is_none()
        {
            panic!(
                "the impairing switch did not start\n{}",
                hub.finish(STATS_TIMEOUT).transcript()
            );
        }
        ImpairedLan {
            hub,
            lan,
            impairment,
            seed: seed % 1_000_000_007,
        }
    }

    /// The namespaces, addresses and commands of the hosts.
    pub fn lan(&self) -> &Lan {
        &self.lan
    }

    pub fn impairment(&self) -> Impairment {
        self.impairment
    }

    /// The hub's random seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The hub's counters now, for every impaired stage.
    pub fn stats(&mut self) -> Vec<StageStats> {
        let start = self.hub.line_count();
        if !self.hub.send("stats") {
            panic!("the impairing switch is gone\n{}", self.hub.transcript());
        }
        let Some(end) = self
            .hub
            .wait_for_line(start, STATS_TIMEOUT, |l| l.starts_with("STATS_END"))
        else {
            panic!(
                "the impairing switch printed no counters\n{}",
                self.hub.transcript()
            );
        };
        let lines = self.hub.lines_from(start);
        let ports: Vec<String> = (0..self.lan.hosts())
            .map(|i| self.lan.bridge_port(i))
            .collect();
        lines[..end - start]
            .iter()
            .filter_map(|line| parse_stage(line, &ports))
            .collect()
    }
}

/// One `STATS port=vI dir=from|to key=N...` line of the hub.
fn parse_stage(line: &str, ports: &[String]) -> Option<StageStats> {
    let rest = line.strip_prefix("STATS ")?;
    let mut stats = StageStats::default();
    for field in rest.split_whitespace() {
        let (key, value) = field.split_once('=')?;
        let number = || value.parse::<u64>().unwrap_or(0);
        match key {
            "port" => stats.host = ports.iter().position(|p| p == value)?,
            "dir" => stats.from_host = value == "from",
            "frames" => stats.frames = number(),
            "dropped" => stats.dropped = number(),
            "duplicated" => stats.duplicated = number(),
            "reordered" => stats.reordered = number(),
            "overtaken" => stats.overtaken = number(),
            "max_delay_ms" => stats.max_delay_ms = number(),
            "passed" => stats.passed = number(),
            "send_errors" => stats.send_errors = number(),
            _ => {}
        }
    }
    Some(stats)
}

fn now_nanos() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos().into())
}

/// Run `ip ARGS`; a failure panics (the LAN made so far is removed by its drop).
fn ip(args: &[&str]) {
    let mut command = Command::new("ip");
    command.args(args);
    let out = crate::process::run(command, Duration::from_secs(20));
    if !out.status.success() {
        panic!("ip {} failed: {}", args.join(" "), out.stderr.trim());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stats_line_is_read() {
        let ports = vec!["v0".to_string(), "v1".to_string()];
        let line = "STATS port=v1 dir=to frames=837 dropped=176 duplicated=46 reordered=63 \
                    overtaken=461 delayed=643 max_delay_ms=149 passed=1 send_errors=0";
        let stats = parse_stage(line, &ports).expect("a stats line");
        assert_eq!(stats.host, 1);
        assert!(!stats.from_host);
        assert_eq!(
            (
                stats.frames,
                stats.dropped,
                stats.duplicated,
                stats.overtaken
            ),
            (837, 176, 46, 461)
        );
        assert_eq!(parse_stage("STATS port=v9 dir=to frames=1", &ports), None);
        assert_eq!(parse_stage("STATS_END queued=0", &ports), None);
    }

    #[test]
    fn the_issue_9_impairment_reads_as_netem() {
        assert_eq!(
            Impairment::ISSUE_9.as_netem(),
            "netem delay 50ms 100ms loss 20% duplicate 5% reorder 25% 50%"
        );
    }
}
