//! Console input handling: every command is listed and documented, and bad lines of any length
//! or content get a one-line error naming the problem and the usage, without changing state.

use std::time::Instant;

use net_core::console::{self, COMMANDS, MAX_LINE_LEN};
use net_core::{ErrorCode, Subsystem};

fn exec(sub: &mut Subsystem, line: &str) -> (String, Result<(), ErrorCode>) {
    let reply = sub.console_exec(line, Instant::now());
    (reply.output, reply.result.map_err(|e| e.code))
}

#[test]
fn help_lists_every_command_and_the_fixed_names() {
    let mut sub = Subsystem::new();
    let (out, result) = exec(&mut sub, "help");
    assert_eq!(result, Ok(()));
    for command in COMMANDS {
        assert!(out.contains(command.usage), "help misses {}", command.name);
    }
    for fixed in [
        "net.subsys",
        "net.api",
        "net.port",
        "connect",
        "disconnect",
        "join",
        "unjoin",
        "status",
        "help",
    ] {
        assert!(
            COMMANDS.iter().any(|c| c.name == fixed),
            "missing command {fixed}"
        );
    }
    let (out, result) = exec(&mut sub, "help net.api");
    assert_eq!(result, Ok(()));
    assert!(out.starts_with("usage: net.api udp|ipx|NAME|PATH"), "{out}");
    let (out, result) = exec(&mut sub, "help nosuch");
    assert_eq!(result, Err(ErrorCode::UnknownCommand));
    assert!(out.contains("nosuch"), "{out}");
}

#[test]
fn unknown_command_names_itself_and_points_to_help() {
    let mut sub = Subsystem::new();
    let (out, result) = exec(&mut sub, "fly to the moon");
    assert_eq!(result, Err(ErrorCode::UnknownCommand));
    assert_eq!(
        out,
        "unknown command 'fly'; usage: help [COMMAND] lists the commands"
    );
    assert_eq!(sub.input_errors().console_lines, 1);
    let (out, result) = exec(&mut sub, "stauts");
    assert_eq!(result, Err(ErrorCode::UnknownCommand));
    assert!(out.contains("(did you mean status?)"), "{out}");
    assert!(out.contains("usage: help [COMMAND]"), "{out}");
    let (out, result) = exec(&mut sub, "help fly");
    assert_eq!(result, Err(ErrorCode::UnknownCommand));
    assert!(out.contains("'fly'") && out.contains("usage:"), "{out}");
}

#[test]
fn command_names_are_read_in_any_letter_case() {
    let mut sub = Subsystem::new();
    let (out, result) = exec(&mut sub, "HELP net.api");
    assert_eq!(result, Ok(()), "{out}");
    assert!(out.starts_with("usage: net.api udp|ipx|NAME|PATH"), "{out}");
    assert_eq!(exec(&mut sub, "Net.SendFreq 30").1, Ok(()));
    assert!(exec(&mut sub, "net.sendfreq").0.contains("30"));
    let (out, result) = exec(&mut sub, "NET.PORT abc");
    assert_eq!(result, Err(ErrorCode::Parse));
    assert!(out.starts_with("net.port: "), "named as listed: {out}");
}

#[test]
fn protocol_and_built_in_backend_names_are_read_in_any_letter_case() {
    let mut sub = Subsystem::new();
    let (out, result) = exec(&mut sub, "net.subsys GameServer");
    assert_eq!(result, Ok(()), "{out}");
    assert_eq!(sub.protocol().to_string(), "gameserver");
    let (out, result) = exec(&mut sub, "NET.SUBSYS PEER");
    assert_eq!(result, Ok(()), "{out}");
    assert_eq!(sub.protocol().to_string(), "peer");
    assert_eq!(exec(&mut sub, "net.port 0").1, Ok(()));
    let (out, result) = exec(&mut sub, "net.api UDP");
    assert_eq!(result, Ok(()), "{out}");
    assert!(exec(&mut sub, "net.api").0.ends_with("= udp"));
}

