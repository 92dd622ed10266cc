//! Console commands that act in the game: `connect`, `disconnect`, `join`, `unjoin`, `name`,
//! `say`, and the demo commands `record`, `play`, `stop` (`servers` is in `servers.rs`).

use std::path::Path;
use std::time::Instant;

use super::commands::{no_args, number_in, one_arg};
use crate::error::{ErrorCode, NetError, NetResult};
use crate::protocol::NameUpdate;
use crate::subsystem::Subsystem;

pub fn connect(sub: &mut Subsystem, _name: &str, args: &str, now: Instant) -> NetResult<String> {
    let args = one_arg(args)?;
    // A slot or game server's address is checked as `net.server` checks it: a text that can be
    // no host (`256.1.1.1`, `a/b`) is a bad argument, not a connect that fails later. (A peer
    // address is checked by the backend, which knows its own address form.)
    if !args.is_empty() && sub.protocol().is_client_server() {
        super::settings::host_port(args)?;
    }
    sub.connect(now, (!args.is_empty()).then_some(args))
}

pub fn disconnect(sub: &mut Subsystem, _name: &str, args: &str, now: Instant) -> NetResult<String> {
    no_args(args)?;
    sub.disconnect(now).map(|()| "disconnected".to_string())
}

pub fn join(sub: &mut Subsystem, _name: &str, args: &str, now: Instant) -> NetResult<String> {
    no_args(args)?;
    sub.join(now).map(|now_joined| {
        if now_joined {
            "joined the game"
        } else {
            "already joined"
        }
        .to_string()
    })
}

pub fn unjoin(sub: &mut Subsystem, _name: &str, args: &str, now: Instant) -> NetResult<String> {
    let flag = if args.is_empty() {
        0
    } else {
        number_in(args, 0, 255, "unjoin flag")? as u8
    };
    sub.unjoin(flag, now)
        .map(|()| "left the game (still connected)".to_string())
}

pub fn name(sub: &mut Subsystem, _name: &str, args: &str, now: Instant) -> NetResult<String> {
    if args.is_empty() {
        return Ok(format!("name = {}", sub.game().name()));
    }
    let previous = *sub.game().name();
    sub.set_player_name(args)?;
    match sub.update_name(now) {
        Ok(NameUpdate::Told) => Ok(format!("name = {args} (the others are told)")),
        Ok(NameUpdate::AskedServer) => Ok(format!(
            "name = {args}, asked of the server (the others are told once it accepts; if the name is taken there, you stay {previous})"
        )),
        Err(err) if err.code == ErrorCode::NotConnected || err.code == ErrorCode::NoProtocol => {
            // While connecting, the connect already carried the old name: the others are told
            // the new one once this player is in the game (see `take_protocol_output`).
            let connecting = sub.protocol_module().is_some_and(|p| p.is_active());
            Ok(if connecting {
                format!("name = {args} (the others are told once you are in the game)")
            } else {
                format!("name = {args}")
            })
        }
        Err(err) => {
            // A name the others cannot be told (or the server cannot be asked for) is not
            // taken: the one in use stays.
            sub.game_mut().set_name(previous);
            Err(err)
        }
    }
}

pub fn say(sub: &mut Subsystem, _name: &str, args: &str, _now: Instant) -> NetResult<String> {
    if args.is_empty() {
        return Err(NetError::invalid("nothing to say"));
    }
    // Echoed as the others will show it, so the player sees what was said.
    sub.say(args)
        .map(|()| format!("<{}> {args}", sub.game().name()))
}

fn demo_path(args: &str) -> NetResult<&Path> {
    if args.is_empty() {
        return Err(NetError::invalid("no file given"));
    }
    if args.len() > 4096 {
        return Err(NetError::new(
            ErrorCode::TooLarge,
            "file name longer than 4096 bytes",
        ));
    }
    Ok(Path::new(args))
}

pub fn record(sub: &mut Subsystem, _name: &str, args: &str, now: Instant) -> NetResult<String> {
    let path = demo_path(args)?;
    sub.start_recording(path, now)
}

pub fn play(sub: &mut Subsystem, _name: &str, args: &str, now: Instant) -> NetResult<String> {
    let path = demo_path(args)?;
    sub.start_playback(path, now)
}

pub fn stop(sub: &mut Subsystem, _name: &str, args: &str, now: Instant) -> NetResult<String> {
    no_args(args)?;
    sub.game_mut().stop(now)
}
