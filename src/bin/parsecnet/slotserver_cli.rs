//! `parsecnet slotserver`: runs the slotserver (design section 2.3.2) until SIGINT or SIGTERM:
//! the text protocol on TCP 6582, the player list over HTTP on 8582 and in files, and the
//! registration with up to three masterservers (`--master`).
//!
//! It only turns options into a configuration and starts the runtime; the protocol lives in
//! `net_core::server`.

use std::process::ExitCode;

use crate::server_options::{common_usage, parse_common, CommonOptions, Parsed, ServerDefaults};
use crate::server_run::{print_stopped, serve_slots, slot_core_config};
use crate::stdout;

const DEFAULTS: ServerDefaults = ServerDefaults {
    kind: "slotserver",
    port: 6582,
    http_port: 8582,
};

pub fn run(args: &[String]) -> ExitCode {
    let options = match parse_common(args, &DEFAULTS, |_, _| Ok(false)) {
        Ok(Parsed::Run(o)) => o,
        Ok(Parsed::Help) => {
            return stdout::answer("parsecnet slotserver", &common_usage(&DEFAULTS))
        }
        Err(e) => {
            stdout::error_line(&format!(
                "parsecnet slotserver: {e}\n{}",
                common_usage(&DEFAULTS)
            ));
            return ExitCode::from(2);
        }
    };
    match serve(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            stdout::error_line(&format!("parsecnet slotserver: {e}"));
            ExitCode::FAILURE
        }
    }
}

fn serve(o: &CommonOptions) -> Result<(), String> {
    let config = slot_core_config(o)?;
    let summary = serve_slots(o, DEFAULTS.kind, config, None)?;
    print_stopped(&format!("slotserver '{}'", o.name), &summary)
}
