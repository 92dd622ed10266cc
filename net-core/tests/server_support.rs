//! Shared helpers of the real-socket server tests (included with `#[path]`; as a test target of
//! its own it has no tests): a server runtime on a thread bound to 127.0.0.1 port 0, and a raw
//! line client whose every read has a timeout, so no test can hang.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use net_core::server::{
    run, BanList, BoundAddrs, RunSummary, RuntimeConfig, SlotServerConfig, SlotServerCore,
};
use net_core::NetResult;

pub const MESSAGES: [&str; 4] = [
    "Welcome to the test server",
    "No cheating",
    "Be nice",
    "Have fun",
];

/// Every blocking read or wait of a test gives up after this long.
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);

pub fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

pub fn test_config() -> SlotServerConfig {
    SlotServerConfig {
        server_name: "TestServer".into(),
        max_players: 16,
        messages: MESSAGES.map(String::from),
        udp_port: 0,
        idle_timeout: Duration::ZERO,
        handshake_timeout: Duration::from_secs(10),
        max_per_address: 64,
        max_connections: 128,
        server_token: 777,
    }
}

/// A server runtime on a thread; stopped (and its thread joined) when dropped. The slot- and
/// gameserver tests start it with [`TestServer::start`], the masterserver tests with their own
/// cores through [`Running::spawn`].
pub struct Running {
    pub addrs: BoundAddrs,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<NetResult<RunSummary>>>,
}

/// The slotserver of these tests.
pub type TestServer = Running;

impl Running {
    /// Run `body(stop, ready)` on a thread and wait for it to report its addresses.
    pub fn spawn(
        body: impl FnOnce(Arc<AtomicBool>, Box<dyn FnOnce(BoundAddrs) + Send>) -> NetResult<RunSummary>
            + Send
            + 'static,
    ) -> Running {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let thread_stop = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            body(
                thread_stop,
                Box::new(move |addrs| {
                    let _ = tx.send(addrs);
                }),
            )
        });
        let addrs = match rx.recv_timeout(IO_TIMEOUT) {
            Ok(addrs) => addrs,
            Err(_) => {
                let result = thread.join();
                panic!("server did not start: {result:?}");
            }
        };
        Running {
            addrs,
            stop,
            thread: Some(thread),
        }
    }

    /// Start with the slotserver's text protocol only.
    pub fn start(config: SlotServerConfig) -> Running {
        Self::start_with(config, RuntimeConfig::new("slotserver", loopback()))
    }

    pub fn start_with(config: SlotServerConfig, runtime: RuntimeConfig) -> Running {
        let core = SlotServerCore::new(config, BanList::empty());
        Running::spawn(move |stop, ready| run(runtime, core, None, stop, ready))
    }

    /// Stop gracefully and return what the run counted.
    pub fn stop(mut self) -> RunSummary {
        match self.stop_and_join() {
            Some(Ok(summary)) => summary,
            Some(Err(problem)) => panic!("{problem}"),
            None => panic!("server already stopped"),
        }
    }

    /// Set the stop flag and wait (bounded) for the thread; never panics itself, so it is safe
    /// in `drop` while a failed test unwinds.
    fn stop_and_join(&mut self) -> Option<Result<RunSummary, String>> {
        self.stop.store(true, Ordering::SeqCst);
        let thread = self.thread.take()?;
        let deadline = Instant::now() + IO_TIMEOUT;
        while !thread.is_finished() {
            if Instant::now() >= deadline {
                return Some(Err("server thread did not stop in time".into()));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Some(match thread.join() {
            Ok(Ok(summary)) => Ok(summary),
            Ok(Err(e)) => Err(format!("server run failed: {e}")),
            Err(_) => Err("server thread panicked".into()),
        })
    }

    pub fn client(&self) -> LineClient {
        LineClient::connect(self.addrs.tcp)
    }

    /// A client that joined the slotserver as `name` (its accepted line and messages already
    /// read).
    pub fn joined(&self, name: &str, slot: u8) -> LineClient {
        let mut c = self.client();
        c.send(&format!("version: 1.0 join me: {name} os: test-os"));
        c.expect(&format!(
            "join from {name} accepted, slot: {slot}, server name: TestServer"
        ));
        for m in MESSAGES {
            c.expect(m);
        }
        c
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.thread.is_some() {
            let _ = self.stop_and_join();
        }
    }
}

/// A raw TCP line client.
pub struct LineClient {
    pub stream: TcpStream,
    reader: BufReader<TcpStream>,
}

impl LineClient {
    pub fn connect(addr: SocketAddr) -> LineClient {
        Self::from_stream(TcpStream::connect_timeout(&addr, IO_TIMEOUT).expect("connect"))
    }

    /// A line client over an already connected stream.
    pub fn from_stream(stream: TcpStream) -> LineClient {
        stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        stream.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
        let reader = BufReader::new(stream.try_clone().unwrap());
        LineClient { stream, reader }
    }

    pub fn send(&mut self, line: &str) {
        self.send_raw(format!("{line}\n").as_bytes());
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("send");
    }

    /// The next line (without "\n"); panics on timeout or end of stream.
    pub fn line(&mut self) -> String {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) => panic!("connection closed while waiting for a line"),
            Ok(_) => {}
            Err(e) => panic!("no line within {IO_TIMEOUT:?}: {e}"),
        }
        assert!(line.ends_with('\n'), "line without terminator: {line:?}");
        line.pop();
        line
    }

    pub fn expect(&mut self, expected: &str) {
        assert_eq!(self.line(), expected);
    }

    /// Read lines until `expected` arrives (at most 100 others on the way).
    pub fn skip_until(&mut self, expected: &str) {
        for _ in 0..100 {
            if self.line() == expected {
                return;
            }
        }
        panic!("'{expected}' did not arrive");
    }

    /// The server closes the connection (after any lines it still sends) within `within`.
    pub fn expect_closed(&mut self, within: Duration) {
        self.reader
            .get_ref()
            .set_read_timeout(Some(within))
            .unwrap();
        let mut rest = Vec::new();
        match self.reader.read_to_end(&mut rest) {
            Ok(_) => assert!(
                rest.is_empty(),
                "unexpected data before close: {:?}",
                String::from_utf8_lossy(&rest)
            ),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
            Err(e) => panic!("connection not closed within {within:?}: {e}"),
        }
    }

    /// Nothing arrives within `wait`.
    pub fn expect_silence(&mut self, wait: Duration) {
        self.reader.get_ref().set_read_timeout(Some(wait)).unwrap();
        let mut line = String::new();
        let result = self.reader.read_line(&mut line);
        self.reader
            .get_ref()
            .set_read_timeout(Some(IO_TIMEOUT))
            .unwrap();
        match result {
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            other => panic!("expected silence, got {other:?} {line:?}"),
        }
    }
}

/// A fresh directory for one test's files.
pub fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("parsec-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Wait until `check` holds (polling), or fail after [`IO_TIMEOUT`].
pub fn wait_for(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + IO_TIMEOUT;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The file's text, or "" if it does not exist (yet).
pub fn read_text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// One HTTP/1.0 GET; returns the status code and the body.
pub fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect_timeout(&addr, IO_TIMEOUT).expect("connect HTTP");
    stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("HTTP response");
    let (head, body) = response.split_once("\r\n\r\n").expect("HTTP head");
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("status code");
    (code, body.to_string())
}
