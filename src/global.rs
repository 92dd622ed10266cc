//! The one global `Subsystem` the C API drives, as Parsec had one. All `NET_`/`NETs_` calls are
//! serialized through this lock, so they are safe from any thread. A call made from inside a
//! callback the library is running (log, object position) is refused instead of deadlocking.

use std::cell::RefCell;
use std::time::Instant;

use net_core::{ErrorCode, NetError, NetResult, Subsystem};
use parking_lot::ReentrantMutex;

static GLOBAL: ReentrantMutex<RefCell<Option<Subsystem>>> = ReentrantMutex::new(RefCell::new(None));

/// Run `f` with the global instance; `NotInitialized` before `NET_Init`.
pub fn with_subsystem<T>(f: impl FnOnce(&mut Subsystem) -> NetResult<T>) -> NetResult<T> {
    let guard = GLOBAL.lock();
    let mut slot = guard.try_borrow_mut().map_err(|_| {
        NetError::new(
            ErrorCode::State,
            "parsec-net was called from inside one of its own callbacks",
        )
    })?;
    let sub = slot.as_mut().ok_or_else(|| {
        NetError::new(
            ErrorCode::NotInitialized,
            "parsec-net is not initialized (call NET_Init first)",
        )
    })?;
    f(sub)
}

/// [`with_subsystem`] for calls that run timers: `f` also gets the time of the call, read once
/// the lock is held. Calls that do not need the time skip the clock read.
pub fn with_subsystem_timed<T>(
    f: impl FnOnce(&mut Subsystem, Instant) -> NetResult<T>,
) -> NetResult<T> {
    with_subsystem(|sub| f(sub, Instant::now()))
}

/// Create the instance if there is none. Returns true if it was created now.
pub fn init() -> NetResult<bool> {
    let guard = GLOBAL.lock();
    let mut slot = guard.try_borrow_mut().map_err(|_| {
        NetError::new(
            ErrorCode::State,
            "NET_Init was called from inside a parsec-net callback",
        )
    })?;
    if slot.is_some() {
        return Ok(false);
    }
    *slot = Some(Subsystem::new());
    Ok(true)
}

/// Drop the instance (closing its sockets). Safe to call when there is none.
pub fn shutdown() -> NetResult<()> {
    let guard = GLOBAL.lock();
    let taken = guard
        .try_borrow_mut()
        .map_err(|_| {
            NetError::new(
                ErrorCode::State,
                "NET_Shutdown was called from inside a parsec-net callback",
            )
        })?
        .take();
    // Dropped while holding the lock, so no call can see a half-closed instance.
    drop(taken);
    Ok(())
}

/// Run `f` while holding the global lock (used to rewrite the jump table at a safe point).
pub fn while_locked<T>(f: impl FnOnce() -> T) -> T {
    let _guard = GLOBAL.lock();
    f()
}
