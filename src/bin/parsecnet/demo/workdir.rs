//! The demo's temporary directory (`parsecnet-demo-PID` in the system's temporary directory):
//! made at the start, removed at the end, and the ones a killed run left behind (a second
//! Ctrl-C exits at once, SIGKILL gives no chance at all) removed by the next run.

use std::path::{Path, PathBuf};

const PREFIX: &str = "parsecnet-demo-";

/// Removes what earlier runs left, then makes this run's directory.
pub fn make() -> Result<PathBuf, String> {
    let tmp = std::env::temp_dir();
    remove_leftovers(&tmp);
    let dir = tmp.join(format!("{PREFIX}{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

/// Removes every `parsecnet-demo-PID` directory whose process no longer runs. A directory of
/// a running demo (or of any live process with that number) is left alone.
fn remove_leftovers(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if pid > 0 && !process_runs(pid) && entry.file_type().is_ok_and(|t| t.is_dir()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn process_runs(pid: i32) -> bool {
    // SAFETY: signal 0 only asks whether the process exists; no memory is touched.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}
