//! The masterserver holding 10,000 registered servers, each on its own TCP connection from this
//! test process: every join is accepted, the JSON list is complete, and a `list servers` request
//! is answered while all of them are connected. The masterserver runs as a child process (this
//! test binary run again as `child_masterserver_process`), so each side needs only ~10,000 file
//! descriptors; both raise RLIMIT_NOFILE up to the hard limit, and the test says SKIPPED when
//! that is not enough.
//!
//! `list_latency_benchmark` (ignored; `cargo test -p parsec-net-core --release --test
//! master_scale -- --ignored --nocapture list_latency`) prints list latencies against a
//! one-line round trip measured in the same run. No test asserts on time.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use net_core::master::{MasterConfig, MasterCore};
use net_core::server::fd_limit::raise_open_file_limit;
use net_core::server::{run_core, RuntimeConfig};

const SERVERS: usize = 10_000;
/// Descriptors beyond the connections (listeners, pipes, the test harness).
const SPARE: u64 = 256;
const IO_TIMEOUT: Duration = Duration::from_secs(30);

/// The masterserver child process.
struct MasterChild {
    child: Child,
    stdin: Option<ChildStdin>,
    tcp: SocketAddr,
    http: SocketAddr,
}

impl MasterChild {
    /// Start it; `Err` with the reason to skip.
    fn start(max_servers: usize) -> Result<MasterChild, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut child = Command::new(exe)
            .args([
                "--exact",
                "child_masterserver_process",
                "--nocapture",
                "--include-ignored",
            ])
            .env("PARSEC_TEST_MASTER_CHILD", max_servers.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start the child: {e}"))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or("no child stdout")?;
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("SKIP ") {
                return Err(rest.to_string());
            }
            if let Some(rest) = line.strip_prefix("READY ") {
                let mut parts = rest.split(' ');
                let tcp = parts
                    .next()
                    .and_then(|p| p.parse().ok())
                    .ok_or("bad READY")?;
                let http = parts
                    .next()
                    .and_then(|p| p.parse().ok())
                    .ok_or("bad READY")?;
                return Ok(MasterChild {
                    child,
                    stdin,
                    tcp,
                    http,
                });
            }
        }
        Err("the child exited before it was ready".into())
    }
}

