//! Every vtable function rejects NULL pointers (and the zero-length buffers it cannot use) with
//! NET_BACKEND_ERR_INVALID instead of crashing, before anything reaches the inner backend.

mod common;

use std::ffi::{c_char, c_void, CString};
use std::ptr::{null, null_mut};

use common::{traced, Sock, SECOND};
use parsec_backend_abi::{NET_BackendOpenParams, NET_Node, NET_BACKEND_ERR_INVALID};

const INVALID: i32 = NET_BACKEND_ERR_INVALID;

#[test]
fn every_function_rejects_null_pointers() {
    let t = traced();
    let s = Sock::v4();
    let h = s.handle;
    let mut node = common::parse(t, "127.0.0.1:9", 0).unwrap();
    let mut buf = [0u8; 64];
    let mut text = [0 as c_char; 64];
    let options = CString::new(common::V4).unwrap();
    let params = NET_BackendOpenParams {
        size: std::mem::size_of::<NET_BackendOpenParams>() as u32,
        port: 0,
        reserved: 0,
        options: options.as_ptr(),
    };
    let mut handle: *mut c_void = null_mut();
    let (tp, tl) = (text.as_mut_ptr(), text.len());

    // SAFETY: every non-NULL pointer below is valid; the NULL ones are what is being tested.
    unsafe {
        let open = t.open.unwrap();
        assert_eq!(open(null(), &mut handle, tp, tl), INVALID);
        assert_eq!(common::c_text(&text), "trace: open: params is NULL");
        assert_eq!(open(&params, null_mut(), tp, tl), INVALID);
        assert_eq!(common::c_text(&text), "trace: open: out_socket is NULL");
        assert_eq!(open(null(), &mut handle, null_mut(), 0), INVALID);

        t.close.unwrap()(null_mut()); // must simply return

        let send = t.send.unwrap();
        assert_eq!(send(null_mut(), &node, buf.as_ptr(), 4), INVALID);
        assert_eq!(send(h, null(), buf.as_ptr(), 4), INVALID);
        assert_eq!(send(h, &node, null(), 4), INVALID);

        let receive = t.receive.unwrap();
        assert_eq!(
            receive(null_mut(), &mut node, buf.as_mut_ptr(), 64),
            INVALID
        );
        assert_eq!(receive(h, null_mut(), buf.as_mut_ptr(), 64), INVALID);
        assert_eq!(receive(h, &mut node, null_mut(), 64), INVALID);
        assert_eq!(receive(h, &mut node, buf.as_mut_ptr(), 0), INVALID);

        assert_eq!(t.wait.unwrap()(null_mut(), 0), INVALID);
        assert_eq!(t.bound_port.unwrap()(null_mut()), INVALID);

        let compare = t.node_compare.unwrap();
        assert_eq!(compare(null(), &node), INVALID);
        assert_eq!(compare(&node, null()), INVALID);

        let print = t.node_print.unwrap();
        assert_eq!(print(null(), tp, tl), INVALID);
        assert_eq!(print(&node, null_mut(), tl), INVALID);
        assert_eq!(print(&node, tp, 0), INVALID);

        let parse = t.node_parse.unwrap();
        let good = CString::new("127.0.0.1:5").unwrap();
        assert_eq!(parse(null(), 5, &mut node), INVALID);
        assert_eq!(parse(good.as_ptr(), 5, null_mut()), INVALID);

        let broadcast = t.broadcast_node.unwrap();
        assert_eq!(broadcast(null_mut(), 5, &mut node), INVALID);
        assert_eq!(broadcast(h, 5, null_mut()), INVALID);

        let local = t.local_node.unwrap();
        assert_eq!(local(null_mut(), null(), &mut node), INVALID);
        assert_eq!(local(h, null(), null_mut()), INVALID);

        let last_error = t.last_error.unwrap();
        assert_eq!(last_error(null_mut(), tp, tl), INVALID);
        assert_eq!(last_error(h, null_mut(), tl), INVALID);
        assert_eq!(last_error(h, tp, 0), INVALID);
    }
    // Nothing was counted, and the socket still works after all that.
    assert_eq!(s.counters(), parsec_backend_trace::Counters::default());
    let peer = Sock::v4();
    s.send_ok(&peer.local_node(), b"still fine");
    assert_eq!(peer.receive_within(SECOND).unwrap().1, b"still fine");
    // SAFETY: a NULL handle is allowed and gives no counters.
    assert_eq!(unsafe { parsec_backend_trace::counters(null_mut()) }, None);
    let _ = NET_Node::default();
}
