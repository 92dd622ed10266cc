//! A raw TCP client of a server's text protocol that compares every byte it receives: each read
//! takes exactly the bytes expected next, so a missing, extra, reordered or misspelled line (or
//! a CR in a reply) fails the test, and a missing line fails after `IO_TIMEOUT`, never hangs.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Every read gives up after this long.
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);

pub struct Client {
    pub stream: TcpStream,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        Client { stream }
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    pub fn send(&mut self, line: &str) {
        self.send_raw(format!("{line}\n").as_bytes());
    }

    /// Read exactly the bytes of `lines`, each ending in `\n`, and compare them.
    #[track_caller]
    pub fn expect(&mut self, lines: &[&str]) {
        let expected: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let mut got = vec![0u8; expected.len()];
        let mut filled = 0;
        while filled < got.len() {
            match self.stream.read(&mut got[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) => panic!(
                    "expected {expected:?}, got {:?} then {e}",
                    String::from_utf8_lossy(&got[..filled])
                ),
            }
        }
        assert_eq!(
            String::from_utf8_lossy(&got[..filled]),
            expected,
            "bytes received"
        );
    }

    #[track_caller]
    pub fn ask(&mut self, line: &str, reply: &str) {
        self.send(line);
        self.expect(&[reply]);
    }

    /// The connection was closed by the server: end of stream (or a reset) on the next read.
    #[track_caller]
    pub fn expect_closed(&mut self) {
        let mut byte = [0u8; 1];
        match self.stream.read(&mut byte) {
            Ok(0) => {}
            Ok(_) => panic!("more bytes after the last line: {:?}", byte[0] as char),
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
        }
    }
}
