//! The trace backend's own options and the option text it passes on to the inner backend.
//!
//! The core hands a backend the console variables `net.<name>.<key>` of the active backend, so a
//! trace socket receives every `net.trace.*` variable. Two keys belong to the trace backend and
//! are removed before the rest is passed to the inner backend's `open` unchanged:
//!
//! - `inner=NAME|PATH` (`net.trace.inner`): the inner backend for sockets opened with it;
//! - `file=PATH` (`net.trace.file`): append one line per datagram to this file.

use parsec_backend_abi::helpers::option_value;

/// Key of the inner-backend option.
pub const INNER_KEY: &str = "inner";
/// Key of the trace-file option.
pub const FILE_KEY: &str = "file";

/// The options of one `open` call, split into the trace backend's and the inner backend's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceOptions<'a> {
    /// `inner=` (None when absent or empty: the default inner backend).
    pub inner: Option<&'a str>,
    /// `file=` (None when absent or empty: counters only).
    pub file: Option<&'a str>,
    /// Every other line, in order, for the inner backend.
    pub passed_on: String,
}

/// Split an options string. Never fails: unknown keys are the inner backend's business.
pub fn split(options: &str) -> TraceOptions<'_> {
    let non_empty = |key: &str| option_value(options, key).filter(|v| !v.is_empty());
    let ours = |line: &str| {
        line.split_once('=')
            .is_some_and(|(key, _)| matches!(key.trim(), INNER_KEY | FILE_KEY))
    };
    let passed_on: Vec<&str> = options.lines().filter(|line| !ours(line)).collect();
    TraceOptions {
        inner: non_empty(INNER_KEY),
        file: non_empty(FILE_KEY),
        passed_on: passed_on.join("\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_keys_are_taken_out_and_the_rest_is_passed_on_in_order() {
        let split = split("bind=127.0.0.1\ninner = udp\nipv6=0\n file=/tmp/t.log\nnot a pair\n");
        assert_eq!(split.inner, Some("udp"));
        assert_eq!(split.file, Some("/tmp/t.log"));
        assert_eq!(split.passed_on, "bind=127.0.0.1\nipv6=0\nnot a pair");
    }

    #[test]
    fn empty_values_mean_absent() {
        let split = split("inner=\nfile=");
        assert_eq!((split.inner, split.file), (None, None));
        assert_eq!(split.passed_on, "");
        let split = super::split("");
        assert_eq!((split.inner, split.file), (None, None));
    }

    #[test]
    fn keys_that_merely_contain_ours_are_passed_on() {
        let split = split("inner_mode=x\nfilex=y\nurl=file=z");
        assert_eq!((split.inner, split.file), (None, None));
        assert_eq!(split.passed_on, "inner_mode=x\nfilex=y\nurl=file=z");
    }
}