#[test]
fn keywords_are_read_in_any_letter_case_like_the_command_names() {
    let mut sub = Subsystem::new();
    assert_eq!(exec(&mut sub, "net.master 127.0.0.1:7").1, Ok(()));
    // Before, `CLEAR` was taken as the name of a masterserver host, silently.
    let (out, result) = exec(&mut sub, "net.master CLEAR");
    assert_eq!(result, Ok(()), "{out}");
    assert_eq!(out, "net.master = none (cleared)");
    assert_eq!(exec(&mut sub, "net.master").0, "net.master = none");
    let (out, result) = exec(&mut sub, "net.sim LAG 20 Loss 5");
    assert_eq!(result, Ok(()), "{out}");
    assert!(exec(&mut sub, "net.sim").0.contains("lag 20"), "{out}");
    let (out, result) = exec(&mut sub, "net.sim OFF");
    assert_eq!(result, Ok(()), "{out}");
    assert_eq!(exec(&mut sub, "net.sim").0, "net.sim = off");
}

#[test]
fn connect_refuses_a_server_address_that_net_server_refuses() {
    // Before, `connect a/b` said "connecting to the slotserver at a/b:6582" (NET_OK) and the
    // game got an error event later; `net.server a/b` was refused at once.
    for protocol in ["slotserver", "gameserver"] {
        let mut sub = Subsystem::new();
        assert_eq!(exec(&mut sub, &format!("net.subsys {protocol}")).1, Ok(()));
        for bad in ["256.1.1.1", "a/b", "-x-", "[name]", "a..b:7000"] {
            let (out, result) = exec(&mut sub, &format!("connect {bad}"));
            assert_eq!(result, Err(ErrorCode::InvalidArgument), "{bad}: {out}");
            assert_eq!(
                exec(&mut sub, &format!("net.server {bad}")).1,
                Err(ErrorCode::InvalidArgument),
                "{bad}"
            );
            assert!(
                out.starts_with("connect: ")
                    && out.contains("is not a host name or IP address")
                    && out.ends_with("; usage: connect [HOST[:PORT]]")
                    && !out.contains('\n'),
                "{protocol} {bad}: {out}"
            );
            assert!(
                sub.poll_event().is_none(),
                "{protocol} {bad}: no game event"
            );
            assert!(
                exec(&mut sub, "status").0.contains("(not connected)"),
                "{protocol} {bad}: nothing started"
            );
        }
    }
}

#[test]
fn lines_refused_before_parsing_still_show_a_usage() {
    let mut sub = Subsystem::new();
    let (out, result) = exec(&mut sub, &"x".repeat(2000));
    assert_eq!(result, Err(ErrorCode::TooLarge));
    assert!(out.contains("usage:"), "{out}");
    let (out, result) = exec(&mut sub, "say a\u{7}b");
    assert_eq!(result, Err(ErrorCode::InvalidArgument));
    assert!(out.contains("usage:"), "{out}");
}

