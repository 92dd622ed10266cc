//! Programs that keep running while a test talks to them: a `peer_game --control` that takes
//! console lines and control words on stdin, and a `parsecnet` server. Their stdout is collected
//! line by line as it comes, so a test can wait (with a deadline) for a line or an event, act,
//! and look again; at the end they are stopped and their whole output is checked like that of a
//! finished program. Dropping one (also while unwinding from a failed assertion) kills the
//! process, so nothing outlives its test.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::peer::{parse, GameRun, Report, Summary};
use crate::process::{wait_with_deadline, Output};

/// What the stdout reader has collected so far.
#[derive(Default)]
struct Collected {
    lines: Vec<String>,
    /// stdout reached its end (the program exited or closed it).
    ended: bool,
    /// Everything printed on stderr so far.
    stderr: Vec<u8>,
}

#[derive(Default)]
struct Shared {
    collected: Mutex<Collected>,
    changed: Condvar,
}

/// A program running in the background with its stdin open.
pub struct Running {
    name: String,
    shown: String,
    child: Child,
    stdin: Option<ChildStdin>,
    shared: Arc<Shared>,
    stdout_thread: Option<JoinHandle<()>>,
    stderr_thread: Option<JoinHandle<()>>,
    started: Instant,
    status: Option<ExitStatus>,
}

