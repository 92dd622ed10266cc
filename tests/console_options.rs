//! `parsecnet console`'s own options: `--help` explains them and exits 0, an unknown option is a
//! usage error (exit 2), and a script's failing command makes the exit status 1. Also what needs
//! the real program's working directory: `net.api FILE.so` for a backend file there.

use std::process::{Command, Output};

fn console(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_parsecnet"))
        .arg("console")
        .args(args)
        .env("PARSEC_NET_LOG", "off")
        .output()
        .expect("parsecnet runs")
}

#[test]
fn help_explains_the_options_and_exits_0() {
    for flag in ["--help", "-h"] {
        let out = console(&[flag]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{flag}: {:?}", out.status);
        assert!(stdout.starts_with("usage: parsecnet console"), "{stdout}");
        assert!(
            stdout.contains("--exec") && stdout.contains("--stay"),
            "{stdout}"
        );
    }
}

#[test]
fn an_unknown_option_is_a_usage_error() {
    let out = console(&["--fly"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown option '--fly'"), "{stderr}");
    assert!(stderr.contains("usage: parsecnet console"), "{stderr}");
}

#[test]
fn a_script_with_a_failing_command_exits_1_and_says_why() {
    let out = console(&["--exec", "net.sendfreq 30; stauts"]);
    assert_eq!(out.status.code(), Some(1));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("did you mean status?"), "{text}");
}

#[test]
fn wait_names_an_extra_argument_as_such() {
    let out = console(&["--exec", "wait 5 6"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.trim_end(),
        "wait: extra argument '6' after '5' (it takes one); usage: wait MS"
    );
    let out = console(&["--exec", "wait x"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("wait: 'x' is not a number of milliseconds"),
        "{stdout}"
    );
}

#[test]
fn help_knows_the_console_only_commands() {
    let out = console(&["--exec", "help wait; help quit; HELP Exit; help"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("usage: wait MS\n"), "{stdout}");
    assert!(stdout.contains("usage: quit\n"), "{stdout}");
    assert!(stdout.contains("usage: exit\n"), "{stdout}");
    assert!(!stdout.contains("unknown command"), "{stdout}");
    // `help` alone lists the shared commands and the console-only ones.
    let list = &stdout[stdout.find("commands:").expect("the list")..];
    for usage in [
        "help [COMMAND]",
        "net.sendfreq HZ",
        "wait MS",
        "quit",
        "exit",
    ] {
        assert!(
            list.lines().any(|l| l.trim_start().starts_with(usage)),
            "help misses {usage}: {list}"
        );
    }
    // Other help lines are the shared help's.
    let out = console(&["--exec", "help nosuch"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("unknown command 'nosuch'"), "{stdout}");
}

#[test]
fn quit_takes_no_argument_and_its_name_is_read_in_any_case() {
    let out = console(&["--exec", "quit now; QUIT; status"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.trim_end(),
        "quit: takes no argument, got 'now'; usage: quit",
        "QUIT quits before status"
    );
}

#[test]
fn a_backend_file_in_the_working_directory_loads_by_its_bare_name() {
    let exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_parsecnet"));
    let built = exe.with_file_name("libparsec_backend_udp.so");
    assert!(
        built.is_file(),
        "the UDP backend is built beside {}",
        exe.display()
    );
    let dir = std::env::temp_dir().join(format!("pn-cwd-backend-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("libmy_udp_copy.so");
    std::fs::copy(&built, &copy).unwrap();
    let out = Command::new(&exe)
        .args([
            "console",
            "--exec",
            "net.port 0; net.api libmy_udp_copy.so; status",
        ])
        .current_dir(&dir)
        .env("PARSEC_NET_LOG", "off")
        .output()
        .expect("parsecnet runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("libmy_udp_copy.so"), "{stdout}");
}

#[test]
fn a_typo_of_a_console_only_command_gets_a_suggestion_too() {
    let out = console(&["--exec", "wiat 5; qiut; help qiut; EXTI; stauts; fly"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "unknown command 'wiat' (did you mean wait?); usage: help [COMMAND] lists the commands",
            "unknown command 'qiut' (did you mean quit?); usage: help [COMMAND] lists the commands",
            "unknown command 'qiut' (did you mean quit?); usage: help [COMMAND] lists the commands",
            "unknown command 'EXTI' (did you mean exit?); usage: help [COMMAND] lists the commands",
            "unknown command 'stauts' (did you mean status?); usage: help [COMMAND] lists the commands",
            "unknown command 'fly'; usage: help [COMMAND] lists the commands",
        ],
        "{stdout}"
    );
}
