//! Entry point, vtable contents, open parameters, options and error reporting.

mod common;

use std::ffi::{c_char, c_void, CStr, CString};

use common::{c_text, vt, Sock, V4_ONLY};
use parsec_backend_abi::{
    NET_BackendEntryFn, NET_BackendOpenParams, NET_BackendVTable, NET_BACKEND_ABI_VERSION,
    NET_BACKEND_CAP_BROADCAST, NET_BACKEND_CAP_CLIENT_SERVER, NET_BACKEND_ERR_INVALID,
};
use parsec_backend_udp::parsec_net_backend_entry;

#[test]
fn entry_point_returns_the_static_vtable_for_abi_1_and_null_for_0() {
    let entry: NET_BackendEntryFn = parsec_net_backend_entry;
    // SAFETY: the entry point accepts any version.
    assert!(unsafe { entry(0) }.is_null());
    // SAFETY: as above.
    let table = unsafe { entry(NET_BACKEND_ABI_VERSION) };
    assert_eq!(table, vt() as *const NET_BackendVTable);
    // SAFETY: as above; a newer core gets the same table.
    assert_eq!(unsafe { entry(NET_BACKEND_ABI_VERSION + 1) }, table);
    let t = vt();
    assert_eq!(t.abi_version, NET_BACKEND_ABI_VERSION);
    assert_eq!(t.size as usize, std::mem::size_of::<NET_BackendVTable>());
    // SAFETY: `name` points to a static NUL-terminated string.
    assert_eq!(unsafe { CStr::from_ptr(t.name) }.to_str(), Ok("udp"));
    assert_eq!(t.max_payload, 1400);
    assert_eq!(
        t.capabilities,
        NET_BACKEND_CAP_BROADCAST | NET_BACKEND_CAP_CLIENT_SERVER
    );
    assert!(t.open.is_some() && t.close.is_some() && t.send.is_some() && t.receive.is_some());
    assert!(t.wait.is_some() && t.node_compare.is_some() && t.node_print.is_some());
    assert!(t.node_parse.is_some() && t.broadcast_node.is_some() && t.local_node.is_some());
    assert!(t.last_error.is_some());
}

#[test]
fn taken_port_fails_open_with_a_clear_message() {
    let first = Sock::v4();
    let port: u16 = common::print(&first.local_node())
        .unwrap()
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let (code, message) = Sock::open(port, V4_ONLY).expect_err("second bind must fail");
    assert!(code < 0);
    assert_eq!(
        message,
        format!(
            "udp: cannot bind 127.0.0.1:{port}: Address already in use \
             (another program on this port? choose another with net.port)"
        )
    );
}

#[test]
fn malformed_options_fail_open_and_unknown_keys_are_ignored() {
    for (options, key) in [
        ("bind=127.0.0.256", "net.udp.bind"),
        ("bind=127.0.0.1\nbind6=nope", "net.udp.bind6"),
        ("bind=127.0.0.1\nipv6=maybe", "net.udp.ipv6"),
        ("bind=127.0.0.1\nrcvbuf=lots", "net.udp.rcvbuf"),
        ("bind=127.0.0.1\nsndbuf=-5", "net.udp.sndbuf"),
        ("bind=127.0.0.1\nbroadcast=everyone", "net.udp.broadcast"),
    ] {
        let (code, message) = Sock::open(0, options).expect_err(options);
        assert_eq!(code, NET_BACKEND_ERR_INVALID, "{options}");
        assert!(
            message.starts_with("udp: invalid ") && message.contains(key),
            "{message}"
        );
        assert!(!message.contains('\n'));
    }
    let s = Sock::open(
        0,
        "bind=127.0.0.1\nipv6=0\nflavour=strawberry\nnot a pair\n",
    )
    .unwrap();
    assert_eq!(s.last_error(), "");
}

#[test]
fn open_reads_only_what_params_size_covers() {
    parsec_backend_abi::conformance::open_rejects_params_that_do_not_reach_the_port(vt());
}

