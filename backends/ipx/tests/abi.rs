//! The backend through its C ABI without needing root: entry point and vtable contents, node
//! print/parse/compare, option errors reported by `open`, the unsupported-system path, and NULL
//! pointers rejected by every function (the shared conformance checks of `parsec_backend_abi`;
//! the functions that need an open socket are checked in a namespace lab when root, SKIPPED
//! otherwise).

mod common;

use std::ffi::{c_char, CStr};

#[cfg(target_os = "linux")]
use common::netns::{Lab, VETH_A};
use common::{c_text, compare, node, open_raw, parse, print, vt};
use parsec_backend_abi::conformance;
use parsec_backend_abi::{
    NET_BackendEntryFn, NET_BackendVTable, NET_Node, NET_BACKEND_ABI_VERSION,
    NET_BACKEND_CAP_BROADCAST, NET_BACKEND_ERR_INVALID, NET_BACKEND_ERR_UNSUPPORTED,
};
use parsec_backend_ipx::{parsec_net_backend_entry, NOT_SUPPORTED};

const INVALID: i32 = NET_BACKEND_ERR_INVALID;
const NO_PACKET_SOCKETS: bool = cfg!(any(not(target_os = "linux"), parsec_ipx_unsupported));

#[test]
fn entry_point_and_vtable() {
    let entry: NET_BackendEntryFn = parsec_net_backend_entry;
    // SAFETY: the entry point accepts any version.
    assert!(unsafe { entry(0) }.is_null());
    // SAFETY: as above.
    let table = unsafe { entry(NET_BACKEND_ABI_VERSION) };
    assert_eq!(table, vt() as *const NET_BackendVTable);
    // SAFETY: as above.
    assert_eq!(unsafe { entry(NET_BACKEND_ABI_VERSION + 1) }, table);
    let t = vt();
    assert_eq!(t.abi_version, NET_BACKEND_ABI_VERSION);
    assert_eq!(t.size as usize, std::mem::size_of::<NET_BackendVTable>());
    // SAFETY: `name` points to a static NUL-terminated string.
    assert_eq!(unsafe { CStr::from_ptr(t.name) }.to_str(), Ok("ipx"));
    assert_eq!(t.max_payload, 546);
    assert_eq!(t.capabilities, NET_BACKEND_CAP_BROADCAST);
    assert!(t.open.is_some() && t.close.is_some() && t.send.is_some() && t.receive.is_some());
    assert!(t.wait.is_some() && t.node_compare.is_some() && t.node_print.is_some());
    assert!(t.node_parse.is_some() && t.broadcast_node.is_some() && t.local_node.is_some());
    assert!(t.last_error.is_some() && t.bound_port.is_some());
}

#[test]
fn node_text_round_trips_through_the_abi() {
    let n = node("0000ABCD:021A0000000A:869C");
    let mut want = [0u8; 32];
    want[..12].copy_from_slice(&[0, 0, 0xab, 0xcd, 2, 0x1a, 0, 0, 0, 0x0a, 0x86, 0x9c]);
    assert_eq!(n.bytes, want);
    assert_eq!(print(&n).unwrap(), "0000ABCD:021A0000000A:869C");
    assert_eq!(node(" 0000abcd:021a0000000a:869c "), n);
    // No socket written: the default port, or 0x869C when that is 0.
    assert_eq!(parse("0000ABCD:021A0000000A", 0x869c), Ok(n));
    assert_eq!(parse("0000ABCD:021A0000000A", 0), Ok(n));
    let other = parse("0000ABCD:021A0000000A", 0x4000).unwrap();
    assert_eq!(print(&other).unwrap(), "0000ABCD:021A0000000A:4000");
    // Leading zeros of the network may be left out.
    assert_eq!(parse("ABCD:021A0000000A:869C", 0), Ok(n));
    for bad in [
        "",
        "0000ABCD",
        "100000000:021A0000000A:869C",
        "0000ABCD:02:1a:00:00:00:0a:869C",
        "0000ABCD:021A0000000A:0000",
        "0000ABCD:021A0000000A:869C:",
        "0000ABCX:021A0000000A:869C",
        "127.0.0.1:5",
        "localhost",
    ] {
        assert_eq!(parse(bad, 0x869c), Err(INVALID), "{bad:?}");
    }
    // Non-canonical nodes do not print.
    let mut junk = n;
    junk.bytes[31] = 1;
    assert_eq!(print(&junk), Err(INVALID));
    // A buffer too small for the text is an error (still NUL-terminated).
    let mut small = [0x7f as c_char; 10];
    // SAFETY: valid node and buffer.
    let rc = unsafe { (vt().node_print.unwrap())(&n, small.as_mut_ptr(), small.len()) };
    assert_eq!(rc, INVALID);
    assert_eq!(c_text(&small).len(), 9);
}

