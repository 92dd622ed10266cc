//! Lifecycle and errors: NET_Init, NET_Shutdown, NET_GetAbiVersion, NET_GetLastError.

use std::ffi::c_char;

use net_core::protocol::ProtocolKind;

use crate::ffi_guard::{guard, guard_code, last_error_ptr};
use crate::{global, jump_table, logging};

/// Initialize the library (idempotent). Selects the UDP backend (opened on first use) and the
/// peer-to-peer protocol. Returns NET_OK or an error code.
#[no_mangle]
pub extern "C" fn NET_Init() -> i32 {
    guard_code(|| {
        logging::install();
        if global::init()? {
            log::info!(
                "parsec-net initialized (ABI {})",
                jump_table::NET_ABI_VERSION
            );
        }
        global::with_subsystem(|sub| {
            jump_table::bind_protocol(sub.protocol());
            Ok(0)
        })
    })
}

/// Shut the library down: disconnects, closes sockets, frees everything. Safe to call twice and
/// before NET_Init. NET_Init may be called again afterwards.
#[no_mangle]
pub extern "C" fn NET_Shutdown() {
    guard(
        |_| (),
        || {
            global::shutdown()?;
            global::while_locked(|| jump_table::bind_protocol(ProtocolKind::Unselected));
            Ok(())
        },
    )
}

/// The C ABI version of this library (NET_ABI_VERSION of the header it was built with).
#[no_mangle]
pub extern "C" fn NET_GetAbiVersion() -> u32 {
    jump_table::NET_ABI_VERSION
}

/// The message of the last failed call on this thread ("" if none). The pointer stays valid for
/// the thread's life; the next failing call on the same thread replaces the text it points to.
#[no_mangle]
pub extern "C" fn NET_GetLastError() -> *const c_char {
    last_error_ptr()
}