#[test]
fn bad_arguments_name_the_problem_and_show_the_usage_on_one_line() {
    let mut sub = Subsystem::new();
    let cases = [
        (
            "net.port abc",
            ErrorCode::Parse,
            "'abc' is not a port number",
        ),
        (
            "net.port 70000",
            ErrorCode::Parse,
            "'70000' is not a port number",
        ),
        ("net.port -1", ErrorCode::Parse, "not a port number"),
        (
            "net.subsys warp",
            ErrorCode::InvalidArgument,
            "unknown protocol 'warp'",
        ),
        (
            "net.sendfreq 61",
            ErrorCode::InvalidArgument,
            "61 is outside 5-60",
        ),
        (
            "net.sendfreq fast",
            ErrorCode::Parse,
            "'fast' is not a number",
        ),
        (
            "net.rate -5",
            ErrorCode::InvalidArgument,
            "-5 is outside 0-",
        ),
        (
            "net.sendfreq -1",
            ErrorCode::InvalidArgument,
            "-1 is outside 5-60 (Hz)",
        ),
        (
            "net.server host:99999",
            ErrorCode::Parse,
            "'99999' is not a port number",
        ),
        (
            "net.server two words",
            ErrorCode::InvalidArgument,
            "extra argument 'words' after 'two'",
        ),
        (
            "net.server :6581",
            ErrorCode::InvalidArgument,
            "':6581' is not HOST[:PORT]",
        ),
        (
            "net.server 256.1.1.1",
            ErrorCode::InvalidArgument,
            "'256.1.1.1' is not a host name or IP address (bad IPv4 address)",
        ),
        (
            "net.server [gameserver]:6581",
            ErrorCode::InvalidArgument,
            "'gameserver' is not a host name or IP address (bad IPv6 address)",
        ),
        (
            "net.server game/server:6581",
            ErrorCode::InvalidArgument,
            "'game/server' is not a host name or IP address",
        ),
        (
            "net.server -game-",
            ErrorCode::InvalidArgument,
            "is not a host name or IP address",
        ),
        (
            "net.server game..example",
            ErrorCode::InvalidArgument,
            "is not a host name or IP address",
        ),
        (
            "net.master a.example,300.0.0.1:7000",
            ErrorCode::InvalidArgument,
            "'300.0.0.1' is not a host name or IP address",
        ),
        (
            "name this name is far too long for parsec",
            ErrorCode::TooLarge,
            "at most 31 bytes",
        ),
        ("unjoin 300", ErrorCode::InvalidArgument, "outside 0-255"),
        ("record", ErrorCode::InvalidArgument, "no file given"),
        (
            "play /no/such/demo.file",
            ErrorCode::Io,
            "/no/such/demo.file",
        ),
        ("stop", ErrorCode::State, "nothing is recording or playing"),
        (
            "net.api bad name!",
            ErrorCode::InvalidArgument,
            "is not a backend name",
        ),
        (
            "net.api /no/such/libx.so",
            ErrorCode::BackendLoad,
            "no such file",
        ),
        (
            "status now",
            ErrorCode::InvalidArgument,
            "takes no argument",
        ),
        (
            "net.udp.bind \u{7f}",
            ErrorCode::InvalidArgument,
            "control character",
        ),
    ];
    for (line, code, text) in cases {
        let (out, result) = exec(&mut sub, line);
        assert_eq!(result, Err(code), "{line}: {out}");
        assert!(out.contains(text), "{line}: {out}");
        assert!(!out.contains('\n'), "{line}: not one line: {out}");
        if code != ErrorCode::InvalidArgument || !text.contains("control") {
            assert!(out.contains("usage: "), "{line}: no usage in {out}");
        }
    }
    assert_eq!(sub.input_errors().console_lines, cases.len() as u64);
}

