//! The console: one command table shared by `NET_ConsoleExec` and the interactive
//! `parsecnet console`. A line is exactly what a player types; the reply is human-readable text
//! plus a result. Bad lines of any length or content get a one-line message naming the problem
//! and the usage; they never panic and never change state.

mod commands;
mod game_calls;
mod info;
mod servers;
mod settings;
mod suggestion;

use std::time::Instant;

use crate::error::{ErrorCode, NetError, NetResult};
use crate::subsystem::Subsystem;

pub use commands::{one_arg, Command, COMMANDS};
pub use servers::SERVERS_WAIT;

/// Longest console line accepted, in bytes.
pub const MAX_LINE_LEN: usize = 1024;

/// What a console line produced.
#[derive(Debug)]
pub struct ConsoleReply {
    /// Text for the player (the error message when `result` is an error).
    pub output: String,
    pub result: NetResult<()>,
}

impl ConsoleReply {
    fn ok(output: String) -> Self {
        ConsoleReply {
            output,
            result: Ok(()),
        }
    }

    fn err(err: NetError) -> Self {
        ConsoleReply {
            output: err.message.clone(),
            result: Err(err),
        }
    }
}

/// Find a command by its name, in any letter case (`STATUS` is `status`, as in the consoles of
/// the games of the time), including the `net.<backend>.<key>` family.
pub fn find_command(name: &str) -> Option<&'static Command> {
    COMMANDS
        .iter()
        .find(|c| c.name.eq_ignore_ascii_case(name))
        .or_else(|| {
            let lower = name.to_ascii_lowercase();
            commands::is_backend_option_name(&lower).then_some(&commands::BACKEND_OPTION)
        })
}

/// The reply to a command word that names no command: the problem, the closest command if one
/// is near (a typo), and the usage that lists them all.
pub fn unknown_command(name: &str) -> NetError {
    unknown_command_among(name, std::iter::empty())
}

/// [`unknown_command`] for a console program that has commands of its own (`more`, e.g.
/// `parsecnet console`'s `wait` and `quit`): they are suggested like the shared ones.
pub fn unknown_command_among<'a>(name: &str, more: impl IntoIterator<Item = &'a str>) -> NetError {
    let names = COMMANDS.iter().map(|c| c.name).chain(more);
    let near = suggestion::closest(name, names)
        .map(|c| format!(" (did you mean {c}?)"))
        .unwrap_or_default();
    NetError::new(
        ErrorCode::UnknownCommand,
        format!(
            "unknown command '{}'{near}; usage: help [COMMAND] lists the commands",
            name.escape_debug()
        ),
    )
}

/// Split a line into the command word and the rest (trimmed).
pub fn split_command(line: &str) -> (&str, &str) {
    let line = line.trim();
    match line.find(char::is_whitespace) {
        Some(at) => (&line[..at], line[at..].trim()),
        None => (line, ""),
    }
}

/// Check a raw line before parsing.
pub fn validate_line(line: &str) -> NetResult<()> {
    if line.len() > MAX_LINE_LEN {
        return Err(NetError::new(
            ErrorCode::TooLarge,
            format!(
                "console line of {} bytes is longer than {MAX_LINE_LEN} bytes; usage: COMMAND [ARGUMENTS] in at most {MAX_LINE_LEN} bytes",
                line.len()
            ),
        ));
    }
    if let Some(c) = line.chars().find(|c| c.is_control() && *c != '\t') {
        return Err(NetError::invalid(format!(
            "console line contains the control character {:?}; usage: COMMAND [ARGUMENTS] on one line of printable text",
            c
        )));
    }
    Ok(())
}

