//! The command table: every console command's name, usage, one-line summary, argument choices
//! (for completion) and handler. The order here is the order `help` lists them in. The handlers
//! live in `info.rs` (help, status, players), `settings.rs` (net.*), `servers.rs` and
//! `game_calls.rs`.

use std::time::Instant;

use super::{game_calls as game, info, servers, settings as set};
use crate::error::{NetError, NetResult};
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

macro_rules! command {
    ($name:literal, $usage:literal, $summary:literal, $choices:expr, $run:expr) => {
        Command {
            name: $name,
            usage: $usage,
            summary: $summary,
            choices: $choices,
            run: $run,
        }
    };
}

pub static COMMANDS: &[Command] = &[
    command!(
        "help",
        "help [COMMAND]",
        "list the commands, or show one command's usage",
        &[],
        info::help
    ),
    command!(
        "status",
        "status",
        "protocol, backend, connection, own slot, players, RTT, loss, rates",
        &[],
        info::status
    ),
    command!("players", "players", "the player table", &[], info::players),
    command!(
        "net.subsys",
        "net.subsys peer|slotserver|gameserver",
        "switch the protocol layer (disconnects first if needed)",
        &["peer", "slotserver", "gameserver"],
        set::net_subsys
    ),
    command!(
        "net.api",
        "net.api udp|ipx|NAME|PATH",
        "switch the packet backend (built-in name, library name, or path to a library)",
        &["udp", "ipx"],
        set::net_api
    ),
    command!(
        "net.port",
        "net.port N",
        "local port (default 6526; 0 picks a free one)",
        &[],
        set::net_port
    ),
    command!(
        "net.server",
        "net.server HOST[:PORT]",
        "the slotserver or gameserver to connect to",
        &[],
        set::net_server
    ),
    command!(
        "net.master",
        "net.master HOST[:PORT][,HOST[:PORT]...]|clear",
        "set the masterserver to ask for servers (replacing the previous; a comma-separated list asks up to 3), or clear it",
        &["clear"],
        set::net_master
    ),
    command!(
        "net.sendfreq",
        "net.sendfreq HZ",
        "state send frequency, 5-60 Hz (default 20)",
        &[],
        set::net_sendfreq
    ),
    command!(
        "net.rate",
        "net.rate BYTES_PER_S",
        "receive rate in bytes per second (0: unlimited)",
        &[],
        set::net_rate
    ),
    command!(
        "net.sim",
        "net.sim off|[lag MS] [jitter MS] [loss PCT] [dup PCT] [reorder PCT]",
        "link conditioner on the send and receive paths of any backend",
        &["off", "lag", "jitter", "loss", "dup", "reorder"],
        set::net_sim
    ),
    command!(
        "net.timeout",
        "net.timeout SECONDS",
        "drop a player silent this long (default 20)",
        &[],
        set::net_timeout
    ),
    command!(
        "net.peer.connect_tries",
        "net.peer.connect_tries N",
        "peer-to-peer: connect requests before becoming master (default 10)",
        &[],
        set::peer_timing
    ),
    command!(
        "net.peer.connect_interval",
        "net.peer.connect_interval MS",
        "peer-to-peer: time between connect requests (default 330)",
        &[],
        set::peer_timing
    ),
    command!(
        "net.peer.slot_tries",
        "net.peer.slot_tries N",
        "peer-to-peer: slot requests before giving up (default 20)",
        &[],
        set::peer_timing
    ),
    command!(
        "net.peer.slot_interval",
        "net.peer.slot_interval MS",
        "peer-to-peer: time between slot requests (default 670)",
        &[],
        set::peer_timing
    ),
    command!(
        "net.peer.reply_wait",
        "net.peer.reply_wait MS",
        "peer-to-peer: wait per rank before answering a newcomer (default 170)",
        &[],
        set::peer_timing
    ),
    command!(
        "connect",
        "connect [HOST[:PORT]]",
        "connect with the selected protocol (no address: peer discovery or net.server)",
        &[],
        game::connect
    ),
    command!(
        "disconnect",
        "disconnect",
        "leave the game and free the slot",
        &[],
        game::disconnect
    ),
    command!(
        "join",
        "join",
        "join the game you are connected to",
        &[],
        game::join
    ),
    command!(
        "unjoin",
        "unjoin [FLAG]",
        "leave the game but stay connected (spectator); FLAG 0-255 is passed on",
        &[],
        game::unjoin
    ),
    command!(
        "name",
        "name NAME",
        "set your player name (at most 31 bytes) and tell the others",
        &[],
        game::name
    ),
    command!(
        "say",
        "say TEXT",
        "send a chat line to the others (at most 255 bytes)",
        &[],
        game::say
    ),
    command!(
        "servers",
        "servers",
        "list the servers the net.master masterservers know (waits up to 2 s for them)",
        &[],
        servers::servers
    ),
    command!(
        "record",
        "record FILE",
        "record what the game receives to a demo file",
        &[],
        game::record
    ),
    command!(
        "play",
        "play FILE",
        "play a demo file back to the game",
        &[],
        game::play
    ),
    command!(
        "stop",
        "stop",
        "stop recording or playback",
        &[],
        game::stop
    ),
];

