//! Gameserver scaling: N simulated clients at 20 Hz against the gameserver's relay core
//! (`net_core::relay::RelayCore`, the sans-IO part of `parsecnet gameserver`). A relay holds at
//! most 16 slots (one game, `rmev::MAX_SLOTS`), so N clients are N/16 relay cores, as N/16 games
//! on one server would be. Every client has its own reliable link and sends a real encoded game
//! packet (its ship state) every tick from a random walk in a square world; it joined with a
//! reliable player-status event, so the relay filters states by distance. The relay's packets
//! are decoded and handled by the clients (acknowledgements flow back).
//!
//! Time is virtual (a tick is 50 ms of `Instant` handed to the cores) so the run is quick; the
//! CPU figure is the monotonic-clock time spent inside the relay calls (datagrams in, the
//! forwarding pass, datagrams out) per tick: single-threaded, so it is CPU time plus whatever
//! preemption the machine added (an upper bound). Socket system calls are not included (there
//! are no sockets); the notes say so. Memory per client is the relay's heap: the live bytes
//! freed when the cores are dropped, divided by N.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use net_core::relay::{RelayConfig, RelayCore};
use net_core::rmev::{EarlierTokens, RemoteEvent, ResumeStep, ShipState, MAX_SLOTS};
use net_core::session::{Link, LinkConfig, PacketMeta};
use net_core::wire::{decode_packet, PacketType, WireEvent};

use super::alloc_count::{allocations, live_bytes};
use super::json::Json;
use super::report::{Figure, Section, Target};

pub const TITLE: &str = "gameserver scaling, 20 Hz, distance filter";

const TICK: Duration = Duration::from_millis(50);
/// Side of the square world, and the forwarding distance (the gameserver's default).
const WORLD: f32 = 40_000.0;
const DISTANCE: f32 = 10_000.0;

#[derive(Clone, Copy, Debug)]
pub struct ScalingPlan {
    pub clients: &'static [usize],
    pub warmup_ticks: u32,
    pub ticks: u32,
}

/// The figures for one client count.
#[derive(Clone, Debug)]
pub struct ScalingRow {
    pub clients: usize,
    pub cores: usize,
    pub cpu_us_per_tick: f64,
    /// Share of one core: busy time per tick / tick length.
    pub core_share: f64,
    pub bytes_out_per_client_s: f64,
    pub bytes_in_per_client_s: f64,
    pub heap_bytes_per_client: f64,
    pub allocations_per_packet: f64,
    pub states_filtered_share: f64,
}

/// A small deterministic generator (xorshift) so every run walks the same way.
struct Walk(u64);

impl Walk {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32
    }
}

struct SimClient {
    core: usize,
    slot: u8,
    addr: SocketAddr,
    token: u32,
    link: Link,
    state: ShipState,
}

impl SimClient {
    fn step(&mut self, walk: &mut Walk) {
        for axis in 0..2 {
            let v = &mut self.state.vel[axis];
            *v = (*v + (walk.next() - 0.5) * 20.0).clamp(-200.0, 200.0);
            let p = &mut self.state.pos[axis];
            *p = (*p + *v).rem_euclid(WORLD);
        }
    }
}

/// The address of client `index` (never used on a socket: it names the client to the core).
fn client_addr(index: usize) -> SocketAddr {
    let [_, a, b, _] = (index as u32).to_be_bytes();
    SocketAddr::new(
        IpAddr::V4(Ipv4Addr::new(10, a, b, 1)),
        20_000 + (index % 256) as u16,
    )
}

