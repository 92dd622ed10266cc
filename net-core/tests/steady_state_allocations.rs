//! Zero heap allocations per packet in steady state (issue 9's target), checked on the session
//! layer every protocol uses: two players exchange reliable and unreliable events and states
//! through their links (encode, decode, acknowledge, deliver), and a counting allocator (per
//! thread, so other tests running at the same time do not count) must see no allocation at all
//! once the windows and queues have warmed up. `parsecnet bench` measures the same over real
//! sockets through the C API.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use net_core::rmev::{CustomData, PlayerName, RemoteEvent, ShipState};
use net_core::session::{LocalPlayer, NodeEq, Session, SessionConfig};
use net_core::wire::decode_packet;
use net_core::Node;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

/// The system allocator, counting this thread's allocations.
struct Counting;

// SAFETY: every call is passed on to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's layout obligations are passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: as for `alloc` and `dealloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

fn node(b: u8) -> Node {
    let mut n = Node::default();
    n.bytes[0] = b;
    n
}

fn player(slot: u8, token: u32, now: Instant) -> Session {
    let node_eq: NodeEq = Arc::new(|a: &Node, b: &Node| a == b);
    let mut session = Session::new_mesh(
        SessionConfig::default(),
        node_eq,
        LocalPlayer {
            slot,
            token,
            name: PlayerName::new(format!("p{slot}").as_bytes()).expect("short"),
        },
        now,
    );
    let (other, other_token) = if slot == 0 { (1, 0x22) } else { (0, 0x11) };
    session.add_player(
        now,
        other,
        node(other + 1),
        other_token,
        PlayerName::new(format!("p{other}").as_bytes()).expect("short"),
        true,
    );
    session.join().expect("join");
    session
}

/// Everything `from` has to send goes to `to`; returns the packets moved.
fn deliver(
    from: &mut Session,
    from_node: Node,
    to: &mut Session,
    now: Instant,
    scratch: &mut Scratch,
) -> usize {
    let mut packets = 0;
    while let Some((_, len)) = from.poll_transmit(now, &mut scratch.buf) {
        let packet = decode_packet(&scratch.buf[..len], &mut scratch.events).expect("decodes");
        to.handle_packet(now, &from_node, &packet, &scratch.events)
            .expect("accepted");
        packets += 1;
    }
    while to.poll_event().is_some() {}
    packets
}

struct Scratch {
    buf: Vec<u8>,
    events: Vec<net_core::wire::WireEvent>,
}

#[test]
fn a_steady_exchange_allocates_nothing_per_packet() {
    let start = Instant::now();
    let mut a = player(0, 0x11, start);
    let mut b = player(1, 0x22, start);
    let mut scratch = Scratch {
        buf: vec![0u8; 1400],
        events: Vec::with_capacity(256),
    };
    let step = Duration::from_millis(5);
    let mut now = start;
    let mut run = |frames: u32, now: &mut Instant, count_from: Option<u32>| -> (u64, usize) {
        let mut counted = 0u64;
        let mut packets = 0usize;
        for frame in 0..frames {
            let before = allocations();
            let data = CustomData::new(&frame.to_le_bytes()).expect("small");
            for (session, reliable) in [(&mut a, true), (&mut b, frame % 3 == 0)] {
                session
                    .queue_event(RemoteEvent::Custom {
                        custom_type: 9,
                        data: data.clone(),
                        reliable,
                    })
                    .expect("queued");
                let mut state = ShipState::default();
                state.pos[0] = frame as f32;
                session.set_local_state(state);
                session.handle_timeout(*now);
            }
            let moved = deliver(&mut a, node(1), &mut b, *now, &mut scratch)
                + deliver(&mut b, node(2), &mut a, *now, &mut scratch);
            if count_from.is_some_and(|from| frame >= from) {
                counted += allocations() - before;
                packets += moved;
            }
            *now += step;
        }
        (counted, packets)
    };
    // Warm-up: the resume hello and answer, the windows and queues reach their sizes.
    run(3_000, &mut now, None);
    let (allocated, packets) = run(5_000, &mut now, Some(0));
    assert!(packets > 5_000, "only {packets} packets moved");
    assert_eq!(
        allocated, 0,
        "{allocated} heap allocations over {packets} packets in steady state"
    );
}
