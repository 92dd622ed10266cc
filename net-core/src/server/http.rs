//! The servers' tiny HTTP endpoint: one GET (or HEAD) per connection for the published list as
//! HTML (`/STEM.html`) or JSON (`/STEM.json`, `/json`), where STEM is `players` for the
//! slot/gameserver and `servers` for the masterserver. `/`, `/index.html` and `/STEM` serve
//! HTML to a browser and JSON to a client that asks for it (`?format=json`, or an `Accept`
//! header naming `application/json` and not `text/html`); anything else is 404.
//!
//! Bounded: the request head is at most [`MAX_REQUEST_HEAD`] bytes and must arrive within
//! [`REQUEST_TIMEOUT`]; the body of a request is never read; the connection is closed after the
//! response. It serves pages the runtime rendered and never touches the server's state.

use std::borrow::Cow;
use std::io::{self, Read};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use mio::net::TcpStream;

use super::outbuf::OutBuffer;

/// Largest request head (request line and headers) accepted.
pub const MAX_REQUEST_HEAD: usize = 8 * 1024;

/// Time a client has to send its request and read the response.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// The rendered documents served.
#[derive(Clone, Debug)]
pub struct Pages {
    pub html: String,
    pub json: String,
    /// The file name stem of the documents' paths (`players` -> `/players.html`).
    pub stem: &'static str,
}

impl Default for Pages {
    fn default() -> Self {
        Pages {
            html: String::new(),
            json: String::new(),
            stem: "players",
        }
    }
}

/// The status code and the complete response for a request head (the bytes up to and
/// including the blank line).
pub fn respond(head: &[u8], pages: &Pages) -> (u16, Vec<u8>) {
    let text = String::from_utf8_lossy(head);
    let request_line = text.lines().next().unwrap_or("");
    let mut parts = request_line.split(' ');
    let (method, target, version) = (parts.next(), parts.next(), parts.next());
    let (Some(method), Some(target), Some(version), None) = (method, target, version, parts.next())
    else {
        return error_response(400, "Bad Request");
    };
    let Some(target) = origin_form(target) else {
        return error_response(400, "Bad Request");
    };
    if !version.starts_with("HTTP/1.") {
        return error_response(400, "Bad Request");
    }
    let head_only = match method {
        "GET" => false,
        "HEAD" => true,
        _ => return error_response(405, "Method Not Allowed"),
    };
    let path = target.split(['?', '#']).next().unwrap_or("/");
    let document = path
        .strip_prefix('/')
        .and_then(|p| p.strip_prefix(pages.stem));
    const HTML: &str = "text/html; charset=utf-8";
    const JSON: &str = "application/json";
    let (content_type, body) = match (path, document) {
        (_, Some(".html")) => (HTML, &pages.html),
        ("/json", _) | (_, Some(".json")) => (JSON, &pages.json),
        ("/" | "/index.html", _) | (_, Some("")) if asks_for_json(&target, &text) => {
            (JSON, &pages.json)
        }
        ("/" | "/index.html", _) | (_, Some("")) => (HTML, &pages.html),
        _ => return plain_response(404, "Not Found", head_only),
    };
    (
        200,
        response(200, "OK", content_type, body.as_bytes(), head_only),
    )
}

/// The path and query of a request target: the target itself (`/servers.json?x=1`), or the part
/// after the host of an absolute URL (`http://host:8502/servers.json`), which RFC 9112 says a
/// server must accept too; `None` for anything else.
fn origin_form(target: &str) -> Option<Cow<'_, str>> {
    if target.starts_with('/') {
        return Some(Cow::Borrowed(target));
    }
    let (scheme, rest) = target.split_once("://")?;
    if !(scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")) {
        return None;
    }
    let after_host = rest.find(['/', '?', '#']).map_or("", |i| &rest[i..]);
    Some(if after_host.starts_with('/') {
        Cow::Borrowed(after_host)
    } else {
        Cow::Owned(format!("/{after_host}"))
    })
}

/// Whether a request for the list's own address wants JSON: `format=json` in the query, or an
/// `Accept` header that names `application/json` and not `text/html` (a browser names both
/// kinds of HTML; `curl` and scripts send `*/*` or nothing and get the page).
fn asks_for_json(target: &str, head: &str) -> bool {
    let query = target
        .split('#')
        .next()
        .and_then(|t| t.split_once('?'))
        .map_or("", |(_, q)| q);
    if query.split('&').any(|pair| pair == "format=json") {
        return true;
    }
    head.lines().skip(1).any(|line| {
        let Some((name, value)) = line.split_once(':') else {
            return false;
        };
        let value = value.to_ascii_lowercase();
        name.trim().eq_ignore_ascii_case("accept")
            && value.contains("application/json")
            && !value.contains("text/html")
    })
}

/// The response to a connection over the limit of HTTP connections at once.
pub fn busy_response() -> Vec<u8> {
    error_response(503, "Service Unavailable").1
}

