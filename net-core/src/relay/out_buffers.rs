//! Reused buffers for the datagrams the relay queues to send. A buffer is made in one of two
//! sizes (small, which fits a state packet with a few events, or the largest payload) and goes
//! back to the pool of its size once sent, so a reused buffer never has to grow: the relay's
//! steady traffic allocates nothing once the buffers in circulation exist, without every buffer
//! costing the largest payload.

/// Capacity of a small buffer.
const SMALL: usize = 256;
/// Most buffers kept per size; more are given back to the allocator.
const MAX_SPARE: usize = 256;

/// Spare buffers by size.
#[derive(Debug, Default)]
pub struct OutBuffers {
    small: Vec<Vec<u8>>,
    large: Vec<Vec<u8>>,
}

impl OutBuffers {
    /// An empty buffer that holds `len` bytes without growing; `largest` is the capacity of a
    /// large one (at least `len`).
    pub fn take(&mut self, len: usize, largest: usize) -> Vec<u8> {
        let (pool, capacity) = if len <= SMALL {
            (&mut self.small, SMALL)
        } else {
            (&mut self.large, largest.max(len))
        };
        match pool.pop() {
            Some(mut buf) if buf.capacity() >= len => {
                buf.clear();
                buf
            }
            _ => Vec::with_capacity(capacity),
        }
    }

    /// A sent buffer, for a later packet of its size.
    pub fn give_back(&mut self, buf: Vec<u8>) {
        let pool = if buf.capacity() <= SMALL {
            &mut self.small
        } else {
            &mut self.large
        };
        if pool.len() < MAX_SPARE {
            pool.push(buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reused_buffers_hold_their_packet_without_growing() {
        let mut pool = OutBuffers::default();
        let small = pool.take(100, 1400);
        let large = pool.take(900, 1400);
        assert_eq!((small.capacity(), large.capacity()), (SMALL, 1400));
        let (small_at, large_at) = (small.as_ptr(), large.as_ptr());
        pool.give_back(large);
        pool.give_back(small);
        // A packet of either size gets back a buffer of its class, the same allocation.
        let mut again = pool.take(SMALL, 1400);
        assert_eq!(again.as_ptr(), small_at);
        again.extend_from_slice(&[0; SMALL]);
        assert_eq!(again.as_ptr(), small_at);
        let mut again = pool.take(1400, 1400);
        assert_eq!(again.as_ptr(), large_at);
        again.extend_from_slice(&[0; 1400]);
        assert_eq!(again.as_ptr(), large_at);
    }

    #[test]
    fn the_pools_are_bounded() {
        let mut pool = OutBuffers::default();
        for _ in 0..MAX_SPARE + 10 {
            pool.give_back(Vec::with_capacity(SMALL));
        }
        assert_eq!(pool.small.len(), MAX_SPARE);
        assert!(pool.large.is_empty());
    }
}
