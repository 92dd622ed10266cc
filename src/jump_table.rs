//! The NETs_ jump table (SPEC 3.2), versioned like SDL's dynapi: a `#[repr(C)]` struct that
//! starts with `abi_version` and `size`, then function pointers. The order of fields is ABI law:
//! only ever append.
//!
//! The protocol entries (`Connect` .. `MaintainNet`) point at the functions of the protocol module
//! that is bound; `net.subsys` rebinds them in place while the global lock is held, i.e. never
//! while a call is running inside the table. Each protocol module's entries are distinct
//! functions; a caller that kept an old pointer across a switch is still served by the protocol
//! that is bound now. The packet entries route to the active backend.
//!
//! With `PARSEC_NET_STATIC_BIND` the header calls the exported `NETs_*` functions of
//! `protocol_calls` and `packet_calls` directly instead.

use std::cell::UnsafeCell;
use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicU8, Ordering};

use net_core::protocol::ProtocolKind;
use parsec_backend_abi::NET_Node;

use crate::packet_calls;
use crate::protocol_calls::{
    connect_via, disconnect_via, join_via, maintain_via, unjoin_via, update_name_via,
};

/// Version of the C API and of the jump table layout.
pub const NET_ABI_VERSION: u32 = 1;

/// The jump table. Read it only through `NET_GetJumpTable()` (or the NETs_ macros).
#[repr(C)]
#[allow(non_snake_case)]
pub struct NET_JumpTable {
    /// `NET_ABI_VERSION` of the library that filled the table.
    pub abi_version: u32,
    /// `sizeof(NET_JumpTable)` as the library knows it; fields beyond a caller's known size are
    /// newer additions.
    pub size: u32,
    pub Connect: extern "C" fn() -> i32,
    pub Disconnect: extern "C" fn() -> i32,
    pub Join: extern "C" fn() -> i32,
    pub Unjoin: extern "C" fn(flag: u8) -> i32,
    pub UpdateName: extern "C" fn() -> i32,
    pub MaintainNet: extern "C" fn(),
    pub ResolveNode: unsafe extern "C" fn(text: *const c_char, out: *mut NET_Node) -> i32,
    pub PrintNode:
        unsafe extern "C" fn(node: *const NET_Node, out: *mut c_char, out_len: usize) -> i32,
    pub CompareNodes: unsafe extern "C" fn(a: *const NET_Node, b: *const NET_Node) -> i32,
    pub LocalNode: unsafe extern "C" fn(out: *mut NET_Node) -> i32,
    pub SendDatagram:
        unsafe extern "C" fn(to: *const NET_Node, data: *const c_void, len: usize) -> i32,
    pub ReceiveDatagram:
        unsafe extern "C" fn(from: *mut NET_Node, buf: *mut c_void, cap: usize) -> i32,
}

/// The protocol entries of one protocol module.
#[derive(Clone, Copy)]
struct ProtocolEntries {
    connect: extern "C" fn() -> i32,
    disconnect: extern "C" fn() -> i32,
    join: extern "C" fn() -> i32,
    unjoin: extern "C" fn(u8) -> i32,
    update_name: extern "C" fn() -> i32,
    maintain: extern "C" fn(),
}

const fn entries_of<const K: u8>() -> ProtocolEntries {
    ProtocolEntries {
        connect: connect_via::<K>,
        disconnect: disconnect_via::<K>,
        join: join_via::<K>,
        unjoin: unjoin_via::<K>,
        update_name: update_name_via::<K>,
        maintain: maintain_via::<K>,
    }
}

fn entries_for(kind: ProtocolKind) -> ProtocolEntries {
    match kind {
        ProtocolKind::Unselected => entries_of::<{ ProtocolKind::Unselected as u8 }>(),
        ProtocolKind::Peer => entries_of::<{ ProtocolKind::Peer as u8 }>(),
        ProtocolKind::SlotServer => entries_of::<{ ProtocolKind::SlotServer as u8 }>(),
        ProtocolKind::GameServer => entries_of::<{ ProtocolKind::GameServer as u8 }>(),
    }
}

/// Storage for the table C reads. Rust writes it only while holding the global lock and only
/// with volatile stores of whole pointer-sized fields (as SDL's dynapi does); Rust never reads
/// it outside tests.
struct TableCell(UnsafeCell<NET_JumpTable>);

