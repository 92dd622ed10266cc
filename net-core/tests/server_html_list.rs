//! The published player list: the HTML file (escaped, replaced atomically, no temporary files
//! left), the JSON file, and the same lists over the server's HTTP endpoint.

#[path = "server_support.rs"]
mod support;

use net_core::server::RuntimeConfig;
use support::*;

#[test]
fn html_and_json_lists_follow_joins_and_are_served_over_http() {
    let dir = temp_dir("html-list");
    let html = dir.join("players.html");
    let json = dir.join("players.json");
    let runtime = RuntimeConfig {
        http: Some(loopback()),
        html_file: Some(html.clone()),
        json_file: Some(json.clone()),
        ..RuntimeConfig::new("slotserver", loopback())
    };
    let server = TestServer::start_with(test_config(), runtime);
    wait_for("the empty list", || read_text(&html).contains("No players"));

    let mut bold = server.joined("<b>bold</b>", 0);
    let _plain = server.joined("plain & simple", 1);
    bold.expect("add ip: 127.0.0.1 name: plain & simple in 1");
    wait_for("both players in the HTML file", || {
        let page = read_text(&html);
        page.contains("&lt;b&gt;bold&lt;/b&gt;")
            && page.contains("plain &amp; simple")
            && read_text(&json).contains("simple")
    });
    let page = read_text(&html);
    assert!(!page.contains("<b>bold"), "a name must never become markup");
    assert!(page.contains("<td>0</td>") && page.contains("<td>1</td>"));
    assert!(page.contains("127.0.0.1"));
    assert!(page.contains("TestServer"));
    let http = server.addrs.http.expect("HTTP bound");
    let (code, body) = http_get(http, "/players.html");
    assert_eq!(code, 200);
    assert!(body.contains("&lt;b&gt;bold&lt;/b&gt;"));
    assert_eq!(http_get(http, "/").0, 200);
    assert_eq!(http_get(http, "/secret").0, 404);

    let (code, body) = http_get(http, "/players.json");
    assert_eq!(code, 200);
    for doc in [body, read_text(&json)] {
        let value: serde_json::Value = serde_json::from_str(&doc).expect("valid JSON");
        assert_eq!(value["server"]["name"], "TestServer");
        assert_eq!(value["server"]["max_players"], 16);
        let players = value["players"].as_array().expect("players array");
        assert_eq!(players.len(), 2);
        assert_eq!(players[0]["name"], "<b>bold</b>");
        assert_eq!(players[0]["slot"], 0);
        assert_eq!(players[1]["name"], "plain & simple");
        assert_eq!(players[1]["address"], "127.0.0.1");
        assert!(players[1]["connected_since"]
            .as_str()
            .unwrap()
            .ends_with('Z'));
    }

    // After a player leaves the file follows; after the server stops the list is empty.
    bold.send("remove me");
    bold.expect("removing you");
    wait_for("the removal in the HTML file", || {
        !read_text(&html).contains("bold")
    });
    let summary = server.stop();
    assert!(read_text(&html).contains("No players"));
    assert!(summary.counter("http_requests") >= 3);
    assert_eq!(summary.counter("file_write_errors"), 0);
    // Every write was renamed into place (checked once no write can be in progress).
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "players.html" && n != "players.json")
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");

    std::fs::remove_dir_all(&dir).unwrap();
}