impl Running {
    /// Start `command` with stdin, stdout and stderr piped; with AddressSanitizer's runtime
    /// options (as [`crate::process::run_asan`] sets them) if `asan`.
    pub fn spawn(name: &str, mut command: Command, asan: bool) -> Running {
        if asan {
            command.env("ASAN_OPTIONS", "detect_leaks=1:halt_on_error=1:exitcode=1");
        }
        let shown = format!("{command:?}");
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {shown}: {e}"));
        let stdin = child.stdin.take();
        let shared = Arc::new(Shared::default());
        let stdout = child.stdout.take().expect("stdout is piped");
        let sink = Arc::clone(&shared);
        let stdout_thread = std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut bytes = Vec::new();
            loop {
                bytes.clear();
                let done = !matches!(reader.read_until(b'\n', &mut bytes), Ok(n) if n > 0);
                let mut collected = sink.collected.lock().unwrap_or_else(|e| e.into_inner());
                if done {
                    collected.ended = true;
                } else {
                    let line = String::from_utf8_lossy(&bytes);
                    collected
                        .lines
                        .push(line.trim_end_matches(['\n', '\r']).to_string());
                }
                drop(collected);
                sink.changed.notify_all();
                if done {
                    break;
                }
            }
        });
        let mut stderr = child.stderr.take().expect("stderr is piped");
        let sink = Arc::clone(&shared);
        let stderr_thread = std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = stderr.read(&mut chunk) {
                let mut collected = sink.collected.lock().unwrap_or_else(|e| e.into_inner());
                collected.stderr.extend_from_slice(&chunk[..n]);
            }
        });
        Running {
            name: name.to_string(),
            shown,
            child,
            stdin,
            shared,
            stdout_thread: Some(stdout_thread),
            stderr_thread: Some(stderr_thread),
            started: Instant::now(),
            status: None,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Write `line` and a newline to the program's stdin. False if it cannot take it any more
    /// (stdin closed, or the program is gone).
    pub fn send(&mut self, line: &str) -> bool {
        let Some(stdin) = self.stdin.as_mut() else {
            return false;
        };
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|()| stdin.flush())
            .is_ok()
    }

    /// Close the program's stdin (it sees the end of its input).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// How many stdout lines have arrived so far.
    pub fn line_count(&self) -> usize {
        self.lock().lines.len()
    }

    /// The stdout lines from index `start` on.
    pub fn lines_from(&self, start: usize) -> Vec<String> {
        let collected = self.lock();
        collected.lines[start.min(collected.lines.len())..].to_vec()
    }

    /// Everything printed on stdout so far.
    pub fn stdout(&self) -> String {
        let collected = self.lock();
        let mut text = collected.lines.join("\n");
        if !text.is_empty() {
            text.push('\n');
        }
        text
    }

    /// Wait until `done` holds for the stdout lines so far (it is asked again whenever lines
    /// arrive), at most `timeout`. False if it still does not hold then, or if stdout ended
    /// without it holding.
    pub fn wait_until(&self, timeout: Duration, mut done: impl FnMut(&[String]) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        let mut collected = self.lock();
        loop {
            if done(&collected.lines) {
                return true;
            }
            let now = Instant::now();
            if collected.ended || now >= deadline {
                return false;
            }
            collected = self
                .shared
                .changed
                .wait_timeout(collected, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Wait for a stdout line from index `start` on that satisfies `what`; its index.
    pub fn wait_for_line(
        &self,
        start: usize,
        timeout: Duration,
        what: impl Fn(&str) -> bool,
    ) -> Option<usize> {
        let mut found = None;
        self.wait_until(timeout, |lines| {
            found = lines
                .iter()
                .enumerate()
                .skip(start)
                .find(|(_, l)| what(l))
                .map(|(i, _)| i);
            found.is_some()
        });
        found
    }

    /// Send the program a signal (`TERM`, `INT`, ...) with kill(1).
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid().to_string())
            .status();
        if !status.is_ok_and(|s| s.success()) {
            eprintln!("kill -{signal} {} ({}) failed", self.pid(), self.name);
        }
    }

    /// Kill the program with SIGKILL and reap it.
    pub fn kill(&mut self) {
        if self.status.is_none() {
            let _ = self.child.kill();
            self.status = self.child.wait().ok();
        }
    }

    /// Whether the program has exited (without waiting).
    pub fn has_exited(&mut self) -> bool {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status.is_some()
    }

    /// Close stdin and wait for the program to exit, at most `timeout` (then it is killed and
    /// the call panics with its output); everything it printed.
    pub fn finish(mut self, timeout: Duration) -> Output {
        self.close_stdin();
        let exited = match self.status {
            Some(status) => Some(status),
            None => wait_with_deadline(&mut self.child, Instant::now() + timeout),
        };
        let status = match exited {
            Some(status) => status,
            None => self.child.wait().expect("a killed child can be waited for"),
        };
        self.status = Some(status);
        let stderr = self.join_readers();
        let output = Output {
            status,
            stdout: self.stdout(),
            stderr,
            elapsed: self.started.elapsed(),
        };
        if exited.is_none() {
            panic!(
                "{} ({}) did not finish within {timeout:?} and was killed\n{}",
                self.name,
                self.shown,
                output.transcript()
            );
        }
        output
    }

    /// What the program printed so far, for failure messages while it still runs.
    pub fn transcript(&self) -> String {
        let stderr = String::from_utf8_lossy(&self.lock().stderr).into_owned();
        format!(
            "{} ({})\n--- stdout so far ---\n{}--- stderr so far ---\n{stderr}",
            self.name,
            self.shown,
            self.stdout()
        )
    }

    /// Wait for both readers to reach the end of their stream; what came on stderr.
    fn join_readers(&mut self) -> String {
        for thread in [self.stdout_thread.take(), self.stderr_thread.take()]
            .into_iter()
            .flatten()
        {
            let _ = thread.join();
        }
        String::from_utf8_lossy(&std::mem::take(&mut self.lock().stderr)).into_owned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Collected> {
        self.shared
            .collected
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stdin = None;
        self.kill();
    }
}

/// A `peer_game --control` running in the background.
pub struct LiveGame {
    pub process: Running,
}

/// The longest a live game may take to answer a control line such as `@summary`.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

impl LiveGame {
    /// Start a game; `command` must include `--control`.
    pub fn spawn(name: &str, command: Command, asan: bool) -> LiveGame {
        LiveGame {
            process: Running::spawn(name, command, asan),
        }
    }

    pub fn name(&self) -> &str {
        self.process.name()
    }

    /// Everything printed so far, parsed (the summary is the last one printed).
    pub fn report(&self) -> Report {
        parse(&self.process.stdout())
    }

    /// Panic with `message` and what the game printed so far.
    pub fn fail(&self, message: &str) -> ! {
        panic!(
            "game {}: {message}\n{}",
            self.name(),
            self.process.transcript()
        )
    }

    /// Send one line (a console line or a control word); a game that cannot take it fails.
    pub fn send(&mut self, line: &str) {
        if !self.process.send(line) {
            self.fail(&format!("cannot send {line:?}: the game is gone"));
        }
    }

    /// Wait until the game has printed a summary that says it finished (`complete=yes`).
    pub fn wait_complete(&self, timeout: Duration) -> bool {
        self.process.wait_until(timeout, |lines| {
            lines
                .iter()
                .any(|l| l.starts_with("SUMMARY ") && l.contains(" complete=yes"))
        })
    }

    /// Wait until the game prints an EVENT line of `kind` for `slot` after stdout line `from`,
    /// at most `timeout`; a game that does not fails.
    pub fn wait_event(&self, from: usize, kind: &str, slot: i32, timeout: Duration) {
        let wanted = format!("EVENT type={kind} player={slot} ");
        if self
            .process
            .wait_for_line(from, timeout, |l| l.starts_with(&wanted))
            .is_none()
        {
            self.fail(&format!("no {kind} for slot {slot}"));
        }
    }

    /// Index in the game's events of the first event at index `from` or later that `what`
    /// accepts, waiting at most `timeout`; a game that prints none fails.
    pub fn wait_event_where(
        &self,
        from: usize,
        timeout: Duration,
        what: impl Fn(&crate::peer::Event) -> bool,
    ) -> usize {
        let mut found = None;
        // The lines are parsed as given: the game's own lookups would wait for the lock held here.
        self.process.wait_until(timeout, |lines| {
            found = parse(&lines.join("\n"))
                .events
                .iter()
                .enumerate()
                .skip(from)
                .find(|(_, e)| what(e))
                .map(|(i, _)| i);
            found.is_some()
        });
        found.unwrap_or_else(|| self.fail("the awaited event never came"))
    }

    /// Ask for a summary of what the game knows now (`@summary`) and return it.
    pub fn summary_now(&mut self) -> Summary {
        self.summary_now_at().0
    }

    /// `summary_now`, with the index of the stdout line where the game read `@summary`: what it
    /// printed before that line (the events it had polled) is what it had seen when it looked.
    pub fn summary_now_at(&mut self) -> (Summary, usize) {
        let start = self.process.line_count();
        self.send("@summary");
        let Some(at) = self
            .process
            .wait_for_line(start, ANSWER_TIMEOUT, |l| l == "CONTROL line=\"@summary\"")
        else {
            self.fail("did not read @summary");
        };
        if self
            .process
            .wait_for_line(at, ANSWER_TIMEOUT, |l| l == "SUMMARY_END")
            .is_none()
        {
            self.fail("printed no summary for @summary");
        }
        let text = self.process.lines_from(at).join("\n");
        match parse(&text).summary {
            Some(summary) => (summary, at),
            None => self.fail("printed no summary for @summary"),
        }
    }

    /// Run a console line and return its `EXEC` result (rc, reply).
    pub fn exec(&mut self, line: &str) -> (i32, String) {
        let start = self.process.line_count();
        self.send(line);
        let quoted = format!("line={}", quote(line));
        let Some(at) = self.process.wait_for_line(start, ANSWER_TIMEOUT, |l| {
            l.starts_with("EXEC ") && l.contains(&quoted)
        }) else {
            self.fail(&format!("did not run {line:?}"));
        };
        let text = self.process.lines_from(at);
        let report = parse(&text[0]);
        let (rc, _, reply) = report.execs[0].clone();
        (rc, reply)
    }

    /// The events the game printed from stdout line `start` on.
    pub fn events_since(&self, start: usize) -> Vec<crate::peer::Event> {
        parse(&self.process.lines_from(start).join("\n")).events
    }

    /// Send `@quit` and wait for the game to end, at most `timeout`; the finished game.
    pub fn quit(mut self, timeout: Duration) -> GameRun {
        let _ = self.process.send("@quit");
        self.finish(timeout)
    }

    /// Wait for the game to end (stdin is closed first), at most `timeout`; also for a game
    /// that was killed.
    pub fn finish(self, timeout: Duration) -> GameRun {
        let name = self.process.name().to_string();
        let output = self.process.finish(timeout);
        let report = parse(&output.stdout);
        GameRun {
            name,
            output,
            report,
        }
    }
}

/// Wait until every game has finished (seen everything from the others), each at most
/// `timeout`; the first that does not fails.
pub fn wait_all_complete<'a>(games: impl IntoIterator<Item = &'a LiveGame>, timeout: Duration) {
    for game in games {
        if !game.wait_complete(timeout) {
            game.fail("did not get everything from the others in time");
        }
    }
}

/// `text` as `peer_game` prints a quoted string.
pub fn quote(text: &str) -> String {
    let mut out = String::from("\"");
    for byte in text.bytes() {
        match byte {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(byte as char);
            }
            0x20..=0x7e => out.push(byte as char),
            _ => out.push_str(&format!("\\x{byte:02x}")),
        }
    }
    out.push('"');
    out
}
