//! Every vtable function rejects NULL pointers (and the zero-length buffers it cannot use) with
//! NET_BACKEND_ERR_INVALID instead of crashing, before anything reaches the inner backend: the
//! shared conformance checks of `parsec_backend_abi`, run against the trace backend.

mod common;

use std::ptr::null_mut;

use common::{traced, Sock, SECOND};
use parsec_backend_abi::conformance;

#[test]
fn every_function_rejects_null_pointers() {
    let t = traced();
    let node = common::parse(t, "127.0.0.1:9", 0).unwrap();
    conformance::functions_without_a_socket_reject_null(t, node, "127.0.0.1:5");
    let s = Sock::v4();
    // SAFETY: `s.handle` is an open socket of this backend, used only here.
    unsafe { conformance::functions_with_a_socket_reject_null(t, s.handle, node) };
    // Nothing was counted, and the socket still works after all that.
    assert_eq!(s.counters(), parsec_backend_trace::Counters::default());
    let peer = Sock::v4();
    s.send_ok(&peer.local_node(), b"still fine");
    assert_eq!(peer.receive_within(SECOND).unwrap().1, b"still fine");
    // SAFETY: a NULL handle is allowed and gives no counters.
    assert_eq!(unsafe { parsec_backend_trace::counters(null_mut()) }, None);
}