/// A plain-text error response.
pub fn error_response(code: u16, reason: &str) -> (u16, Vec<u8>) {
    plain_response(code, reason, false)
}

/// A plain-text error response, its text left out for a HEAD request.
fn plain_response(code: u16, reason: &str, head_only: bool) -> (u16, Vec<u8>) {
    let body = format!("{code} {reason}\n");
    (
        code,
        response(
            code,
            reason,
            "text/plain; charset=utf-8",
            body.as_bytes(),
            head_only,
        ),
    )
}

fn response(code: u16, reason: &str, content_type: &str, body: &[u8], head_only: bool) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Cache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n",
        body.len()
    );
    match code {
        405 => out.push_str("Allow: GET, HEAD\r\n"),
        503 => out.push_str("Retry-After: 5\r\n"),
        _ => {}
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    if !head_only {
        bytes.extend_from_slice(body);
    }
    bytes
}

/// Where the end of the request head is (index just past the blank line), if it has arrived.
pub fn head_end(buf: &[u8]) -> Option<usize> {
    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
        return Some(i + 4);
    }
    buf.windows(2).position(|w| w == b"\n\n").map(|i| i + 2)
}

/// Phases of one HTTP connection.
#[derive(Debug, PartialEq, Eq)]
enum Phase {
    Reading,
    Writing,
    /// Response sent and our side shut down: reading until the client closes.
    Draining,
    Done,
}

/// One HTTP connection (the I/O part; the runtime registers it with the poll).
#[derive(Debug)]
pub struct HttpConnection {
    pub stream: TcpStream,
    pub peer: SocketAddr,
    head: Vec<u8>,
    out: OutBuffer,
    deadline: Instant,
    phase: Phase,
    /// The status code sent, once a response is queued.
    pub status: Option<u16>,
}

impl HttpConnection {
    pub fn new(stream: TcpStream, peer: SocketAddr, now: Instant) -> Self {
        HttpConnection {
            stream,
            peer,
            head: Vec::new(),
            out: OutBuffer::new(usize::MAX),
            deadline: now + REQUEST_TIMEOUT,
            phase: Phase::Reading,
            status: None,
        }
    }

    /// When this connection is given up.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether the connection is finished (the runtime drops it).
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// Make progress after a poll event or timer; never blocks.
    pub fn drive(&mut self, now: Instant, pages: &Pages) {
        if now >= self.deadline {
            if self.phase == Phase::Reading && !self.head.is_empty() {
                self.queue(error_response(408, "Request Timeout"));
                let _ = self.out.write_to(&mut self.stream);
            }
            self.phase = Phase::Done;
            return;
        }
        if self.phase == Phase::Reading {
            self.read_head(pages);
        }
        if self.phase == Phase::Writing {
            match self.out.write_to(&mut self.stream) {
                Err(_) => self.phase = Phase::Done,
                Ok(()) if self.out.is_empty() => {
                    let _ = self.stream.shutdown(std::net::Shutdown::Write);
                    self.phase = Phase::Draining;
                }
                Ok(()) => {}
            }
        }
        if self.phase == Phase::Draining && self.drain_reads() {
            self.phase = Phase::Done;
        }
    }

    fn queue(&mut self, (code, bytes): (u16, Vec<u8>)) {
        self.status = Some(code);
        self.out.push(&bytes);
        self.phase = Phase::Writing;
    }