fn run_one(clients: usize, plan: ScalingPlan) -> Result<ScalingRow, String> {
    let cores_needed = clients.div_ceil(MAX_SLOTS);
    let start = Instant::now();
    let config = RelayConfig {
        distance: DISTANCE,
        ..RelayConfig::default()
    };
    let mut cores: Vec<RelayCore> = (0..cores_needed).map(|_| RelayCore::new(config)).collect();
    let mut walk = Walk(0x9E37_79B9_7F4A_7C15);
    let mut sims: Vec<SimClient> = (0..clients)
        .map(|i| {
            let state = ShipState {
                pos: [walk.next() * WORLD, walk.next() * WORLD, 0.0],
                ..ShipState::default()
            };
            SimClient {
                core: i / MAX_SLOTS,
                slot: (i % MAX_SLOTS) as u8,
                addr: client_addr(i),
                token: 0x1000 + i as u32,
                link: Link::new(LinkConfig::default()),
                state,
            }
        })
        .collect();
    for sim in &mut sims {
        cores[sim.core].add_client(start, sim.slot, sim.addr, sim.token);
        // As a real client does: the RE_RESUME hello first (the server holds a newcomer's
        // events until it), then the join.
        sim.link.queue_event(RemoteEvent::Resume(ResumeStep::Hello(
            EarlierTokens::default(),
        )));
        sim.link.queue_event(RemoteEvent::PlayerStatus {
            joined: true,
            flag: 0,
        });
    }
    // Index of the client by (core, slot) for delivering the relay's packets.
    let by_slot = |core: usize, addr: SocketAddr, sims: &[SimClient]| {
        let first = core * MAX_SLOTS;
        (first..(first + MAX_SLOTS).min(sims.len())).find(|&i| sims[i].addr == addr)
    };

    let mut inbound: Vec<Vec<(SocketAddr, usize, [u8; 1400])>> = vec![Vec::new(); cores_needed];
    let mut outbound: Vec<(usize, SocketAddr, usize, [u8; 1400])> = Vec::new();
    let mut events: Vec<WireEvent> = Vec::new();
    let (mut busy, mut bytes_in, mut bytes_out) = (Duration::ZERO, 0u64, 0u64);
    let (mut relay_allocations, mut relay_packets) = (0u64, 0u64);
    let total_ticks = plan.warmup_ticks + plan.ticks;
    for tick in 0..total_ticks {
        let now = start + TICK * (tick + 1);
        let measuring = tick >= plan.warmup_ticks;
        // The clients write their packets (not timed).
        for sim in &mut sims {
            sim.step(&mut walk);
            let mut buf = [0u8; 1400];
            let meta = PacketMeta {
                kind: PacketType::GameState,
                sender_slot: Some(sim.slot),
                joined: true,
                token: sim.token,
                relay: false,
            };
            let len = sim
                .link
                .write_packet(now, &mut buf, meta, Some(&sim.state))
                .map_err(|e| format!("client packet: {e}"))?;
            inbound[sim.core].push((sim.addr, len, buf));
        }
        // The relays (timed): the burst in, the forwarding pass, the datagrams out.
        outbound.clear();
        let allocations_before = allocations();
        let t0 = Instant::now();
        for (index, core) in cores.iter_mut().enumerate() {
            for (from, len, data) in &inbound[index] {
                core.handle_datagram(now, *from, &data[..*len]);
            }
            core.handle_timeout(now);
            let mut buf = [0u8; 1400];
            while let Some((to, len)) = core.poll_transmit(now, &mut buf) {
                outbound.push((index, to, len, buf));
            }
        }
        let elapsed = t0.elapsed();
        let allocated = allocations() - allocations_before;
        if measuring {
            busy += elapsed;
            relay_allocations += allocated;
            relay_packets += (inbound.iter().map(Vec::len).sum::<usize>() + outbound.len()) as u64;
            bytes_in += inbound
                .iter()
                .flatten()
                .map(|(_, len, _)| *len as u64)
                .sum::<u64>();
            bytes_out += outbound
                .iter()
                .map(|(_, _, len, _)| *len as u64)
                .sum::<u64>();
        }
        for queue in &mut inbound {
            queue.clear();
        }
        // The clients take the relay's packets (not timed): acknowledgements flow back.
        for (core, to, len, data) in &outbound {
            let Some(i) = by_slot(*core, *to, &sims) else {
                return Err(format!("relay sent to an unknown address {to}"));
            };
            let packet = decode_packet(&data[..*len], &mut events)
                .map_err(|e| format!("relay packet: {e}"))?;
            sims[i].link.handle_packet(
                now,
                &packet.header,
                packet.state.as_ref(),
                &events,
                &mut |_| {},
            );
        }
    }
    let (mut states_in, mut filtered) = (0u64, 0u64);
    for core in &cores {
        states_in += core.stats().states_in;
        filtered += core.stats().states_filtered_by_distance;
        if core.client_count() == 0 {
            return Err("a relay lost its clients".into());
        }
    }
    // The relay's heap: what dropping the cores gives back.
    let heap_with_cores = live_bytes();
    drop(cores);
    let relay_heap = heap_with_cores - live_bytes();
    let secs = TICK.as_secs_f64() * f64::from(plan.ticks);
    let cpu_us_per_tick = busy.as_secs_f64() * 1e6 / f64::from(plan.ticks);
    let possible = states_in as f64 * (MAX_SLOTS.min(clients) - 1) as f64;
    Ok(ScalingRow {
        clients,
        cores: cores_needed,
        cpu_us_per_tick,
        core_share: cpu_us_per_tick / (TICK.as_secs_f64() * 1e6),
        bytes_out_per_client_s: bytes_out as f64 / clients as f64 / secs,
        bytes_in_per_client_s: bytes_in as f64 / clients as f64 / secs,
        heap_bytes_per_client: relay_heap as f64 / clients as f64,
        allocations_per_packet: relay_allocations as f64 / relay_packets.max(1) as f64,
        states_filtered_share: if possible > 0.0 {
            filtered as f64 / possible
        } else {
            0.0
        },
    })
}

