//! What an admin sees when a server's command line is wrong: `parsecnet slotserver`,
//! `gameserver` and `masterserver` with a bad value stop with exit status 2 and a first line
//! naming the option and the value as typed; a port that is taken stops them with exit status 1
//! and a line naming the address.

use std::net::{TcpListener, UdpSocket};
use std::process::{Command, Output};

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
