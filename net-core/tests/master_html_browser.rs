//! The masterserver's HTML list opened in a real browser: headless Chromium loads
//! `http://127.0.0.1:PORT/` from the masterserver's own HTTP endpoint, its rendered DOM must show
//! every server's name (as text, never as markup), `P/M`, address and kind, with each name a
//! link to the server's URL; a screenshot is kept under `<target>/test-artifacts/`.
//!
//! Needs Debian's `chromium`: when it is missing and the test runs as root it is installed with
//! apt-get (a generous timeout); otherwise the test prints SKIPPED and why.

#[path = "master_support.rs"]
mod master_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use master_support::support::*;
use master_support::*;

const BROWSERS: &[&str] = &["chromium", "chromium-browser", "google-chrome"];
const INSTALL_TIMEOUT: Duration = Duration::from_secs(900);
const BROWSER_TIMEOUT: Duration = Duration::from_secs(90);

fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// Run `command` to completion within `timeout` (killed after it); `None` if it could not run
/// or took too long.
fn run_with_timeout(mut command: Command, timeout: Duration) -> Option<Output> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + timeout;
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let out = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut s) = stdout {
            let _ = std::io::Read::read_to_end(&mut s, &mut buf);
        }
        buf
    });
    let err = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut s) = stderr {
            let _ = std::io::Read::read_to_end(&mut s, &mut buf);
        }
        buf
    });
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    Some(Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

/// The browser to use, installing Debian's chromium when missing and root; `Err`: why not.
fn find_or_install_chromium() -> Result<PathBuf, String> {
    if let Some(p) = BROWSERS.iter().find_map(|b| on_path(b)) {
        return Ok(p);
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("chromium is not installed and the test is not root".into());
    }
    if on_path("apt-get").is_none() {
        return Err("chromium is not installed and there is no apt-get".into());
    }
    println!("installing chromium with apt-get (this may take minutes)");
    let mut update = Command::new("apt-get");
    update
        .args(["update", "-qq"])
        .env("DEBIAN_FRONTEND", "noninteractive");
    let _ = run_with_timeout(update, INSTALL_TIMEOUT);
    let mut install = Command::new("apt-get");
    install
        .args(["install", "-y", "-q", "chromium"])
        .env("DEBIAN_FRONTEND", "noninteractive");
    match run_with_timeout(install, INSTALL_TIMEOUT) {
        Some(out) if out.status.success() => {}
        Some(out) => {
            return Err(format!(
                "apt-get install chromium failed: {}",
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            ))
        }
        None => return Err("apt-get install chromium did not finish in time".into()),
    }
    BROWSERS
        .iter()
        .find_map(|b| on_path(b))
        .ok_or_else(|| "chromium was installed but is not on PATH".into())
}

/// `<target>/test-artifacts/`, from this test binary's path (`<target>/<profile>/deps/...`).
fn artifact_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let target = exe
        .ancestors()
        .nth(3)
        .map(Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir);
    let dir = target.join("test-artifacts");
    std::fs::create_dir_all(&dir).expect("artifact directory");
    dir
}

fn chromium(browser: &Path, profile: &Path, extra: &[&str], url: &str) -> Output {
    let mut command = Command::new(browser);
    command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url);
    run_with_timeout(command, BROWSER_TIMEOUT).expect("chromium finished in time")
}

#[test]
fn chromium_renders_the_server_list() {
    let browser = match find_or_install_chromium() {
        Ok(b) => b,
        Err(why) => {
            println!("SKIPPED: {why}");
            return;
        }
    };
    let master = start_master(master_config());
    let mut gamma = master.client();
    gamma.send("version: 1.0 join me: Gamma Quadrant os: i586-pc-linux-gnu maxplayers: 16 url: http://gammaquadrant.parsec.org/ kind: gameserver port: 6581 udp: 6522");
    gamma.expect("join accepted");
    gamma.send("players: 3 max: 16");
    gamma.expect("players acknowledged.");
    let mut script = master.client();
    script.send("version: 1.0 join me: <script>alert(1)</script> os: evil maxplayers: 8 url: javascript:alert(2)");
    script.expect("join accepted");
    let mut delta = master.client();
    delta.send("version: 1.0 join me: Delta & Co os: macos maxplayers: 4 url: https://delta.example/?a=1&b=2 kind: slotserver port: 6582");
    delta.expect("join accepted");
    delta.send("players: 4 max: 4");
    delta.expect("players acknowledged.");

    let url = format!("http://{}/", master.addrs.http.expect("HTTP bound"));
    let profile = temp_dir("chromium-profile");
    let dom = chromium(&browser, &profile, &["--dump-dom"], &url);
    let text = String::from_utf8_lossy(&dom.stdout).into_owned();
    assert!(
        text.contains("<table id=\"servers\">"),
        "the rendered page has the table:\n{text}\n{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    for needle in [
        "<a href=\"http://gammaquadrant.parsec.org/\" rel=\"nofollow noopener\">Gamma Quadrant</a>",
        "<td>3/16</td>",
        "127.0.0.1:6581",
        "gameserver (UDP 6522)",
        "<a href=\"https://delta.example/?a=1&amp;b=2\" rel=\"nofollow noopener\">Delta &amp; Co</a>",
        "<td>4/4</td>",
        "slotserver",
        "&lt;script&gt;alert(1)&lt;/script&gt;",
        "<td>0/8</td>",
        "3 of at most 256 servers listed",
        // An empty icon of its own: a browser does not ask for /favicon.ico, which would count
        // as an HTTP error in the server's summary at every visit.
        "<link rel=\"icon\" href=\"data:,\">",
    ] {
        assert!(text.contains(needle), "'{needle}' not in the rendered DOM:\n{text}");
    }
    assert!(!text.contains("<script>"), "a name became markup:\n{text}");
    assert!(
        !text.contains("href=\"javascript:"),
        "a javascript: URL became a link"
    );
    assert!(
        text.contains("<small>(javascript:alert(2))</small>"),
        "a URL that is not a web address is shown as text:\n{text}"
    );

    let png = artifact_dir().join("masterserver-list.png");
    let _ = std::fs::remove_file(&png);
    let shot_profile = temp_dir("chromium-profile-shot");
    let shot = chromium(
        &browser,
        &shot_profile,
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1024,768",
        ],
        &url,
    );
    let bytes = std::fs::read(&png).unwrap_or_else(|e| {
        panic!(
            "no screenshot at {}: {e}\n{}",
            png.display(),
            String::from_utf8_lossy(&shot.stderr)
        )
    });
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG file");
    assert!(bytes.len() > 2000, "a real picture ({} bytes)", bytes.len());
    println!("screenshot of the masterserver list: {}", png.display());
    let _ = std::fs::remove_dir_all(profile);
    let _ = std::fs::remove_dir_all(shot_profile);
}
