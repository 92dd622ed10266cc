//! Raising the process's open-file limit (RLIMIT_NOFILE) so a server can hold as many
//! connections as it is configured for (the masterserver: 10,000 and more).
//!
//! It only ever raises the soft limit, never above the hard limit, and does nothing else.

/// Raise the soft limit of open files to at least `wanted` (at most the hard limit). Returns
/// the soft limit in force afterwards.
pub fn raise_open_file_limit(wanted: u64) -> Result<u64, String> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(format!(
            "reading the open-file limit: {}",
            std::io::Error::last_os_error()
        ));
    }
    // rlim_t is u64 on the Linux targets this project builds for.
    let (current, hard): (u64, u64) = (limit.rlim_cur, limit.rlim_max);
    let target = wanted.min(hard);
    if target <= current {
        return Ok(current);
    }
    limit.rlim_cur = target;
    // SAFETY: setrlimit reads one rlimit struct we own.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
        return Err(format!(
            "raising the open-file limit to {target} (hard limit {hard}): {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_lowers_the_limit() {
        let now = raise_open_file_limit(0).unwrap();
        assert!(now > 0);
        assert!(raise_open_file_limit(1).unwrap() >= now);
    }
}
