//! What the jump table costs a game: a NETs_ call written as the header's macro expands it
//! (`NET_GetJumpTable()->Entry(...)`) against the same call bound directly to the exported
//! function (`PARSEC_NET_STATIC_BIND`). Measured in this process on the global instance, in
//! interleaved blocks so frequency changes and noise fall on both alike; the median block is
//! reported.

use std::hint::black_box;
use std::time::Instant;

use parsec_net::jump_table::NET_GetJumpTable;
use parsec_net::packet_calls::NETs_CompareNodes;
use parsec_net::protocol_calls::NETs_MaintainNet;
use parsec_net::NET_Node;

use super::capi;
use super::report::{Figure, Section, Target};
use super::sampling::median;

pub const TITLE: &str = "NETs_ call: jump table vs direct";

/// Blocks per kind; each block is `iterations / BLOCKS` calls.
const BLOCKS: u64 = 20;

fn time_block(calls: u64, mut call: impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..calls {
        call();
    }
    start.elapsed().as_secs_f64() * 1e9 / calls as f64
}

/// ns per call through the table and directly, medians over interleaved blocks.
fn compare(iterations: u64, via_table: impl Fn(), direct: impl Fn()) -> (f64, f64) {
    let calls = (iterations / BLOCKS).max(1);
    // Warm both paths (caches, branch predictors).
    time_block(calls.min(10_000), &via_table);
    time_block(calls.min(10_000), &direct);
    let (mut table, mut plain) = (Vec::new(), Vec::new());
    for block in 0..BLOCKS {
        if block % 2 == 0 {
            table.push(time_block(calls, &via_table));
            plain.push(time_block(calls, &direct));
        } else {
            plain.push(time_block(calls, &direct));
            table.push(time_block(calls, &via_table));
        }
    }
    (median(&table), median(&plain))
}

pub fn measure(iterations: u64) -> Result<Section, String> {
    capi::init()?;
    capi::exec("net.udp.bind 127.0.0.1")?;
    capi::exec("net.port 0")?;
    capi::exec("net.api udp")?;
    let mut a = NET_Node::default();
    // SAFETY: `a` is valid for writing.
    if unsafe { parsec_net::packet_calls::NETs_LocalNode(&mut a) } != 0 {
        return Err("NETs_LocalNode failed".into());
    }
    let b = a;
    // SAFETY: both nodes are valid for reading.
    let rc = unsafe { NETs_CompareNodes(&a, &b) };
    if rc < 0 {
        return Err(format!("NETs_CompareNodes failed with {rc}"));
    }
    let compare_table = || {
        // SAFETY: the table is never NULL and lives as long as the process; the nodes are valid.
        black_box(unsafe { ((*NET_GetJumpTable()).CompareNodes)(black_box(&a), black_box(&b)) });
    };
    let compare_direct = || {
        // SAFETY: as above.
        black_box(unsafe { NETs_CompareNodes(black_box(&a), black_box(&b)) });
    };
    let (cmp_table, cmp_direct) = compare(iterations, compare_table, compare_direct);
    // MaintainNet with no game: a lock, a look at the socket, the timers. Fewer calls (it is
    // a frame's worth of work, and a system call).
    let maintain_table = || capi::maintain();
    let maintain_direct = || NETs_MaintainNet();
    let (mnt_table, mnt_direct) = compare(iterations / 20, maintain_table, maintain_direct);

    let mut s = Section::new("jump_table", TITLE);
    s.figure(Figure::new(
        "compare_direct_ns",
        "NETs_CompareNodes direct (baseline)",
        cmp_direct,
        "ns/call",
    ));
    s.figure(
        Figure::new(
            "compare_table_ns",
            "NETs_CompareNodes via jump table",
            cmp_table,
            "ns/call",
        )
        .baseline(cmp_direct),
    );
    s.figure(
        Figure::new(
            "compare_ratio",
            "CompareNodes table / direct",
            cmp_table / cmp_direct,
            "",
        )
        .target(Target::AtMost(1.02)),
    );
    s.figure(Figure::new(
        "maintain_direct_ns",
        "NETs_MaintainNet direct (baseline)",
        mnt_direct,
        "ns/call",
    ));
    s.figure(
        Figure::new(
            "maintain_table_ns",
            "NETs_MaintainNet via jump table",
            mnt_table,
            "ns/call",
        )
        .baseline(mnt_direct),
    );
    s.figure(
        Figure::new(
            "maintain_ratio",
            "MaintainNet table / direct",
            mnt_table / mnt_direct,
            "",
        )
        .target(Target::AtMost(1.02)),
    );
    s.note(format!(
        "in-process on the global instance (UDP backend open, no game); {BLOCKS} interleaved blocks per kind, median block; {iterations} CompareNodes calls and {} MaintainNet calls per kind",
        iterations / 20
    ));
    s.note("table: NET_GetJumpTable()->Entry(...) as parsec_net.h's macro; direct: the exported NETs_ function as with PARSEC_NET_STATIC_BIND; CompareNodes is the cheapest entry, so its ratio is the worst case");
    Ok(s)
}