// SAFETY: see TableCell: writes are serialized by the global lock; readers are C callers.
unsafe impl Sync for TableCell {}

const UNSELECTED: ProtocolEntries = entries_of::<{ ProtocolKind::Unselected as u8 }>();

static TABLE: TableCell = TableCell(UnsafeCell::new(NET_JumpTable {
    abi_version: NET_ABI_VERSION,
    size: std::mem::size_of::<NET_JumpTable>() as u32,
    Connect: UNSELECTED.connect,
    Disconnect: UNSELECTED.disconnect,
    Join: UNSELECTED.join,
    Unjoin: UNSELECTED.unjoin,
    UpdateName: UNSELECTED.update_name,
    MaintainNet: UNSELECTED.maintain,
    ResolveNode: packet_calls::NETs_ResolveNode,
    PrintNode: packet_calls::NETs_PrintNode,
    CompareNodes: packet_calls::NETs_CompareNodes,
    LocalNode: packet_calls::NETs_LocalNode,
    SendDatagram: packet_calls::NETs_SendDatagram,
    ReceiveDatagram: packet_calls::NETs_ReceiveDatagram,
}));

/// Which protocol's entries are in the table now.
static BOUND: AtomicU8 = AtomicU8::new(ProtocolKind::Unselected as u8);

/// Pointer to the table.
pub fn table() -> *const NET_JumpTable {
    TABLE.0.get()
}

/// The protocol whose entries are bound.
pub fn bound_protocol() -> u8 {
    BOUND.load(Ordering::Acquire)
}

/// Rebind the protocol entries to `kind` if they are bound to another protocol.
/// Must be called with the global lock held (the callers in this crate do).
pub fn bind_protocol(kind: ProtocolKind) {
    if BOUND.load(Ordering::Acquire) == kind as u8 {
        return;
    }
    let entries = entries_for(kind);
    let t = TABLE.0.get();
    // SAFETY: `t` points at the static table; each store writes one whole, aligned field while
    // the global lock keeps every other writer out.
    unsafe {
        std::ptr::addr_of_mut!((*t).Connect).write_volatile(entries.connect);
        std::ptr::addr_of_mut!((*t).Disconnect).write_volatile(entries.disconnect);
        std::ptr::addr_of_mut!((*t).Join).write_volatile(entries.join);
        std::ptr::addr_of_mut!((*t).Unjoin).write_volatile(entries.unjoin);
        std::ptr::addr_of_mut!((*t).UpdateName).write_volatile(entries.update_name);
        std::ptr::addr_of_mut!((*t).MaintainNet).write_volatile(entries.maintain);
    }
    BOUND.store(kind as u8, Ordering::Release);
    log::debug!("jump table: protocol entries bound to {kind}");
}

/// The table's address, for C: `const NET_JumpTable *NET_GetJumpTable(void)`.
/// Never NULL; valid for the life of the process.
#[no_mangle]
pub extern "C" fn NET_GetJumpTable() -> *const NET_JumpTable {
    table()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_connect() -> usize {
        // SAFETY: reading one field of the static table in a test.
        unsafe { std::ptr::addr_of!((*table()).Connect).read_volatile() as usize }
    }

    #[test]
    fn each_protocol_has_distinct_entries_and_binding_rewrites_them() {
        let before = read_connect();
        crate::global::while_locked(|| bind_protocol(ProtocolKind::Peer));
        let peer = read_connect();
        crate::global::while_locked(|| bind_protocol(ProtocolKind::GameServer));
        let gameserver = read_connect();
        crate::global::while_locked(|| bind_protocol(ProtocolKind::Unselected));
        assert_ne!(peer, gameserver);
        assert_ne!(before, peer);
        assert_eq!(read_connect(), before);
    }

    #[test]
    fn table_header_describes_itself() {
        // SAFETY: reading the static table in a test.
        let (v, s) = unsafe { ((*table()).abi_version, (*table()).size) };
        assert_eq!(v, NET_ABI_VERSION);
        assert_eq!(s as usize, std::mem::size_of::<NET_JumpTable>());
        assert_eq!(s as usize, 8 + 12 * std::mem::size_of::<usize>());
    }
}
