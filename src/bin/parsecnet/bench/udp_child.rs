//! `parsecnet bench child udp`: one side of the baseline, raw UDP ping-pong of 64-byte datagrams
//! on loopback with std sockets, polled without sleeping like the whole-stack children. It
//! prints `port P`, then takes commands on stdin:
//!
//! - `peer ADDR` -> `ok`: where datagrams go;
//! - `ping N [DRAIN]` -> `rtt NS...` and `done`: N round trips;
//! - `echo N [DRAIN]` -> `done`: answer N datagrams;
//! - `idle N` -> `idle ns T`: N receive attempts with nothing arriving, T ns each on average;
//! - `quit`.
//!
//! With `DRAIN` 1, every receive that returns a datagram is followed by reads until the socket
//! answers "nothing", as a game frame's receive loop must end (it may not leave an arrived
//! datagram for the next frame): the floor under any stack that keeps that promise.

use std::io::BufRead;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use super::peer_child::EVENT_BYTES;

pub fn run(_args: &[String]) -> Result<(), String> {
    let socket = UdpSocket::bind("127.0.0.1:0").map_err(|e| format!("binding UDP: {e}"))?;
    socket
        .set_nonblocking(true)
        .map_err(|e| format!("non-blocking: {e}"))?;
    let port = socket.local_addr().map_err(|e| e.to_string())?.port();
    say!("port {port}");
    let mut peer: Option<SocketAddr> = None;
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| e.to_string())?;
        let words: Vec<&str> = line.split_whitespace().collect();
        let count = || words.get(1).and_then(|n| n.parse::<u64>().ok());
        let drain = words.get(2) == Some(&"1");
        let reply = match (words.first().copied(), peer) {
            (Some("quit"), _) => break,
            (Some("peer"), _) => match words.get(1).and_then(|a| a.parse().ok()) {
                Some(addr) => {
                    peer = Some(addr);
                    Ok("ok".to_string())
                }
                None => Err("peer needs HOST:PORT".to_string()),
            },
            (Some("ping"), Some(to)) => count()
                .ok_or_else(|| "ping needs a count".to_string())
                .and_then(|n| ping(&socket, to, n, drain)),
            (Some("echo"), Some(to)) => count()
                .ok_or_else(|| "echo needs a count".to_string())
                .and_then(|n| echo(&socket, to, n, drain)),
            (Some("idle"), _) => count()
                .ok_or_else(|| "idle needs a count".to_string())
                .map(|n| idle(&socket, n)),
            _ => Err(format!("cannot do '{line}' (peer set: {})", peer.is_some())),
        };
        match reply {
            Ok(text) => say!("{text}"),
            Err(e) => say!("error {e}"),
        }
    }
    Ok(())
}

/// Receive one datagram, spinning on the non-blocking socket; give up after 10 s. With `drain`,
/// then read until the socket is empty (anything more that had arrived is discarded: in a
/// ping-pong nothing does).
fn receive(socket: &UdpSocket, buf: &mut [u8], drain: bool) -> Result<usize, String> {
    let start = Instant::now();
    loop {
        match socket.recv_from(buf) {
            Ok((n, _)) => {
                if drain {
                    // Into the unused tail of `buf`: no buffer to clear on this path.
                    while socket.recv_from(&mut buf[n..]).is_ok() {}
                }
                return Ok(n);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if start.elapsed() > Duration::from_secs(10) {
                    return Err("nothing received for 10 s".into());
                }
            }
            Err(e) => return Err(format!("receive: {e}")),
        }
    }
}

/// `n` turns of the receive loop with nothing arriving (what a poll costs before a datagram is
/// noticed); returns `idle ns T`.
fn idle(socket: &UdpSocket, n: u64) -> String {
    let mut buf = [0u8; 2048];
    let start = Instant::now();
    for _ in 0..n {
        let _ = std::hint::black_box(socket.recv_from(&mut buf));
    }
    let per_turn = start.elapsed().as_nanos() as f64 / n.max(1) as f64;
    format!("idle ns {per_turn:.1}")
}

fn ping(socket: &UdpSocket, to: SocketAddr, n: u64, drain: bool) -> Result<String, String> {
    let mut rtts = Vec::with_capacity(n as usize);
    let mut data = [0x5Au8; EVENT_BYTES];
    let mut buf = [0u8; 2048];
    for seq in 0..n {
        data[..8].copy_from_slice(&seq.to_le_bytes());
        let start = Instant::now();
        socket
            .send_to(&data, to)
            .map_err(|e| format!("send: {e}"))?;
        loop {
            let len = receive(socket, &mut buf, drain)?;
            if len >= 8 && buf[..8] == data[..8] {
                break;
            }
        }
        rtts.push(start.elapsed().as_nanos() as u64);
    }
    let text: Vec<String> = rtts.iter().map(u64::to_string).collect();
    say!("rtt {}", text.join(" "));
    Ok("done".into())
}

fn echo(socket: &UdpSocket, to: SocketAddr, n: u64, drain: bool) -> Result<String, String> {
    let mut buf = [0u8; 2048];
    for _ in 0..n {
        let len = receive(socket, &mut buf, drain)?;
        socket
            .send_to(&buf[..len], to)
            .map_err(|e| format!("send: {e}"))?;
    }
    Ok("done".into())
}
