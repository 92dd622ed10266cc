//! `parsecnet console`: runs console lines against one `Subsystem`, from `--exec` (commands
//! separated by ';') or from standard input, one command per line.

use std::io::BufRead;
use std::process::ExitCode;
use std::time::Instant;

use net_core::Subsystem;

const USAGE: &str = "usage: parsecnet console [--exec \"CMD; CMD; ...\"]";

pub fn run(args: &[String]) -> ExitCode {
    let mut script: Option<String> = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--exec" | "-e" => match it.next() {
                Some(s) => script = Some(s.clone()),
                None => return usage_error("--exec needs a command list"),
            },
            other => return usage_error(&format!("unknown option '{other}'")),
        }
    }
    let mut sub = Subsystem::new();
    let mut failures = 0;
    let mut run_line = |line: &str| {
        let reply = sub.console_exec(line, Instant::now());
        if !reply.output.is_empty() {
            if reply.result.is_ok() {
                println!("{}", reply.output);
            } else {
                eprintln!("{}", reply.output);
            }
        }
        if reply.result.is_err() {
            failures += 1;
        }
    };
    match script {
        Some(script) => {
            for command in script.split(';') {
                run_line(command);
            }
        }
        None => {
            for line in std::io::stdin().lock().lines() {
                match line {
                    Ok(line) => run_line(&line),
                    Err(e) => {
                        eprintln!("parsecnet console: reading input: {e}");
                        break;
                    }
                }
            }
        }
    }
    if failures > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn usage_error(message: &str) -> ExitCode {
    eprintln!("parsecnet console: {message}\n{USAGE}");
    ExitCode::from(2)
}