/// Run one console line.
pub fn exec(sub: &mut Subsystem, line: &str, now: Instant) -> ConsoleReply {
    if let Err(err) = validate_line(line) {
        return ConsoleReply::err(err);
    }
    let (name, args) = split_command(line);
    if name.is_empty() {
        return ConsoleReply::ok(String::new());
    }
    let Some(command) = find_command(name) else {
        return ConsoleReply::err(unknown_command(name));
    };
    // Commands see their name as listed (the backend option family: lower case).
    let lowered;
    let name = if name.bytes().any(|b| b.is_ascii_uppercase()) {
        lowered = name.to_ascii_lowercase();
        lowered.as_str()
    } else {
        name
    };
    reply_of(name, command, (command.run)(sub, name, args, now))
}

/// A command's result as the player sees it: every failure names the command and shows its
/// usage, once.
fn reply_of(name: &str, command: &Command, result: NetResult<String>) -> ConsoleReply {
    match result {
        Ok(text) => ConsoleReply::ok(text),
        Err(err) => {
            let usage = format!("usage: {}", command.usage);
            let message = if err.message.contains("usage:") {
                err.message
            } else {
                // A message that already names the call ("join: not connected ...") is not
                // named twice.
                let text = err.message.as_str();
                let text = text.strip_prefix(&format!("{name}: ")).unwrap_or(text);
                format!("{name}: {text}; {usage}")
            };
            ConsoleReply::err(NetError::new(err.code, message))
        }
    }
}

/// A console line whose reply waits for something outside the process (only `servers`, for the
/// masterservers), run by a caller that waits without holding the subsystem: `NET_ConsoleExec`,
/// which must not stop another thread's frames for the up to [`SERVERS_WAIT`] the wait takes.
#[derive(Debug)]
pub struct ConsoleWait {
    /// When the command ran (the wait's bound counts from here).
    started: Instant,
}

/// Where [`exec_deferring_waits`] or [`continue_wait`] left a line.
#[derive(Debug)]
pub enum ConsoleStep {
    Done(ConsoleReply),
    /// Call [`continue_wait`] again after [`WAIT_STEP`], without holding the subsystem between.
    Waiting(ConsoleWait),
}

/// Pause between two [`continue_wait`] calls.
pub const WAIT_STEP: std::time::Duration = std::time::Duration::from_millis(1);

/// [`exec`], except that a command that would wait for the network returns
/// [`ConsoleStep::Waiting`] instead, for the caller to drive with [`continue_wait`].
pub fn exec_deferring_waits(sub: &mut Subsystem, line: &str, now: Instant) -> ConsoleStep {
    sub.set_console_waits_deferred(true);
    let reply = exec(sub, line, now);
    sub.set_console_waits_deferred(false);
    match sub.take_deferred_console_wait() {
        Some(started) if reply.result.is_ok() => ConsoleStep::Waiting(ConsoleWait { started }),
        _ => ConsoleStep::Done(reply),
    }
}

/// One more round of a waiting line's I/O: its reply once the wait is over.
pub fn continue_wait(sub: &mut Subsystem, wait: ConsoleWait, now: Instant) -> ConsoleStep {
    match servers::continue_servers(sub, wait.started, now) {
        None => ConsoleStep::Waiting(wait),
        Some(result) => {
            let command = find_command("servers").expect("servers is a command");
            ConsoleStep::Done(reply_of("servers", command, result))
        }
    }
}

/// The words that can complete `partial` at the start of a line (command names) or as the first
/// argument of a command (its listed choices). Used by the interactive console.
pub fn completions(line: &str) -> Vec<String> {
    match line.find(char::is_whitespace) {
        None => COMMANDS
            .iter()
            .filter(|c| c.name.starts_with(line))
            .map(|c| c.name.to_string())
            .collect(),
        Some(at) => {
            let (name, rest) = (&line[..at], line[at..].trim_start());
            let Some(command) = find_command(name) else {
                return Vec::new();
            };
            if rest.contains(char::is_whitespace) {
                return Vec::new();
            }
            let choices: Vec<String> = if name == "help" {
                COMMANDS.iter().map(|c| c.name.to_string()).collect()
            } else {
                command.choices.iter().map(|s| s.to_string()).collect()
            };
            choices
                .into_iter()
                .filter(|c| c.starts_with(rest))
                .collect()
        }
    }
}
