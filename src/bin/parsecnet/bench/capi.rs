//! The library's C API as a game calls it, wrapped for the benchmark children: `NET_Init`,
//! `NET_ConsoleExec`, `NETs_MaintainNet` through the jump table (as the header's macro does),
//! `NET_PollEvent` and `NET_RmEvCustom`. Nothing here goes around the `extern "C"` functions.

use std::ffi::{c_char, CStr, CString};

use parsec_net::console::NET_ConsoleExec;
use parsec_net::game_calls::{NET_PollEvent, NET_RmEvCustom};
use parsec_net::game_types::{NET_Event, NET_EVENT_CUSTOM, NET_SEND_RELIABLE};
use parsec_net::jump_table::NET_GetJumpTable;
use parsec_net::lifecycle::{NET_GetLastError, NET_Init};

/// NET_Init; the error message on failure.
pub fn init() -> Result<(), String> {
    if NET_Init() == 0 {
        Ok(())
    } else {
        Err(last_error())
    }
}

fn last_error() -> String {
    // SAFETY: NET_GetLastError returns a NUL-terminated string valid until the next failure.
    unsafe { CStr::from_ptr(NET_GetLastError()) }
        .to_string_lossy()
        .into_owned()
}

/// NET_ConsoleExec: the reply, or the error message.
pub fn exec(line: &str) -> Result<String, String> {
    let c_line = CString::new(line).map_err(|_| "console line holds a NUL byte".to_string())?;
    let mut out = vec![0 as c_char; 8192];
    // SAFETY: c_line is NUL-terminated; out is writable for its length.
    let rc = unsafe { NET_ConsoleExec(c_line.as_ptr(), out.as_mut_ptr(), out.len()) };
    // SAFETY: NET_ConsoleExec always NUL-terminates a non-empty buffer.
    let text = unsafe { CStr::from_ptr(out.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    if rc == 0 {
        Ok(text)
    } else {
        Err(format!("{line}: {text} (code {rc})"))
    }
}

/// NETs_MaintainNet() as the header's macro expands it: read the entry from the jump table and
/// call it.
#[inline]
pub fn maintain() {
    // SAFETY: NET_GetJumpTable never returns NULL and the table lives as long as the process.
    unsafe { ((*NET_GetJumpTable()).MaintainNet)() }
}

/// A zeroed event to poll into.
pub fn empty_event() -> NET_Event {
    // SAFETY: NET_Event is plain C data (integers, floats, arrays) for which zero is valid.
    unsafe { std::mem::zeroed() }
}

/// NET_PollEvent: true if an event was written.
#[inline]
pub fn poll(event: &mut NET_Event) -> bool {
    // SAFETY: `event` is a valid, writable NET_Event.
    unsafe { NET_PollEvent(event) == 1 }
}

/// NET_RmEvCustom; the result code (0: queued).
#[inline]
pub fn send_custom(custom_type: u16, data: &[u8], reliable: bool) -> i32 {
    let flags = if reliable { NET_SEND_RELIABLE } else { 0 };
    // SAFETY: data is readable for its length.
    unsafe { NET_RmEvCustom(custom_type, data.as_ptr().cast(), data.len(), flags) }
}

/// The custom type and first 8 payload bytes (a sequence number) of a custom event.
#[inline]
pub fn custom_of(event: &NET_Event) -> Option<(u16, u64)> {
    if event.r#type != NET_EVENT_CUSTOM || event.data_len < 8 {
        return None;
    }
    let mut seq = [0u8; 8];
    seq.copy_from_slice(&event.data[..8]);
    Some((event.custom_type, u64::from_le_bytes(seq)))
}

/// NETs_LocalNode printed with NETs_PrintNode ("127.0.0.1:PORT"); opens the socket.
pub fn local_node_text() -> Result<String, String> {
    use parsec_net::packet_calls::{NETs_LocalNode, NETs_PrintNode};
    let mut node = parsec_net::NET_Node::default();
    let mut text = [0 as c_char; 128];
    // SAFETY: node and text are valid for writing, text for its length.
    unsafe {
        if NETs_LocalNode(&mut node) != 0
            || NETs_PrintNode(&node, text.as_mut_ptr(), text.len()) < 0
        {
            return Err(last_error());
        }
        Ok(CStr::from_ptr(text.as_ptr()).to_string_lossy().into_owned())
    }
}

/// Packets this client's session sent and accepted so far (from the console's `status`).
pub fn session_packets() -> (u64, u64) {
    let status = exec("status").unwrap_or_default();
    let number_after = |key: &str| {
        status
            .split(key)
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (number_after("packets sent "), number_after(" accepted "))
}