/// The `net.<backend>.<key> VALUE` family (not listed by name in `COMMANDS`).
pub static BACKEND_OPTION: Command = command!(
    "net.BACKEND.OPTION",
    "net.BACKEND.OPTION VALUE|\"\" (e.g. net.udp.bind 127.0.0.1, net.ipx.interface eth0; \"\" back to the default)",
    "set an option passed to a backend when it opens",
    &[],
    set::backend_option
);

/// Whether `name` has the form `net.<backend>.<key>`.
pub fn is_backend_option_name(name: &str) -> bool {
    let mut parts = name.split('.');
    matches!(
        (parts.next(), parts.next(), parts.next(), parts.next()),
        (Some("net"), Some(b), Some(k), None) if !b.is_empty() && !k.is_empty()
    )
}

/// Fail unless the command got no argument.
pub fn no_args(args: &str) -> NetResult<()> {
    if args.is_empty() {
        Ok(())
    } else {
        Err(NetError::invalid(format!(
            "takes no argument, got '{}'",
            args.escape_debug()
        )))
    }
}

/// The argument of a command that takes one (or at most one): an extra word is reported as
/// such (`extra argument '6' after '5' (it takes one)`), not as a bad value of the whole text.
pub fn one_arg(args: &str) -> NetResult<&str> {
    match args.split_once(char::is_whitespace) {
        None => Ok(args),
        Some((first, rest)) => Err(NetError::invalid(format!(
            "extra argument '{}' after '{}' (it takes one)",
            rest.trim().escape_debug(),
            first.escape_debug()
        ))),
    }
}

/// The one word of a number argument: a word too many is named like [`one_arg`] does, with
/// the code of a number that does not parse (`PARSE`, as it had before extra words were named).
pub fn number_word(args: &str) -> NetResult<&str> {
    one_arg(args).map_err(|e| NetError::new(crate::error::ErrorCode::Parse, e.message))
}

/// Parse a whole number argument in `lo..=hi` (one word: an extra one is reported as such).
pub fn number_in(args: &str, lo: u64, hi: u64, what: &str) -> NetResult<u64> {
    let args = number_word(args)?;
    if let Ok(negative @ ..0) = args.parse::<i64>() {
        return Err(NetError::invalid(format!(
            "{negative} is outside {lo}-{hi} ({what})"
        )));
    }
    let value: u64 = args.parse().map_err(|_| {
        NetError::new(
            crate::error::ErrorCode::Parse,
            format!(
                "'{}' is not a number ({what} {lo}-{hi})",
                args.escape_debug()
            ),
        )
    })?;
    if !(lo..=hi).contains(&value) {
        return Err(NetError::invalid(format!(
            "{value} is outside {lo}-{hi} ({what})"
        )));
    }
    Ok(value)
}
