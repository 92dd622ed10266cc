//! The parent's handle on a benchmark child: this same program started as `parsecnet bench
//! child ROLE ...`, talked to by lines on its stdin and stdout. Replies are read with a
//! deadline (a reader thread forwards stdout lines), and the child is killed when the handle is
//! dropped, so a failed measurement leaves no process behind.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// A running child and its line channels.
pub struct ChildProcess {
    role: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl ChildProcess {
    /// Start `parsecnet bench child ROLE ARGS...` with library logging off. With
    /// `PARSECNET_BENCH_WRAP=PROGRAM` in the environment (an investigation mode, e.g.
    /// `heaptrack` to find where allocations come from) the child runs under that program.
    pub fn spawn(role: &str, args: &[&str]) -> Result<ChildProcess, String> {
        let exe = std::env::current_exe().map_err(|e| format!("finding this program: {e}"))?;
        let exe_text = exe.to_string_lossy().into_owned();
        let own_args = [&["bench", "child", role][..], args].concat();
        match std::env::var("PARSECNET_BENCH_WRAP") {
            Ok(wrapper) if !wrapper.is_empty() => Self::spawn_program(
                std::path::Path::new(&wrapper),
                role,
                &[&[exe_text.as_str()][..], &own_args].concat(),
            ),
            _ => Self::spawn_program(&exe, role, &own_args),
        }
    }

    /// Start `program ARGS...` (any program speaking lines), named `role` in messages.
    pub fn spawn_program(
        program: &std::path::Path,
        role: &str,
        args: &[&str],
    ) -> Result<ChildProcess, String> {
        let mut child = Command::new(program)
            .args(args)
            .env(
                "PARSEC_NET_LOG",
                std::env::var("PARSEC_NET_LOG").unwrap_or_else(|_| "off".into()),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("starting the {role} child: {e}"))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(ChildProcess {
            role: role.to_string(),
            stdin: child.stdin.take(),
            child,
            lines,
        })
    }

    /// Send one command line.
    pub fn send(&mut self, line: &str) -> Result<(), String> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| format!("{}: stdin closed", self.role))?;
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("{}: writing '{line}': {e}", self.role))
    }

    /// The next line, waiting at most `timeout`.
    pub fn line(&mut self, timeout: Duration) -> Result<String, String> {
        match self.lines.recv_timeout(timeout) {
            Ok(line) => Ok(line),
            Err(RecvTimeoutError::Timeout) => Err(format!(
                "{}: no answer within {:.0} s",
                self.role,
                timeout.as_secs_f64()
            )),
            Err(RecvTimeoutError::Disconnected) => Err(format!("{}: the process ended", self.role)),
        }
    }

    /// Lines until one starts with `prefix` (returned without it, trimmed); a line starting
    /// with "error" fails. Other lines are skipped.
    pub fn expect(&mut self, prefix: &str, timeout: Duration) -> Result<String, String> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.line(left)?;
            if let Some(rest) = line.strip_prefix(prefix) {
                return Ok(rest.trim().to_string());
            }
            if let Some(err) = line.strip_prefix("error") {
                return Err(format!("{}: {}", self.role, err.trim()));
            }
        }
    }

    /// Send `command` and wait for its reply line starting with `prefix`.
    pub fn ask(
        &mut self,
        command: &str,
        prefix: &str,
        timeout: Duration,
    ) -> Result<String, String> {
        self.send(command)?;
        self.expect(prefix, timeout)
    }

    /// Ask the child to quit, and kill it if it has not within a second.
    pub fn finish(mut self) {
        let _ = self.send("quit");
        self.stdin = None;
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        if !matches!(self.child.try_wait(), Ok(Some(_))) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// The value after `key` in a line of `key value` pairs.
pub fn field<T: std::str::FromStr>(line: &str, key: &str) -> Result<T, String> {
    let mut words = line.split_whitespace();
    while let Some(word) = words.next() {
        if word == key {
            return words
                .next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("bad value of '{key}' in '{line}'"));
        }
    }
    Err(format!("no '{key}' in '{line}'"))
}
