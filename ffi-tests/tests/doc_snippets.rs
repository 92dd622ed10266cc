//! The C code blocks of README.md and docs/*.md are what a game programmer copies first, so each
//! must compile and link as shown: as C99 and as C++11 with `-Wall -Wextra -Wpedantic -Werror`
//! against `include/`. A block of statements (a fragment) is wrapped in `main` with the few
//! variables a game has around it (`char out[256]`, `NET_Event ev`; its leading `#define` and
//! `#include` lines go first), then linked twice: C99 with `libparsec_net.so` through the
//! jump-table macros, and C++11 with `libparsec_net.a`, `PARSEC_NET_STATIC_BIND` and exactly the
//! system libraries the static link line of docs/c-api.md names (so that line is tested too).
//! A fragment that ends by itself (no `for (;;)`) is run and must exit 0. A block of prototypes
//! and macros is compiled after the header (a prototype that disagrees with the header's is an
//! error), and a block that restates a header struct must have the header's fields at the same
//! offsets with the same sizes. A new C block in the docs is picked up without changes here.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::compile::{compile_to, CPP_FLAGS, C_FLAGS};
use parsec_net_ffi_tests::process::run;
use parsec_net_ffi_tests::{paths, Lang};

const RUN_TIMEOUT: Duration = Duration::from_secs(30);

/// One fenced C block of a document.
struct Snippet {
    /// `docs/c-api.md:180` (file and line of the opening fence).
    origin: String,
    /// A file-name-safe form of `origin`.
    tag: String,
    code: String,
}

fn repo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("ffi-tests is inside the repository")
        .to_path_buf()
}

/// README.md and every docs/*.md.
fn documents() -> Vec<PathBuf> {
    let repo = repo_dir();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo.join("docs"))
        .expect("docs/ is readable")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    docs.insert(0, repo.join("README.md"));
    docs
}

/// The fenced blocks of `text` whose language is `lang` (the fence may be indented, as in a list;
/// the indentation is removed from the block's lines).
fn fenced_blocks(text: &str, lang: &[&str]) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, usize, bool, String)> = None;
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        match &mut open {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    let wanted = lang.contains(&info.trim());
                    open = Some((number + 1, indent, wanted, String::new()));
                }
            }
            Some((start, fence_indent, wanted, code)) => {
                if trimmed == "```" {
                    if *wanted {
                        blocks.push((*start, std::mem::take(code)));
                    }
                    open = None;
                } else {
                    let cut = indent.min(*fence_indent);
                    code.push_str(&line[cut..]);
                    code.push('\n');
                }
            }
        }
    }
    blocks
}

fn snippets() -> Vec<Snippet> {
    let repo = repo_dir();
    let mut all = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).expect("a document is readable");
        let name = doc
            .strip_prefix(&repo)
            .unwrap_or(&doc)
            .display()
            .to_string();
        for (line, code) in fenced_blocks(&text, &["c", "cpp", "c++"]) {
            let tag = format!("{name}-{line}")
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            all.push(Snippet {
                origin: format!("{name}:{line}"),
                tag,
                code,
            });
        }
    }
    all
}

/// The system libraries of docs/c-api.md's static link line (the `-l` words after
/// `libparsec_net.a` in its `sh` block).
fn documented_static_libs() -> Vec<String> {
    let text = std::fs::read_to_string(repo_dir().join("docs/c-api.md")).expect("c-api.md");
    for (_, block) in fenced_blocks(&text, &["sh"]) {
        for line in block.lines().filter(|l| !l.trim_start().starts_with('#')) {
            if let Some((_, rest)) = line.split_once("libparsec_net.a") {
                let libs: Vec<String> = rest
                    .split_whitespace()
                    .filter(|w| w.starts_with("-l"))
                    .map(str::to_string)
                    .collect();
                if !libs.is_empty() {
                    return libs;
                }
            }
        }
    }
    panic!("docs/c-api.md has no static link line (an `sh` block linking libparsec_net.a -l...)");
}

