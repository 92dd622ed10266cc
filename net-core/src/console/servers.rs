//! The console's `servers`: the `net.master` masterservers' list in the reply itself. It waits
//! up to [`SERVERS_WAIT`] for the list (a masterserver answers in milliseconds); only a slower
//! one leaves the reply saying so, and the list then comes as the `ServerList` event. A list
//! younger than 5 s is shown without asking again. Formatting only; the fetch is the
//! subsystem's (`subsystem::server_list`).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use super::commands::no_args;
use crate::error::{ErrorCode, NetError, NetResult};
use crate::master::format_table;
use crate::subsystem::server_list::ListWait;
use crate::subsystem::Subsystem;

/// Longest wait for the masterservers inside `servers` (docs/console.md says why 2 s).
pub const SERVERS_WAIT: Duration = Duration::from_secs(2);

pub fn servers(sub: &mut Subsystem, _name: &str, args: &str, now: Instant) -> NetResult<String> {
    no_args(args)?;
    if sub.console_waits_deferred() {
        // The caller waits without holding the subsystem (`console::continue_wait`).
        sub.request_server_list(now)?;
        if sub.server_list().is_fetching() {
            sub.defer_console_wait(now);
            return Ok(String::new());
        }
        return reply(sub, now, ListWait::Fresh);
    }
    let wait = sub.wait_for_server_list(now, SERVERS_WAIT)?;
    reply(sub, now, wait)
}

/// One round of a deferred `servers` started at `started`: its reply once the fetch completed
/// (here or in a frame) or [`SERVERS_WAIT`] has passed, `None` while it goes on.
pub fn continue_servers(
    sub: &mut Subsystem,
    started: Instant,
    now: Instant,
) -> Option<NetResult<String>> {
    let waited = now.saturating_duration_since(started);
    let wait = sub.server_list_wait_step(now, waited, SERVERS_WAIT)?;
    Some(reply(sub, now, wait))
}

/// The reply once the wait is over.
fn reply(sub: &Subsystem, now: Instant, wait: ListWait) -> NetResult<String> {
    let list = sub.server_list();
    if wait == ListWait::StillFetching {
        let mut out = format!(
            "no answer from {} within {} s; still fetching: the list is shown when it arrives",
            list.waiting_for().join(", "),
            SERVERS_WAIT.as_secs()
        );
        if let Some(fetched) = list.fetched_at() {
            let _ = write!(out, "\nthe last list, fetched {}:", ago(now, fetched));
            push_list(&mut out, sub);
        }
        return Ok(out);
    }
    if list.answered().is_empty() && !list.errors().is_empty() {
        // Not one masterserver answered, in this fetch or in the one younger than 5 s that
        // is shown again: one line naming them and why.
        return Err(NetError::new(
            ErrorCode::Io,
            format!(
                "no list from masterserver{} {}",
                if list.masters().len() == 1 { "" } else { "s" },
                list.errors().join("; ")
            ),
        ));
    }
    // Named as sources: the masterservers that answered (the others get a `!` line below).
    let count = list.servers().len();
    let mut out = format!(
        "{count} server{} listed by {}",
        if count == 1 { "" } else { "s" },
        list.answered().join(", ")
    );
    if wait == ListWait::Fresh {
        if let Some(fetched) = list.fetched_at() {
            let _ = write!(out, " (fetched {})", ago(now, fetched));
        }
    }
    if count > 0 {
        out.push(':');
    }
    push_list(&mut out, sub);
    Ok(out)
}

/// The table of servers (when there are any) and a `! HOST:PORT: why` line per failed
/// masterserver.
fn push_list(out: &mut String, sub: &Subsystem) {
    let list = sub.server_list();
    if !list.servers().is_empty() {
        out.push('\n');
        out.push_str(&format_table(list.servers()));
    }
    for error in list.errors() {
        let _ = write!(out, "\n! {error}");
    }
}

fn ago(now: Instant, then: Instant) -> String {
    format!(
        "{:.0} s ago",
        now.saturating_duration_since(then).as_secs_f32()
    )
}
