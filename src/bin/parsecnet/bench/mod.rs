//! `parsecnet bench [--quick] [--out DIR]`: measures the figures of issue 9 in one run (round
//! trip against raw UDP, windowed echo, jump-table call cost, backend switch, gameserver
//! scaling, peer-to-peer startup, heap allocations per packet), prints them as a table and
//! writes `DIR/bench.json` and SVG plots. `parsecnet bench child ROLE ...` is the helper process
//! the measurements start (a whole-stack peer or a raw UDP socket).

pub mod alloc_count;
mod allocations;
mod backend_switch;
mod call_overhead;
mod capi;
mod child_process;
mod echo;
mod json;
mod peer_child;
mod plots;
mod report;
mod rtt;
mod sampling;
mod scaling;
mod startup;
mod svg;
mod udp_child;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use report::Section;

const USAGE: &str = "usage: parsecnet bench [--quick] [--out DIR]

  --quick     tiny counts (a smoke run, about half a minute); figures are rough
  --out DIR   where bench.json and the SVG plots go (default target/bench)
  --only KEYS measure only these (comma-separated: rtt, echo, jump_table, backend_switch,
              gameserver_scaling, p2p_startup; allocations come with rtt and echo)";

/// The counts of one run.
#[derive(Clone, Copy, Debug)]
struct Plan {
    quick: bool,
    rtt: rtt::RttPlan,
    echo_secs: f64,
    call_iterations: u64,
    switch: backend_switch::SwitchPlan,
    scaling: scaling::ScalingPlan,
    startup_runs: usize,
}

impl Plan {
    fn new(quick: bool) -> Plan {
        if quick {
            Plan {
                quick,
                rtt: rtt::RttPlan {
                    rounds: 2,
                    per_round: 100,
                    warmup: 50,
                },
                echo_secs: 0.5,
                call_iterations: 200_000,
                switch: backend_switch::SwitchPlan {
                    secs: 1.5,
                    switch_at_ms: 600,
                    drain_secs: 1.5,
                },
                scaling: scaling::ScalingPlan {
                    clients: &[16, 100, 1000],
                    warmup_ticks: 5,
                    ticks: 20,
                },
                startup_runs: 1,
            }
        } else {
            Plan {
                quick,
                rtt: rtt::RttPlan {
                    rounds: 10,
                    per_round: 2000,
                    warmup: 500,
                },
                echo_secs: 5.0,
                call_iterations: 20_000_000,
                switch: backend_switch::SwitchPlan {
                    secs: 6.0,
                    switch_at_ms: 3000,
                    drain_secs: 3.0,
                },
                scaling: scaling::ScalingPlan {
                    clients: &[16, 100, 1000],
                    warmup_ticks: 40,
                    ticks: 400,
                },
                startup_runs: 7,
            }
        }
    }
}