#[test]
fn an_extra_argument_is_named_as_such_with_the_usage_on_one_line() {
    let mut sub = Subsystem::new();
    let before = exec(&mut sub, "status").0;
    let cases = [
        (
            "net.sendfreq 5 6",
            "extra argument '6' after '5'",
            "net.sendfreq HZ",
        ),
        (
            "net.rate 1000 2000",
            "extra argument '2000' after '1000'",
            "net.rate BYTES_PER_S",
        ),
        (
            "net.port 7000 7001",
            "extra argument '7001' after '7000'",
            "net.port N",
        ),
        (
            "net.timeout 30 s",
            "extra argument 's' after '30'",
            "net.timeout SECONDS",
        ),
        (
            "unjoin 1 2",
            "extra argument '2' after '1'",
            "unjoin [FLAG]",
        ),
        (
            "net.peer.connect_tries 5 5",
            "extra argument '5' after '5'",
            "net.peer.connect_tries N",
        ),
        (
            "net.peer.connect_interval 300 ms",
            "extra argument 'ms' after '300'",
            "net.peer.connect_interval MS",
        ),
        (
            "net.peer.slot_tries 5 x",
            "extra argument 'x' after '5'",
            "net.peer.slot_tries N",
        ),
        (
            "net.peer.slot_interval 200 200",
            "extra argument '200' after '200'",
            "net.peer.slot_interval MS",
        ),
        (
            "net.peer.reply_wait 100 1",
            "extra argument '1' after '100'",
            "net.peer.reply_wait MS",
        ),
        (
            "net.subsys peer now",
            "extra argument 'now' after 'peer'",
            "net.subsys peer|slotserver|gameserver",
        ),
        (
            "net.server a.example 6581",
            "extra argument '6581' after 'a.example'",
            "net.server HOST[:PORT]",
        ),
        (
            "net.master a.example, b.example 7000",
            "extra argument '7000' after 'b.example'",
            "net.master HOST[:PORT]",
        ),
        (
            "connect 127.0.0.1 6526",
            "extra argument '6526' after '127.0.0.1'",
            "connect [HOST[:PORT]]",
        ),
        (
            "help net.port now",
            "extra argument 'now' after 'net.port'",
            "help [COMMAND]",
        ),
        // Several extra words are named together; a negative or bad first word does not hide them.
        (
            "net.sendfreq -1 2 3",
            "extra argument '2 3' after '-1'",
            "net.sendfreq HZ",
        ),
        ("stop now", "takes no argument, got 'now'", "stop"),
    ];
    for (line, problem, usage) in cases {
        let (out, result) = exec(&mut sub, line);
        // A number command's extra word is a number that did not parse (`PARSE`, as before
        // extra words were named); the other commands refuse the argument (`INVALID_ARGUMENT`).
        let number_command = [
            "net.sendfreq",
            "net.rate",
            "net.port",
            "net.timeout",
            "unjoin",
        ]
        .iter()
        .any(|c| line.starts_with(&format!("{c} ")))
            || line.starts_with("net.peer.");
        let code = if number_command {
            ErrorCode::Parse
        } else {
            ErrorCode::InvalidArgument
        };
        assert_eq!(result, Err(code), "{line}: {out}");
        let name = line.split(' ').next().unwrap();
        assert!(
            out.starts_with(&format!("{name}: {problem}")),
            "{line}: {out}"
        );
        assert!(out.contains(&format!("; usage: {usage}")), "{line}: {out}");
        assert!(!out.contains("not a number"), "{line}: {out}");
        assert!(!out.contains('\n'), "{line}: not one line: {out}");
    }
    // Nothing changed (the uptime line differs).
    let after = exec(&mut sub, "status").0;
    let settings = |s: &str| {
        s.lines()
            .find(|l| l.starts_with("settings:"))
            .unwrap()
            .to_string()
    };
    assert_eq!(settings(&before), settings(&after));
    assert_eq!(exec(&mut sub, "net.port").0, "net.port = 6526");
    assert_eq!(
        exec(&mut sub, "net.peer.slot_tries").0,
        "net.peer.slot_tries = 20"
    );
    // One argument is still fine, and spaces after a comma in net.master are no extra argument.
    assert_eq!(exec(&mut sub, "net.sendfreq 30").1, Ok(()));
    assert_eq!(
        exec(&mut sub, "net.master a.example, b.example:7000").1,
        Ok(())
    );
}