#[test]
fn compare_is_a_total_order() {
    let texts = [
        "00000000:000000000000:0001",
        "00000000:000000000000:FFFF",
        "00000000:021A0000000A:0001",
        "00000000:FFFFFFFFFFFF:0001",
        "00000001:000000000000:0001",
        "0000ABCD:021A0000000A:869C",
        "0000ABCD:021A0000000A:869D",
        "FFFFFFFE:021A0000000A:0001",
    ];
    let nodes: Vec<NET_Node> = texts.iter().map(|t| node(t)).collect();
    for (i, a) in nodes.iter().enumerate() {
        for (j, b) in nodes.iter().enumerate() {
            let c = compare(a, b);
            assert_eq!(c.signum(), (i as i32 - j as i32).signum(), "{i} {j}");
            assert_eq!(c.signum(), -compare(b, a).signum());
        }
    }
    // Bytes outside the address still take part, so only identical nodes are equal.
    let mut odd = nodes[0];
    odd.bytes[20] = 1;
    assert!(compare(&nodes[0], &odd) < 0);
}

#[test]
fn bad_options_fail_open_without_touching_the_network() {
    for (options, key) in [
        ("network=xyz", "net.ipx.network"),
        ("network=FFFFFFFF", "net.ipx.network"),
        ("interface=a b", "net.ipx.interface"),
        ("interface=much-too-long-name", "net.ipx.interface"),
    ] {
        let (code, message) = open_raw(0, options).expect_err(options);
        assert_eq!(code, INVALID, "{message}");
        assert!(message.contains(key), "{message}");
    }
}

#[test]
fn unsupported_system_says_so() {
    if !NO_PACKET_SOCKETS {
        println!("SKIPPED: this build has AF_PACKET (build with --cfg parsec_ipx_unsupported)");
        return;
    }
    let (code, message) = open_raw(0, "").expect_err("open must fail");
    assert_eq!(code, NET_BACKEND_ERR_UNSUPPORTED);
    assert_eq!(message, NOT_SUPPORTED);
    assert_eq!(
        message,
        "ipx: not supported on this system (needs Linux AF_PACKET)"
    );
}

#[test]
fn a_refused_node_text_is_explained() {
    let good = "00000000:021A0000000A:869C";
    for (bad, why) in [
        ("12:34", "node \"34\" is not 12 hexadecimal digits"),
        (
            "123456789:021A0000000A",
            "network \"123456789\" is not 1-8 hexadecimal digits",
        ),
        (
            "00000000:021A0000000A:0000",
            "socket 0000 cannot be addressed",
        ),
        ("12:34:56:78", "is not an IPX address"),
    ] {
        conformance::refused_node_text_is_explained(vt(), bad, why, good);
    }
}

#[test]
fn functions_without_a_socket_reject_null() {
    let n = node("00000000:021A0000000A:869C");
    conformance::functions_without_a_socket_reject_null(vt(), n, "00000000:021A0000000A:869C");
    conformance::open_rejects_params_that_do_not_reach_the_port(vt());
}

#[cfg(target_os = "linux")]
#[test]
fn functions_with_a_socket_reject_null() {
    let Some(lab) = Lab::new() else { return };
    let s = lab
        .a
        .run(|| common::Sock::open(0x4001, &format!("interface={VETH_A}")))
        .expect("open");
    let h = s.handle;
    let t = vt();
    let mut n = node("00000000:021B0000000B:4001");
    // SAFETY: `h` is an open socket of this backend, used only here.
    unsafe { conformance::functions_with_a_socket_reject_null(t, h, n) };
    let buf = [0u8; 64];
    // SAFETY: `h` is a live handle; every pointer is valid.
    unsafe {
        // A node this backend never makes, and an empty datagram, are refused too.
        let mut junk = n;
        junk.bytes[31] = 9;
        assert_eq!(t.local_node.unwrap()(h, &junk, &mut n), INVALID);
        let send = t.send.unwrap();
        assert_eq!(send(h, &junk, buf.as_ptr(), 4), INVALID);
        assert_eq!(send(h, &n, buf.as_ptr(), 0), INVALID);
    }
    // The socket still works after all that.
    assert_eq!(s.bound_port(), 0x4001);
    assert!(s.wait(0) >= 0);
    assert_eq!(s.receive(64), Ok(None));
}
