//! Node functions and the vtable's fields pass through to the default inner backend (UDP).

mod common;

use std::ffi::CStr;

use common::{compare, parse, print, traced, udp};
use parsec_backend_abi::{NET_BackendVTable, NET_Node, NET_BACKEND_ABI_VERSION};

#[test]
fn the_vtable_is_the_inner_backends_under_the_name_trace() {
    let t = traced();
    assert_eq!(t.abi_version, NET_BACKEND_ABI_VERSION);
    assert_eq!(t.size as usize, std::mem::size_of::<NET_BackendVTable>());
    // SAFETY: `name` points to a static NUL-terminated string.
    assert_eq!(unsafe { CStr::from_ptr(t.name) }.to_str(), Ok("trace"));
    assert_eq!(t.max_payload, udp().max_payload);
    assert_eq!(t.capabilities, udp().capabilities);
    assert!(t.open.is_some() && t.close.is_some() && t.send.is_some() && t.receive.is_some());
    assert!(t.wait.is_some() && t.node_compare.is_some() && t.node_print.is_some());
    assert!(t.node_parse.is_some() && t.broadcast_node.is_some() && t.local_node.is_some());
    assert!(t.last_error.is_some() && t.bound_port.is_some());
    // Asking again gives the same table; asking for another default is refused.
    assert_eq!(traced() as *const _, t as *const _);
    let e = parsec_backend_trace::vtable_with_default_inner("ipx").unwrap_err();
    assert!(
        e.starts_with("the default inner backend is already '"),
        "{e}"
    );
}

#[test]
fn parse_print_and_compare_give_the_inner_backends_answers() {
    for text in [
        "127.0.0.1:5000",
        "10.1.2.3:1",
        "[::1]:7",
        "192.168.0.255:65535",
    ] {
        let ours = parse(traced(), text, 0).expect(text);
        assert_eq!(Ok(ours), parse(udp(), text, 0), "{text}");
        assert_eq!(print(traced(), &ours), print(udp(), &ours));
        assert_eq!(print(traced(), &ours).unwrap(), text);
    }
    // The default port and errors pass through unchanged too.
    assert_eq!(
        parse(traced(), "127.0.0.1", 4242),
        parse(udp(), "127.0.0.1", 4242)
    );
    for bad in ["", "[::1", "127.0.0.1:99999", "127.0.0.1"] {
        assert_eq!(parse(traced(), bad, 0), parse(udp(), bad, 0), "{bad:?}");
        assert!(parse(traced(), bad, 0).is_err(), "{bad:?}");
    }
    let invalid = NET_Node { bytes: [0xff; 32] };
    assert_eq!(print(traced(), &invalid), print(udp(), &invalid));

    let a = parse(traced(), "127.0.0.1:1000", 0).unwrap();
    let b = parse(traced(), "127.0.0.1:2000", 0).unwrap();
    assert_eq!(compare(traced(), &a, &a), 0);
    assert_eq!(
        compare(traced(), &a, &b).signum(),
        compare(udp(), &a, &b).signum()
    );
    assert_eq!(
        compare(traced(), &a, &b).signum(),
        -compare(traced(), &b, &a).signum()
    );
    assert_ne!(compare(traced(), &a, &b), 0);
}

#[test]
fn a_refused_node_text_is_explained_by_the_inner_backend() {
    parsec_backend_abi::conformance::refused_node_text_is_explained(
        traced(),
        "127.0.0.1:99999",
        "port 99999 is out of range 1-65535",
        "127.0.0.1:5",
    );
}
