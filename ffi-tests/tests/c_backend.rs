//! The C backend (`c/backend_unixdgram.c`) on its own terms: it exports only its entry symbol,
//! parses and prints the node text forms it documents, reports a send to a port nobody bound as
//! an error, and at the socket level drops oversize, empty and nameless datagrams instead of
//! delivering them, while exchanging well-formed ones with a plain AF_UNIX socket of this test.

use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::backends::unixdgram;
use parsec_net_ffi_tests::exchange::{payload, unique_prefix, REPLY_TIMEOUT};
use parsec_net_ffi_tests::{Build, Endpoint};

/// NET_ERR_PARSE and NET_ERR_IO of parsec_net.h.
const NET_ERR_PARSE: i32 = -10;
const NET_ERR_IO: i32 = -7;

/// One endpoint switched to the C backend (by path) under a fresh prefix, on port `port`
/// (0: any).
fn endpoint_on_c_backend(port: u16) -> (Endpoint, String) {
    let program = Build::c("c/exchange.c").build();
    let mut endpoint = Endpoint::spawn("A", &program, &[] as &[(&str, &str)]);
    let prefix = unique_prefix();
    endpoint.ok(
        &format!("exec net.unixdgram.prefix {prefix}"),
        REPLY_TIMEOUT,
    );
    endpoint.ok(&format!("exec net.port {port}"), REPLY_TIMEOUT);
    endpoint.ok(
        &format!("exec net.api {}", unixdgram(false).display()),
        REPLY_TIMEOUT,
    );
    (endpoint, prefix)
}

fn abstract_address(prefix: &str, port: u16) -> SocketAddr {
    SocketAddr::from_abstract_name(format!("{prefix}/{port}").as_bytes())
        .expect("a valid abstract name")
}

#[test]
fn c_backend_exports_only_its_entry_symbol() {
    let library = unixdgram(false);
    let Ok(out) = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&library)
        .output()
    else {
        println!("SKIPPED: nm not installed");
        return;
    };
    assert!(
        out.status.success(),
        "nm failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let symbols: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().nth(2).map(str::to_string))
        .collect();
    assert_eq!(
        symbols,
        ["parsec_net_backend_entry"],
        "exported: {symbols:?}"
    );
}

#[test]
fn c_backend_parses_and_prints_its_node_forms() {
    let (mut a, prefix) = endpoint_on_c_backend(7777);
    assert_eq!(a.ok("local", REPLY_TIMEOUT), "unix:7777");
    // `status` shows what the backend says its socket is bound to (its describe_socket).
    let status = a.ok("status", REPLY_TIMEOUT);
    // (exchange.c joins the reply's lines with '|'.)
    let described = format!(
        "port 7777, local node unix:7777|binding: abstract AF_UNIX address @{prefix}/7777|"
    );
    assert!(status.contains(&described), "{status}");
    for (text, printed) in [
        ("unix:7001", "unix:7001"),
        ("7001", "unix:7001"),
        ("unix:65535", "unix:65535"),
        ("unix:", "unix:7777"),
    ] {
        assert_eq!(
            a.ok(&format!("peer {text}"), REPLY_TIMEOUT),
            printed,
            "parsing {text:?}"
        );
    }
    // A refused text gets the core's message and, after it, the backend's reason (its
    // node_parse_error).
    for (text, reason) in [
        ("unix:0", "port 0 is not 1-65535"),
        ("0", "port 0 is not 1-65535"),
        ("unix:65536", "port 65536 is not 1-65535"),
        ("unix:7001x", "\"unix:7001x\" is neither unix:PORT nor PORT"),
        ("unixx:7001", "\"unixx:7001\" is neither unix:PORT nor PORT"),
        ("udp:7001", "\"udp:7001\" is neither unix:PORT nor PORT"),
        (
            "127.0.0.1:7001",
            "\"127.0.0.1:7001\" is neither unix:PORT nor PORT",
        ),
        ("-1", "\"-1\" is neither unix:PORT nor PORT"),
        ("unix:-1", "\"unix:-1\" is neither unix:PORT nor PORT"),
        ("garbage", "\"garbage\" is neither unix:PORT nor PORT"),
    ] {
        let reply = a.call(&format!("peer {text}"), REPLY_TIMEOUT);
        let want = format!(
            "err {NET_ERR_PARSE} '{text}' is not an address for the unixdgram backend: {reason}"
        );
        assert_eq!(reply, want, "parsing {text:?}");
    }
    a.quit(REPLY_TIMEOUT);
}

#[test]
fn c_backend_without_a_default_port_refuses_a_bare_prefix() {
    let (mut a, _) = endpoint_on_c_backend(0);
    let reply = a.call("peer unix:", REPLY_TIMEOUT);
    assert_eq!(
        reply,
        format!(
            "err {NET_ERR_PARSE} 'unix:' is not an address for the unixdgram backend: \"unix:\" alone means the configured port, which is 0 (any)"
        )
    );
    a.quit(REPLY_TIMEOUT);
}

#[test]
fn c_backend_reports_a_port_nobody_bound_as_unreachable() {
    let (mut a, _) = endpoint_on_c_backend(0);
    a.ok("peer unix:1", REPLY_TIMEOUT);
    let reply = a.call("send 0 1", REPLY_TIMEOUT);
    assert!(
        reply.starts_with(&format!("err {NET_ERR_IO} "))
            && reply.contains("no socket is bound there"),
        "{reply:?}"
    );
    a.quit(REPLY_TIMEOUT);
}

#[test]
fn c_backend_drops_unusable_datagrams_and_talks_to_plain_sockets() {
    let (mut a, prefix) = endpoint_on_c_backend(0);
    let local = a.ok("local", REPLY_TIMEOUT);
    let port: u16 = local
        .strip_prefix("unix:")
        .and_then(|p| p.parse().ok())
        .expect("a unix node");
    let target = abstract_address(&prefix, port);

    // A plain socket that names itself like a backend socket on port 4242, and one with no name.
    let named =
        UnixDatagram::bind_addr(&abstract_address(&prefix, 4242)).expect("binding the test socket");
    let nameless = UnixDatagram::unbound().expect("an unbound socket");
    named
        .send_to_addr(&vec![0xEE; 2000], &target)
        .expect("sending an oversize datagram");
    named
        .send_to_addr(&[], &target)
        .expect("sending an empty datagram");
    nameless
        .send_to_addr(&payload(1), &target)
        .expect("sending from a nameless socket");
    named
        .send_to_addr(&payload(0), &target)
        .expect("sending a good datagram");

    a.ok("peer unix:4242", REPLY_TIMEOUT);
    assert_eq!(a.ok("recv_until 1 5000", REPLY_TIMEOUT), "received 1");
    let late = a.call("recv_until 2 200", REPLY_TIMEOUT);
    assert_eq!(
        late, "timeout received 1",
        "an unusable datagram was delivered"
    );
    a.ok("check 0 1", REPLY_TIMEOUT);

    // And the other way: the backend's datagram reaches the plain socket, named by its port.
    a.ok("send 5 6", REPLY_TIMEOUT);
    named
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("setting a timeout");
    let mut buf = [0u8; 2048];
    let (n, from) = named
        .recv_from(&mut buf)
        .expect("receiving from the backend");
    assert_eq!(&buf[..n], payload(5).as_slice());
    assert_eq!(
        from.as_abstract_name(),
        Some(format!("{prefix}/{port}").as_bytes())
    );
    a.quit(REPLY_TIMEOUT);
}
