//! NET_ConsoleExec: run a console line exactly as a player typed it.

use std::ffi::c_char;

use crate::ffi_guard::{guard_code, read_c_text, require_sane_len, write_c_text};
use net_core::console::{ConsoleReply, ConsoleStep};

use crate::{global, jump_table};

/// Run one console command line. The reply (or the error message) is written into `out`
/// (capacity `out_len`, always NUL-terminated when `out_len > 0`, truncated if longer; `out` may
/// be NULL when `out_len` is 0). Returns NET_OK or the command's error code, which is also
/// available from NET_GetLastError.
///
/// # Safety
/// `line` must be a NUL-terminated string; `out` NULL or writable for `out_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn NET_ConsoleExec(
    line: *const c_char,
    out: *mut c_char,
    out_len: usize,
) -> i32 {
    guard_code(|| {
        if out.is_null() && out_len > 0 {
            return Err(net_core::NetError::invalid(
                "out is NULL but out_len is not 0",
            ));
        }
        require_sane_len(out_len, "out_len")?;
        let result =
            read_c_text(line, net_core::console::MAX_LINE_LEN, "console line").and_then(run_line);
        match result {
            Ok(reply) => {
                write_c_text(&reply.output, out, out_len);
                reply.result.map(|()| 0)
            }
            Err(err) => {
                write_c_text(&err.message, out, out_len);
                Err(err)
            }
        }
    })
}

/// Run a console line. A line that waits for the network (`servers`, up to 2 s for the
/// masterservers) waits here with the subsystem unlocked between rounds of its I/O, so another
/// thread's `NETs_MaintainNet` and `NET_PollEvent` go on meanwhile.
fn run_line(line: &str) -> net_core::NetResult<ConsoleReply> {
    let mut step = global::with_subsystem_timed(|sub, now| {
        let step = sub.console_exec_deferring_waits(line, now);
        // A protocol switch takes effect in the table here, under the global lock.
        jump_table::bind_protocol(sub.protocol());
        Ok(step)
    })?;
    loop {
        match step {
            ConsoleStep::Done(reply) => return Ok(reply),
            ConsoleStep::Waiting(wait) => {
                std::thread::sleep(net_core::console::WAIT_STEP);
                step = global::with_subsystem_timed(|sub, now| {
                    Ok(sub.console_continue_wait(wait, now))
                })?;
            }
        }
    }
}
