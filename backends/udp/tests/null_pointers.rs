//! Every vtable function rejects NULL pointers (and the zero-length buffers it cannot use) with
//! NET_BACKEND_ERR_INVALID instead of crashing: the shared conformance checks of
//! `parsec_backend_abi`, run against this backend.

mod common;

use std::time::Duration;

use common::{node, vt, Sock};
use parsec_backend_abi::conformance;

#[test]
fn every_function_rejects_null_pointers() {
    conformance::functions_without_a_socket_reject_null(vt(), node("127.0.0.1:9"), "127.0.0.1:5");
    let s = Sock::v4();
    // SAFETY: `s.handle` is an open socket of this backend, used only here.
    unsafe {
        conformance::functions_with_a_socket_reject_null(vt(), s.handle, node("127.0.0.1:9"))
    };
    // The socket still works after all that.
    let peer = Sock::v4();
    s.send_ok(&peer.local_node(), b"still fine");
    let got = peer.receive_within(Duration::from_secs(2)).unwrap();
    assert_eq!(got.1, b"still fine");
}
