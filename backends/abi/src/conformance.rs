//! Checks that every packet backend's tests run against its vtable, so that each backend does
//! not carry its own copy: every function refuses NULL pointers (and the zero-length buffers it
//! cannot use) with `NET_BACKEND_ERR_INVALID` instead of crashing, and `open` reads no parameter
//! beyond the declared `size`. Test code only (feature `test-support`); a failed check panics.
//!
//! The expected `open` messages are those of [`crate::shim::open_socket`], which every Rust
//! backend of this workspace uses.

use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::{null, null_mut};

use crate::{
    NET_BackendOpenParams, NET_BackendVTable, NET_Node, NET_BACKEND_ERR_INVALID, NET_BACKEND_OK,
};

const INVALID: i32 = NET_BACKEND_ERR_INVALID;

/// The text a backend wrote into a C buffer, up to its NUL (the buffer must hold one).
pub fn c_text(buf: &[c_char]) -> String {
    assert!(
        buf.contains(&0),
        "the backend left the buffer without a NUL"
    );
    // SAFETY: the buffer holds a NUL and lives for this call.
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

fn name_of(vtable: &NET_BackendVTable) -> String {
    // SAFETY: a vtable's `name` is a static NUL-terminated string.
    unsafe { CStr::from_ptr(vtable.name) }
        .to_string_lossy()
        .into_owned()
}

fn params(options: &CStr, size: usize) -> NET_BackendOpenParams {
    NET_BackendOpenParams {
        size: size as u32,
        port: 0,
        reserved: 0,
        options: options.as_ptr(),
    }
}

/// Every function refuses NULL in each pointer argument, a NULL socket handle included, without
/// needing an open socket. `node` is any valid node of the backend, `node_text` any text its
/// `node_parse` accepts. No socket is opened.
pub fn functions_without_a_socket_reject_null(
    vtable: &NET_BackendVTable,
    node: NET_Node,
    node_text: &str,
) {
    let name = name_of(vtable);
    let t = vtable;
    let mut n = node;
    let mut buf = [0u8; 64];
    let mut text = [0 as c_char; 128];
    let (tp, tl) = (text.as_mut_ptr(), text.len());
    let options = CString::default();
    let full = params(&options, std::mem::size_of::<NET_BackendOpenParams>());
    let good = CString::new(node_text).expect("node text without NUL");
    let mut handle: *mut c_void = null_mut();

    // SAFETY: every non-NULL pointer below is valid; the NULL ones are what is being tested.
    unsafe {
        let open = t.open.unwrap();
        assert_eq!(open(null(), &mut handle, tp, tl), INVALID);
        assert_eq!(c_text(&text), format!("{name}: open: params is NULL"));
        assert!(handle.is_null());
        assert_eq!(open(&full, null_mut(), tp, tl), INVALID);
        assert_eq!(c_text(&text), format!("{name}: open: out_socket is NULL"));
        assert_eq!(open(null(), &mut handle, null_mut(), 0), INVALID); // no error buffer: fine

        t.close.unwrap()(null_mut()); // must simply return

        assert_eq!(t.send.unwrap()(null_mut(), &n, buf.as_ptr(), 4), INVALID);
        let receive = t.receive.unwrap();
        assert_eq!(receive(null_mut(), &mut n, buf.as_mut_ptr(), 64), INVALID);
        assert_eq!(t.wait.unwrap()(null_mut(), 0), INVALID);
        assert_eq!(t.broadcast_node.unwrap()(null_mut(), 5, &mut n), INVALID);
        assert_eq!(t.local_node.unwrap()(null_mut(), null(), &mut n), INVALID);
        assert_eq!(t.last_error.unwrap()(null_mut(), tp, tl), INVALID);
        assert_eq!(t.bound_port.unwrap()(null_mut()), INVALID);
        if let Some(describe) = t.describe_socket {
            assert_eq!(describe(null_mut(), tp, tl), INVALID);
        }

        let compare = t.node_compare.unwrap();
        assert_eq!(compare(null(), &n), INVALID);
        assert_eq!(compare(&n, null()), INVALID);

        let print = t.node_print.unwrap();
        assert_eq!(print(null(), tp, tl), INVALID);
        assert_eq!(print(&n, null_mut(), tl), INVALID);
        assert_eq!(print(&n, tp, 0), INVALID);

        let parse = t.node_parse.unwrap();
        assert_eq!(parse(null(), 5, &mut n), INVALID);
        assert_eq!(parse(good.as_ptr(), 5, null_mut()), INVALID);

        if let Some(explain) = t.node_parse_error {
            assert_eq!(explain(null_mut(), tl), INVALID);
            assert_eq!(explain(tp, 0), INVALID);
            // The refusal of a NULL text is explained as such, not by an older parse.
            assert_eq!(parse(null(), 5, &mut n), INVALID);
            assert!(
                explain(tp, tl) > 0,
                "{name}: a refused NULL text is not explained"
            );
            assert!(
                c_text(&text).contains("NULL"),
                "{name}: {:?}",
                c_text(&text)
            );
        }
    }
    assert_eq!(n, node, "no function wrote a node while refusing");
}

/// `node_parse_error` (which this backend must have) explains a refused `bad_text` with a line
/// containing `needle`, returning the line's length, and answers 0 with an empty line after
/// `good_text` parses. Both are parsed with default port 5.
pub fn refused_node_text_is_explained(
    vtable: &NET_BackendVTable,
    bad_text: &str,
    needle: &str,
    good_text: &str,
) {
    let name = name_of(vtable);
    let explain = vtable
        .node_parse_error
        .unwrap_or_else(|| panic!("{name}: the vtable has no node_parse_error"));
    let parse = vtable.node_parse.unwrap();
    let mut node = NET_Node::default();
    let mut text = [0 as c_char; 160];
    let (tp, tl) = (text.as_mut_ptr(), text.len());
    let bad = CString::new(bad_text).expect("text without NUL");
    let good = CString::new(good_text).expect("text without NUL");
    // SAFETY: valid pointers and buffer sizes throughout.
    unsafe {
        assert!(
            parse(bad.as_ptr(), 5, &mut node) < 0,
            "{name}: {bad_text:?} parsed"
        );
        let len = explain(tp, tl);
        let why = c_text(&text);
        assert!(
            why.contains(needle),
            "{name}: {bad_text:?} explained as {why:?}, without {needle:?}"
        );
        assert_eq!(len as usize, why.len(), "{name}: returned length");
        assert!(!why.contains('\n'), "{name}: more than one line: {why:?}");
        assert_eq!(
            parse(good.as_ptr(), 5, &mut node),
            NET_BACKEND_OK,
            "{good_text:?}"
        );
        assert_eq!(
            explain(tp, tl),
            0,
            "{name}: an explanation after a successful parse"
        );
        assert_eq!(c_text(&text), "");
    }
}

/// Every socket function refuses NULL in each pointer argument, and a zero-length buffer, on the
/// open socket `handle` (which stays open and usable). `node` is any valid node of the backend.
///
/// # Safety
/// `handle` must be an open socket of this vtable's backend, not used concurrently.
pub unsafe fn functions_with_a_socket_reject_null(
    vtable: &NET_BackendVTable,
    handle: *mut c_void,
    node: NET_Node,
) {
    let t = vtable;
    let h = handle;
    let mut n = node;
    let mut buf = [0u8; 64];
    let mut text = [0 as c_char; 64];
    let (tp, tl) = (text.as_mut_ptr(), text.len());
    // SAFETY: `h` is an open handle (the caller's promise); every other non-NULL pointer is
    // valid; the NULL ones are what is being tested.
    unsafe {
        let send = t.send.unwrap();
        assert_eq!(send(h, null(), buf.as_ptr(), 4), INVALID);
        assert_eq!(send(h, &n, null(), 4), INVALID);

        let receive = t.receive.unwrap();
        assert_eq!(receive(h, null_mut(), buf.as_mut_ptr(), 64), INVALID);
        assert_eq!(receive(h, &mut n, null_mut(), 64), INVALID);
        assert_eq!(receive(h, &mut n, buf.as_mut_ptr(), 0), INVALID);

        assert_eq!(t.broadcast_node.unwrap()(h, 5, null_mut()), INVALID);
        assert_eq!(t.local_node.unwrap()(h, null(), null_mut()), INVALID);

        let last_error = t.last_error.unwrap();
        assert_eq!(last_error(h, null_mut(), tl), INVALID);
        assert_eq!(last_error(h, tp, 0), INVALID);

        if let Some(describe) = t.describe_socket {
            assert_eq!(describe(h, null_mut(), tl), INVALID);
            assert_eq!(describe(h, tp, 0), INVALID);
            // A line that does not fit is cut, still terminated within the buffer.
            let mut small = [0x55 as c_char; 9];
            let written = describe(h, small.as_mut_ptr(), 8);
            assert!(
                (0..8).contains(&written),
                "describe_socket wrote {written} of 8"
            );
            assert_eq!(small[written as usize], 0);
            assert_eq!(small[8], 0x55, "describe_socket wrote past the buffer");
        }
    }
    assert_eq!(n, node, "no function wrote a node while refusing");
}

/// `open` with parameters whose declared `size` does not reach the port refuses them with
/// `NET_BACKEND_ERR_INVALID` and `"<name>: open parameters too small (2 bytes)"` and opens
/// nothing, although the memory behind them holds valid options.
pub fn open_rejects_params_that_do_not_reach_the_port(vtable: &NET_BackendVTable) {
    let options = CString::default();
    let tiny = params(&options, 2); // only `size` itself
    let mut handle: *mut c_void = null_mut();
    let mut err = [0x55 as c_char; 128];
    // SAFETY: valid pointers; `size` says only its own 2 bytes are meaningful.
    let rc = unsafe { (vtable.open.unwrap())(&tiny, &mut handle, err.as_mut_ptr(), err.len()) };
    assert_eq!(rc, INVALID);
    assert!(handle.is_null());
    let name = name_of(vtable);
    assert_eq!(
        c_text(&err),
        format!("{name}: open parameters too small (2 bytes)")
    );
}
