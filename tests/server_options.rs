//! What an admin sees when a server's command line is wrong: `parsecnet slotserver`,
//! `gameserver` and `masterserver` with a bad value stop with exit status 2 and a first line
//! naming the option and the value as typed; a port that is taken stops them with exit status 1
//! and a line naming the address.

use std::net::{TcpListener, UdpSocket};
use std::process::{Command, Output};

mod support;
use support::processes::loopback_slotserver;

fn server(kind: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_parsecnet"))
        .arg(kind)
        .args(args)
        .env("PARSEC_NET_LOG", "off")
        .output()
        .expect("parsecnet runs")
}

/// The first line of what the run wrote to standard error.
fn first_error_line(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .next()
        .unwrap_or("")
        .to_string()
}

#[test]
fn a_bad_value_is_named_with_the_option_and_exits_2() {
    let long_title = "t".repeat(128);
    let cases: &[(&str, &[&str], &str)] = &[
        ("slotserver", &["--port", "70000"], "--port: '70000' is not"),
        ("slotserver", &["--max-players", "17"], "--max-players"),
        ("slotserver", &["--name", ""], "--name: '' must be"),
        (
            "slotserver",
            &["--idle-timeout", "-1"],
            "--idle-timeout: '-1'",
        ),
        ("gameserver", &["--udp-port", "x"], "--udp-port: 'x' is not"),
        (
            "gameserver",
            &["--distance", "-1"],
            "--distance: '-1' is not",
        ),
        (
            "gameserver",
            &["--distance", "nan"],
            "--distance: 'nan' is not",
        ),
        (
            "gameserver",
            &["--alive-timeout", "0"],
            "--alive-timeout: '0' is not",
        ),
        (
            "gameserver",
            &["--event-delay", "5000"],
            "--event-delay: '5000' is not",
        ),
        (
            "masterserver",
            &["--max-servers", "0"],
            "--max-servers: '0' is not",
        ),
        ("masterserver", &["--title", ""], "--title: '' must be"),
        ("masterserver", &["--title", &long_title], "--title: 'ttt"),
        // Printable ASCII of the right length, but a masterserver could not read it back: the
        // message says why (it used to say only "1-31 printable ASCII characters").
        (
            "slotserver",
            &["--name", "Gamma os: Quadrant"],
            "--name: 'Gamma os: Quadrant' must be 1-31 printable ASCII characters, without \" os: \"",
        ),
        (
            "gameserver",
            &["--os", "linux url: x"],
            "--os: 'linux url: x' must be 1-31 printable ASCII characters, without \" maxplayers: \" or \" url: \"",
        ),
        (
            "slotserver",
            &["--os", "linux maxplayers: 9"],
            "--os: 'linux maxplayers: 9' must be 1-31 printable ASCII characters, without",
        ),
        // The same masterserver twice listed the server twice there (the bad port after it
        // stops a run that would take the duplicate).
        (
            "gameserver",
            &[
                "--master",
                "Master.example",
                "--master",
                "master.example:6502",
                "--port",
                "70000",
            ],
            "--master: 'master.example:6502' is given twice (as master.example:6502)",
        ),
    ];
    for (kind, args, expected) in cases {
        let out = server(kind, args);
        let line = first_error_line(&out);
        assert_eq!(out.status.code(), Some(2), "{kind} {args:?}: {line}");
        let prefix = format!("parsecnet {kind}: {expected}");
        assert!(line.starts_with(&prefix), "{kind} {args:?}: {line}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("usage: parsecnet {kind}")),
            "{stderr}"
        );
    }
}

#[test]
fn a_port_in_use_exits_1_naming_the_address() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let udp_port = udp.local_addr().unwrap().port().to_string();
    let bind = ["--bind", "127.0.0.1"];
    let cases: Vec<(&str, Vec<&str>, String)> = vec![
        (
            "slotserver",
            [&bind[..], &["--port", &port, "--no-http"]].concat(),
            format!("binding TCP 127.0.0.1:{port}: "),
        ),
        (
            "masterserver",
            [&bind[..], &["--port", "0", "--http-port", &port]].concat(),
            format!("binding HTTP 127.0.0.1:{port}: "),
        ),
        (
            "gameserver",
            [
                &bind[..],
                &["--port", "0", "--no-http", "--udp-port", &udp_port],
            ]
            .concat(),
            format!("binding UDP 127.0.0.1:{udp_port}: "),
        ),
    ];
    for (kind, args, expected) in cases {
        let out = server(kind, &args);
        let line = first_error_line(&out);
        assert_eq!(out.status.code(), Some(1), "{kind} {args:?}: {line}");
        assert!(
            line.starts_with(&format!("parsecnet {kind}: {expected}")),
            "{kind}: {line}"
        );
        assert!(line.contains("in use"), "{kind}: {line}");
    }
}