    fn read_head(&mut self, pages: &Pages) {
        let mut buf = [0u8; 2048];
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => {
                    self.phase = Phase::Done;
                    return;
                }
                Ok(n) => {
                    self.head.extend_from_slice(&buf[..n]);
                    let end = head_end(&self.head);
                    // Over the limit whether or not its end came in the same read.
                    if end.unwrap_or(self.head.len()) > MAX_REQUEST_HEAD {
                        self.queue(error_response(431, "Request Header Fields Too Large"));
                        return;
                    }
                    if let Some(end) = end {
                        let response = respond(&self.head[..end], pages);
                        self.queue(response);
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.phase = Phase::Done;
                    return;
                }
            }
        }
    }

    /// Read and discard until the client closes; `true` when it has (or the read failed).
    fn drain_reads(&mut self) -> bool {
        let mut buf = [0u8; 2048];
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return true,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pages() -> Pages {
        Pages {
            html: "<html>list</html>".into(),
            json: "{}".into(),
            stem: "players",
        }
    }

    fn status(head: &str) -> (u16, String) {
        let (code, bytes) = respond(head.as_bytes(), &pages());
        (code, String::from_utf8(bytes).unwrap())
    }

    #[test]
    fn serves_the_lists_and_404_otherwise() {
        let (code, text) = status("GET /players.html HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(code, 200);
        assert!(text.ends_with("<html>list</html>"));
        assert!(text.contains("Content-Length: 17\r\n"));
        assert_eq!(status("GET / HTTP/1.0\r\n\r\n").0, 200);
        let (code, text) = status("GET /players.json?x=1 HTTP/1.1\r\n\r\n");
        assert_eq!(code, 200);
        assert!(text.contains("application/json"));
        assert_eq!(status("GET /etc/passwd HTTP/1.1\r\n\r\n").0, 404);
        assert_eq!(status("GET /../players.html HTTP/1.1\r\n\r\n").0, 404);
        assert_eq!(status("GET /servers.html HTTP/1.1\r\n\r\n").0, 404);
        let servers = Pages {
            stem: "servers",
            ..pages()
        };
        let get =
            |path: &str| respond(format!("GET {path} HTTP/1.1\r\n\r\n").as_bytes(), &servers).0;
        assert_eq!(
            (get("/servers.html"), get("/servers.json"), get("/")),
            (200, 200, 200)
        );
        assert_eq!(get("/players.html"), 404);
    }

    #[test]
    fn the_lists_own_address_serves_json_to_whoever_asks_for_it() {
        let kind = |head: &str| {
            let (code, text) = status(head);
            let kind = if text.ends_with("<html>list</html>") {
                "html"
            } else if text.ends_with("{}") && text.contains("Content-Type: application/json") {
                "json"
            } else {
                "other"
            };
            (code, kind)
        };
        assert_eq!(kind("GET /json HTTP/1.1\r\n\r\n"), (200, "json"));
        assert_eq!(kind("GET /?format=json HTTP/1.1\r\n\r\n"), (200, "json"));
        assert_eq!(
            kind("GET /players?a=1&format=json HTTP/1.1\r\n\r\n"),
            (200, "json")
        );
        assert_eq!(kind("GET /players HTTP/1.1\r\n\r\n"), (200, "html"));
        assert_eq!(
            kind("GET / HTTP/1.1\r\naccept: application/json\r\n\r\n"),
            (200, "json")
        );
        assert_eq!(
            kind("GET /index.html HTTP/1.1\r\nAccept: Application/JSON; q=1\r\n\r\n"),
            (200, "json")
        );
        // A browser's Accept names HTML first; curl's and scripts' name everything.
        let browser = "text/html,application/xhtml+xml,application/json;q=0.9,*/*;q=0.8";
        assert_eq!(
            kind(&format!("GET / HTTP/1.1\r\nAccept: {browser}\r\n\r\n")),
            (200, "html")
        );
        assert_eq!(kind("GET / HTTP/1.1\r\nAccept: */*\r\n\r\n"), (200, "html"));
        // An explicit document is what it says, whatever is asked.
        assert_eq!(
            kind("GET /players.html?format=json HTTP/1.1\r\nAccept: application/json\r\n\r\n"),
            (200, "html")
        );
        assert_eq!(
            kind("GET /players.json HTTP/1.1\r\nAccept: text/html\r\n\r\n"),
            (200, "json")
        );
        assert_eq!(kind("GET /playersx HTTP/1.1\r\n\r\n").0, 404);
        assert_eq!(kind("GET /jsonx HTTP/1.1\r\n\r\n").0, 404);
    }

    #[test]
    fn head_has_no_body_and_other_methods_are_refused() {
        let (code, text) = status("HEAD / HTTP/1.1\r\n\r\n");
        assert_eq!(code, 200);
        assert!(text.ends_with("\r\n\r\n"));
        // Regression: a HEAD of an unknown path got the 404 page's text.
        let (code, text) = status("HEAD /secret HTTP/1.1\r\n\r\n");
        assert_eq!(code, 404);
        assert!(text.ends_with("\r\n\r\n"), "{text}");
        assert!(text.contains("Content-Length: 14\r\n"), "{text}");
        assert_eq!(status("POST / HTTP/1.1\r\n\r\n").0, 405);
        assert_eq!(status("garbage\r\n\r\n").0, 400);
        assert_eq!(status("GET / FTP/1.0\r\n\r\n").0, 400);
        assert_eq!(status("GET players.html HTTP/1.1\r\n\r\n").0, 400);
        assert_eq!(status("GET ftp://x/players.html HTTP/1.1\r\n\r\n").0, 400);
    }

    #[test]
    fn an_absolute_url_as_the_target_is_served_as_its_path() {
        let (code, text) = status("GET http://example.org:8582/players.json HTTP/1.1\r\n\r\n");
        assert_eq!(code, 200);
        assert!(text.ends_with("{}"));
        let (code, text) = status("GET HTTP://example.org HTTP/1.1\r\n\r\n");
        assert_eq!(code, 200);
        assert!(text.ends_with("<html>list</html>"));
        let (_, text) = status("GET https://example.org?format=json HTTP/1.1\r\n\r\n");
        assert!(text.ends_with("{}"));
        assert_eq!(
            status("GET http://example.org/secret HTTP/1.1\r\n\r\n").0,
            404
        );
    }

    #[test]
    fn finds_the_end_of_the_head() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nA: b\r\n\r\nbody"), Some(24));
        assert_eq!(head_end(b"GET / HTTP/1.1\n\n"), Some(16));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n"), None);
    }
}
