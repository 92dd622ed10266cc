//! Node parsing, printing and ordering through the vtable.

mod common;

use std::ffi::c_char;

use common::{compare, node, parse, print, vt, Sock};
use parsec_backend_abi::{NET_Node, NET_BACKEND_ERR_INVALID};

#[test]
fn parse_accepts_the_documented_forms() {
    let good: &[(&str, u16, &str)] = &[
        ("1.2.3.4", 6526, "1.2.3.4:6526"),
        ("1.2.3.4:5", 6526, "1.2.3.4:5"),
        ("  10.0.0.1:65535 \n", 1, "10.0.0.1:65535"),
        ("\t255.255.255.255:1", 0, "255.255.255.255:1"),
        ("[::1]:5", 6526, "[::1]:5"),
        ("[::1]", 7, "[::1]:7"),
        ("::1", 6526, "[::1]:6526"),
        ("[2001:DB8:0::0:1]:80", 1, "[2001:db8::1]:80"),
        ("fe80::1%2", 9, "[fe80::1%2]:9"),
        ("[fe80::1%2]:9", 1, "[fe80::1%2]:9"),
        ("::ffff:1.2.3.4", 6526, "1.2.3.4:6526"),
        ("[::ffff:127.0.0.1]:80", 1, "127.0.0.1:80"),
        ("localhost", 6526, "127.0.0.1:6526"),
        ("localhost:5", 1, "127.0.0.1:5"),
        ("LOCALHOST:5", 1, "127.0.0.1:5"),
    ];
    for &(text, default_port, want) in good {
        let parsed =
            parse(text, default_port).unwrap_or_else(|rc| panic!("{text:?} rejected: {rc}"));
        assert_eq!(print(&parsed).unwrap(), want, "{text:?}");
    }
}

#[test]
fn parse_rejects_bad_forms() {
    let too_long = format!("{}.com", "a".repeat(252));
    let bad: &[(&str, u16)] = &[
        ("", 5),
        ("   ", 5),
        ("1.2.3.4:0", 5),
        ("[::1]:0", 5),
        ("1.2.3.4", 0),
        ("localhost", 0),
        ("1.2.3.4:65536", 5),
        ("1.2.3.4:", 5),
        ("1.2.3.4:x", 5),
        ("1.2.3.4:+5", 5),
        ("1.2.3.4:-5", 5),
        ("1.2.3.4:000005", 5),
        ("1.2.3", 5),
        ("256.1.1.1", 5),
        ("1.2.3.4.5", 5),
        ("01.2.3.4", 5),
        ("[::1", 5),
        ("::1]", 5),
        ("[::1]5", 5),
        ("[::1]:", 5),
        ("[]:5", 5),
        ("[1.2.3.4]:5", 5),
        ("1.2.3.4:5:6", 5),
        (":5", 5),
        ("fe80::1%", 5),
        ("fe80::1%no-such-if9", 5),
        ("fe80::1%99999999999", 5),
        ("host name", 5),
        ("a..b", 5),
        ("-bad.example", 5),
        ("!!!", 5),
        ("1.2.3.4 :5", 5),
        (&too_long, 5),
    ];
    for &(text, default_port) in bad {
        assert_eq!(
            parse(text, default_port),
            Err(NET_BACKEND_ERR_INVALID),
            "{text:?} accepted"
        );
    }
    // Not UTF-8.
    let bytes = b"1.2.3.\xff\0";
    let mut out = NET_Node::default();
    // SAFETY: NUL-terminated buffer and valid output.
    let rc = unsafe { (vt().node_parse.unwrap())(bytes.as_ptr().cast::<c_char>(), 5, &mut out) };
    assert_eq!(rc, NET_BACKEND_ERR_INVALID);
}

#[test]
fn v4_mapped_addresses_parse_to_canonical_ipv4_nodes() {
    let mapped = node("[::ffff:10.1.2.3]:99");
    let plain = node("10.1.2.3:99");
    assert_eq!(mapped, plain);
    assert_eq!(mapped.bytes[0], 4);
    assert!(mapped.bytes[7..].iter().all(|&b| b == 0));
    assert_eq!(compare(&mapped, &plain), 0);
}

#[test]
fn node_layout_matches_the_documentation() {
    let n = node("1.2.3.4:6526");
    let mut want = [0u8; 32];
    want[0] = 4;
    want[1..3].copy_from_slice(&6526u16.to_be_bytes());
    want[3..7].copy_from_slice(&[1, 2, 3, 4]);
    assert_eq!(n.bytes, want);

    let n = node("[fe80::1:2%258]:5");
    let mut want = [0u8; 32];
    want[0] = 6;
    want[1..3].copy_from_slice(&5u16.to_be_bytes());
    want[3..19].copy_from_slice(&"fe80::1:2".parse::<std::net::Ipv6Addr>().unwrap().octets());
    want[19..23].copy_from_slice(&258u32.to_be_bytes());
    assert_eq!(n.bytes, want);
}

