//! `parsecnet console` driven in a real pseudo-terminal (tmux): typing commands shows their
//! output, Tab completes a command, and chat from another console appears above the prompt
//! without garbling the line being typed. SKIPPED when tmux is not installed.

use std::process::Command;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_parsecnet");

/// A tmux session running one console, on a tmux server of its own (its own socket in the
/// temporary directory, no user configuration), so tests running side by side and a user's tmux
/// never meet; the server is killed and its socket removed on drop.
struct Tty {
    name: String,
    socket: std::path::PathBuf,
}

impl Tty {
    fn start(tag: &str) -> Tty {
        let name = format!("pn-console-{}-{tag}", std::process::id());
        let socket = std::env::temp_dir().join(format!("{name}.tmux"));
        let tty = Tty { name, socket };
        let status = tty
            .tmux()
            .args([
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                &tty.name,
                "-x",
                "160",
                "-y",
                "50",
                BIN,
                "console",
            ])
            .env("PARSEC_NET_LOG", "off")
            .status()
            .expect("tmux runs");
        assert!(status.success(), "tmux new-session failed");
        tty.wait_for("parsec>", Duration::from_secs(10));
        tty
    }

    /// `tmux` talking to this console's own server.
    fn tmux(&self) -> Command {
        let mut command = Command::new("tmux");
        command.arg("-S").arg(&self.socket).env_remove("TMUX");
        command
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.name];
        args.extend_from_slice(keys);
        assert!(self
            .tmux()
            .args(&args)
            .status()
            .expect("tmux runs")
            .success());
    }

    fn line(&self, text: &str) {
        self.keys(&["-l", text]);
        self.keys(&["Enter"]);
    }

    fn screen(&self) -> String {
        let out = self
            .tmux()
            .args(["capture-pane", "-p", "-t", &self.name])
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn wait_for(&self, text: &str, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "{text:?} did not appear in {}:\n{screen}",
                self.name
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tty {
    fn drop(&mut self) {
        // The server is gone already when the console quit and its last session ended.
        let _ = self
            .tmux()
            .arg("kill-server")
            .stderr(std::process::Stdio::null())
            .status();
        let _ = std::fs::remove_file(&self.socket);
    }
}

fn tmux_available() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn setup(tty: &Tty, name: &str, port: u16, peer: u16) {
    for line in [
        format!("name {name}"),
        "net.udp.bind 127.0.0.1".to_string(),
        "net.udp.ipv6 0".to_string(),
        format!("net.port {port}"),
        "net.peer.connect_interval 50".to_string(),
        "net.peer.slot_interval 80".to_string(),
        format!("connect 127.0.0.1:{peer}"),
    ] {
        tty.line(&line);
    }
}

#[test]
fn typing_commands_completing_with_tab_and_chat_above_the_prompt() {
    if !tmux_available() {
        println!("SKIPPED: tmux is not installed (tools/test.sh installs it)");
        return;
    }
    let a = Tty::start("a");
    // Tab completes a command.
    a.keys(&["-l", "net.sub"]);
    a.keys(&["Tab"]);
    let screen = a.wait_for("parsec> net.subsys", Duration::from_secs(5));
    assert!(screen.contains("parsec> net.subsys"), "{screen}");
    a.keys(&["C-u"]);
    a.line("help net.api");
    a.wait_for("usage: net.api udp|ipx|NAME|PATH", Duration::from_secs(5));

    // Two consoles find each other on loopback.
    let b = Tty::start("b");
    let (pa, pb) = (free_udp_port(), free_udp_port());
    setup(&a, "alice", pa, pb);
    setup(&b, "bob", pb, pa);
    a.wait_for("* connected: you are player", Duration::from_secs(20));
    b.wait_for("* alice (player", Duration::from_secs(20));
    // Bob is typing when Alice's chat arrives: the chat appears above, his line stays whole.
    b.keys(&["-l", "say half a line"]);
    std::thread::sleep(Duration::from_millis(200));
    a.line("say hello from alice");
    let screen = b.wait_for("<alice> hello from alice", Duration::from_secs(10));
    let last = screen.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
    assert_eq!(
        last.trim_end(),
        "parsec> say half a line",
        "the typed line is intact:\n{screen}"
    );
    b.keys(&["Enter"]);
    a.wait_for("<bob> half a line", Duration::from_secs(10));
    a.line("players");
    a.wait_for("bob", Duration::from_secs(5));
    a.line("quit");
    b.line("quit");
}

/// Regression: lines typed ahead while the console was busy, or pasted in one go, reached the
/// line editor in one read, and only the first was executed; the others were lost without a
/// word (the line editor dropped what it had read past the first line). Under load this lost
/// the `connect` of the test above. Every line must now be executed, in order.
#[test]
fn lines_typed_ahead_in_one_go_are_all_executed() {
    if !tmux_available() {
        println!("SKIPPED: tmux is not installed (tools/test.sh installs it)");
        return;
    }
    let a = Tty::start("typeahead");
    a.keys(&[
        "-l",
        "name pasted\rnet.port 7001\rnet.sendfreq 30\rnet.rate 5000\r",
    ]);
    let screen = a.wait_for("net.rate = 5000 bytes/s", Duration::from_secs(20));
    let order: Vec<usize> = [
        "name = pasted",
        "local port set to 7001",
        "net.sendfreq = 30 Hz",
        "net.rate = 5000 bytes/s",
    ]
    .iter()
    .map(|reply| {
        screen
            .find(reply)
            .unwrap_or_else(|| panic!("{reply:?} missing:\n{screen}"))
    })
    .collect();
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "out of order:\n{screen}"
    );
    a.line("quit");
}
