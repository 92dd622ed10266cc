//! The generated C headers compile cleanly where a game includes them: parsec_net.h as C99 and as
//! C++11, with the jump-table macros and with PARSEC_NET_STATIC_BIND, and parsec_net_backend.h on
//! its own as C99 (a backend author includes only that). All with -Wall -Wextra -Wpedantic -Werror.
//! And the macros really route NETs_ calls through the table, and PARSEC_NET_STATIC_BIND really
//! turns them into direct calls (seen in the symbols a built program imports).

use parsec_net_ffi_tests::compile::compile_only;
use parsec_net_ffi_tests::Lang;

fn assert_compiles(source: &str, lang: Lang, extra: &[&str], tag: &str) {
    if let Err(message) = compile_only(source, lang, extra, tag) {
        panic!("{source} does not compile with {extra:?}:\n{message}");
    }
}

#[test]
fn game_header_compiles_as_c99() {
    assert_compiles(
        "c/header_check.c",
        Lang::C,
        &["-Wstrict-prototypes", "-Wmissing-prototypes"],
        "c99",
    );
}

#[test]
fn game_header_compiles_as_c99_with_static_bind() {
    assert_compiles(
        "c/header_check.c",
        Lang::C,
        &[
            "-DPARSEC_NET_STATIC_BIND",
            "-Wstrict-prototypes",
            "-Wmissing-prototypes",
        ],
        "c99-staticbind",
    );
}

#[test]
fn game_header_compiles_as_cpp11() {
    assert_compiles("cpp/header_check.cpp", Lang::Cpp, &[], "cpp11");
}

#[test]
fn game_header_compiles_as_cpp11_with_static_bind() {
    assert_compiles(
        "cpp/header_check.cpp",
        Lang::Cpp,
        &["-DPARSEC_NET_STATIC_BIND"],
        "cpp11-staticbind",
    );
}

#[test]
fn backend_header_compiles_alone_as_c99() {
    assert_compiles(
        "c/backend_header_check.c",
        Lang::C,
        &["-Wstrict-prototypes"],
        "c99",
    );
}

/// The undefined symbols of a program, or `None` without `nm`.
fn undefined_symbols(program: &std::path::Path) -> Option<Vec<String>> {
    let out = std::process::Command::new("nm")
        .arg("-u")
        .arg(program)
        .output()
        .ok()?;
    assert!(out.status.success(), "nm -u {} failed", program.display());
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    Some(
        text.lines()
            .filter_map(|l| l.split_whitespace().last().map(str::to_string))
            .collect(),
    )
}

#[test]
fn nets_calls_go_through_the_table_unless_static_bind_is_defined() {
    let table = parsec_net_ffi_tests::Build::c("c/exchange.c").build();
    let direct = parsec_net_ffi_tests::Build::c("c/exchange.c")
        .static_bind()
        .build();
    let (Some(table), Some(direct)) = (undefined_symbols(&table), undefined_symbols(&direct))
    else {
        println!("SKIPPED: nm not installed");
        return;
    };
    let uses = |symbols: &[String], name: &str| symbols.iter().any(|s| s == name);
    assert!(uses(&table, "NET_GetJumpTable"), "{table:?}");
    assert!(!uses(&table, "NETs_SendDatagram"), "{table:?}");
    assert!(!uses(&direct, "NET_GetJumpTable"), "{direct:?}");
    assert!(
        uses(&direct, "NETs_SendDatagram") && uses(&direct, "NETs_MaintainNet"),
        "{direct:?}"
    );
}