/// The code without comments (for classifying it; the compiled text keeps them).
fn without_comments(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        rest = rest[start..]
            .find("*/")
            .map_or("", |end| &rest[start + end + 2..]);
    }
    out.push_str(rest);
    out.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether every statement is a prototype (a return type and a name before `(`) or a
/// preprocessor line.
fn only_declarations(code: &str) -> bool {
    let code = without_comments(code);
    let body: String = code
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join(" ");
    let statements: Vec<&str> = body
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    !statements.is_empty()
        && statements.iter().all(|s| {
            !s.contains('{')
                && !s.contains('=')
                && s.split_once('(').is_some_and(|(head, _)| {
                    head.split(|c: char| c.is_whitespace() || c == '*')
                        .filter(|w| !w.is_empty())
                        .count()
                        >= 2
                })
        })
}

/// The `typedef struct NAME { ... } NAME;` blocks of a snippet: (NAME, field names in order).
fn restated_structs(code: &str) -> Vec<(String, Vec<String>)> {
    let code = without_comments(code);
    let mut found = Vec::new();
    let mut rest = code.as_str();
    while let Some(start) = rest.find("typedef struct") {
        let after = &rest[start + "typedef struct".len()..];
        let (Some(open), Some(close)) = (after.find('{'), after.find('}')) else {
            break;
        };
        let name = after[..open].trim().to_string();
        let fields = after[open + 1..close]
            .split(';')
            .filter_map(|decl| {
                let decl = decl.split('[').next()?.trim();
                let field = decl
                    .rsplit(|c: char| c.is_whitespace() || c == '*')
                    .next()?;
                (!field.is_empty()).then(|| field.to_string())
            })
            .collect();
        found.push((name, fields));
        rest = &after[close + 1..];
    }
    found
}

/// Leading preprocessor lines (and blank or comment lines among them) go before the wrapper.
fn split_leading_preprocessor(code: &str) -> (String, String) {
    let mut head = String::new();
    let mut lines = code.lines().peekable();
    while let Some(line) = lines.peek() {
        let t = line.trim_start();
        if t.starts_with('#') || t.is_empty() {
            head.push_str(line);
            head.push('\n');
            lines.next();
        } else {
            break;
        }
    }
    let body: Vec<&str> = lines.collect();
    (head, body.join("\n") + "\n")
}

/// A fragment as the body of `main`, with what a game has around it.
fn wrap_fragment(code: &str) -> String {
    let (head, body) = split_leading_preprocessor(code);
    format!(
        "{head}#include <stdio.h>\n#include <string.h>\n#include \"parsec_net.h\"\n\n\
         int main(void)\n{{\n    char out[256];\n    NET_Event ev;\n\n    \
         memset(out, 0, sizeof out);\n    memset(&ev, 0, sizeof ev);\n    \
         (void)out;\n    (void)ev;\n    {{\n{body}    }}\n    return 0;\n}}\n"
    )
}

/// Prototypes and macros after the header; restated structs renamed and compared with the
/// header's, field by field.
fn wrap_declarations(code: &str) -> String {
    let mut source = String::from("#include <stddef.h>\n#include \"parsec_net.h\"\n\n");
    let structs = restated_structs(code);
    let mut renamed = code.to_string();
    for (name, _) in &structs {
        renamed = renamed
            .replace(
                &format!("typedef struct {name} "),
                &format!("typedef struct DOC_{name} "),
            )
            .replace(&format!("}} {name};"), &format!("}} DOC_{name};"));
    }
    source.push_str(&renamed);
    source.push('\n');
    for (name, fields) in &structs {
        let mut checks = vec![format!("sizeof({name}) == sizeof(DOC_{name})")];
        for field in fields {
            checks.push(format!(
                "offsetof({name}, {field}) == offsetof(DOC_{name}, {field}) && \
                 sizeof((({name} *)0)->{field}) == sizeof(((DOC_{name} *)0)->{field})"
            ));
        }
        for (i, check) in checks.iter().enumerate() {
            source.push_str(&format!(
                "typedef char doc_check_{name}_{i}[({check}) ? 1 : -1];\n"
            ));
        }
    }
    source
}

