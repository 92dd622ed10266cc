//! Small safe helpers for backends written in Rust: writing C strings into caller buffers,
//! reading the `key=value` option lines of `NET_BackendOpenParams`, and putting an error on one
//! line for a message. Never used across the ABI.

use std::ffi::{c_char, CStr};

/// Copy `text` into the C buffer `out` of capacity `out_len`, truncating at a UTF-8 boundary and
/// always NUL-terminating when `out_len > 0`. Returns the number of bytes written (without NUL).
///
/// # Safety
/// `out` must be NULL or valid for `out_len` bytes of writes.
pub unsafe fn write_c_string(text: &str, out: *mut c_char, out_len: usize) -> usize {
    if out.is_null() || out_len == 0 {
        return 0;
    }
    let mut n = text.len().min(out_len - 1);
    while !text.is_char_boundary(n) {
        n -= 1;
    }
    std::ptr::copy_nonoverlapping(text.as_ptr(), out.cast::<u8>(), n);
    *out.add(n) = 0;
    n
}

/// Read a NUL-terminated C string as UTF-8; `None` if NULL or not UTF-8.
///
/// # Safety
/// `text` must be NULL or point to a NUL-terminated string.
pub unsafe fn read_c_str<'a>(text: *const c_char) -> Option<&'a str> {
    if text.is_null() {
        return None;
    }
    CStr::from_ptr(text).to_str().ok()
}

/// Iterate the `key=value` lines of an options string; lines without '=' are skipped.
pub fn option_pairs(options: &str) -> impl Iterator<Item = (&str, &str)> {
    options.lines().filter_map(|line| {
        let (key, value) = line.split_once('=')?;
        Some((key.trim(), value.trim()))
    })
}

/// The value of `key` in an options string, if present.
pub fn option_value<'a>(options: &'a str, key: &str) -> Option<&'a str> {
    option_pairs(options)
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_c_string_truncates_on_char_boundary_and_terminates() {
        let mut buf = [0x7f as c_char; 5];
        let n = unsafe { write_c_string("ab\u{e9}cd", buf.as_mut_ptr(), buf.len()) };
        // "ab" + 2-byte 'é' fits in 4 bytes; 'c' would need a 5th byte, which the NUL takes.
        assert_eq!(n, 4);
        assert_eq!(buf[4], 0);
        let n = unsafe { write_c_string("abcdef", buf.as_mut_ptr(), 3) };
        assert_eq!(n, 2);
        assert_eq!(buf[2], 0);
    }

    #[test]
    fn option_lines_are_split_on_first_equals() {
        let opts = "interface=veth0\nnetwork=00000001\nbad line\nurl=a=b";
        assert_eq!(option_value(opts, "interface"), Some("veth0"));
        assert_eq!(option_value(opts, "url"), Some("a=b"));
        assert_eq!(option_value(opts, "missing"), None);
        assert_eq!(option_pairs(opts).count(), 3);
    }
}

/// `text` with every run of white space (newlines included) folded into one space.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// An error and all its sources, on one line (`outer: inner: innermost`). Some errors keep the
/// useful part in a source: libloading's own text is only "dlopen failed", and the system
/// loader's reason ("libdep.so: cannot open shared object file", "invalid ELF header") is its
/// source.
pub fn error_chain_line(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.ends_with(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    one_line(&text)
}

#[cfg(test)]
mod error_line_tests {
    use super::*;

    #[derive(Debug)]
    struct Outer(std::io::Error);

    impl std::fmt::Display for Outer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("dlopen failed")
        }
    }

    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn an_error_and_its_sources_make_one_line() {
        let inner = std::io::Error::other("libdep.so: cannot open\nshared object file");
        assert_eq!(
            error_chain_line(&Outer(inner)),
            "dlopen failed: libdep.so: cannot open shared object file"
        );
        assert_eq!(one_line(" a\n\tb  c "), "a b c");
    }
}