pub fn measure(plan: ScalingPlan) -> Result<Vec<ScalingRow>, String> {
    plan.clients.iter().map(|&n| run_one(n, plan)).collect()
}

pub fn section(plan: ScalingPlan, rows: &[ScalingRow]) -> Section {
    let mut s = Section::new("gameserver_scaling", TITLE);
    for r in rows {
        let n = r.clients;
        let mut cpu = Figure::new(
            &format!("cpu_us_per_tick_{n}"),
            &format!("{n} clients ({} relays): CPU per tick", r.cores),
            r.cpu_us_per_tick,
            "µs",
        );
        let mut share = Figure::new(
            &format!("core_share_{n}"),
            &format!("{n} clients: share of one core"),
            r.core_share,
            "cores",
        );
        if n == 1000 {
            share = share.target(Target::AtMost(0.5));
        }
        if let Some(first) = rows.first().filter(|f| f.clients != n) {
            // Per-client cost against the smallest game.
            cpu = cpu.baseline(first.cpu_us_per_tick * n as f64 / first.clients as f64);
        }
        s.figure(cpu);
        s.figure(share);
        s.figure(Figure::new(
            &format!("bytes_out_per_client_s_{n}"),
            &format!("{n} clients: bytes to each client"),
            r.bytes_out_per_client_s,
            "B/s",
        ));
        s.figure(Figure::new(
            &format!("bytes_in_per_client_s_{n}"),
            &format!("{n} clients: bytes from each client"),
            r.bytes_in_per_client_s,
            "B/s",
        ));
        s.figure(Figure::new(
            &format!("heap_per_client_{n}"),
            &format!("{n} clients: relay heap per client"),
            r.heap_bytes_per_client,
            "B",
        ));
        s.figure(
            Figure::new(
                &format!("allocations_per_packet_{n}"),
                &format!("{n} clients: relay heap allocations per packet"),
                r.allocations_per_packet,
                "",
            )
            .target(Target::AtMost(0.0)),
        );
    }
    s.note(format!(
        "N clients = N/16 RelayCore instances (a relay holds one game of at most 16 slots) in this process, sans-IO: no socket system calls are counted; {} measured ticks of 50 ms virtual time after {} warm-up ticks",
        plan.ticks, plan.warmup_ticks
    ));
    s.note(format!(
        "each client: own reliable link, one encoded state packet per tick, random walk in a {WORLD} x {WORLD} world, states forwarded within {DISTANCE}; CPU = monotonic time inside the relay calls per tick (baseline: the 16-client cost scaled linearly)"
    ));
    let filtered: Vec<String> = rows
        .iter()
        .map(|r| format!("{}: {:.0}%", r.clients, r.states_filtered_share * 100.0))
        .collect();
    s.note(format!(
        "states withheld by the distance filter: {}",
        filtered.join(", ")
    ));
    s.data.push((
        "rows".into(),
        Json::Arr(
            rows.iter()
                .map(|r| {
                    Json::obj([
                        ("clients", Json::Num(r.clients as f64)),
                        ("relays", Json::Num(r.cores as f64)),
                        ("cpu_us_per_tick", Json::Num(r.cpu_us_per_tick)),
                        ("core_share", Json::Num(r.core_share)),
                        (
                            "bytes_out_per_client_s",
                            Json::Num(r.bytes_out_per_client_s),
                        ),
                        ("bytes_in_per_client_s", Json::Num(r.bytes_in_per_client_s)),
                        ("heap_bytes_per_client", Json::Num(r.heap_bytes_per_client)),
                        (
                            "allocations_per_packet",
                            Json::Num(r.allocations_per_packet),
                        ),
                        ("states_filtered_share", Json::Num(r.states_filtered_share)),
                    ])
                })
                .collect(),
        ),
    ));
    s
}