#[test]
fn print_then_parse_round_trips() {
    for text in [
        "0.0.0.0:1",
        "127.0.0.1:6526",
        "192.168.1.255:65535",
        "[::]:1",
        "[::1]:6526",
        "[2001:db8::8a2e:370:7334]:443",
        "[fe80::1%4294967295]:2",
        "[ff02::1]:6526",
    ] {
        let n = node(text);
        let printed = print(&n).unwrap();
        assert_eq!(printed, text);
        assert_eq!(node(&printed), n);
    }
}

#[test]
fn print_reports_a_small_buffer_but_still_terminates() {
    let n = node("1.2.3.4:6526");
    let mut buf = [0x55 as c_char; 5];
    // SAFETY: valid node and 5-byte buffer.
    let rc = unsafe { (vt().node_print.unwrap())(&n, buf.as_mut_ptr(), buf.len()) };
    assert_eq!(rc, NET_BACKEND_ERR_INVALID);
    assert_eq!(common::c_text(&buf), "1.2.");
    let mut exact = [0 as c_char; 13]; // "1.2.3.4:6526" is 12 bytes + NUL
                                       // SAFETY: valid node and buffer.
    let rc = unsafe { (vt().node_print.unwrap())(&n, exact.as_mut_ptr(), exact.len()) };
    assert_eq!(rc, 12);
}

#[test]
fn invalid_nodes_are_rejected_by_send_print_and_local_node() {
    let mut bad_family = node("1.2.3.4:5");
    bad_family.bytes[0] = 5;
    let mut dirty_v4 = node("1.2.3.4:5");
    dirty_v4.bytes[25] = 1;
    let mut dirty_v6 = node("[::1]:5");
    dirty_v6.bytes[31] = 1;
    let mut mapped_as_v6 = node("[::1]:5");
    mapped_as_v6.bytes[3..19].copy_from_slice(
        &"::ffff:1.2.3.4"
            .parse::<std::net::Ipv6Addr>()
            .unwrap()
            .octets(),
    );
    let s = Sock::v4();
    for bad in [
        bad_family,
        dirty_v4,
        dirty_v6,
        mapped_as_v6,
        NET_Node::default(),
    ] {
        assert_eq!(print(&bad), Err(NET_BACKEND_ERR_INVALID), "{bad:?}");
        assert_eq!(s.send(&bad, b"x"), NET_BACKEND_ERR_INVALID);
        assert_eq!(
            s.local_node_towards(Some(&bad)),
            Err(NET_BACKEND_ERR_INVALID)
        );
        assert_eq!(compare(&bad, &bad), 0);
    }
}

/// A deterministic sample: valid nodes of both families plus arbitrary (mostly invalid) bytes.
fn sample() -> Vec<NET_Node> {
    let mut nodes: Vec<NET_Node> = [
        "1.1.1.1:9",
        "1.1.1.1:10",
        "2.2.2.2:1",
        "1.1.1.2:1",
        "255.255.255.255:65535",
        "0.0.0.0:1",
        "[::]:1",
        "[::1]:1",
        "[::1]:2",
        "[fe80::1%1]:1",
        "[fe80::1%2]:1",
        "[fe80::1]:3",
        "[2001:db8::1]:1",
    ]
    .iter()
    .map(|t| node(t))
    .collect();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..20 {
        let mut n = NET_Node::default();
        for b in n.bytes.iter_mut() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            *b = (state % 7) as u8; // small values so that ties on leading bytes happen
        }
        nodes.push(n);
    }
    nodes
}

#[test]
fn compare_is_a_total_order() {
    let nodes = sample();
    for a in &nodes {
        assert_eq!(compare(a, a), 0);
        for b in &nodes {
            let ab = compare(a, b);
            assert!((-1..=1).contains(&ab));
            assert_eq!(ab, -compare(b, a), "antisymmetry");
            assert_eq!(ab == 0, a == b, "equal exactly when identical");
            for c in &nodes {
                if ab <= 0 && compare(b, c) <= 0 {
                    assert!(compare(a, c) <= 0, "transitivity");
                }
            }
        }
    }
    // Family first, then address, then port, then scope.
    assert_eq!(compare(&node("255.255.255.255:65535"), &node("[::]:1")), -1);
    assert_eq!(compare(&node("1.1.1.1:9"), &node("2.2.2.2:1")), -1);
    assert_eq!(compare(&node("1.1.1.1:9"), &node("1.1.1.1:10")), -1);
    assert_eq!(compare(&node("[fe80::1%2]:1"), &node("[fe80::1%1]:2")), -1);
    assert_eq!(compare(&node("[fe80::1%1]:1"), &node("[fe80::1%2]:1")), -1);
}

#[test]
fn a_refused_node_text_is_explained() {
    let t = vt();
    let good = "127.0.0.1:5";
    for (bad, why) in [
        ("127.0.0.1:99999", "port 99999 is out of range 1-65535"),
        ("127.0.0.1:0", "port 0 cannot be addressed"),
        ("not an address!!", "neither an IP address nor a host name"),
        ("[::1", "missing ']'"),
    ] {
        parsec_backend_abi::conformance::refused_node_text_is_explained(t, bad, why, good);
    }
}