#[test]
fn a_slot_wait_not_longer_than_the_connect_loop_is_kept_with_a_warning() {
    let mut sub = Subsystem::new();
    let set = |sub: &mut Subsystem, line: &str| {
        let (out, result) = exec(sub, line);
        assert_eq!(result, Ok(()), "{line}: {out}");
        assert!(!out.contains('\n'), "{line}: not one line: {out}");
        out
    };
    // 5 x 670 ms = 3350 ms is still longer than the default loop of 10 x 330 ms = 3300 ms.
    let out = set(&mut sub, "net.peer.slot_tries 5");
    assert_eq!(out, "net.peer.slot_tries = 5 (from the next connect)");
    // 5 x 200 ms = 1000 ms is not: kept, and the reply says so.
    let out = set(&mut sub, "net.peer.slot_interval 200");
    assert!(
        out.starts_with("net.peer.slot_interval = 200 (from the next connect); warning: "),
        "{out}"
    );
    assert!(
        out.contains("waits 1000 ms for its slot (5 x 200 ms)")
            && out.contains("the 3300 ms connect loop (10 x 330 ms)")
            && out.contains("net.peer.slot_tries x net.peer.slot_interval"),
        "{out}"
    );
    assert_eq!(
        exec(&mut sub, "net.peer.slot_interval").0,
        "net.peer.slot_interval = 200 ms"
    );
    // The connect loop's settings are compared too; equal is not longer.
    let out = set(&mut sub, "net.peer.connect_interval 100");
    assert!(
        out.contains("warning: a slave now waits 1000 ms")
            && out.contains("the 1000 ms connect loop (10 x 100 ms)"),
        "{out}"
    );
    let out = set(&mut sub, "net.peer.connect_interval 50");
    assert_eq!(
        out,
        "net.peer.connect_interval = 50 (from the next connect)"
    );
    let out = set(&mut sub, "net.peer.connect_tries 40");
    assert!(
        out.contains("the 2000 ms connect loop (40 x 50 ms)"),
        "{out}"
    );
    // reply_wait has nothing to do with it.
    let out = set(&mut sub, "net.peer.reply_wait 100");
    assert_eq!(out, "net.peer.reply_wait = 100 (from the next connect)");
    let out = set(&mut sub, "net.peer.slot_tries 100");
    assert!(!out.contains("warning"), "{out}");
}

#[test]
fn calls_that_need_a_game_say_so_naming_the_command_once() {
    let mut sub = Subsystem::new();
    for (line, name) in [("join", "join"), ("unjoin", "unjoin"), ("say hi", "say")] {
        let (out, result) = exec(&mut sub, line);
        assert_eq!(result, Err(ErrorCode::NotConnected), "{line}: {out}");
        assert!(
            out.starts_with(&format!("{name}: not connected to a game; usage: ")),
            "{line}: {out}"
        );
        assert_eq!(out.matches(&format!("{name}:")).count(), 1, "{line}: {out}");
        assert!(out.contains("usage: "), "{line}: {out}");
    }
}

#[test]
fn overlong_and_control_character_lines_are_refused_whole() {
    let mut sub = Subsystem::new();
    let long = format!("net.port {}", "1".repeat(MAX_LINE_LEN));
    let (out, result) = exec(&mut sub, &long);
    assert_eq!(result, Err(ErrorCode::TooLarge));
    assert!(out.contains("longer than 1024 bytes"), "{out}");
    let (out, result) = exec(&mut sub, "net.port 7000\r\nnet.port 7001");
    assert_eq!(result, Err(ErrorCode::InvalidArgument));
    assert!(out.contains("control character"), "{out}");
    // Nothing of a refused line took effect.
    assert_eq!(sub.packets().port(), 6526);
}

#[test]
fn empty_and_blank_lines_do_nothing() {
    let mut sub = Subsystem::new();
    for line in ["", "   ", "\t"] {
        let (out, result) = exec(&mut sub, line);
        assert_eq!(result, Ok(()));
        assert_eq!(out, "");
    }
}

#[test]
fn game_calls_before_connecting_say_so() {
    let mut sub = Subsystem::new();
    assert_eq!(
        sub.protocol().console_name(),
        "peer",
        "peer-to-peer is the default protocol"
    );
    for line in ["disconnect", "join", "unjoin", "say hello"] {
        let (out, result) = exec(&mut sub, line);
        assert!(
            matches!(result, Err(ErrorCode::NotConnected)),
            "{line}: {out}"
        );
        assert!(out.contains("not connected"), "{line}: {out}");
    }
}

