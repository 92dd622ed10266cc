//! The panic boundary, the per-thread last-error message, and checked reading of C arguments.
//! Every `extern "C"` function of the crate runs its body through [`guard`]; nothing here may
//! unwind into C or trust a pointer or length it was given.

use std::cell::RefCell;
use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};

use net_core::{ErrorCode, NetError, NetResult};

/// Capacity of the last-error buffer (a longer message is cut at a character boundary).
const LAST_ERROR_CAP: usize = 2048;

thread_local! {
    /// One fixed buffer per thread: a failure rewrites the text in place, so a pointer
    /// `NET_GetLastError` returned stays readable for the thread's life (a C caller that reads
    /// it after the next failure, as `printf("%d %s", f(), NET_GetLastError())` may, sees the
    /// newer message, never freed memory).
    static LAST_ERROR: RefCell<Box<[c_char; LAST_ERROR_CAP]>> =
        RefCell::new(Box::new([0; LAST_ERROR_CAP]));
}

/// Remember `err` as this thread's last error (for `NET_GetLastError`) and log it at debug level.
pub fn set_last_error(err: &NetError) {
    log::debug!("C API error {}: {}", err.code.number(), err.message);
    let text = err.message.replace('\0', " ");
    LAST_ERROR.with(|e| {
        let mut buffer = e.borrow_mut();
        // SAFETY: the buffer is writable for LAST_ERROR_CAP bytes.
        unsafe { write_c_text(&text, buffer.as_mut_ptr(), LAST_ERROR_CAP) };
    });
}

/// Pointer to this thread's last error message: valid for the thread's life, its text replaced
/// by the next failing call on this thread.
pub fn last_error_ptr() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// Run `body` inside the panic boundary. Errors are recorded as the last error and turned into
/// their result code by `on_error`; a panic becomes `ErrorCode::Internal`.
pub fn guard<T>(on_error: impl FnOnce(ErrorCode) -> T, body: impl FnOnce() -> NetResult<T>) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(value)) => value,
        Ok(Err(err)) => {
            set_last_error(&err);
            on_error(err.code)
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            let err = NetError::new(
                ErrorCode::Internal,
                format!("internal error (caught panic: {what})"),
            );
            log::error!("{}", err.message);
            set_last_error(&err);
            on_error(ErrorCode::Internal)
        }
    }
}

/// [`guard`] for functions returning an `int32_t` result code (0 or a positive value on success).
pub fn guard_code(body: impl FnOnce() -> NetResult<i32>) -> i32 {
    guard(|code| code.number(), body)
}

/// Fail with `InvalidArgument` if `ptr` is NULL.
pub fn require_non_null<T>(ptr: *const T, what: &str) -> NetResult<()> {
    if ptr.is_null() {
        Err(NetError::invalid(format!("{what} is NULL")))
    } else {
        Ok(())
    }
}

/// Fail if a buffer length cannot describe real memory.
pub fn require_sane_len(len: usize, what: &str) -> NetResult<()> {
    if len > isize::MAX as usize {
        Err(NetError::invalid(format!(
            "{what} of {len} bytes is impossibly large"
        )))
    } else {
        Ok(())
    }
}

/// Read a NUL-terminated UTF-8 string of at most `max` bytes, scanning no further than `max + 1`
/// bytes (so an unterminated or overlong string is refused without reading far past it).
///
/// # Safety
/// `ptr` must be NULL or readable up to its NUL terminator or `max + 1` bytes, whichever is first.
pub unsafe fn read_c_text<'a>(ptr: *const c_char, max: usize, what: &str) -> NetResult<&'a str> {
    require_non_null(ptr, what)?;
    let bytes = ptr.cast::<u8>();
    let mut len = 0;
    while *bytes.add(len) != 0 {
        len += 1;
        if len > max {
            return Err(NetError::new(
                ErrorCode::TooLarge,
                format!("{what} is longer than {max} bytes"),
            ));
        }
    }
    let slice = std::slice::from_raw_parts(bytes, len);
    std::str::from_utf8(slice).map_err(|_| NetError::invalid(format!("{what} is not valid UTF-8")))
}

/// As `read_c_text`, but an empty string is refused too (`INVALID_ARGUMENT`, "WHAT is empty"):
/// names and chat lines are 1-N bytes, and, as the console's lines, without control characters
/// other than tab (a line break or a terminal escape in another player's HUD or server list).
/// Checked before the instance is looked at, as NULL and length are, so the answer does not
/// depend on `NET_Init`.
///
/// # Safety
/// `ptr` must be NULL or a NUL-terminated string.
pub unsafe fn read_c_text_nonempty<'a>(
    ptr: *const c_char,
    max: usize,
    what: &str,
) -> NetResult<&'a str> {
    let text = read_c_text(ptr, max, what)?;
    if text.is_empty() {
        return Err(NetError::invalid(format!("{what} is empty")));
    }
    if let Some(c) = text.chars().find(|c| c.is_control() && *c != '\t') {
        return Err(NetError::invalid(format!(
            "{what} contains the control character {c:?}"
        )));
    }
    Ok(text)
}

/// Copy `text` into a C buffer, truncated at a character boundary, NUL-terminated.
/// Returns the number of bytes written without the NUL.
///
/// # Safety
/// `out` must be NULL or writable for `out_len` bytes.
pub unsafe fn write_c_text(text: &str, out: *mut c_char, out_len: usize) -> usize {
    parsec_backend_abi::helpers::write_c_string(text, out, out_len)
}