fn os(s: &str) -> OsString {
    OsString::from(s)
}

/// Compile (and link unless `compile_only`) `source` written to `<out>/doc-snippets/<name>.<ext>`.
fn build(name: &str, source: &str, lang: Lang, extra: &[OsString], compile_only: bool) -> PathBuf {
    let p = paths();
    let dir = p.out_subdir("doc-snippets");
    let file = dir.join(format!(
        "{name}.{}",
        if lang == Lang::C { "c" } else { "cpp" }
    ));
    std::fs::write(&file, source).expect("writing a snippet source");
    let flags = if lang == Lang::C { C_FLAGS } else { CPP_FLAGS };
    let mut args: Vec<OsString> = flags.iter().map(|f| os(f)).collect();
    args.push(os(&format!("-I{}", p.include_dir.display())));
    args.push(os(&format!(
        "-DGAME_BACKEND_DIR=\"{}\"",
        p.profile_dir.display()
    )));
    if compile_only {
        args.push(os("-c"));
    }
    args.push(file.into_os_string());
    args.extend(extra.iter().cloned());
    let output = dir.join(if compile_only {
        format!("{name}.o")
    } else {
        name.to_string()
    });
    if let Err(message) = compile_to(lang, &args, &output) {
        panic!("{message}\n--- the source ---\n{source}");
    }
    output
}

#[test]
fn every_c_block_of_the_docs_compiles_links_and_runs() {
    let p = paths();
    let static_libs = documented_static_libs();
    let all = snippets();
    assert!(
        all.len() >= 4,
        "found only {} C blocks in README.md and docs/*.md",
        all.len()
    );
    for snippet in &all {
        println!("{}", snippet.origin);
        let context = |what: &str| format!("{} ({what})", snippet.origin);
        if only_declarations(&snippet.code) || !restated_structs(&snippet.code).is_empty() {
            let source = wrap_declarations(&snippet.code);
            build(&format!("{}-c99", snippet.tag), &source, Lang::C, &[], true);
            build(
                &format!("{}-cpp11", snippet.tag),
                &source,
                Lang::Cpp,
                &[],
                true,
            );
            continue;
        }
        let whole = without_comments(&snippet.code).contains("int main(");
        let source = if whole {
            snippet.code.clone()
        } else {
            wrap_fragment(&snippet.code)
        };
        let shared_dir = p.shared_lib_dir().display().to_string();
        let shared = build(
            &format!("{}-c99-shared", snippet.tag),
            &source,
            Lang::C,
            &[
                os(&format!("-L{shared_dir}")),
                os("-lparsec_net"),
                os(&format!("-Wl,-rpath,{shared_dir}")),
            ],
            false,
        );
        let mut static_args = vec![os("-DPARSEC_NET_STATIC_BIND"), p.static_lib.clone().into()];
        static_args.extend(static_libs.iter().map(|l| os(l)));
        let linked_static = build(
            &format!("{}-cpp11-static", snippet.tag),
            &source,
            Lang::Cpp,
            &static_args,
            false,
        );
        if without_comments(&snippet.code).contains("for (;;)") {
            continue; // a frame loop that never ends: compiled and linked only
        }
        for program in [shared, linked_static] {
            let out = run(Command::new(&program), RUN_TIMEOUT);
            out.assert_success(&context(&program.display().to_string()));
        }
    }
}

#[test]
fn the_documented_static_libraries_are_what_rustc_needs() {
    // The harness links its static programs with the same list; both come from
    // `rustc --print native-static-libs`, and a difference means one of them is stale.
    let documented = documented_static_libs();
    let harness: Vec<String> = parsec_net_ffi_tests::compile::STATIC_LIB_DEPS
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(documented, harness, "docs/c-api.md's static link line");
}
