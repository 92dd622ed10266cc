//! `parsecnet console`: the game's console without the game. Runs the frame loop itself
//! (`maintain` at the send frequency), executes console lines through the same command table as
//! `NET_ConsoleExec`, and prints incoming events as lines.
//!
//! - Interactive (standard input is a terminal): line editing, history, tab completion of
//!   commands and their first argument; events are printed above the prompt without garbling
//!   the line being typed.
//! - `--exec "CMD; CMD"`: run a script (then exit, or stay interactive with `--stay`). Scripts
//!   may use `wait MS` to let the game run between commands. Before exiting, a server list
//!   that `servers` left fetching (a masterserver slower than its 2 s) is waited for.
//! - Otherwise lines are read from standard input.
//!
//! Console-only commands: `wait MS`, `quit` (or `exit`); `help` lists them too.
//!
//! When standard output cannot be written, the console stops: it leaves the game, ends a
//! recording, and ends as `stdout` says (quietly by SIGPIPE when the reader left, else exit
//! status 1 with the reason).

use std::io::{self, BufRead, IsTerminal};
use std::process::ExitCode;
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::time::{Duration, Instant};

use net_core::subsystem::server_list::FETCH_TIMEOUT;
use net_core::Subsystem;
use rustyline::completion::{Completer, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{Context, Editor, ExternalPrinter, Helper};

use crate::event_text;
use crate::stdout;

const USAGE: &str = "usage: parsecnet console [--exec \"CMD; CMD; ...\"] [--stay]

  --exec, -e LIST  run the console commands of LIST (separated by ';'; `wait MS` lets frames
                   pass), then leave (the exit status is 1 if any command failed)
  --stay           after --exec, stay at the prompt
  --help, -h       this text
At the prompt: `help` lists the commands, `quit` leaves.";
/// The frame period when nothing else sets it (100 Hz keeps input responsive).
const FRAME: Duration = Duration::from_millis(10);
/// Longest `wait` a script may ask for.
const MAX_WAIT_MS: u64 = 600_000;

/// Where output goes: above the prompt when interactive, else standard output. Once a write
/// to standard output failed nothing more is written, and the console stops.
struct Output {
    printer: Option<Box<dyn ExternalPrinter + Send>>,
    /// The failed write that stops the console.
    failure: Option<io::Error>,
}

impl Output {
    fn line(&mut self, text: &str) {
        if text.is_empty() || self.failure.is_some() {
            return;
        }
        if let Some(printer) = self.printer.as_mut() {
            if printer.print(format!("{text}\n")).is_ok() {
                return;
            }
        }
        if let Err(err) = stdout::line(text) {
            self.failure = Some(err);
        }
    }

    fn failed(&self) -> bool {
        self.failure.is_some()
    }
}

/// The commands only this console has (name, usage, summary): `help` lists them after the
/// shared table, `help NAME` shows their usage, and Tab completes them.
const CONSOLE_ONLY: &[(&str, &str, &str)] = &[
    (
        "wait",
        "wait MS",
        "let the game run MS milliseconds (0-600000), e.g. in a script",
    ),
    ("quit", "quit", "leave the game and the console"),
    ("exit", "exit", "the same as quit"),
];

/// The console-only command named `word` (in any letter case, as the shared commands).
fn console_only(word: &str) -> Option<&'static (&'static str, &'static str, &'static str)> {
    CONSOLE_ONLY
        .iter()
        .find(|(name, _, _)| name.eq_ignore_ascii_case(word))
}

/// `help` in this console: the shared list followed by the console-only commands, or the
/// usage of a console-only command; anything else as the shared `help` says.
fn help(sub: &mut Subsystem, args: &str) -> net_core::console::ConsoleReply {
    let mut reply = sub.console_exec(&format!("help {args}"), Instant::now());
    if args.is_empty() && reply.result.is_ok() {
        for (_, usage, summary) in CONSOLE_ONLY {
            reply.output.push_str(&format!("\n  {usage:<44} {summary}"));
        }
    } else if let Some((_, usage, summary)) = console_only(args) {
        return net_core::console::ConsoleReply {
            output: format!("usage: {usage}\n{summary}"),
            result: Ok(()),
        };
    }
    reply
}

/// The reply to a word that names no command, shared or console-only: the nearest of all of
/// them is suggested (`wiat` -> wait, `qiut` -> quit, `stauts` -> status).
fn unknown_command(word: &str) -> net_core::console::ConsoleReply {
    let err = net_core::console::unknown_command_among(
        word,
        CONSOLE_ONLY.iter().map(|(name, _, _)| *name),
    );
    net_core::console::ConsoleReply {
        output: err.message.clone(),
        result: Err(err),
    }
}

