//! Running a program to completion with a time limit (killed when it passes it), plainly, under
//! AddressSanitizer's runtime options, or under valgrind.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Where valgrind is expected; `valgrind` on PATH is used when it is not there.
const VALGRIND: &str = "/usr/bin/valgrind";

/// What a finished program did.
#[derive(Debug)]
pub struct Output {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Output {
    /// Everything it printed, for failure messages.
    pub fn transcript(&self) -> String {
        format!(
            "exit: {}\n--- stdout ---\n{}--- stderr ---\n{}",
            self.status, self.stdout, self.stderr
        )
    }

    /// Panic with the transcript unless the program exited with status 0.
    pub fn assert_success(&self, what: &str) {
        assert!(
            self.status.success(),
            "{what} failed\n{}",
            self.transcript()
        );
    }

    /// Panic unless a check program (`c/*.c`, `cpp/*.cpp`) passed: status 0, its summary line
    /// `NAME: ... 0 failed`, and no sanitizer report on stderr. Prints the summary and the
    /// program's `NOTE ` lines under `what`.
    pub fn assert_checks_passed(&self, name: &str, what: &str) {
        self.assert_success(what);
        let prefix = format!("{name}: ");
        let summary = self
            .stdout
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or("(no summary)");
        assert!(
            summary.ends_with(" 0 failed"),
            "{what}: {summary}\n{}",
            self.transcript()
        );
        assert!(
            !self.stderr.contains("Sanitizer"),
            "{what}: a sanitizer report\n{}",
            self.transcript()
        );
        println!("{what}: {summary}");
        for note in self.stdout.lines().filter(|l| l.starts_with("NOTE ")) {
            println!("{what}: {note}");
        }
    }
}

/// Run `command` (stdin closed) until it exits, at most `timeout`; a program still running then
/// is killed and the call panics with what it printed so far.
pub fn run(mut command: Command, timeout: Duration) -> Output {
    let shown = format!("{command:?}");
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {shown}: {e}"));
    let stdout = collect(child.stdout.take());
    let stderr = collect(child.stderr.take());
    let status = wait_with_deadline(&mut child, started + timeout);
    let (stdout, stderr) = (join(stdout), join(stderr));
    match status {
        Some(status) => Output { status, stdout, stderr, elapsed: started.elapsed() },
        None => panic!(
            "{shown} did not finish within {timeout:?} and was killed\n--- stdout ---\n{stdout}--- stderr ---\n{stderr}"
        ),
    }
}

/// [`run`] with the AddressSanitizer options the tests use (leak detection on, first error ends
/// the program with status 1).
pub fn run_asan(mut command: Command, timeout: Duration) -> Output {
    command.env("ASAN_OPTIONS", "detect_leaks=1:halt_on_error=1:exitcode=1");
    run(command, timeout)
}

/// Whether valgrind can be run here, and the command that runs it.
pub fn valgrind() -> Option<Command> {
    let program = if Path::new(VALGRIND).exists() {
        VALGRIND
    } else {
        "valgrind"
    };
    let works = Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    works.then(|| Command::new(program))
}

/// Run `program args` under valgrind's memcheck (any memory error or definite leak makes it exit
/// with status 99). Returns `None`, after printing "SKIPPED: valgrind not installed", when there
/// is no valgrind.
pub fn run_under_valgrind(program: &Path, args: &[&str], timeout: Duration) -> Option<Output> {
    let Some(mut command) = valgrind() else {
        println!("SKIPPED: valgrind not installed");
        return None;
    };
    command
        .args([
            "--error-exitcode=99",
            "-q",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite",
        ])
        .arg(program)
        .args(args);
    Some(run(command, timeout))
}

/// Wait for `child` until `deadline`; kill it and return `None` if it is still running then.
pub fn wait_with_deadline(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// Read a pipe to its end on a thread.
fn collect(pipe: Option<impl Read + Send + 'static>) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

fn join(handle: JoinHandle<String>) -> String {
    handle
        .join()
        .unwrap_or_else(|_| "(reader thread panicked)".to_string())
}