#[test]
fn settings_without_an_argument_show_their_value() {
    let mut sub = Subsystem::new();
    for (line, shown) in [
        ("net.port", "net.port = 6526"),
        ("net.subsys", "net.subsys = peer"),
        ("net.sendfreq", "net.sendfreq = 20 Hz"),
        (
            "net.peer.connect_interval",
            "net.peer.connect_interval = 330 ms",
        ),
        ("net.peer.slot_tries", "net.peer.slot_tries = 20"),
    ] {
        let (out, result) = exec(&mut sub, line);
        assert_eq!(result, Ok(()), "{line}");
        assert_eq!(out, shown);
    }
    assert_eq!(exec(&mut sub, "net.sendfreq 30").1, Ok(()));
    assert_eq!(sub.settings().send_hz, 30);
    assert_eq!(exec(&mut sub, "net.peer.reply_wait 250").1, Ok(()));
    assert_eq!(sub.settings().peer.reply_wait.as_millis(), 250);
}

#[test]
fn backend_options_are_stored_per_backend() {
    let mut sub = Subsystem::new();
    let (out, result) = exec(&mut sub, "net.udp.bind 127.0.0.1");
    assert_eq!(result, Ok(()), "{out}");
    assert_eq!(sub.backend_options_text("udp"), "bind=127.0.0.1\n");
    let (out, _) = exec(&mut sub, "net.udp.bind");
    assert_eq!(out, "net.udp.bind = 127.0.0.1");
    let (_, result) = exec(&mut sub, "net.udp.bad/key x");
    assert!(result.is_err());
}

#[test]
fn completion_offers_commands_and_first_arguments() {
    assert_eq!(
        console::completions("net.su"),
        vec!["net.subsys".to_string()]
    );
    assert_eq!(
        console::completions("net.subsys g"),
        vec!["gameserver".to_string()]
    );
    assert!(console::completions("help net.").contains(&"net.api".to_string()));
    assert!(console::completions("status x y").is_empty());
}

#[test]
fn arbitrary_bytes_never_panic() {
    let mut sub = Subsystem::new();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..2000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let len = (seed % 40) as usize;
        let bytes: Vec<u8> = (0..len).map(|i| (seed >> (i % 8 * 8)) as u8).collect();
        let line = String::from_utf8_lossy(&bytes);
        let reply = sub.console_exec(&line, Instant::now());
        assert!(!reply.output.contains('\n') || reply.result.is_ok());
    }
}

#[test]
fn status_names_every_field_even_before_a_game() {
    let mut sub = Subsystem::new();
    let (out, result) = exec(&mut sub, "status");
    assert_eq!(result, Ok(()));
    for field in [
        "protocol: peer",
        "backend: udp",
        "game: not in a game",
        "slot -",
        "0 other players",
        "RTT -",
        "loss -",
        "settings:",
    ] {
        assert!(out.contains(field), "missing {field:?} in:\n{out}");
    }
}

#[test]
fn net_server_takes_ip_addresses_and_host_names_and_a_refused_one_changes_nothing() {
    let mut sub = Subsystem::new();
    for host in [
        "[::1]:6581",
        "::1",
        "[fe80::1%lo]:6581",
        "127.0.0.1:6581",
        "localhost",
        "game-server.example.org.:7000",
        "lan_box",
        "10.0.0.255",
    ] {
        let (out, result) = exec(&mut sub, &format!("net.server {host}"));
        assert_eq!(result, Ok(()), "{host}: {out}");
        assert_eq!(out, format!("net.server = {host}"));
    }
    let (out, result) = exec(&mut sub, "net.server 1.2.3.999");
    assert_eq!(result, Err(ErrorCode::InvalidArgument), "{out}");
    assert!(out.contains("usage: net.server HOST[:PORT]"), "{out}");
    let (out, _) = exec(&mut sub, "net.server");
    assert_eq!(
        out, "net.server = 10.0.0.255",
        "the refused value changed nothing"
    );
}
