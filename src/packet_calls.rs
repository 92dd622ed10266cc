//! The packet-API entries of the jump table (`NETs_ResolveNode` .. `NETs_ReceiveDatagram`):
//! nodes and raw datagrams through the active backend. Datagrams carrying the game protocol's
//! signature are kept for the protocol; all others are returned here.

use std::ffi::{c_char, c_void};

use net_core::{ErrorCode, NetError};
use parsec_backend_abi::NET_Node;

use crate::ffi_guard::{guard_code, read_c_text, require_non_null, require_sane_len, write_c_text};
use crate::global::with_subsystem;

/// Parse `text` (for UDP "host", "host:port", "[v6]:port") into `*out` with the active backend.
/// Returns NET_OK, or an error (`*out` untouched).
///
/// # Safety
/// `text` must be a NUL-terminated string; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn NETs_ResolveNode(text: *const c_char, out: *mut NET_Node) -> i32 {
    guard_code(|| {
        require_non_null(out, "out")?;
        let text = read_c_text(text, net_core::subsystem::MAX_NODE_TEXT, "node text").inspect_err(
            |_| {
                let _ = with_subsystem(|sub| {
                    sub.note_refused_node_text();
                    Ok(())
                });
            },
        )?;
        let node = with_subsystem(|sub| sub.resolve_node(text))?;
        out.write(node);
        Ok(0)
    })
}

/// Print `node` into `out` (capacity `out_len`, NUL-terminated). Returns the text length, or
/// NET_ERR_BUFFER_TOO_SMALL (nothing written) or another error.
///
/// # Safety
/// `node` must be readable; `out` writable for `out_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn NETs_PrintNode(
    node: *const NET_Node,
    out: *mut c_char,
    out_len: usize,
) -> i32 {
    guard_code(|| {
        require_non_null(node, "node")?;
        require_non_null(out, "out")?;
        require_sane_len(out_len, "out_len")?;
        let node = node.read();
        let text = with_subsystem(|sub| sub.print_node(&node))?;
        if text.len() + 1 > out_len {
            return Err(NetError::new(
                ErrorCode::BufferTooSmall,
                format!(
                    "node text needs {} bytes, buffer holds {out_len}",
                    text.len() + 1
                ),
            ));
        }
        Ok(write_c_text(&text, out, out_len) as i32)
    })
}

/// Compare two nodes with the active backend's order: -1, 0, 1, or an error code (<= -2).
///
/// # Safety
/// `a` and `b` must be readable.
#[no_mangle]
pub unsafe extern "C" fn NETs_CompareNodes(a: *const NET_Node, b: *const NET_Node) -> i32 {
    guard_code(|| {
        require_non_null(a, "a")?;
        require_non_null(b, "b")?;
        let (a, b) = (a.read(), b.read());
        let order = with_subsystem(|sub| sub.compare_nodes(&a, &b))?;
        Ok(order as i32)
    })
}

/// This instance's node on the primary network (opens the backend socket if needed).
///
/// # Safety
/// `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn NETs_LocalNode(out: *mut NET_Node) -> i32 {
    guard_code(|| {
        require_non_null(out, "out")?;
        let node = with_subsystem(|sub| sub.local_node())?;
        out.write(node);
        Ok(0)
    })
}

/// Send one datagram of `len` bytes (1 .. the backend's maximum payload) to `to`. A datagram the
/// backend cannot take yet is queued and sent by a later call, in order. Returns NET_OK or an error.
///
/// # Safety
/// `to` must be readable; `data` readable for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn NETs_SendDatagram(
    to: *const NET_Node,
    data: *const c_void,
    len: usize,
) -> i32 {
    guard_code(|| {
        require_non_null(to, "to")?;
        require_non_null(data, "data")?;
        require_sane_len(len, "len")?;
        let to = to.read();
        let data = std::slice::from_raw_parts(data.cast::<u8>(), len);
        with_subsystem(|sub| sub.send_datagram(&to, data))?;
        Ok(0)
    })
}

/// Receive the next datagram not meant for the game protocol: returns its length (> 0) and the
/// sender in `*from` (may be NULL), 0 if none is waiting, or an error. If it does not fit in
/// `cap` bytes, NET_ERR_BUFFER_TOO_SMALL is returned and the datagram stays queued.
///
/// # Safety
/// `from` must be NULL or writable; `buf` writable for `cap` bytes.
#[no_mangle]
pub unsafe extern "C" fn NETs_ReceiveDatagram(
    from: *mut NET_Node,
    buf: *mut c_void,
    cap: usize,
) -> i32 {
    guard_code(|| {
        require_non_null(buf, "buf")?;
        require_sane_len(cap, "cap")?;
        let buf = std::slice::from_raw_parts_mut(buf.cast::<u8>(), cap);
        match with_subsystem(|sub| sub.receive_datagram(buf))? {
            None => Ok(0),
            Some((node, len)) => {
                if !from.is_null() {
                    from.write(node);
                }
                Ok(len as i32)
            }
        }
    })
}
