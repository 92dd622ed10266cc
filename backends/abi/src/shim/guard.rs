//! The panic boundary every `extern "C"` backend function runs its body in: a panic becomes a
//! result code, and never unwinds into C.

use std::panic::{catch_unwind, AssertUnwindSafe};

/// Run a shim body, turning a panic into `on_panic` instead of unwinding into C.
///
/// The body may leave the socket it was working on half-updated; the socket stays usable as far
/// as memory safety goes (a backend's Rust code holds no invariant that a panic can break
/// unsoundly), and its next call reports whatever it finds.
#[inline(always)]
pub fn guard<T>(on_panic: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(on_panic)
}