impl Drop for MasterChild {
    fn drop(&mut self) {
        drop(self.stdin.take()); // the child stops when its stdin closes
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Run by the tests of this file as a child process: a masterserver for `max_servers`.
#[test]
#[ignore = "runs only as a child process of the scale tests"]
fn child_masterserver_process() {
    let Some(max_servers) = std::env::var("PARSEC_TEST_MASTER_CHILD")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    else {
        println!("only runs as a child process");
        return;
    };
    let wanted = max_servers as u64 + SPARE;
    match raise_open_file_limit(wanted) {
        Ok(limit) if limit >= wanted => {}
        Ok(limit) => {
            println!("SKIP the masterserver process may open only {limit} files, {wanted} needed");
            return;
        }
        Err(e) => {
            println!("SKIP {e}");
            return;
        }
    }
    let config = MasterConfig {
        max_servers,
        max_per_address: max_servers + 100,
        max_connections: max_servers + 100,
        ..MasterConfig::default()
    };
    let runtime = RuntimeConfig {
        http: Some("127.0.0.1:0".parse().unwrap()),
        ..RuntimeConfig::new("masterserver", "127.0.0.1:0".parse().unwrap())
    };
    let stop = Arc::new(AtomicBool::new(false));
    let thread_stop = Arc::clone(&stop);
    let server = std::thread::spawn(move || {
        run_core(
            runtime,
            MasterCore::new(config),
            None,
            thread_stop,
            |addrs| {
                println!("READY {} {}", addrs.tcp, addrs.http.expect("HTTP bound"));
            },
        )
    });
    let mut rest = String::new();
    let _ = std::io::stdin().read_to_string(&mut rest);
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let _ = server.join();
}

/// Read one line (without "\n") from a stream with a read timeout, byte by byte from a small
/// buffer (10,000 of these are open at once, so no BufReader each).
fn read_line(stream: &mut TcpStream) -> String {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        match stream.read(&mut byte) {
            Ok(0) => panic!("closed while waiting for a line (got {line:?})"),
            Ok(_) if byte[0] == b'\n' => return String::from_utf8_lossy(&line).into_owned(),
            Ok(_) => line.push(byte[0]),
            Err(e) => panic!("no line within {IO_TIMEOUT:?}: {e}"),
        }
    }
}

/// Raise this process's limit for `servers` connections; `Err` with the reason to skip.
fn prepare_fds(servers: usize) -> Result<(), String> {
    let wanted = servers as u64 + SPARE;
    let limit = raise_open_file_limit(wanted)?;
    if limit < wanted {
        return Err(format!(
            "this process may open only {limit} files, {wanted} needed"
        ));
    }
    Ok(())
}

/// Register `n` servers, each on its own connection, in batches; returns the connections.
fn register_all(master: SocketAddr, n: usize) -> Vec<TcpStream> {
    let mut conns = Vec::with_capacity(n);
    for batch in (0..n).collect::<Vec<_>>().chunks(500) {
        let first = conns.len();
        for &i in batch {
            let mut s = TcpStream::connect_timeout(&master, IO_TIMEOUT).expect("connect");
            s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
            s.set_nodelay(true).unwrap();
            writeln!(
                s,
                "version: 1.0 join me: server{i:05} os: linux maxplayers: 16 url: http://s{i}.example/ kind: gameserver port: {} udp: 6522",
                20_000 + i
            )
            .unwrap();
            conns.push(s);
        }
        for s in &mut conns[first..] {
            assert_eq!(read_line(s), "join accepted");
        }
    }
    conns
}

/// `list servers` on `conn`: the number of server lines, and how long the whole reply took.
fn timed_list(conn: &mut BufReader<TcpStream>) -> (usize, Duration) {
    let started = Instant::now();
    conn.get_mut().write_all(b"list servers\n").unwrap();
    let mut count = 0;
    let mut line = String::new();
    loop {
        line.clear();
        conn.read_line(&mut line).expect("list line");
        if line == "end of list\n" {
            return (count, started.elapsed());
        }
        assert!(line.starts_with("server: "), "{line}");
        count += 1;
    }
}

/// One line's round trip (the baseline): `remove me` from a connection that is not listed.
fn timed_round_trip(conn: &mut BufReader<TcpStream>) -> Duration {
    let started = Instant::now();
    conn.get_mut().write_all(b"remove me\n").unwrap();
    let mut line = String::new();
    conn.read_line(&mut line).unwrap();
    assert_eq!(line, "you're not even joined\n");
    started.elapsed()
}

/// GET `path`; the body and how long it took.
fn timed_get(http: SocketAddr, path: &str) -> (String, Duration) {
    let started = Instant::now();
    let mut s = TcpStream::connect_timeout(&http, IO_TIMEOUT).unwrap();
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\n\r\n").unwrap();
    let mut response = String::new();
    s.read_to_string(&mut response).unwrap();
    let elapsed = started.elapsed();
    let (head, body) = response.split_once("\r\n\r\n").expect("HTTP head");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    (body.to_string(), elapsed)
}

fn viewer(master: SocketAddr) -> BufReader<TcpStream> {
    let s = TcpStream::connect_timeout(&master, IO_TIMEOUT).unwrap();
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    BufReader::new(s)
}

#[test]
fn ten_thousand_servers_are_listed_completely() {
    if let Err(why) = prepare_fds(SERVERS) {
        println!("SKIPPED: {why}");
        return;
    }
    let master = match MasterChild::start(SERVERS) {
        Ok(m) => m,
        Err(why) => {
            println!("SKIPPED: {why}");
            return;
        }
    };
    let started = Instant::now();
    let mut conns = register_all(master.tcp, SERVERS);
    println!(
        "registered {SERVERS} servers in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    // A few report players while everyone stays connected.
    for (i, s) in conns.iter_mut().enumerate().step_by(1000) {
        writeln!(s, "players: {} max: 16", i % 17).unwrap();
        assert_eq!(read_line(s), "players acknowledged.");
    }
    let mut v = viewer(master.tcp);
    let (count, took) = timed_list(&mut v);
    assert_eq!(count, SERVERS);
    println!(
        "list servers: {count} lines in {:.1} ms",
        took.as_secs_f64() * 1e3
    );

    let (body, took) = timed_get(master.http, "/servers.json");
    let json: serde_json::Value = serde_json::from_str(&body).expect("valid JSON");
    let servers = json["servers"].as_array().expect("servers");
    assert_eq!(servers.len(), SERVERS);
    assert_eq!(json["masterserver"]["server_count"], SERVERS);
    let mut names: Vec<&str> = servers
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), SERVERS, "every server once");
    assert_eq!(servers[1000]["players"], 1000 % 17);
    println!(
        "/servers.json: {} bytes in {:.1} ms",
        body.len(),
        took.as_secs_f64() * 1e3
    );
    // Everyone leaves by closing; the list empties.
    drop(conns);
    let deadline = Instant::now() + IO_TIMEOUT;
    loop {
        let (count, _) = timed_list(&mut v);
        if count == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "{count} still listed");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort_unstable();
    samples[((samples.len() - 1) as f64 * p).round() as usize]
}

#[test]
#[ignore = "a benchmark: prints figures, asserts nothing about time"]
fn list_latency_benchmark() {
    let n: usize = std::env::var("PARSEC_BENCH_SERVERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(SERVERS);
    if let Err(why) = prepare_fds(n) {
        println!("SKIPPED: {why}");
        return;
    }
    let master = match MasterChild::start(n) {
        Ok(m) => m,
        Err(why) => {
            println!("SKIPPED: {why}");
            return;
        }
    };
    let started = Instant::now();
    let _conns = register_all(master.tcp, n);
    let register = started.elapsed();
    let mut v = viewer(master.tcp);
    let rounds = 30;
    let mut baseline: Vec<Duration> = (0..rounds).map(|_| timed_round_trip(&mut v)).collect();
    let mut list: Vec<Duration> = (0..rounds).map(|_| timed_list(&mut v).1).collect();
    let mut json: Vec<Duration> = (0..rounds)
        .map(|_| timed_get(master.http, "/servers.json").1)
        .collect();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let base = percentile(&mut baseline, 0.5);
    println!(
        "masterserver with {n} servers connected (registration took {:.2} s)",
        register.as_secs_f64()
    );
    println!("  one-line round trip (baseline): p50 {:.3} ms", ms(base));
    for (what, samples) in [
        ("list servers (TCP)", &mut list),
        ("/servers.json (HTTP)", &mut json),
    ] {
        let p50 = percentile(samples, 0.5);
        let p95 = percentile(samples, 0.95);
        println!(
            "  {what}: p50 {:.2} ms, p95 {:.2} ms, {:.0}x the baseline",
            ms(p50),
            ms(p95),
            p50.as_secs_f64() / base.as_secs_f64().max(1e-9)
        );
    }
}
