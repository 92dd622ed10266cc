//! `net.master` sets the masterserver to ask (SPEC section 5: "masterserver to use"): a new
//! value replaces the old one, a comma-separated list asks up to three at once, `clear` empties
//! it, and without an argument it shows the value. Refused values change nothing. Sans-IO: no
//! masterserver is contacted.

use std::time::Instant;

use net_core::{ErrorCode, Subsystem};

fn exec(sub: &mut Subsystem, line: &str) -> (String, Result<(), ErrorCode>) {
    let reply = sub.console_exec(line, Instant::now());
    (reply.output, reply.result.map_err(|e| e.code))
}

fn masters(sub: &Subsystem) -> Vec<String> {
    sub.settings().masters.clone()
}

#[test]
fn a_new_masterserver_replaces_the_old_one() {
    let mut sub = Subsystem::new();
    assert_eq!(exec(&mut sub, "net.master").0, "net.master = none");
    for (line, want) in [
        ("net.master 10.0.0.1:6502", "10.0.0.1:6502"),
        ("net.master 10.0.0.2:6502", "10.0.0.2:6502"),
        ("net.master master.example.org", "master.example.org"),
        ("net.master [2001:db8::1]:7000", "[2001:db8::1]:7000"),
    ] {
        let (out, result) = exec(&mut sub, line);
        assert_eq!(result, Ok(()), "{line}: {out}");
        assert_eq!(out, format!("net.master = {want}"), "{line}");
        assert_eq!(masters(&sub), [want], "{line}");
    }
    // A fourth (or any later) value is no different: it replaces, it is never refused.
    let (out, result) = exec(&mut sub, "net.master 10.0.0.4");
    assert_eq!(result, Ok(()), "{out}");
    assert_eq!(masters(&sub), ["10.0.0.4"]);
    assert_eq!(exec(&mut sub, "net.master").0, "net.master = 10.0.0.4");
}

#[test]
fn a_comma_separated_list_asks_up_to_three() {
    let mut sub = Subsystem::new();
    let (out, result) = exec(&mut sub, "net.master a.example:6502,b.example");
    assert_eq!(result, Ok(()), "{out}");
    assert_eq!(out, "net.master = a.example:6502,b.example");
    assert_eq!(masters(&sub), ["a.example:6502", "b.example"]);
    // Spaces after the commas are allowed; the same masterserver twice is asked once.
    let (out, result) = exec(&mut sub, "net.master c:1, d:2, c:1");
    assert_eq!(result, Ok(()), "{out}");
    assert_eq!(masters(&sub), ["c:1", "d:2"]);
    assert_eq!(exec(&mut sub, "net.master").0, "net.master = c:1,d:2");
    // One host in another letter case, with its final dot, or an address written otherwise,
    // is the same masterserver: the first spelling is kept.
    let (out, result) = exec(
        &mut sub,
        "net.master Master.Example:1,master.example.:1,[::1]:2,[0:0::1]:2,MASTER.EXAMPLE:3",
    );
    assert_eq!(result, Ok(()), "{out}");
    assert_eq!(
        masters(&sub),
        ["Master.Example:1", "[::1]:2", "MASTER.EXAMPLE:3"]
    );
    let (out, result) = exec(&mut sub, "net.master e:1,f:1,g:1");
    assert_eq!(result, Ok(()), "{out}");
    assert_eq!(masters(&sub), ["e:1", "f:1", "g:1"]);
}

#[test]
fn refused_values_change_nothing_and_say_why() {
    let mut sub = Subsystem::new();
    assert_eq!(exec(&mut sub, "net.master keep.example").1, Ok(()));
    for (line, code, text) in [
        (
            "net.master a:1,b:1,c:1,d:1",
            ErrorCode::Full,
            "at most 3 masterservers",
        ),
        (
            "net.master a:1,,b:1",
            ErrorCode::InvalidArgument,
            "is not HOST[:PORT]",
        ),
        (
            "net.master a:1,",
            ErrorCode::InvalidArgument,
            "is not HOST[:PORT]",
        ),
        (
            "net.master a:1,b:99999",
            ErrorCode::Parse,
            "'99999' is not a port number",
        ),
        (
            "net.master two words",
            ErrorCode::InvalidArgument,
            "extra argument 'words' after 'two'",
        ),
    ] {
        let (out, result) = exec(&mut sub, line);
        assert_eq!(result, Err(code), "{line}: {out}");
        assert!(out.contains(text), "{line}: {out}");
        assert!(out.contains("usage: net.master"), "{line}: {out}");
        assert!(!out.contains('\n'), "{line}: {out}");
        assert_eq!(
            masters(&sub),
            ["keep.example"],
            "{line} changed the setting"
        );
    }
}

#[test]
fn clear_empties_it_and_help_explains_the_list() {
    let mut sub = Subsystem::new();
    assert_eq!(exec(&mut sub, "net.master a:1,b:2").1, Ok(()));
    let (out, result) = exec(&mut sub, "net.master clear");
    assert_eq!(result, Ok(()), "{out}");
    assert!(masters(&sub).is_empty());
    assert_eq!(exec(&mut sub, "net.master").0, "net.master = none");
    let (out, result) = exec(&mut sub, "help net.master");
    assert_eq!(result, Ok(()));
    assert!(
        out.starts_with("usage: net.master HOST[:PORT][,HOST[:PORT]...]|clear"),
        "{out}"
    );
    assert!(out.contains("replac") && out.contains("up to 3"), "{out}");
}
