//! Byte strings of at most 256 bytes held in recycled heap blocks: the storage of the two large
//! remote-event payloads (custom data and chat text).
//!
//! Stored inline, those payloads made every remote event 264 bytes and every game event 272,
//! and each hop of an event (game -> queue -> link -> wire -> queue -> game) copied all of it.
//! Here the value is a 16-byte handle, so events move as about 48 bytes, and only the bytes in
//! use are copied when a payload is duplicated. Blocks go back to a per-thread free list when a
//! value is dropped and are taken from it when one is made, so steady traffic allocates nothing
//! once the blocks in circulation exist (`tests/steady_state_allocations.rs` holds this).

use std::cell::RefCell;
use std::fmt;
use std::hash::{Hash, Hasher};

/// Capacity of one block: the largest payload (`rmev::MAX_CUSTOM_DATA`).
pub const BLOCK_LEN: usize = 256;

/// Most free blocks one thread keeps (256 KiB); more are given back to the allocator.
const FREE_LIST_CAP: usize = 1024;
/// Blocks a thread makes at once the first time it needs one (64 KiB): enough for the events a
/// busy link holds (in flight, queued, waiting for the game), so traffic after the first event
/// does not allocate while the number of payloads alive grows to its working level.
const FIRST_BLOCKS: usize = 256;

type Block = Box<[u8; BLOCK_LEN]>;

thread_local! {
    static FREE_BLOCKS: RefCell<Vec<Block>> = const { RefCell::new(Vec::new()) };
}

fn new_block() -> Block {
    Box::new([0; BLOCK_LEN])
}

/// Set up a thread's free list the first time it is used: its full capacity, so it never grows
/// in the middle of traffic, and the first blocks.
fn prepare(free: &mut Vec<Block>) {
    if free.capacity() == 0 {
        free.reserve_exact(FREE_LIST_CAP);
        free.extend((0..FIRST_BLOCKS).map(|_| new_block()));
    }
}

fn take_block() -> Block {
    FREE_BLOCKS
        .try_with(|free| {
            let mut free = free.try_borrow_mut().ok()?;
            prepare(&mut free);
            free.pop()
        })
        .ok()
        .flatten()
        .unwrap_or_else(new_block)
}

fn give_back(block: Block) {
    // When the thread's list is gone (thread exit) or full, the block is simply freed.
    let _ = FREE_BLOCKS.try_with(move |free| {
        if let Ok(mut free) = free.try_borrow_mut() {
            prepare(&mut free);
            if free.len() < FREE_LIST_CAP {
                free.push(block);
            }
        }
    });
}

/// Up to [`BLOCK_LEN`] bytes; empty values hold no block.
pub struct PooledBytes {
    block: Option<Block>,
    len: u16,
}

impl PooledBytes {
    /// No bytes.
    pub const fn empty() -> PooledBytes {
        PooledBytes {
            block: None,
            len: 0,
        }
    }

    /// A copy of `bytes`, or `None` when longer than [`BLOCK_LEN`].
    pub fn copy_of(bytes: &[u8]) -> Option<PooledBytes> {
        if bytes.len() > BLOCK_LEN {
            return None;
        }
        if bytes.is_empty() {
            return Some(PooledBytes::empty());
        }
        let mut block = take_block();
        block[..bytes.len()].copy_from_slice(bytes);
        Some(PooledBytes {
            block: Some(block),
            len: bytes.len() as u16,
        })
    }

    pub fn as_bytes(&self) -> &[u8] {
        match &self.block {
            Some(block) => &block[..usize::from(self.len)],
            None => &[],
        }
    }

    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for PooledBytes {
    fn drop(&mut self) {
        if let Some(block) = self.block.take() {
            give_back(block);
        }
    }
}

impl Clone for PooledBytes {
    fn clone(&self) -> PooledBytes {
        // Within BLOCK_LEN by construction.
        PooledBytes::copy_of(self.as_bytes()).unwrap_or_else(PooledBytes::empty)
    }
}

impl Default for PooledBytes {
    fn default() -> PooledBytes {
        PooledBytes::empty()
    }
}

impl PartialEq for PooledBytes {
    fn eq(&self, other: &PooledBytes) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for PooledBytes {}

impl Hash for PooledBytes {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl fmt::Debug for PooledBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} bytes", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_compare_and_clone_by_content() {
        let a = PooledBytes::copy_of(b"hello").unwrap();
        let b = a.clone();
        assert_eq!(a, b);
        assert_eq!(b.as_bytes(), b"hello");
        assert_eq!(b.len(), 5);
        assert_ne!(a, PooledBytes::copy_of(b"hellO").unwrap());
        assert!(PooledBytes::copy_of(&[7; BLOCK_LEN]).is_some());
        assert!(PooledBytes::copy_of(&[7; BLOCK_LEN + 1]).is_none());
        assert!(PooledBytes::copy_of(b"").unwrap().block.is_none());
    }

    #[test]
    fn a_dropped_block_is_reused_without_its_old_bytes_showing() {
        drop(PooledBytes::copy_of(&[9; 200]).unwrap());
        let reused = PooledBytes::copy_of(b"ab").unwrap();
        assert_eq!(reused.as_bytes(), b"ab");
        let free = FREE_BLOCKS.with(|f| f.borrow().len());
        drop(reused);
        assert_eq!(FREE_BLOCKS.with(|f| f.borrow().len()), free + 1);
    }

    #[test]
    fn handles_are_small() {
        assert!(std::mem::size_of::<PooledBytes>() <= 16);
    }
}
