//! `parsecnet gameserver`: runs the gameserver (design section 2.3.3) until SIGINT or SIGTERM:
//! the slotserver's text protocol on TCP 6581, game packets on UDP 6522 relayed between the
//! clients (distance filter, burst handling, alive counters), the player list over HTTP on 8581
//! and in files, and the registration with up to three masterservers (`--master`).
//!
//! It only turns options into configurations and starts the runtime with the relay as its UDP
//! service; the logic lives in `net_core::server` and `net_core::relay`.

use std::process::ExitCode;
use std::time::Duration;

use net_core::relay::service::RelayService;
use net_core::relay::{RelayConfig, RelayCore};

use crate::server_options::{common_usage, parse_common, CommonOptions, Parsed, ServerDefaults};
use crate::server_run::{print_stopped, serve_slots, slot_core_config};
use crate::stdout;

const DEFAULTS: ServerDefaults = ServerDefaults {
    kind: "gameserver",
    port: 6581,
    http_port: 8581,
};

/// The gameserver's own options.
struct RelayOptions {
    udp_port: u16,
    distance: f32,
    alive_timeout: Duration,
    event_delay: Duration,
}

const RELAY_USAGE: &str = "gameserver options:
  --udp-port N             UDP port for game packets (default 6522; 0: any free port)
  --distance D             forward a ship's state only to ships within D units (default 10000; 0: all)
  --alive-timeout S        drop a client silent for S seconds, 1-3600 (default 20)
  --event-delay MS         longest a non-critical event waits in a burst (default 20)";

/// The gameserver's own options (its UDP side), shown after the common ones.
fn relay_usage() -> String {
    format!("{RELAY_USAGE}\n{}", crate::server_options::udp_rate_usage())
}

pub fn run(args: &[String]) -> ExitCode {
    let mut relay = RelayOptions {
        udp_port: 6522,
        distance: 10_000.0,
        alive_timeout: Duration::from_secs(20),
        event_delay: Duration::from_millis(20),
    };
    let parsed = parse_common(args, &DEFAULTS, |flag, cursor| {
        match flag {
            "--udp-port" => relay.udp_port = cursor.number(flag, "a port number 0-65535")?,
            "--distance" => {
                let text = cursor.value(flag)?;
                relay.distance = text
                    .parse::<f32>()
                    .ok()
                    .filter(|d| d.is_finite() && *d >= 0.0)
                    .ok_or_else(|| format!("{flag}: '{text}' is not a distance (0 or more)"))?;
            }
            "--alive-timeout" => {
                let text = cursor.value(flag)?;
                let s = text
                    .parse::<u64>()
                    .ok()
                    .filter(|s| (1..=3600).contains(s))
                    .ok_or_else(|| format!("{flag}: '{text}' is not a number of seconds 1-3600"))?;
                relay.alive_timeout = Duration::from_secs(s);
            }
            "--event-delay" => {
                let text = cursor.value(flag)?;
                let ms = text
                    .parse::<u64>()
                    .ok()
                    .filter(|ms| *ms <= 1000)
                    .ok_or_else(|| format!("{flag}: '{text}' is not milliseconds 0-1000"))?;
                relay.event_delay = Duration::from_millis(ms);
            }
            _ => return Ok(false),
        }
        Ok(true)
    });
    let options = match parsed {
        Ok(Parsed::Run(o)) => o,
        Ok(Parsed::Help) => {
            let usage = format!("{}\n\n{}", common_usage(&DEFAULTS), relay_usage());
            return stdout::answer("parsecnet gameserver", &usage);
        }
        Err(e) => {
            stdout::error_line(&format!(
                "parsecnet gameserver: {e}\n{}\n\n{}",
                common_usage(&DEFAULTS),
                relay_usage()
            ));
            return ExitCode::from(2);
        }
    };
    match serve(&options, &relay) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            stdout::error_line(&format!("parsecnet gameserver: {e}"));
            ExitCode::FAILURE
        }
    }
}

fn serve(o: &CommonOptions, r: &RelayOptions) -> Result<(), String> {
    let config = slot_core_config(o)?;
    let relay = RelayCore::new(RelayConfig {
        distance: r.distance,
        alive_timeout: r.alive_timeout,
        event_delay: r.event_delay,
        // The token the TCP side announces to clients signs the relay's packets.
        server_token: config.server_token,
        ..RelayConfig::default()
    });
    let service = Box::new(RelayService::new(relay));
    let summary = serve_slots(o, DEFAULTS.kind, config, Some((r.udp_port, service)))?;
    print_stopped(&format!("gameserver '{}'", o.name), &summary)
}
