//! Small safe helpers for backends written in Rust: writing C strings into caller buffers and
//! reading the `key=value` option lines of `NET_BackendOpenParams`. Never used across the ABI.

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