#[test]
fn open_error_message_is_truncated_to_the_buffer() {
    let options = CString::new("bind=not-an-address").unwrap();
    let params = NET_BackendOpenParams {
        size: std::mem::size_of::<NET_BackendOpenParams>() as u32,
        port: 0,
        reserved: 0,
        options: options.as_ptr(),
    };
    let mut handle: *mut c_void = std::ptr::null_mut();
    let mut err = [0x55 as c_char; 12];
    // SAFETY: valid pointers; the error buffer is 12 bytes.
    let rc = unsafe { (vt().open.unwrap())(&params, &mut handle, err.as_mut_ptr(), err.len()) };
    assert_eq!(rc, NET_BACKEND_ERR_INVALID);
    assert_eq!(c_text(&err), "udp: invali");
    // A NULL error buffer is allowed.
    // SAFETY: valid pointers, NULL error buffer of length 0.
    let rc = unsafe { (vt().open.unwrap())(&params, &mut handle, std::ptr::null_mut(), 0) };
    assert_eq!(rc, NET_BACKEND_ERR_INVALID);
}

#[test]
fn last_error_reports_the_most_recent_failure_and_truncates() {
    let s = Sock::v4();
    assert_eq!(s.last_error(), "");
    let to = common::node("127.0.0.1:9");
    assert!(s.send(&to, &[0u8; 5000]) < 0);
    let message = s.last_error();
    assert_eq!(message, "udp: cannot send 5000 bytes: the limit is 1400");
    let mut small = [0 as c_char; 8];
    // SAFETY: valid handle and an 8-byte buffer.
    let n = unsafe { (vt().last_error.unwrap())(s.handle, small.as_mut_ptr(), small.len()) };
    assert_eq!(n, 7);
    assert_eq!(c_text(&small), "udp: ca");
}

#[test]
fn ipv6_required_but_ipv4_only_is_possible() {
    // ipv6=0 never opens IPv6; the default (auto) tolerates its absence.
    let s = Sock::open(0, "bind=127.0.0.1\nipv6=0").unwrap();
    // SAFETY: live handle.
    let state = unsafe { parsec_backend_udp::socket_from_handle(s.handle) }.unwrap();
    assert_eq!(state.ipv6_port(), None);
    if let Some(dual) = Sock::dual() {
        // SAFETY: live handle.
        let state = unsafe { parsec_backend_udp::socket_from_handle(dual.handle) }.unwrap();
        assert_eq!(state.ipv6_port(), Some(state.ipv4_port()));
    }
}

#[test]
fn binding_ipv4_loopback_keeps_ipv6_on_loopback_too() {
    if std::net::UdpSocket::bind("[::1]:0").is_err() {
        println!("SKIPPED: no IPv6 loopback here");
        return;
    }
    let sock = Sock::open(0, "bind=127.0.0.1").expect("opens");
    // SAFETY: the handle came from `open` and is still open.
    let inner = unsafe { parsec_backend_udp::socket_from_handle(sock.handle) }.expect("live");
    let port = inner.ipv6_port().expect("IPv6 is opened where available");
    assert!(
        inner.describe().contains(&format!("IPv6 [::1]:{port}")),
        "{}",
        inner.describe()
    );
    // Asked of the kernel (getsockname): a wildcard bind would report [::].
    assert_eq!(
        inner.ipv6_bound_address(),
        Some(std::net::SocketAddr::from((
            std::net::Ipv6Addr::LOCALHOST,
            port
        ))),
        "the IPv6 socket must be bound to ::1, not to every address"
    );
    // The same question tells the wildcard apart: an unspecified bind reports [::].
    let every = Sock::open(0, "bind=0.0.0.0").expect("opens");
    // SAFETY: the handle came from `open` and is still open.
    let every = unsafe { parsec_backend_udp::socket_from_handle(every.handle) }.expect("live");
    let every_port = every.ipv6_port().expect("IPv6 is opened where available");
    assert_eq!(
        every.ipv6_bound_address(),
        Some(std::net::SocketAddr::from((
            std::net::Ipv6Addr::UNSPECIFIED,
            every_port
        )))
    );

    // A specific non-loopback IPv4 address leaves IPv6 closed (unless ipv6=1 asks for it).
    let lan = std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| {
            s.connect("192.0.2.1:9")?;
            s.local_addr()
        })
        .ok()
        .map(|a| a.ip())
        .filter(|ip| !ip.is_loopback() && !ip.is_unspecified());
    let Some(std::net::IpAddr::V4(lan)) = lan else {
        println!("SKIPPED (second half): no non-loopback IPv4 address with a route here");
        return;
    };
    let sock = Sock::open(0, &format!("bind={lan}")).expect("opens");
    // SAFETY: as above.
    let inner = unsafe { parsec_backend_udp::socket_from_handle(sock.handle) }.expect("live");
    assert_eq!(inner.ipv6_port(), None, "{}", inner.describe());
}
