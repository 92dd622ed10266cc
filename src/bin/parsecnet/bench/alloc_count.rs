//! A counting global allocator for the `parsecnet` program: every allocation (and reallocation)
//! adds one to a process-wide counter with a relaxed atomic add, and the bytes in use are kept
//! in a second counter; then the call goes to the system allocator. The benchmarks read the counter around a steady-state exchange to find the heap
//! allocations per packet; `overhead` measures what the counting costs.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Instant;

/// The system allocator with an allocation counter in front (registered by `main.rs` as the
/// program's global allocator).
pub struct CountingAllocator;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static LIVE_BYTES: AtomicI64 = AtomicI64::new(0);

// SAFETY: every call is passed on unchanged to the system allocator; the counter has no effect
// on the memory handed out.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        LIVE_BYTES.fetch_add(layout.size() as i64, Ordering::Relaxed);
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        LIVE_BYTES.fetch_add(layout.size() as i64, Ordering::Relaxed);
        System.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        LIVE_BYTES.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
}

/// Allocations (and reallocations) made by the whole process so far.
pub fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}

/// Heap bytes the process holds now (requested sizes, not the allocator's rounding).
pub fn live_bytes() -> i64 {
    LIVE_BYTES.load(Ordering::Relaxed)
}

/// What the counting costs: ns per 64-byte allocate-and-free pair through the system allocator
/// directly and through the counting one, best of several interleaved repetitions.
pub fn overhead(pairs: u64) -> (f64, f64) {
    let layout = Layout::from_size_align(64, 8).expect("valid layout");
    let time = |counting: bool| {
        let start = Instant::now();
        for _ in 0..pairs {
            // SAFETY: a non-zero layout; the block is freed with the same layout right away.
            unsafe {
                if counting {
                    let p = CountingAllocator.alloc(black_box(layout));
                    CountingAllocator.dealloc(black_box(p), layout);
                } else {
                    let p = System.alloc(black_box(layout));
                    System.dealloc(black_box(p), layout);
                }
            }
        }
        start.elapsed().as_secs_f64() * 1e9 / pairs as f64
    };
    let (mut direct, mut counted) = (f64::MAX, f64::MAX);
    for round in 0..7 {
        if round % 2 == 0 {
            direct = direct.min(time(false));
            counted = counted.min(time(true));
        } else {
            counted = counted.min(time(true));
            direct = direct.min(time(false));
        }
    }
    (direct, counted)
}
