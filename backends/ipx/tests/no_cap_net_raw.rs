//! Without CAP_NET_RAW, `open` fails with NET_BACKEND_ERR_PERMISSION and a message that says
//! what is missing.
//!
//! - Not root: the test process itself lacks the capability, so it opens directly.
//! - Root: the test binary re-runs itself (only the `child_open_without_cap_net_raw` test, with
//!   `PARSEC_IPX_TEST_ROLE=open-without-cap-net-raw`) under `setpriv` or `capsh` with
//!   CAP_NET_RAW removed from its bounding set, so the child really has no CAP_NET_RAW; the child
//!   asserts the error and the parent asserts that the child passed.
//! - Root without either tool: SKIPPED (the errno mapping is unit-tested in `src/oserr.rs`).

#![cfg(target_os = "linux")]

mod common;

use std::process::{Command, Stdio};

use common::netns::is_root;
use common::open_raw;
use parsec_backend_abi::NET_BACKEND_ERR_PERMISSION;
use parsec_backend_ipx::NEED_CAP_NET_RAW;

const ROLE_VAR: &str = "PARSEC_IPX_TEST_ROLE";
const ROLE: &str = "open-without-cap-net-raw";
const CHILD_TEST: &str = "child_open_without_cap_net_raw";
const CHILD_SAYS: &str = "child: open refused as expected";

fn assert_refused_for_lack_of_cap_net_raw() {
    let (code, message) = open_raw(0, "").expect_err("open must fail without CAP_NET_RAW");
    assert_eq!(code, NET_BACKEND_ERR_PERMISSION, "{message}");
    assert_eq!(message, NEED_CAP_NET_RAW);
    assert_eq!(
        message,
        "ipx: raw packet sockets need CAP_NET_RAW (run as root or grant the capability)"
    );
}

/// The child's half; an empty pass in an ordinary test run.
#[test]
fn child_open_without_cap_net_raw() {
    if std::env::var(ROLE_VAR).as_deref() != Ok(ROLE) {
        return;
    }
    assert_refused_for_lack_of_cap_net_raw();
    println!("{CHILD_SAYS}");
}

fn tool_exists(name: &str) -> bool {
    Command::new(name)
        .arg("--help")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

#[test]
fn open_without_cap_net_raw_says_so() {
    if cfg!(any(not(target_os = "linux"), parsec_ipx_unsupported)) {
        println!("SKIPPED: no AF_PACKET on this build (open says unsupported instead)");
        return;
    }
    if !is_root() {
        // SAFETY: geteuid has no preconditions.
        println!("not root (uid {}): opening directly", unsafe {
            libc::geteuid()
        });
        match open_raw(0, "") {
            Ok(_) => println!("SKIPPED: this process has CAP_NET_RAW although it is not root"),
            Err(_) => assert_refused_for_lack_of_cap_net_raw(),
        }
        return;
    }
    let exe = std::env::current_exe().expect("test binary path");
    let exe = exe.to_str().expect("UTF-8 path");
    let child_args = [CHILD_TEST, "--exact", "--nocapture", "--test-threads=1"];
    let mut cmd = if tool_exists("setpriv") {
        let mut c = Command::new("setpriv");
        c.args(["--inh-caps=-net_raw", "--bounding-set=-net_raw", "--", exe]);
        c
    } else if tool_exists("capsh") {
        let mut c = Command::new("capsh");
        c.args(["--drop=cap_net_raw", "--", "-c", "exec \"$0\" \"$@\"", exe]);
        c
    } else {
        println!("SKIPPED: neither setpriv nor capsh is installed to drop CAP_NET_RAW");
        return;
    };
    let out = cmd
        .args(child_args)
        .env(ROLE_VAR, ROLE)
        .stdin(Stdio::null())
        .output()
        .expect("run the child test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains(CHILD_SAYS),
        "child failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
}
