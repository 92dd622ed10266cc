//! Net log lines through the `log` facade, delivered to a game's callback
//! (`NET_SetLogCallback`) or, without one, to stderr. `PARSEC_NET_LOG` (off, error, warn, info,
//! debug, trace) sets the initial level; the default is warn.

use std::ffi::{c_char, c_void, CString};

use log::{Level, LevelFilter, Log, Metadata, Record};
use parking_lot::RwLock;

use crate::ffi_guard::guard_code;

/// Log levels passed to the callback.
pub const NET_LOG_ERROR: i32 = 1;
pub const NET_LOG_WARN: i32 = 2;
pub const NET_LOG_INFO: i32 = 3;
pub const NET_LOG_DEBUG: i32 = 4;
pub const NET_LOG_TRACE: i32 = 5;

/// A game's log callback: level (NET_LOG_*), one NUL-terminated line, the user pointer.
pub type NET_LogCallback =
    Option<extern "C" fn(level: i32, message: *const c_char, user: *mut c_void)>;

struct Sink {
    callback: NET_LogCallback,
    user: *mut c_void,
}

// SAFETY: the user pointer is only handed back to the game's callback, never dereferenced here.
unsafe impl Send for Sink {}
unsafe impl Sync for Sink {}

static SINK: RwLock<Sink> = RwLock::new(Sink {
    callback: None,
    user: std::ptr::null_mut(),
});

struct CallbackLogger;

static LOGGER: CallbackLogger = CallbackLogger;

fn level_number(level: Level) -> i32 {
    match level {
        Level::Error => NET_LOG_ERROR,
        Level::Warn => NET_LOG_WARN,
        Level::Info => NET_LOG_INFO,
        Level::Debug => NET_LOG_DEBUG,
        Level::Trace => NET_LOG_TRACE,
    }
}

fn filter_from_number(level: i32) -> Option<LevelFilter> {
    Some(match level {
        0 => LevelFilter::Off,
        NET_LOG_ERROR => LevelFilter::Error,
        NET_LOG_WARN => LevelFilter::Warn,
        NET_LOG_INFO => LevelFilter::Info,
        NET_LOG_DEBUG => LevelFilter::Debug,
        NET_LOG_TRACE => LevelFilter::Trace,
        _ => return None,
    })
}

impl Log for CallbackLogger {
    fn enabled(&self, metadata: &Metadata) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let line = format!("{}", record.args()).replace(['\0', '\n'], " ");
        let sink = SINK.read();
        match sink.callback {
            Some(callback) => {
                let text = CString::new(line).unwrap_or_default();
                callback(level_number(record.level()), text.as_ptr(), sink.user);
            }
            None => eprintln!(
                "parsec-net {}: {line}",
                record.level().as_str().to_lowercase()
            ),
        }
    }

    fn flush(&self) {}
}

/// Install the logger (once per process; if the program installed its own `log` logger, that
/// one keeps receiving the lines).
pub fn install() {
    if log::set_logger(&LOGGER).is_ok() {
        let level = std::env::var("PARSEC_NET_LOG")
            .ok()
            .and_then(|v| v.parse::<LevelFilter>().ok())
            .unwrap_or(LevelFilter::Warn);
        log::set_max_level(level);
    }
}

/// Send net log lines to `callback` (NULL: back to stderr) with `user` passed through, for lines
/// at `max_level` (NET_LOG_ERROR .. NET_LOG_TRACE, 0 = off) and more severe. The callback may be
/// called from any thread that calls into the library and must not call NET_ functions.
#[no_mangle]
pub extern "C" fn NET_SetLogCallback(
    callback: NET_LogCallback,
    user: *mut c_void,
    max_level: i32,
) -> i32 {
    guard_code(|| {
        let filter = filter_from_number(max_level).ok_or_else(|| {
            net_core::NetError::invalid(format!("log level {max_level} is not 0-5"))
        })?;
        install();
        *SINK.write() = Sink { callback, user };
        log::set_max_level(filter);
        Ok(0)
    })
}