/// Regression: the files written when a server stopped showed "0/16 players, No players are
/// connected", exactly what a running server nobody plays on shows, so an admin (or a visitor
/// of the published page) could not tell the server was down. The page and the JSON now say
/// so, and a running server's page says how fresh it is and that it reloads itself.
#[test]
fn the_list_written_at_stop_says_the_server_is_not_running() {
    let dir = temp_dir("html-stopped");
    let html = dir.join("players.html");
    let json = dir.join("players.json");
    let runtime = RuntimeConfig {
        html_file: Some(html.clone()),
        json_file: Some(json.clone()),
        ..RuntimeConfig::new("slotserver", loopback())
    };
    let server = TestServer::start_with(test_config(), runtime);
    let _c = server.joined("sid", 0);
    wait_for("the player in the files", || {
        read_text(&html).contains("sid") && read_text(&json).contains("sid")
    });
    let page = read_text(&html);
    assert!(
        page.contains("this page reloads every 30 seconds"),
        "{page}"
    );
    assert!(!page.contains("id=\"stopped\""), "{page}");
    let value: serde_json::Value = serde_json::from_str(&read_text(&json)).unwrap();
    assert_eq!(value["server"]["running"], true);

    server.stop();
    let page = read_text(&html);
    assert!(
        page.contains("<p id=\"stopped\" class=\"stopped\"><strong>This server stopped at "),
        "{page}"
    );
    assert!(page.contains("is not running"), "{page}");
    assert!(!page.contains("reloads every 30 seconds"), "{page}");
    let value: serde_json::Value = serde_json::from_str(&read_text(&json)).unwrap();
    assert_eq!(value["server"]["running"], false);
    assert_eq!(value["players"].as_array().map(Vec::len), Some(0));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A slotserver with its HTTP endpoint, and the endpoint's address.
fn server_with_http() -> (TestServer, std::net::SocketAddr) {
    let runtime = RuntimeConfig {
        http: Some(loopback()),
        ..RuntimeConfig::new("slotserver", loopback())
    };
    let server = TestServer::start_with(test_config(), runtime);
    let http = server.addrs.http.expect("HTTP bound");
    (server, http)
}

/// Send `request` on a new connection and read until the server closes it: the response as
/// text, or what went wrong (a refused request may be closed while it is still being sent).
fn exchange(http: std::net::SocketAddr, request: &[u8]) -> Result<String, String> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(http).map_err(|e| e.to_string())?;
    stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    let _ = stream.write_all(request);
    let mut response = Vec::new();
    let read = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response).into_owned();
    match read {
        Err(e) if text.is_empty() => Err(e.to_string()),
        _ => Ok(text),
    }
}

/// The status line's start of [`exchange`]'s response (or its error), for assertions.
fn status_of(http: std::net::SocketAddr, request: &[u8]) -> String {
    match exchange(http, request) {
        Ok(text) => text.lines().next().unwrap_or("").to_string(),
        Err(e) => e,
    }
}

#[test]
fn http_endpoint_refuses_oversized_and_unknown_requests() {
    let (server, http) = server_with_http();
    let huge = format!("GET / HTTP/1.1\r\nX-Pad: {}\r\n", "p".repeat(20_000));
    assert!(status_of(http, huge.as_bytes()).starts_with("HTTP/1.1 431"));
    assert_eq!(
        status_of(http, b"POST /players.json HTTP/1.1\r\n\r\n"),
        "HTTP/1.1 405 Method Not Allowed"
    );
    // The text protocol is unaffected.
    let _c = server.joined("fine", 0);
}

/// Regression: a request head over the 8 KiB limit was served when its end arrived in the same
/// read that took it over the limit (a 9 KiB head sent at once got `200`); it is `431` however
/// it arrives.
#[test]
fn a_complete_head_over_the_limit_is_refused_however_it_arrives() {
    let (_server, http) = server_with_http();
    let head = |pad: usize| format!("GET / HTTP/1.1\r\nX-Pad: {}\r\n\r\n", "p".repeat(pad));
    for pad in [8_200, 9_000, 12_000] {
        let status = status_of(http, head(pad).as_bytes());
        assert!(status.starts_with("HTTP/1.1 431"), "{pad}: {status}");
    }
    // A head just under the limit is served.
    assert_eq!(status_of(http, head(8_000).as_bytes()), "HTTP/1.1 200 OK");
}

/// Regression: a request over the limit of 64 HTTP connections at once was reset without a
/// word (a browser showed "connection reset"); it gets `503 Service Unavailable` with a
/// `Retry-After`, and once the others are gone the list is served again.
#[test]
fn a_request_over_the_connection_limit_gets_503() {
    let (_server, http) = server_with_http();
    let idle: Vec<_> = (0..64)
        .map(|_| std::net::TcpStream::connect(http).unwrap())
        .collect();
    let response = exchange(http, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(
        response
            .as_ref()
            .is_ok_and(|r| r.starts_with("HTTP/1.1 503 Service Unavailable\r\n")
                && r.contains("\r\nRetry-After: ")),
        "{response:?}"
    );
    drop(idle);
    wait_for("the list to be served again", || {
        status_of(http, b"GET / HTTP/1.0\r\n\r\n") == "HTTP/1.1 200 OK"
    });
}
