//! Field parsers shared by the two text protocols: the slot/gameserver client lines
//! ([`super::text_protocol`]) and the masterserver requests (`crate::master::protocol`). Both
//! join lines carry a `X.Y` version, decimal numbers, and names of printable ASCII; what a bad
//! field is called, and what is answered, stays with each protocol (these return `None`, or
//! [`JoinHeadError`] for the start of a join line).
//!
//! The input is untrusted text; nothing here panics or allocates except for the returned name.

/// The mark that separates a name from the OS in both join lines. A name containing it could not
/// be sent back in a join line, so no name may contain it.
pub const OS_MARK: &str = " os: ";

/// Longest name and OS string, in bytes (the design: "31 character string").
pub const MAX_NAME_LEN: usize = 31;

/// A decimal number of 1..=`max_digits` ASCII digits (no sign, no spaces) that fits `T`.
pub fn parse_digits<T: std::str::FromStr>(text: &str, max_digits: usize) -> Option<T> {
    if text.is_empty() || text.len() > max_digits || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// A protocol version `X.Y`, each part 1-4 digits.
pub fn parse_version(text: &str) -> Option<(u16, u16)> {
    let (major, minor) = text.split_once('.')?;
    Some((parse_digits(major, 4)?, parse_digits(minor, 4)?))
}

/// `text` without surrounding spaces, if that is 1..=`max` bytes of printable ASCII (space to
/// '~').
pub fn printable(text: &str, max: usize) -> Option<String> {
    let text = text.trim_matches(' ');
    let ok =
        !text.is_empty() && text.len() <= max && text.bytes().all(|b| (0x20..=0x7e).contains(&b));
    ok.then(|| text.to_string())
}

/// A player or server name: [`printable`] within [`MAX_NAME_LEN`] and without [`OS_MARK`], not
/// even at its ends: in a join line a name is followed by " os: ", so a name ending in " os:"
/// ("x os:") would be read as "x", and one beginning with "os: " ("os: x") as an empty name.
pub fn name(text: &str) -> Option<String> {
    printable(text, MAX_NAME_LEN).filter(|name| !holds_mark(name, OS_MARK))
}

/// Whether `mark` (a word between spaces, as " os: ") is in `text` once the spaces that surround
/// `text` in a line are counted: inside it, or at its start or end without the outer space.
pub fn holds_mark(text: &str, mark: &str) -> bool {
    let word = mark.trim_matches(' ');
    text.contains(mark)
        || text == word
        || (mark.ends_with(' ') && text.starts_with(mark.trim_start_matches(' ')))
        || (mark.starts_with(' ') && text.ends_with(mark.trim_end_matches(' ')))
}

/// What is wrong with the start of a join line; each protocol names it in its own error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinHeadError {
    /// The version is not `digits.digits`.
    BadVersion,
    /// A well-formed version of another major number (answered as such, whatever follows).
    Incompatible { major: u16, minor: u16 },
    /// No `join me:` after the version.
    MalformedJoin,
}

/// The start of both join lines: given the text after `version:`, read ` X.Y join me:` for a
/// server that speaks major version `speaks`; returns the version and the text after
/// `join me:`.
pub fn join_head(after_version: &str, speaks: u16) -> Result<(u16, u16, &str), JoinHeadError> {
    let rest = after_version.trim_start_matches(' ');
    let version_end = rest.find(' ').unwrap_or(rest.len());
    let (major, minor) = parse_version(&rest[..version_end]).ok_or(JoinHeadError::BadVersion)?;
    if major != speaks {
        return Err(JoinHeadError::Incompatible { major, minor });
    }
    let rest = rest[version_end..].trim_start_matches(' ');
    let rest = rest
        .strip_prefix("join me:")
        .ok_or(JoinHeadError::MalformedJoin)?;
    Ok((major, minor, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_join_head_gives_the_version_and_the_rest() {
        assert_eq!(
            join_head(" 1.3 join me: x os: y", 1),
            Ok((1, 3, " x os: y"))
        );
        assert_eq!(join_head("1.0   join me:", 1), Ok((1, 0, "")));
        assert_eq!(
            join_head(" 1,0 join me: x", 1),
            Err(JoinHeadError::BadVersion)
        );
        assert_eq!(
            join_head(" 2.0 anything at all", 1),
            Err(JoinHeadError::Incompatible { major: 2, minor: 0 })
        );
        assert_eq!(
            join_head(" 1.0 join: x", 1),
            Err(JoinHeadError::MalformedJoin)
        );
        assert_eq!(join_head(" 1.0", 1), Err(JoinHeadError::MalformedJoin));
    }

    #[test]
    fn digits_within_their_count_and_type() {
        assert_eq!(parse_digits::<u16>("6581", 5), Some(6581));
        assert_eq!(parse_digits::<u16>("65536", 5), None, "does not fit u16");
        assert_eq!(parse_digits::<u32>("123456", 5), None, "too many digits");
        for bad in ["", "+1", "-1", " 1", "1 ", "1a", "١"] {
            assert_eq!(parse_digits::<u32>(bad, 10), None, "{bad:?}");
        }
    }

    #[test]
    fn versions_have_two_short_numbers() {
        assert_eq!(parse_version("1.0"), Some((1, 0)));
        assert_eq!(parse_version("0001.9999"), Some((1, 9999)));
        for bad in ["1", "1.", ".1", "1.2.3", "12345.1", "1.x", "a.b", ""] {
            assert_eq!(parse_version(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn names_are_short_printable_and_free_of_the_os_mark() {
        assert_eq!(name("  Alice  ").as_deref(), Some("Alice"));
        assert_eq!(name(&"x".repeat(31)).map(|n| n.len()), Some(31));
        assert_eq!(name(&"x".repeat(32)), None);
        for bad in ["", "   ", "tab\there", "bell\x07", "é", "a os: b"] {
            assert_eq!(name(bad), None, "{bad:?}");
        }
        // Regression (fuzz: server_lines, master_lines): in a join line "x os:" was read as
        // the name "x" and "os: x" as an empty name, so neither may be a name.
        for bad in ["x os:", "os: x", "os:", "  os: x  "] {
            assert_eq!(name(bad), None, "{bad:?}");
        }
        for good in ["os:x", "x os", "xos: y", "chaos: y", "x os:y"] {
            assert_eq!(name(good).as_deref(), Some(good), "{good:?}");
        }
        assert_eq!(printable("a os: b", 31).as_deref(), Some("a os: b"));
    }
}
