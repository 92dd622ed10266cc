//! `parsecnet`: the command-line program. Subcommands:
//! - `console [--exec "cmd; cmd"]`: the console over the same command table as NET_ConsoleExec.
//!
//! Servers and the demo are added as further subcommands.

#[macro_use]
mod stdout;
mod bench;
mod console_cli;
mod demo;
mod event_text;
mod gameserver_cli;
mod masterserver_cli;
mod server_options;
mod server_run;
mod slotserver_cli;

use std::process::ExitCode;

/// Every allocation is counted (`parsecnet bench` reads the counts; the cost is one relaxed
/// atomic add per allocation).
#[global_allocator]
static ALLOCATOR: bench::alloc_count::CountingAllocator = bench::alloc_count::CountingAllocator;

const USAGE: &str = "usage: parsecnet <command> [options]

commands:
  console [--exec \"CMD; CMD\"]   run console commands (interactive without --exec)
  slotserver [options]          run a slotserver (slotserver --help: its options)
  gameserver [options]          run a gameserver (gameserver --help: its options)
  masterserver [options]        run a masterserver (masterserver --help: its options)
  demo [--duration S]           a local match on loopback showing the layers at work
  bench [--quick] [--out DIR]   measure the benchmark figures (table, bench.json, SVG plots)
  help                          this text";

fn main() -> ExitCode {
    parsec_net::logging::install();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(command) = args.first() else {
        stdout::error_line(USAGE);
        return ExitCode::from(2);
    };
    let rest = &args[1..];
    match command.as_str() {
        "console" => console_cli::run(rest),
        "demo" => demo::run_demo(rest),
        "slotserver" => slotserver_cli::run(rest),
        "gameserver" => gameserver_cli::run(rest),
        "masterserver" => masterserver_cli::run(rest),
        "bench" => bench::run(rest),
        "help" | "--help" | "-h" => stdout::answer("parsecnet", USAGE),
        other => {
            stdout::error_line(&format!("parsecnet: unknown command '{other}'\n{USAGE}"));
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    /// Regression: `help` had its description one column right of the others.
    #[test]
    fn the_command_descriptions_share_one_column() {
        let columns: Vec<(usize, &str)> = super::USAGE
            .lines()
            .skip_while(|l| *l != "commands:")
            .skip(1)
            .map(|l| {
                let end_of_usage = l[2..].find("  ").map(|i| i + 2).unwrap();
                let start = end_of_usage + l[end_of_usage..].find(|c| c != ' ').unwrap();
                (start, l)
            })
            .collect();
        assert!(columns.len() >= 7, "{columns:?}");
        assert!(
            columns.iter().all(|(c, _)| *c == columns[0].0),
            "{columns:#?}"
        );
    }
}
