//! A running `exchange` program driven line by line over stdin/stdout (see `c/exchange.c` for the
//! protocol). Every wait for a reply has a deadline; a failure message carries the whole
//! conversation and what the program wrote to stderr. Dropping an endpoint kills the program.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::process::wait_with_deadline;

/// How long the program may take to start and print "ready".
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// One driven program.
pub struct Endpoint {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
    transcript: Vec<String>,
}

impl Endpoint {
    /// Start `program` with extra environment variables and wait for its "ready" line.
    pub fn spawn<K: AsRef<OsStr>, V: AsRef<OsStr>>(
        name: &str,
        program: &Path,
        env: &[(K, V)],
    ) -> Endpoint {
        Endpoint::spawn_in(name, program, env, None)
    }

    /// [`Endpoint::spawn`] in the working directory `dir` (None: this process's).
    pub fn spawn_in<K: AsRef<OsStr>, V: AsRef<OsStr>>(
        name: &str,
        program: &Path,
        env: &[(K, V)],
        dir: Option<&Path>,
    ) -> Endpoint {
        let mut command = Command::new(program);
        if let Some(dir) = dir {
            command.current_dir(dir);
        }
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
        let stdin = child.stdin.take();
        let (sender, lines) = mpsc::channel();
        let stdout = child.stdout.take().expect("stdout is piped");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().expect("stderr is piped");
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        });
        let mut endpoint = Endpoint {
            name: name.to_string(),
            child,
            stdin,
            lines,
            stderr,
            transcript: Vec::new(),
        };
        let ready = endpoint.reply(START_TIMEOUT);
        if !ready.starts_with("ready") {
            endpoint.fail(&format!("expected a ready line, got {ready:?}"));
        }
        endpoint
    }

    /// The endpoint's name in messages ("A", "B").
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Send one command line without waiting for its reply (to run two endpoints at once).
    pub fn send(&mut self, line: &str) {
        self.transcript.push(format!("> {line}"));
        let written = match self.stdin.as_mut() {
            Some(stdin) => writeln!(stdin, "{line}").and_then(|()| stdin.flush()),
            None => Err(std::io::Error::other("stdin already closed")),
        };
        if let Err(e) = written {
            self.fail(&format!("cannot write {line:?}: {e}"));
        }
    }

    /// The next reply line, waiting at most `timeout`.
    pub fn reply(&mut self, timeout: Duration) -> String {
        match self.lines.recv_timeout(timeout) {
            Ok(line) => {
                self.transcript.push(format!("< {line}"));
                line
            }
            Err(RecvTimeoutError::Timeout) => self.fail(&format!("no reply within {timeout:?}")),
            Err(RecvTimeoutError::Disconnected) => {
                self.fail("the program closed its output (it exited or crashed)")
            }
        }
    }

    /// Send a command and return its reply.
    pub fn call(&mut self, line: &str, timeout: Duration) -> String {
        self.send(line);
        self.reply(timeout)
    }

    /// Send a command whose reply must start with "ok"; returns the rest of the reply.
    pub fn ok(&mut self, line: &str, timeout: Duration) -> String {
        let reply = self.call(line, timeout);
        self.expect_ok(&reply, line)
    }

    /// Check that `reply` (to `command`) starts with "ok"; returns the rest.
    pub fn expect_ok(&self, reply: &str, command: &str) -> String {
        match reply.strip_prefix("ok") {
            Some(rest) => rest.trim_start().to_string(),
            None => self.fail(&format!("{command:?} was answered {reply:?}")),
        }
    }

    /// A number from the `status` output: the digits right after `key`
    /// (`status_number("deferred ")`).
    pub fn status_number(&mut self, key: &str) -> u64 {
        let status = self.ok("status", Duration::from_secs(10));
        let parsed = status
            .find(key)
            .map(|at| &status[at + key.len()..])
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|digits| digits.parse().ok());
        match parsed {
            Some(n) => n,
            None => self.fail(&format!("status has no number after {key:?}: {status}")),
        }
    }

    /// A number from the `status` output: the digits right before ` key`
    /// (`status_number_before("received kept")`).
    pub fn status_number_before(&mut self, key: &str) -> u64 {
        let status = self.ok("status", Duration::from_secs(10));
        let parsed = status
            .find(&format!(" {key}"))
            .map(|at| &status[..at])
            .and_then(|before| before.rsplit(|c: char| !c.is_ascii_digit()).next())
            .and_then(|digits| digits.parse().ok());
        match parsed {
            Some(n) => n,
            None => self.fail(&format!("status has no number before {key:?}: {status}")),
        }
    }

    /// The `backend: NAME (ORIGIN), ...` part of the `status` output.
    pub fn backend_line(&mut self) -> String {
        let status = self.ok("status", Duration::from_secs(10));
        let line = status
            .split('|')
            .find(|part| part.starts_with("backend:"))
            .map(str::to_string);
        match line {
            Some(line) => line,
            None => self.fail(&format!("status has no backend line: {status}")),
        }
    }

    /// Send "quit", wait for "bye" and for the program to exit with status 0 within `timeout`.
    /// Returns what it wrote to stderr.
    pub fn quit(mut self, timeout: Duration) -> String {
        let bye = self.call("quit", timeout);
        if bye != "bye" {
            self.fail(&format!("expected bye, got {bye:?}"));
        }
        self.stdin = None;
        match wait_with_deadline(&mut self.child, Instant::now() + timeout) {
            Some(status) if status.success() => {}
            Some(status) => self.fail(&format!("exited with {status}")),
            None => self.fail("did not exit after quit"),
        }
        // Give the stderr reader a moment to see the end of the pipe.
        std::thread::sleep(Duration::from_millis(20));
        self.stderr_text()
    }

    /// What the program wrote to stderr so far.
    pub fn stderr_text(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Panic with `message`, the conversation so far and the program's stderr.
    pub fn fail(&self, message: &str) -> ! {
        let shown: Vec<&str> = self
            .transcript
            .iter()
            .rev()
            .take(60)
            .rev()
            .map(String::as_str)
            .collect();
        panic!(
            "endpoint {}: {message}\n--- conversation (last {} lines) ---\n{}\n--- stderr ---\n{}",
            self.name,
            shown.len(),
            shown.join("\n"),
            self.stderr_text()
        )
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stdin = None;
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