pub fn run(args: &[String]) -> ExitCode {
    if args.first().map(String::as_str) == Some("child") {
        return run_child(&args[1..]);
    }
    let mut quick = false;
    let mut out = PathBuf::from("target/bench");
    let mut only: Option<Vec<String>> = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--quick" => quick = true,
            "--out" => match rest.next() {
                Some(dir) => out = PathBuf::from(dir),
                None => {
                    eprintln!("parsecnet bench: --out needs a directory\n{USAGE}");
                    return ExitCode::from(2);
                }
            },
            "--only" => match rest.next() {
                Some(keys) => only = Some(keys.split(',').map(str::to_string).collect()),
                None => {
                    eprintln!("parsecnet bench: --only needs a list\n{USAGE}");
                    return ExitCode::from(2);
                }
            },
            "--help" | "-h" => {
                say!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("parsecnet bench: unknown option '{other}'\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    match run_all(Plan::new(quick), &out, only.as_deref()) {
        Ok(all_measured) if all_measured => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("parsecnet bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run_child(args: &[String]) -> ExitCode {
    let (role, rest) = match args.split_first() {
        Some((role, rest)) => (role.as_str(), rest),
        None => ("", args),
    };
    let result = match role {
        "peer" => peer_child::run(rest),
        "udp" => udp_child::run(rest),
        other => Err(format!("unknown child role '{other}'")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            say!("error {e}");
            eprintln!("parsecnet bench child {role}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Run one measurement, turning a failure into a failed section so the rest still runs.
fn measured(
    key: &'static str,
    title: &'static str,
    f: impl FnOnce() -> Result<Section, String>,
) -> Section {
    let start = Instant::now();
    eprintln!("bench: {title} ...");
    let section = f().unwrap_or_else(|e| Section::failed(key, title, e));
    eprintln!(
        "bench: {title}: {} ({:.1} s)",
        section.error.as_deref().unwrap_or("done"),
        start.elapsed().as_secs_f64()
    );
    section
}

/// Measure everything, print the table, write the files; true if every measurement worked.
fn run_all(plan: Plan, out: &std::path::Path, only: Option<&[String]>) -> Result<bool, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("creating {}: {e}", out.display()))?;
    let started = Instant::now();
    let wanted = |key: &str| only.is_none_or(|keys| keys.iter().any(|k| k == key));
    let mut sections: Vec<Section> = Vec::new();
    let mut rtt_result = None;
    if wanted("rtt") {
        sections.push(measured("rtt", rtt::TITLE, || {
            let r = rtt::measure(plan.rtt)?;
            let s = rtt::section(plan.rtt, &r);
            rtt_result = Some(r);
            Ok(s)
        }));
    }
    let mut echo_result = None;
    if wanted("echo") {
        sections.push(measured("echo", echo::TITLE, || {
            let r = echo::measure(plan.echo_secs)?;
            let s = echo::section(plan.echo_secs, &r);
            echo_result = Some(r);
            Ok(s)
        }));
    }
    if wanted("jump_table") {
        sections.push(measured("jump_table", call_overhead::TITLE, || {
            call_overhead::measure(plan.call_iterations)
        }));
    }
    if wanted("backend_switch") {
        sections.push(measured("backend_switch", backend_switch::TITLE, || {
            backend_switch::measure(plan.switch)
        }));
    }
    let mut scaling_rows = Vec::new();
    if wanted("gameserver_scaling") {
        sections.push(measured("gameserver_scaling", scaling::TITLE, || {
            scaling_rows = scaling::measure(plan.scaling)?;
            Ok(scaling::section(plan.scaling, &scaling_rows))
        }));
    }
    if wanted("p2p_startup") {
        sections.push(measured("p2p_startup", startup::TITLE, || {
            startup::measure(plan.startup_runs)
        }));
    }
    if wanted("rtt") || wanted("echo") {
        sections.push(measured("allocations", allocations::TITLE, || {
            allocations::section(rtt_result.as_ref(), echo_result.as_ref())
        }));
    }

    let mut plot_files = Vec::new();
    if let Some(r) = &rtt_result {
        plot_files.extend(plots::rtt(out, r)?);
    }
    if !scaling_rows.is_empty() {
        plot_files.extend(plots::scaling(out, &scaling_rows)?);
    }
    let machine = machine_text();
    let json = report::to_json(&sections, plan.quick, &machine);
    let json_path = out.join("bench.json");
    std::fs::write(&json_path, json.to_text())
        .map_err(|e| format!("writing {}: {e}", json_path.display()))?;

    say!(
        "parsecnet bench ({} run, {} build, {machine})\n",
        if plan.quick { "quick" } else { "full" },
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
    say!("{}", report::table(&sections).trim_end_matches('\n'));
    for s in &sections {
        for note in &s.notes {
            say!("  [{}] {note}", s.key);
        }
    }
    say!("\nwrote {}", json_path.display());
    for p in &plot_files {
        say!("wrote {}", p.display());
    }
    say!("total {:.1} s", started.elapsed().as_secs_f64());
    Ok(sections.iter().all(|s| s.error.is_none()))
}

/// CPU model and count, for the report.
fn machine_text() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map_or("unknown CPU".to_string(), |m| m.trim().to_string());
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{model}, {cpus} CPUs available")
}
