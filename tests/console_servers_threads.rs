//! `NET_ConsoleExec("servers")` typed on a console thread while the game thread runs its frames:
//! the console waits up to 2 s for the masterservers, and the game's `NETs_MaintainNet` must go
//! on meanwhile (it used to wait for the whole 2 s on the library's lock, a frozen game for a
//! player who only asked for the list). Two stand-in masterservers on 127.0.0.1: one that takes
//! the connection and never answers (the reply says it is still fetching), one that answers
//! after 300 ms (the reply holds the list, whichever thread's call finished the fetch).

use std::ffi::CString;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parsec_net::console::NET_ConsoleExec;
use parsec_net::lifecycle::{NET_Init, NET_Shutdown};
use parsec_net::protocol_calls::NETs_MaintainNet;

/// A stand-in masterserver: takes one connection, reads `list servers`, then after `answer`
/// (never, for `None`) sends one listed server and the end of the list. Holds the connection
/// until `stop`.
fn stand_in(answer: Option<Duration>, stop: Arc<AtomicBool>) -> (SocketAddr, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address");
    let thread = std::thread::spawn(move || {
        let (stream, _) = listener.accept().expect("the console connects");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut request = String::new();
        reader.read_line(&mut request).expect("request");
        assert_eq!(request, "list servers\n");
        if let Some(delay) = answer {
            std::thread::sleep(delay);
            let mut stream = &stream;
            stream
                .write_all(
                    b"server: ip: 192.0.2.20 port: 6581 kind: gameserver udp: 6522 players: 2 max: 16 \
                      os: linux url: http://late.example/ name: Late Answer\nend of list\n",
                )
                .expect("answer");
        }
        while !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    (addr, thread)
}

fn exec(line: &str) -> (i32, String) {
    let line = CString::new(line).unwrap();
    let mut out = vec![0u8; 4096];
    let rc = unsafe { NET_ConsoleExec(line.as_ptr(), out.as_mut_ptr().cast(), out.len()) };
    let end = out.iter().position(|&b| b == 0).unwrap_or(out.len());
    (rc, String::from_utf8_lossy(&out[..end]).into_owned())
}

/// `servers` on this thread while another runs frames (1 ms apart): the reply, and how many
/// frames the other thread completed while `servers` ran.
fn servers_beside_frames() -> (i32, String, u64) {
    let frames = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let game = {
        let (frames, done) = (Arc::clone(&frames), Arc::clone(&done));
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                NETs_MaintainNet();
                frames.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    // The game thread is running frames before the console line is typed.
    let deadline = Instant::now() + Duration::from_secs(30);
    while frames.load(Ordering::SeqCst) < 5 {
        assert!(Instant::now() < deadline, "the game thread ran no frames");
        std::thread::sleep(Duration::from_millis(1));
    }
    let before = frames.load(Ordering::SeqCst);
    let (rc, reply) = exec("servers");
    let during = frames.load(Ordering::SeqCst) - before;
    done.store(true, Ordering::SeqCst);
    game.join().unwrap();
    (rc, reply, during)
}

#[test]
fn the_game_thread_runs_frames_while_the_console_waits_for_the_masterservers() {
    assert_eq!(NET_Init(), 0);
    exec("net.port 0");
    exec("net.udp.bind 127.0.0.1");
    let stop = Arc::new(AtomicBool::new(false));

    // A masterserver that never answers: `servers` waits its whole 2 s.
    let (silent, silent_thread) = stand_in(None, Arc::clone(&stop));
    let (rc, reply) = exec(&format!("net.master {silent}"));
    assert_eq!(rc, 0, "{reply}");
    let (rc, reply, during) = servers_beside_frames();
    assert_eq!(rc, 0, "{reply}");
    assert!(
        reply.starts_with(&format!(
            "no answer from {silent} within 2 s; still fetching"
        )),
        "{reply}"
    );
    // Without the lock held through the wait, about 1,000 frames run in the 2 s; with it, none
    // (the frame thread waits at the lock for the whole wait). 20 leaves room for a loaded
    // machine.
    assert!(
        during >= 20,
        "the game thread ran {during} frames while `servers` waited 2 s: {reply}"
    );

    // A masterserver that answers after 300 ms: the reply holds its list, whether the console's
    // own round or the game's frame read the answer.
    let (late, late_thread) = stand_in(Some(Duration::from_millis(300)), Arc::clone(&stop));
    let (rc, reply) = exec(&format!("net.master {late}"));
    assert_eq!(rc, 0, "{reply}");
    let (rc, reply, during) = servers_beside_frames();
    assert_eq!(rc, 0, "{reply}");
    assert!(
        reply.starts_with(&format!("1 server listed by {late}")),
        "{reply}"
    );
    assert!(reply.contains("Late Answer"), "{reply}");
    assert!(
        during >= 3,
        "the game thread ran {during} frames while `servers` waited 300 ms: {reply}"
    );

    stop.store(true, Ordering::SeqCst);
    silent_thread.join().unwrap();
    late_thread.join().unwrap();
    NET_Shutdown();
}
