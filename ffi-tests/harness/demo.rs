//! Comparing a demo's playback with what the recording game printed live: a fresh directory
//! for demo files, the EVENT and LOOKUP lines a live `c/peer_game.c` printed while recording,
//! a `peer_game --play FILE` run that must end by itself, and the comparison of the two.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::live::quote;
use crate::paths;
use crate::peer::parse;
use crate::process::run;

/// The longest a playback may take (it lasts about as long as the recording).
pub const PLAY_TIMEOUT: Duration = Duration::from_secs(90);

/// A fresh directory for one test's demo files, removed when dropped (also when it fails).
pub struct DemoDir(pub PathBuf);

impl DemoDir {
    /// `<out>/demos/TAG-PID`.
    pub fn new(tag: &str) -> DemoDir {
        let dir = paths()
            .out_subdir("demos")
            .join(format!("{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        DemoDir(dir)
    }

    /// The path of the file `name` in it.
    pub fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for DemoDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The EVENT and LOOKUP lines printed after the `EXEC` of `from` (or from the start) up to the
/// `EXEC` of `to`.
pub fn polled_between(lines: &[String], from: Option<&str>, to: &str) -> Vec<String> {
    let exec = |line: &str| format!("line={}", quote(line));
    let start = from.map_or(0, |from| {
        lines
            .iter()
            .position(|l| l.starts_with("EXEC ") && l.contains(&exec(from)))
            .expect("the recording's start was run")
    });
    let end = lines
        .iter()
        .position(|l| l.starts_with("EXEC ") && l.contains(&exec(to)))
        .expect("the recording's stop was run");
    lines[start..end]
        .iter()
        .filter(|l| l.starts_with("EVENT ") || l.starts_with("LOOKUP "))
        .cloned()
        .collect()
}

/// The seconds in a `stop` reply: "recorded N items (B bytes, S s) to FILE".
pub fn recorded_seconds(reply: &str) -> f64 {
    let inside = reply
        .split_once('(')
        .and_then(|(_, r)| r.split_once(')'))
        .map(|(i, _)| i)
        .unwrap_or_else(|| panic!("stop reply without a length: {reply}"));
    inside
        .split(", ")
        .nth(1)
        .and_then(|s| s.strip_suffix(" s"))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("stop reply without seconds: {reply}"))
}

/// Play `file` with `program` (`peer_game`) in a fresh process with `flags` (e.g.
/// `--lookups`); its EVENT and LOOKUP lines, checked to have ended by itself (no poll failed,
/// `stop` says it had finished) in about `seconds` (loose bounds).
pub fn play(program: &Path, file: &Path, seconds: f64, flags: &[&str]) -> Vec<String> {
    let mut command = Command::new(program);
    command
        .arg("--play")
        .arg(file)
        .args(["--duration", "80000"])
        .args(flags);
    let out = run(command, PLAY_TIMEOUT);
    out.assert_success("peer_game --play");
    assert!(
        !out.stdout.contains("TIMEOUT") && !out.stdout.lines().any(|l| l.starts_with("POLL ")),
        "playback did not end by itself or a poll failed\n{}",
        out.transcript()
    );
    let report = parse(&out.stdout);
    match &report.stop {
        Some((0, reply)) if reply.contains("playback had finished") => {}
        stop => panic!("stop after playback: {stop:?}\n{}", out.transcript()),
    }
    let elapsed = out.elapsed.as_secs_f64();
    assert!(
        elapsed >= seconds * 0.5 - 1.0 && elapsed <= seconds * 2.0 + 10.0,
        "recorded {seconds} s, played in {elapsed:.1} s\n{}",
        out.transcript()
    );
    out.stdout
        .lines()
        .filter(|l| l.starts_with("EVENT ") || l.starts_with("LOOKUP "))
        .map(str::to_string)
        .collect()
}

/// Panic, showing both and where they first differ, unless `played` is `live`.
pub fn compare(who: &str, live: &[String], played: &[String]) {
    if live != played {
        let first = live
            .iter()
            .zip(played)
            .position(|(a, b)| a != b)
            .unwrap_or(live.len().min(played.len()));
        let at = |lines: &[String]| lines.get(first).cloned().unwrap_or_default();
        panic!(
            "{who}: playback differs from live at line {first} ({} live, {} played)\n\
             live:   {}\nplayed: {}\n--- live ---\n{}\n--- played ---\n{}",
            live.len(),
            played.len(),
            at(live),
            at(played),
            live.join("\n"),
            played.join("\n")
        );
    }
}