/// Regression: a list file that cannot be written (`--html` in a directory that does not
/// exist) let the server start and only warned at every change, so the list was never
/// published; it now stops the server at start with exit status 1 and a line naming the file.
#[test]
fn a_list_file_that_cannot_be_written_stops_the_server_at_start() {
    let missing = std::env::temp_dir().join(format!("parsec-no-such-dir-{}", std::process::id()));
    let file = |name: &str| missing.join(name).to_string_lossy().into_owned();
    for (kind, option, path) in [
        ("slotserver", "--html", file("players.html")),
        ("gameserver", "--json", file("players.json")),
        ("masterserver", "--html", file("servers.html")),
        ("masterserver", "--json", file("servers.json")),
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_parsecnet"))
            .args([kind, "--bind", "127.0.0.1", "--port", "0", "--no-http"])
            .args(if kind == "gameserver" {
                &["--udp-port", "0"][..]
            } else {
                &[]
            })
            .args([option, &path])
            .env("PARSEC_NET_LOG", "off")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("parsecnet runs");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if std::time::Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let out = child.wait_with_output().unwrap();
        let line = first_error_line(&out);
        assert_eq!(
            status.and_then(|s| s.code()),
            Some(1),
            "{kind} {option} {path}: still running or wrong status; {line}"
        );
        assert!(
            line.starts_with(&format!("parsecnet {kind}: ")) && line.contains(&path),
            "{kind}: {line}"
        );
        assert!(line.contains("No such file or directory"), "{kind}: {line}");
    }
}

/// Regression: with an `--html`/`--json` file that cannot be written, the server logged
/// `... listening on TCP ...` (and printed `registering with masterserver ...`) before it
/// stopped with exit status 1, so an admin's log showed a server that never served a client as
/// listening. Nothing says it listens or registers until the lists are written; and when it
/// runs, the first line on standard output is the listening line (the guide's promise, also for
/// a reader that takes one line), the registering line after it.
#[test]
fn a_server_that_stops_at_start_never_says_it_listens() {
    let missing = std::env::temp_dir().join(format!("parsec-no-dir-{}", std::process::id()));
    let path = missing.join("players.html").to_string_lossy().into_owned();
    // Nothing listens there; the server never gets as far as connecting.
    let master = TcpListener::bind("127.0.0.1:0").unwrap();
    let master = master.local_addr().unwrap().to_string();
    for kind in ["slotserver", "gameserver", "masterserver"] {
        let mut args = vec!["--bind", "127.0.0.1", "--port", "0", "--no-http"];
        if kind == "gameserver" {
            args.extend(["--udp-port", "0"]);
        }
        if kind != "masterserver" {
            args.extend(["--master", &master]);
        }
        args.extend(["--html", &path]);
        let out = Command::new(env!("CARGO_BIN_EXE_parsecnet"))
            .arg(kind)
            .args(&args)
            .env("PARSEC_NET_LOG", "info")
            .output()
            .expect("parsecnet runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{kind}: {stderr}");
        assert!(stderr.contains(&path), "{kind}: {stderr}");
        assert!(!stderr.contains("listening on"), "{kind}: {stderr}");
        assert!(
            out.stdout.is_empty(),
            "{kind}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

#[test]
fn the_listening_line_comes_first_also_with_masterservers() {
    use std::io::{BufRead, BufReader};
    let master = TcpListener::bind("127.0.0.1:0").unwrap();
    let master = master.local_addr().unwrap().to_string();
    let mut child = loopback_slotserver()
        .args(["--master", &master])
        .env("PARSEC_NET_LOG", "off")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("parsecnet runs");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let second = lines.next().unwrap().unwrap();
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert!(
        first.starts_with("slotserver 'parsec' listening on TCP 127.0.0.1:"),
        "{first}"
    );
    assert_eq!(second, format!("registering with masterserver {master}"));
    assert_eq!(status.code(), Some(0));
}

/// The options in the admin guide's table after `heading` (rows starting with `` | `--``), up
/// to the next `## ` heading.
fn guide_options(heading: &str) -> Vec<String> {
    let guide = include_str!("../docs/server-admin.md");
    let start = guide.find(heading).expect("the guide has the heading");
    let section = &guide[start + heading.len()..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    section
        .lines()
        .filter_map(|l| l.strip_prefix("| `--"))
        .map(|l| format!("--{}", l.split([' ', '`']).next().unwrap()))
        .collect()
}

/// `--help` of each server lists every option of its table in docs/server-admin.md, the
/// gameserver's own ones (its UDP side, `--udp-rate` among them) under `gameserver options:`,
/// and the slotserver none of those. Regression: `--udp-rate` was listed among the common
/// options, which the slotserver refuses (`unknown option '--udp-rate'`), and `--alive-timeout`
/// did not say its range 1-3600.
#[test]
fn help_lists_every_option_the_admin_guide_documents() {
    let help = |kind: &str| {
        let out = server(kind, &["--help"]);
        assert_eq!(out.status.code(), Some(0), "{kind} --help");
        String::from_utf8(out.stdout).unwrap()
    };
    let listed = |text: &str, option: &str| {
        text.lines()
            .any(|l| l.trim_start().split(' ').next() == Some(option))
    };
    let common = guide_options("## Running a slotserver");
    let own = guide_options("## Running a gameserver");
    let master = guide_options("## Running a masterserver");
    assert!(common.len() >= 18 && own.len() == 5 && master.len() >= 12);
    let slot = help("slotserver");
    let game = help("gameserver");
    let (game_common, game_own) = game.split_once("gameserver options:").unwrap();
    for option in &common {
        assert!(listed(&slot, option), "slotserver --help lacks {option}");
        assert!(
            listed(game_common, option),
            "gameserver --help lacks {option}"
        );
    }
    for option in &own {
        assert!(
            listed(game_own, option),
            "gameserver options: lack {option}"
        );
        assert!(
            !listed(game_common, option),
            "{option} among the common ones"
        );
        assert!(!listed(&slot, option), "slotserver --help lists {option}");
    }
    let masterserver = help("masterserver");
    for option in &master {
        assert!(
            listed(&masterserver, option),
            "masterserver --help lacks {option}"
        );
    }
    assert!(game_own.contains("1-3600"), "{game_own}");
}
