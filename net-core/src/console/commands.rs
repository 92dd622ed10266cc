//! The command table: every console command's name, usage, one-line summary, argument choices
//! (for completion) and handler. The order here is the order `help` lists them in.

use std::fmt::Write as _;
use std::time::Instant;

use crate::error::{ErrorCode, NetError, NetResult};
use crate::packet_api::BackendOrigin;
use crate::protocol::ProtocolKind;
use crate::subsystem::Subsystem;

/// Handler: (subsystem, command name as typed, argument text, now) -> output.
pub type Handler = fn(&mut Subsystem, &str, &str, Instant) -> NetResult<String>;

/// One console command.
pub struct Command {
    pub name: &'static str,
    pub usage: &'static str,
    pub summary: &'static str,
    /// Words offered by tab completion for the first argument.
    pub choices: &'static [&'static str],
    pub run: Handler,
}

pub static COMMANDS: &[Command] = &[
    Command {
        name: "help",
        usage: "help [COMMAND]",
        summary: "list the commands, or show one command's usage",
        choices: &[],
        run: help,
    },
    Command {
        name: "status",
        usage: "status",
        summary: "protocol, backend, connection, counters",
        choices: &[],
        run: status,
    },
    Command {
        name: "net.subsys",
        usage: "net.subsys peer|slotserver|gameserver",
        summary: "switch the protocol layer (disconnects first if needed)",
        choices: &["peer", "slotserver", "gameserver"],
        run: net_subsys,
    },
    Command {
        name: "net.api",
        usage: "net.api udp|ipx|NAME|PATH",
        summary: "switch the packet backend (built-in name, library name, or path to a library)",
        choices: &["udp", "ipx"],
        run: net_api,
    },
    Command {
        name: "net.port",
        usage: "net.port N",
        summary: "local port (default 6526; 0 picks a free one)",
        choices: &[],
        run: net_port,
    },
    Command {
        name: "connect",
        usage: "connect [HOST[:PORT]]",
        summary: "connect with the selected protocol",
        choices: &[],
        run: connect,
    },
    Command {
        name: "disconnect",
        usage: "disconnect",
        summary: "leave the game and free the slot",
        choices: &[],
        run: disconnect,
    },
    Command {
        name: "join",
        usage: "join",
        summary: "join the game you are connected to",
        choices: &[],
        run: join,
    },
    Command {
        name: "unjoin",
        usage: "unjoin",
        summary: "leave the game but stay connected (spectator)",
        choices: &[],
        run: unjoin,
    },
];

/// The `net.<backend>.<key> VALUE` family (not listed by name in `COMMANDS`).
pub static BACKEND_OPTION: Command = Command {
    name: "net.BACKEND.OPTION",
    usage: "net.BACKEND.OPTION VALUE (e.g. net.udp.bind 127.0.0.1, net.ipx.interface eth0)",
    summary: "set an option passed to a backend when it opens",
    choices: &[],
    run: backend_option,
};

/// Whether `name` has the form `net.<backend>.<key>`.
pub fn is_backend_option_name(name: &str) -> bool {
    let mut parts = name.split('.');
    matches!((parts.next(), parts.next(), parts.next(), parts.next()), (Some("net"), Some(b), Some(k), None) if !b.is_empty() && !k.is_empty())
}

fn no_args(args: &str) -> NetResult<()> {
    if args.is_empty() {
        Ok(())
    } else {
        Err(NetError::invalid(format!(
            "takes no argument, got '{}'",
            args.escape_debug()
        )))
    }
}

fn help(_sub: &mut Subsystem, _name: &str, args: &str, _now: Instant) -> NetResult<String> {
    if args.is_empty() {
        let mut out = String::from("commands:\n");
        for c in COMMANDS.iter().chain(std::iter::once(&BACKEND_OPTION)) {
            let _ = writeln!(out, "  {:<40} {}", c.usage, c.summary);
        }
        return Ok(out.trim_end().to_string());
    }
    match super::find_command(args) {
        Some(c) => Ok(format!("usage: {}\n{}", c.usage, c.summary)),
        None => Err(NetError::new(
            ErrorCode::UnknownCommand,
            format!(
                "no command named '{}'; type help for the command list",
                args.escape_debug()
            ),
        )),
    }
}

