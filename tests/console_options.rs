//! `parsecnet console`'s own options: `--help` explains them and exits 0, an unknown option is a
//! usage error (exit 2), and a script's failing command makes the exit status 1.

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