/// The words that complete `line`: the shared commands' completions, plus the console-only
/// commands as a command word or as the argument of `help`.
fn completions(line: &str) -> Vec<String> {
    let mut words = net_core::console::completions(line);
    let partial = match line.split_once(char::is_whitespace) {
        None => Some(line),
        Some((word, rest)) if word.eq_ignore_ascii_case("help") => {
            let rest = rest.trim_start();
            (!rest.contains(char::is_whitespace)).then_some(rest)
        }
        Some(_) => None,
    };
    if let Some(partial) = partial {
        words.extend(
            CONSOLE_ONLY
                .iter()
                .filter(|(name, _, _)| name.starts_with(partial))
                .map(|(name, _, _)| name.to_string()),
        );
    }
    words
}

/// What a console line asks of the loop.
enum Flow {
    Continue,
    Quit,
}

/// The console's state: the subsystem, where output goes, and failure count for scripts.
struct Console {
    sub: Subsystem,
    out: Output,
    failures: u32,
    /// Players' names as of the events printed so far.
    names: event_text::EventNames,
}

impl Console {
    /// Run the frame loop until `until`, printing events.
    fn run_frames_until(&mut self, until: Instant) {
        loop {
            let now = Instant::now();
            self.frame(now);
            if now >= until || self.out.failed() {
                return;
            }
            std::thread::sleep(FRAME.min(until - now));
        }
    }

    fn frame(&mut self, now: Instant) {
        self.sub.maintain(now);
        while let Some(event) = self.sub.poll_event() {
            let text = self.names.describe(&self.sub, &event);
            self.out.line(&text);
        }
    }

    fn exec(&mut self, line: &str) -> Flow {
        let trimmed = line.trim();
        let (word, args) = net_core::console::split_command(trimmed);
        match console_only(word).map(|(name, _, _)| *name) {
            Some(name @ ("quit" | "exit")) => {
                if args.is_empty() {
                    return Flow::Quit;
                }
                self.out.line(&format!(
                    "{name}: takes no argument, got '{}'; usage: {name}",
                    args.escape_debug()
                ));
                self.failures += 1;
                return self.flow();
            }
            Some("wait") => {
                match net_core::console::one_arg(args).map(|arg| (arg, arg.parse::<u64>())) {
                    Ok((_, Ok(ms))) if ms <= MAX_WAIT_MS => {
                        self.run_frames_until(Instant::now() + Duration::from_millis(ms))
                    }
                    Ok((arg, _)) => {
                        self.out.line(&format!("wait: '{arg}' is not a number of milliseconds (0-{MAX_WAIT_MS}); usage: wait MS"));
                        self.failures += 1;
                    }
                    Err(err) => {
                        self.out
                            .line(&format!("wait: {}; usage: wait MS", err.message));
                        self.failures += 1;
                    }
                }
                return self.flow();
            }
            _ => {}
        }
        let is_help = word.eq_ignore_ascii_case("help");
        let mut reply = if is_help {
            help(&mut self.sub, args)
        } else {
            self.sub.console_exec(trimmed, Instant::now())
        };
        if let Err(err) = &reply.result {
            if err.code == net_core::ErrorCode::UnknownCommand {
                // The shared commands' suggestion does not know this console's own commands.
                reply = unknown_command(if is_help { args } else { word });
            }
        }
        if reply.result.is_err() {
            self.failures += 1;
        }
        self.out.line(&reply.output);
        // Let what the command started show up right away.
        if !self.out.failed() {
            self.frame(Instant::now());
        }
        self.flow()
    }

    /// Go on, unless output failed.
    fn flow(&self) -> Flow {
        if self.out.failed() {
            Flow::Quit
        } else {
            Flow::Continue
        }
    }

    /// Run frames while a server-list fetch that `servers` left running is still going, so
    /// a script that ends with `servers` prints the list of a slow masterserver too (the fetch
    /// gives up by itself within its timeout).
    fn finish_server_list(&mut self) {
        let until = Instant::now() + FETCH_TIMEOUT + Duration::from_secs(1);
        while self.sub.server_list().is_fetching() && Instant::now() < until && !self.out.failed() {
            self.run_frames_until(Instant::now() + FRAME);
        }
    }

