//! A uniform spatial grid over ship positions (keyed by client id), so the gameserver finds the clients within the
//! forwarding distance of a ship by looking at the 27 cells around it instead of at every
//! client (cells are as wide as the distance).
//!
//! The ships of a cell form a list threaded through their own entries (each names the next and
//! the one before), so a ship crossing into another cell moves in constant time and allocates
//! nothing: the two maps only reach their working size.

use std::collections::HashMap;

type Cell = (i64, i64, i64);

/// Where a ship is, and its neighbours in its cell's list.
#[derive(Clone, Copy, Debug)]
struct Entry {
    pos: [f32; 3],
    cell: Cell,
    prev: Option<u16>,
    next: Option<u16>,
}

/// Slots by grid cell.
#[derive(Debug, Default)]
pub struct SpatialGrid {
    cell_size: f32,
    /// The first ship of every occupied cell.
    cells: HashMap<Cell, u16>,
    ships: HashMap<u16, Entry>,
}

impl SpatialGrid {
    /// A grid whose cells are `cell_size` wide (the forwarding distance; must be > 0).
    pub fn new(cell_size: f32) -> SpatialGrid {
        SpatialGrid {
            cell_size: cell_size.max(f32::MIN_POSITIVE),
            cells: HashMap::new(),
            ships: HashMap::new(),
        }
    }

    fn cell_of(&self, pos: [f32; 3]) -> Cell {
        let c = |v: f32| {
            (v / self.cell_size)
                .floor()
                .clamp(i64::MIN as f32, i64::MAX as f32) as i64
        };
        (c(pos[0]), c(pos[1]), c(pos[2]))
    }

    /// Put (or move) `slot` at `pos`.
    pub fn update(&mut self, slot: u16, pos: [f32; 3]) {
        let cell = self.cell_of(pos);
        match self.ships.get_mut(&slot) {
            Some(entry) if entry.cell == cell => entry.pos = pos,
            Some(_) => {
                self.unlink(slot);
                self.link(slot, pos, cell);
            }
            None => {
                // Room for twice as many cells as ships: the map then never grows again while
                // ships only move (tombstones of emptied cells are cleared in place).
                let cells = 2 * (self.ships.len() + 1);
                self.cells.reserve(cells.saturating_sub(self.cells.len()));
                self.link(slot, pos, cell);
            }
        }
    }

    /// Make `slot` the first ship of `cell`.
    fn link(&mut self, slot: u16, pos: [f32; 3], cell: Cell) {
        let next = self.cells.insert(cell, slot);
        if let Some(entry) = next.and_then(|n| self.ships.get_mut(&n)) {
            entry.prev = Some(slot);
        }
        self.ships.insert(
            slot,
            Entry {
                pos,
                cell,
                prev: None,
                next,
            },
        );
    }

    /// Take `slot` out of its cell's list (it stays in `ships`).
    fn unlink(&mut self, slot: u16) {
        let Some(Entry {
            cell, prev, next, ..
        }) = self.ships.get(&slot).copied()
        else {
            return;
        };
        match prev {
            Some(p) => {
                if let Some(entry) = self.ships.get_mut(&p) {
                    entry.next = next;
                }
            }
            None => match next {
                Some(n) => {
                    self.cells.insert(cell, n);
                }
                None => {
                    self.cells.remove(&cell);
                }
            },
        }
        if let Some(entry) = next.and_then(|n| self.ships.get_mut(&n)) {
            entry.prev = prev;
        }
    }

    pub fn remove(&mut self, slot: u16) {
        self.unlink(slot);
        self.ships.remove(&slot);
    }

    pub fn position(&self, slot: u16) -> Option<[f32; 3]> {
        self.ships.get(&slot).map(|e| e.pos)
    }

    /// Whether `slot` has a known position.
    pub fn contains(&self, slot: u16) -> bool {
        self.ships.contains_key(&slot)
    }

