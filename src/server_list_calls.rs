//! The game's server browser in the C API: `NET_ServerInfo` and `NET_FetchServerList`, over the
//! masterservers set with `net.master`. Fetching runs inside `NETs_MaintainNet` and ends with a
//! `NET_EVENT_SERVER_LIST` event; this call only starts it and copies the latest list, so it
//! never blocks. Field order of `NET_ServerInfo` is ABI: only append.

use std::ffi::c_char;

use net_core::master::ListedServer;
use net_core::NetResult;

use crate::ffi_guard::{guard_code, require_non_null, require_sane_len, write_c_text};
use crate::global::with_subsystem_timed;

/// Capacity of `NET_ServerInfo.name` and `.os` (31 bytes and the NUL).
pub const NET_SERVER_NAME_LEN: usize = 32;
/// Capacity of `NET_ServerInfo.url` (127 bytes and the NUL).
pub const NET_SERVER_URL_LEN: usize = 128;
/// Capacity of `NET_ServerInfo.address`.
pub const NET_SERVER_ADDRESS_LEN: usize = 64;
/// Capacity of `NET_ServerInfo.kind`.
pub const NET_SERVER_KIND_LEN: usize = 16;

/// One server of a masterserver's list. Texts are NUL-terminated.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct NET_ServerInfo {
    /// The server's name (at most 31 bytes).
    pub name: [c_char; NET_SERVER_NAME_LEN],
    /// Its operating system (at most 31 bytes).
    pub os: [c_char; NET_SERVER_NAME_LEN],
    /// A page about it (at most 127 bytes; "-" when it gave none).
    pub url: [c_char; NET_SERVER_URL_LEN],
    /// "IP:PORT" ("[IP]:PORT" for IPv6) to connect to; the IP alone when the server did not say
    /// its port (`port` 0): connecting to the IP uses the protocol's default port.
    pub address: [c_char; NET_SERVER_ADDRESS_LEN],
    /// "slotserver", "gameserver" or "unknown".
    pub kind: [c_char; NET_SERVER_KIND_LEN],
    pub players: i32,
    pub max_players: i32,
    /// Its TCP port (0: not told).
    pub port: u16,
    /// A gameserver's UDP port (0: not told).
    pub udp_port: u16,
}

impl NET_ServerInfo {
    fn from_listed(s: &ListedServer) -> NET_ServerInfo {
        let mut info = NET_ServerInfo {
            name: [0; NET_SERVER_NAME_LEN],
            os: [0; NET_SERVER_NAME_LEN],
            url: [0; NET_SERVER_URL_LEN],
            address: [0; NET_SERVER_ADDRESS_LEN],
            kind: [0; NET_SERVER_KIND_LEN],
            players: i32::from(s.players),
            max_players: i32::from(s.max_players),
            port: s.port,
            udp_port: s.udp_port,
        };
        // SAFETY: each destination is a whole array of this struct, written within its length.
        unsafe {
            write_c_text(&s.name, info.name.as_mut_ptr(), info.name.len());
            write_c_text(&s.os, info.os.as_mut_ptr(), info.os.len());
            write_c_text(&s.url, info.url.as_mut_ptr(), info.url.len());
            write_c_text(&s.address(), info.address.as_mut_ptr(), info.address.len());
            write_c_text(s.kind.as_str(), info.kind.as_mut_ptr(), info.kind.len());
        }
        info
    }
}

/// Copy up to `cap` entries of the latest fetched server list into `out`; `*total` (may be
/// NULL) gets the list's length. Starts a fetch from the `net.master` masterservers if none is
/// running and the list is older than 5 s (or was never fetched); the fetch completes over
/// later NETs_MaintainNet calls and raises NET_EVENT_SERVER_LIST. Returns the number of entries
/// written (>= 0; 0 before the first fetch completed), or NET_ERR_INVALID_ARGUMENT when no
/// masterserver is set or `out` is NULL with `cap` > 0. Never blocks.
///
/// # Safety
/// `out` must be NULL (with `cap` 0) or writable for `cap` entries; `total` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn NET_FetchServerList(
    out: *mut NET_ServerInfo,
    cap: usize,
    total: *mut usize,
) -> i32 {
    guard_code(|| {
        require_sane_len(cap, "server list capacity")?;
        if cap > 0 {
            require_non_null(out, "out")?;
        }
        let entries: NetResult<Vec<NET_ServerInfo>> = with_subsystem_timed(|sub, now| {
            sub.request_server_list(now)?;
            let list = sub.server_list().servers();
            if !total.is_null() {
                total.write_unaligned(list.len());
            }
            Ok(list
                .iter()
                .take(cap.min(i32::MAX as usize))
                .map(NET_ServerInfo::from_listed)
                .collect())
        });
        let entries = entries?;
        for (i, entry) in entries.iter().enumerate() {
            out.add(i).write_unaligned(*entry);
        }
        Ok(entries.len() as i32)
    })
}