    /// Execute lines from `lines` while running frames, until they end or `quit`.
    fn serve(&mut self, lines: Receiver<String>) {
        loop {
            let now = Instant::now();
            self.frame(now);
            if self.out.failed() {
                return;
            }
            loop {
                match lines.try_recv() {
                    Ok(line) => {
                        if let Flow::Quit = self.exec(&line) {
                            return;
                        }
                    }
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => return,
                }
            }
            std::thread::sleep(FRAME);
        }
    }
}

/// Tab completion from the command table.
struct CommandCompleter;

impl Completer for CommandCompleter {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let line = &line[..pos];
        let start = line.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        let candidates = completions(line)
            .into_iter()
            .map(|word| Pair {
                display: word.clone(),
                replacement: format!("{word} "),
            })
            .collect();
        Ok((start, candidates))
    }
}

impl Hinter for CommandCompleter {
    type Hint = String;
}
impl Highlighter for CommandCompleter {}
impl Validator for CommandCompleter {}
impl Helper for CommandCompleter {}

/// Read lines with the line editor on another thread; returns the channel and the printer.
fn interactive_reader() -> Result<(Receiver<String>, Box<dyn ExternalPrinter + Send>), String> {
    let mut editor: Editor<CommandCompleter, DefaultHistory> =
        Editor::new().map_err(|e| format!("cannot start the line editor: {e}"))?;
    editor.set_helper(Some(CommandCompleter));
    let printer = editor
        .create_external_printer()
        .map_err(|e| format!("cannot print above the prompt: {e}"))?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let history = std::env::var_os("HOME")
            .map(|h| std::path::PathBuf::from(h).join(".parsecnet_history"));
        if let Some(path) = &history {
            let _ = editor.load_history(path);
        }
        while let Ok(line) = editor.readline("parsec> ") {
            if !line.trim().is_empty() {
                let _ = editor.add_history_entry(line.as_str());
            }
            if tx.send(line).is_err() {
                break;
            }
        }
        if let Some(path) = &history {
            let _ = editor.save_history(path);
        }
    });
    Ok((rx, Box::new(printer)))
}

/// Lines from standard input (not a terminal) on another thread.
fn plain_reader() -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            match line {
                Ok(line) => {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
    });
    rx
}

pub fn run(args: &[String]) -> ExitCode {
    let mut script: Option<String> = None;
    let mut stay = false;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--exec" | "-e" => match it.next() {
                Some(s) => script = Some(s.clone()),
                None => return usage_error("--exec needs a command list"),
            },
            "--stay" => stay = true,
            "--help" | "-h" => return stdout::answer("parsecnet console", USAGE),
            other => return usage_error(&format!("unknown option '{other}'")),
        }
    }
    let mut console = Console {
        sub: Subsystem::new(),
        out: Output {
            printer: None,
            failure: None,
        },
        failures: 0,
        names: event_text::EventNames::default(),
    };
    if let Some(script) = &script {
        for command in script.split(';') {
            if let Flow::Quit = console.exec(command) {
                return exit_code(&mut console);
            }
        }
        if !stay {
            console.finish_server_list();
            return exit_code(&mut console);
        }
    }
    let lines = if std::io::stdin().is_terminal() {
        match interactive_reader() {
            Ok((lines, printer)) => {
                console.out.printer = Some(printer);
                console
                    .out
                    .line("parsec-net console: type help for the commands, quit to leave");
                lines
            }
            Err(e) => {
                stdout::error_line(&format!("parsecnet console: {e}; reading plain lines"));
                plain_reader()
            }
        }
    } else {
        plain_reader()
    };
    console.serve(lines);
    exit_code(&mut console)
}

/// The exit status: after failed output, as `stdout` says (once the game is left properly);
/// else 1 if a command failed.
fn exit_code(console: &mut Console) -> ExitCode {
    if let Some(err) = console.out.failure.take() {
        console.sub.shutdown();
        return stdout::failed("parsecnet console", &err);
    }
    if console.failures > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn usage_error(message: &str) -> ExitCode {
    stdout::error_line(&format!("parsecnet console: {message}\n{USAGE}"));
    ExitCode::from(2)
}

#[cfg(test)]
mod tests {
    use super::completions;

    #[test]
    fn tab_completes_the_console_only_commands_too() {
        assert!(completions("wa").contains(&"wait".to_string()));
        assert!(completions("q").contains(&"quit".to_string()));
        assert!(completions("help qu").contains(&"quit".to_string()));
        assert!(completions("help ").contains(&"wait".to_string()));
        assert!(completions("help ").contains(&"status".to_string()));
        assert!(completions("st").contains(&"status".to_string()));
        assert!(!completions("say wa").contains(&"wait".to_string()));
        assert!(completions("help wait x").is_empty());
    }
}