    /// Every slot within `distance` of `pos` (distance <= cell size), into `out`.
    pub fn within(&self, pos: [f32; 3], distance: f32, out: &mut Vec<u16>) {
        out.clear();
        // Room for every ship at once, so `out` grows only when ships are added.
        out.reserve(self.ships.len());
        let (cx, cy, cz) = self.cell_of(pos);
        let limit = distance * distance;
        for dx in -1..=1 {
            for dy in -1..=1 {
                for dz in -1..=1 {
                    let cell = (
                        cx.saturating_add(dx),
                        cy.saturating_add(dy),
                        cz.saturating_add(dz),
                    );
                    let mut at = self.cells.get(&cell).copied();
                    while let Some(slot) = at {
                        let entry = &self.ships[&slot];
                        let p = entry.pos;
                        let d2: f32 = (0..3).map(|i| (p[i] - pos[i]) * (p[i] - pos[i])).sum();
                        if d2 <= limit {
                            out.push(slot);
                        }
                        at = entry.next;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_exactly_the_slots_within_the_distance() {
        let mut grid = SpatialGrid::new(100.0);
        grid.update(1, [0.0, 0.0, 0.0]);
        grid.update(2, [99.0, 0.0, 0.0]);
        grid.update(3, [101.0, 0.0, 0.0]);
        grid.update(4, [-70.0, 70.0, 0.0]);
        grid.update(5, [5000.0, 0.0, 0.0]);
        let mut out = Vec::new();
        grid.within([0.0, 0.0, 0.0], 100.0, &mut out);
        out.sort();
        assert_eq!(out, vec![1, 2, 4]);
        // Moving across cells keeps the index right.
        grid.update(5, [10.0, 0.0, 0.0]);
        grid.update(2, [900.0, 0.0, 0.0]);
        grid.within([0.0, 0.0, 0.0], 100.0, &mut out);
        out.sort();
        assert_eq!(out, vec![1, 4, 5]);
        grid.remove(1);
        grid.within([0.0, 0.0, 0.0], 100.0, &mut out);
        out.sort();
        assert_eq!(out, vec![4, 5]);
        assert!(!grid.contains(1));
    }

    /// Ships placed, moved across cells, removed and placed again at random: after every step
    /// the grid answers exactly what a search of all ships answers.
    #[test]
    fn matches_a_brute_force_search_while_ships_move_and_leave() {
        let mut rng = crate::sim::Rng::new(3);
        let mut grid = SpatialGrid::new(50.0);
        let mut all: HashMap<u16, [f32; 3]> = HashMap::new();
        let random_pos = |rng: &mut crate::sim::Rng| {
            [
                (rng.unit() * 400.0 - 200.0) as f32,
                (rng.unit() * 400.0 - 200.0) as f32,
                (rng.unit() * 40.0) as f32,
            ]
        };
        let mut out = Vec::new();
        for step in 0..3000 {
            let slot = (rng.unit() * 120.0) as u16;
            if rng.unit() < 0.15 {
                grid.remove(slot);
                all.remove(&slot);
            } else {
                let p = random_pos(&mut rng);
                grid.update(slot, p);
                all.insert(slot, p);
            }
            if step % 10 != 0 {
                continue;
            }
            let center = random_pos(&mut rng);
            grid.within(center, 50.0, &mut out);
            let mut want: Vec<u16> = all
                .iter()
                .filter(|(_, p)| (0..3).map(|i| (p[i] - center[i]).powi(2)).sum::<f32>() <= 2500.0)
                .map(|(s, _)| *s)
                .collect();
            out.sort();
            want.sort();
            assert_eq!(out, want, "step {step}");
            for (slot, p) in &all {
                assert_eq!(grid.position(*slot), Some(*p));
            }
        }
        // Every ship is in exactly one cell's list.
        let listed: usize = grid
            .cells
            .values()
            .map(|&head| std::iter::successors(Some(head), |s| grid.ships[s].next).count())
            .sum();
        assert_eq!(listed, all.len());
    }
}
