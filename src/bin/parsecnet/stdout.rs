//! Standard output and standard error for `parsecnet`'s own lines, every write checked
//! (`println!` and `eprintln!` panic when a write fails).
//!
//! Standard output: a closed pipe (its reader left, as `parsecnet console ... | head -1` does)
//! ends the program quietly the way a pipe writer is expected to end, killed by SIGPIPE
//! ([`end_by_closed_pipe`]); any other failure (a full disk) is the caller's to report, and the
//! program then exits 1 ([`failed`]). Standard error: there is nowhere left to report its
//! failure, so a line that cannot be written there is dropped ([`error_line`]).

use std::io::{self, Write};
use std::process::ExitCode;

/// Write `text` and a newline to standard output, flushed.
pub fn line(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Write `text` and a newline to standard output for a program that has nothing to clean up
/// (the demo's summary, the benchmark's report and its children's replies): a closed pipe ends
/// it quietly ([`end_by_closed_pipe`]); another failure is said on standard error and ends it
/// with status 1.
pub fn say(text: &str) {
    if let Err(err) = line(text) {
        if is_closed_pipe(&err) {
            end_by_closed_pipe();
        }
        error_line(&format!("parsecnet: {}", problem(&err)));
        std::process::exit(1);
    }
}

/// `println!` through [`say`]: never panics on a failed write.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::stdout::say(&format!($($arg)*))
    };
}

/// Write `text` and a newline to standard error; a failure is ignored.
pub fn error_line(text: &str) {
    let mut err = io::stderr().lock();
    let _ = err
        .write_all(text.as_bytes())
        .and_then(|()| err.write_all(b"\n"))
        .and_then(|()| err.flush());
}

/// Whether a failed write says that standard output's reader has gone.
pub fn is_closed_pipe(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::BrokenPipe
}

/// End the program as a pipe writer whose reader left: killed by SIGPIPE, without a message
/// (a shell shows status 141). Call it once the program has cleaned up.
pub fn end_by_closed_pipe() -> ! {
    // Rust starts programs with SIGPIPE ignored: restore the default action, then raise it.
    #[cfg(unix)]
    // SAFETY: setting a signal's action to the default and raising it touch no memory.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    // Reached only where SIGPIPE is blocked (or there is none): the status a shell would show.
    std::process::exit(128 + 13)
}

/// The end of `program` after a failed write to standard output: a closed pipe ends it quietly
/// (see [`end_by_closed_pipe`]); any other failure is said on standard error, and the exit
/// status is 1.
pub fn failed(program: &str, err: &io::Error) -> ExitCode {
    error_line(&format!("{program}: {}", problem(err)));
    ExitCode::FAILURE
}

/// The text for a failed write to standard output; a closed pipe ends the program quietly
/// instead.
pub fn problem(err: &io::Error) -> String {
    if is_closed_pipe(err) {
        end_by_closed_pipe();
    }
    format!("cannot write to standard output: {err}")
}

/// Print `text` as the program's whole answer (a usage text), then end: exit status 0, or as
/// [`failed`] says.
pub fn answer(program: &str, text: &str) -> ExitCode {
    match line(text) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => failed(program, &err),
    }
}

/// Print one of a server's own lines while it serves (where it listens, where it registers): a
/// closed pipe ends the server quietly; another failure is logged, the server serves on, and
/// the failure is returned for the server to end with (exit status 1).
pub fn announce(text: &str) -> Option<io::Error> {
    let err = line(text).err()?;
    log::error!("{}; the server goes on", problem(&err));
    Some(err)
}
