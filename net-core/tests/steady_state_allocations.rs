//! Zero heap allocations per packet in steady state (issue 9's target), checked on the session
//! layer every protocol uses: two players exchange reliable and unreliable events and states
//! through their links (encode, decode, acknowledge, deliver), and a counting allocator (per
//! thread, so other tests running at the same time do not count) must see no allocation at all
//! once the windows and queues have warmed up. The same for the gameserver's relay: sixteen
//! ships flying across the cells of its spatial grid, their states filtered by distance and
//! their reliable events forwarded. `parsecnet bench` measures the same over real sockets
//! through the C API.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::net::{Ipv4Addr, SocketAddr};

use net_core::relay::{RelayConfig, RelayCore};
use net_core::rmev::{CustomData, EarlierTokens, PlayerName, RemoteEvent, ResumeStep, ShipState};
use net_core::session::{
    Link, LinkConfig, LocalPlayer, NodeEq, PacketMeta, Session, SessionConfig,
};
use net_core::sim::Rng;
use net_core::wire::{decode_packet, PacketType};
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

/// One ship of the relay test: its link to the relay and where it flies.
struct Ship {
    addr: SocketAddr,
    token: u32,
    link: Link,
    state: ShipState,
}

#[test]
fn a_relay_forwarding_ships_across_its_grid_allocates_nothing_per_packet() {
    const SHIPS: u8 = 16;
    const DISTANCE: f32 = 1_000.0;
    let start = Instant::now();
    let mut relay = RelayCore::new(RelayConfig {
        distance: DISTANCE,
        ..RelayConfig::default()
    });
    let mut rng = Rng::new(9);
    let mut ships: Vec<Ship> = (0..SHIPS)
        .map(|slot| {
            let addr = SocketAddr::from((Ipv4Addr::new(10, 0, 0, slot + 1), 6526));
            let token = 0x100 + u32::from(slot);
            relay.add_client(start, slot, addr, token);
            let mut link = Link::new(LinkConfig::default());
            link.queue_event(RemoteEvent::Resume(ResumeStep::Hello(
                EarlierTokens::default(),
            )));
            link.queue_event(RemoteEvent::PlayerStatus {
                joined: true,
                flag: 0,
            });
            Ship {
                addr,
                token,
                link,
                state: ShipState::default(),
            }
        })
        .collect();
    let mut buf = vec![0u8; 1400];
    let mut events = Vec::with_capacity(256);
    let mut out: Vec<(SocketAddr, Vec<u8>)> = (0..256)
        .map(|_| (ships[0].addr, Vec::with_capacity(1400)))
        .collect();
    let tick = Duration::from_millis(50);
    let (mut counted, mut packets, mut crossings) = (0u64, 0usize, 0u32);
    for round in 0..1_500u32 {
        let now = start + tick * (round + 1);
        let measuring = round >= 500;
        for (slot, ship) in ships.iter_mut().enumerate() {
            // A walk in a 4 x 4 x 1 cell box: ships keep crossing cells and meeting.
            let cell_before = (ship.state.pos[0] / DISTANCE).floor();
            for axis in 0..2 {
                let p = &mut ship.state.pos[axis];
                *p = (*p + (rng.unit() as f32 - 0.5) * 400.0).rem_euclid(4.0 * DISTANCE);
            }
            crossings += u32::from((ship.state.pos[0] / DISTANCE).floor() != cell_before);
            if round % 4 == slot as u32 % 4 {
                let data = CustomData::new(&round.to_le_bytes()).expect("small");
                ship.link.queue_event(RemoteEvent::Custom {
                    custom_type: 7,
                    data,
                    reliable: true,
                });
            }
            let meta = PacketMeta {
                kind: PacketType::GameState,
                sender_slot: Some(slot as u8),
                joined: true,
                token: ship.token,
                relay: false,
            };
            let len = ship
                .link
                .write_packet(now, &mut buf, meta, Some(&ship.state))
                .expect("encodes");
            let before = allocations();
            relay.handle_datagram(now, ship.addr, &buf[..len]);
            if measuring {
                counted += allocations() - before;
                packets += 1;
            }
        }
        let before = allocations();
        relay.handle_timeout(now);
        let mut sent = 0;
        while let Some((to, len)) = relay.poll_transmit(now, &mut buf) {
            let (addr, data) = &mut out[sent];
            *addr = to;
            data.clear();
            data.extend_from_slice(&buf[..len]);
            sent += 1;
        }
        if measuring {
            counted += allocations() - before;
            packets += sent;
        }
        for (to, data) in &out[..sent] {
            let ship = ships.iter_mut().find(|s| s.addr == *to).expect("a ship");
            let packet = decode_packet(data, &mut events).expect("decodes");
            ship.link.handle_packet(
                now,
                &packet.header,
                packet.state.as_ref(),
                &events,
                &mut |_| {},
            );
        }
    }
    assert!(
        crossings > 1_000,
        "the ships crossed cells only {crossings} times"
    );
    assert!(
        relay.stats().states_filtered_by_distance > 0,
        "no state was filtered"
    );
    assert!(packets > 20_000, "only {packets} packets through the relay");
    assert_eq!(
        counted, 0,
        "{counted} heap allocations in the relay over {packets} packets in steady state"
    );
}