fn status(sub: &mut Subsystem, _name: &str, args: &str, now: Instant) -> NetResult<String> {
    no_args(args)?;
    let mut out = String::new();
    let _ = writeln!(out, "protocol: {}", sub.protocol());
    match sub.packets().backend().cloned() {
        Some(b) => {
            let origin = match b.origin() {
                BackendOrigin::Library(path) => path.display().to_string(),
                BackendOrigin::InProcess => "in-process".to_string(),
            };
            let yes_no = |v: bool| if v { "yes" } else { "no" };
            let _ = writeln!(
                out,
                "backend: {} ({origin}), max payload {} bytes, broadcast {}, client-server {}",
                b.name(),
                b.max_payload(),
                yes_no(b.supports_broadcast()),
                yes_no(b.supports_client_server())
            );
        }
        None => out.push_str("backend: none\n"),
    }
    if sub.packets().is_open() {
        let local = match sub.local_node() {
            Ok(node) => sub.print_node(&node).unwrap_or_else(|e| e.message),
            Err(e) => format!("unknown ({e})"),
        };
        let _ = writeln!(
            out,
            "socket: open on port {}, local node {local}",
            sub.packets().bound_port().unwrap_or(sub.packets().port())
        );
    } else {
        let _ = writeln!(
            out,
            "socket: closed (opens on first use, port {})",
            sub.packets().port()
        );
    }
    let s = sub.packets().stats().clone();
    let e = sub.input_errors().clone();
    let _ = writeln!(
        out,
        "datagrams: sent {} ({} bytes), received {} ({} bytes), deferred {}, waiting to send {}, waiting to be read {}",
        s.datagrams_sent,
        s.bytes_sent,
        s.datagrams_received,
        s.bytes_received,
        s.send_deferred,
        sub.packets().outgoing_len(),
        sub.packets().incoming_len()
    );
    let _ = writeln!(
        out,
        "errors: send {}, receive {}, oversize {}, queue overflow {}, bad node texts {}, bad console lines {}",
        s.send_errors, s.receive_errors, s.oversize_rejected, s.queue_overflow, e.node_texts, e.console_lines
    );
    let _ = writeln!(
        out,
        "switches: {} done, {} failed; during switches {} queued datagrams sent, {} received kept, {} lost",
        s.switches, s.failed_switches, s.flushed_on_switch, s.drained_on_switch, s.lost_on_switch
    );
    let _ = write!(out, "uptime: {:.1} s", sub.uptime(now).as_secs_f64());
    Ok(out)
}

fn net_subsys(sub: &mut Subsystem, _name: &str, args: &str, _now: Instant) -> NetResult<String> {
    let kind = ProtocolKind::from_console_name(args).ok_or_else(|| {
        if args.is_empty() {
            NetError::invalid(format!("no protocol given (current: {})", sub.protocol()))
        } else {
            NetError::invalid(format!("unknown protocol '{}'", args.escape_debug()))
        }
    })?;
    sub.select_protocol(kind)
}

fn net_api(sub: &mut Subsystem, _name: &str, args: &str, _now: Instant) -> NetResult<String> {
    if args.is_empty() {
        let current = sub
            .packets()
            .backend()
            .map_or("none".to_string(), |b| b.name().to_string());
        return Err(NetError::invalid(format!(
            "no backend given (current: {current})"
        )));
    }
    sub.switch_backend(args)
}

fn net_port(sub: &mut Subsystem, _name: &str, args: &str, _now: Instant) -> NetResult<String> {
    if args.is_empty() {
        return Err(NetError::invalid(format!(
            "no port given (current: {})",
            sub.packets().port()
        )));
    }
    let port: u16 = args.parse().map_err(|_| {
        NetError::new(
            ErrorCode::Parse,
            format!("'{}' is not a port number (0-65535)", args.escape_debug()),
        )
    })?;
    sub.set_port(port)
}

fn connect(sub: &mut Subsystem, _name: &str, _args: &str, now: Instant) -> NetResult<String> {
    sub.connect(now).map(|_| "connecting".to_string())
}

fn disconnect(sub: &mut Subsystem, _name: &str, args: &str, now: Instant) -> NetResult<String> {
    no_args(args)?;
    sub.disconnect(now).map(|_| "disconnected".to_string())
}

fn join(sub: &mut Subsystem, _name: &str, args: &str, now: Instant) -> NetResult<String> {
    no_args(args)?;
    sub.join(now).map(|_| "joining".to_string())
}

fn unjoin(sub: &mut Subsystem, _name: &str, args: &str, now: Instant) -> NetResult<String> {
    no_args(args)?;
    sub.unjoin(0, now).map(|_| "unjoined".to_string())
}

fn backend_option(sub: &mut Subsystem, name: &str, args: &str, _now: Instant) -> NetResult<String> {
    let mut parts = name.splitn(3, '.');
    let (_, backend, key) = (
        parts.next(),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
    );
    if args.is_empty() {
        let current = sub.backend_options().get(backend).and_then(|o| o.get(key));
        return Ok(match current {
            Some(v) => format!("{name} = {v}"),
            None => format!("{name} is not set"),
        });
    }
    sub.set_backend_option(backend, key, args)
}
