//! A uniform spatial grid over ship positions (keyed by client id), so the gameserver finds the clients within the
//! forwarding distance of a ship by looking at the 27 cells around it instead of at every
//! client (cells are as wide as the distance).

use std::collections::HashMap;

type Cell = (i64, i64, i64);

/// Slots by grid cell.
#[derive(Debug, Default)]
pub struct SpatialGrid {
    cell_size: f32,
    cells: HashMap<Cell, Vec<u16>>,
    positions: HashMap<u16, ([f32; 3], Cell)>,
}

impl SpatialGrid {
    /// A grid whose cells are `cell_size` wide (the forwarding distance; must be > 0).
    pub fn new(cell_size: f32) -> SpatialGrid {
        SpatialGrid {
            cell_size: cell_size.max(f32::MIN_POSITIVE),
            cells: HashMap::new(),
            positions: HashMap::new(),
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
        if let Some((_, old)) = self.positions.get(&slot).copied() {
            if old != cell {
                self.remove_from_cell(slot, old);
                self.cells.entry(cell).or_default().push(slot);
            }
        } else {
            self.cells.entry(cell).or_default().push(slot);
        }
        self.positions.insert(slot, (pos, cell));
    }

    fn remove_from_cell(&mut self, slot: u16, cell: Cell) {
        if let Some(members) = self.cells.get_mut(&cell) {
            members.retain(|s| *s != slot);
            if members.is_empty() {
                self.cells.remove(&cell);
            }
        }
    }

    pub fn remove(&mut self, slot: u16) {
        if let Some((_, cell)) = self.positions.remove(&slot) {
            self.remove_from_cell(slot, cell);
        }
    }

    pub fn position(&self, slot: u16) -> Option<[f32; 3]> {
        self.positions.get(&slot).map(|(p, _)| *p)
    }

    /// Whether `slot` has a known position.
    pub fn contains(&self, slot: u16) -> bool {
        self.positions.contains_key(&slot)
    }

    /// Every slot within `distance` of `pos` (distance <= cell size), into `out`.
    pub fn within(&self, pos: [f32; 3], distance: f32, out: &mut Vec<u16>) {
        out.clear();
        let (cx, cy, cz) = self.cell_of(pos);
        let limit = distance * distance;
        for dx in -1..=1 {
            for dy in -1..=1 {
                for dz in -1..=1 {
                    let Some(members) = self.cells.get(&(
                        cx.saturating_add(dx),
                        cy.saturating_add(dy),
                        cz.saturating_add(dz),
                    )) else {
                        continue;
                    };
                    for &slot in members {
                        let (p, _) = self.positions[&slot];
                        let d2: f32 = (0..3).map(|i| (p[i] - pos[i]) * (p[i] - pos[i])).sum();
                        if d2 <= limit {
                            out.push(slot);
                        }
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

    #[test]
    fn matches_a_brute_force_search() {
        let mut rng = crate::sim::Rng::new(3);
        let mut grid = SpatialGrid::new(50.0);
        let mut all = Vec::new();
        for slot in 0..200u16 {
            let p = [
                (rng.unit() * 400.0 - 200.0) as f32,
                (rng.unit() * 400.0 - 200.0) as f32,
                (rng.unit() * 40.0) as f32,
            ];
            grid.update(slot, p);
            all.push((slot, p));
        }
        let mut out = Vec::new();
        for &(_, center) in all.iter().take(20) {
            grid.within(center, 50.0, &mut out);
            let mut want: Vec<u16> = all
                .iter()
                .filter(|(_, p)| (0..3).map(|i| (p[i] - center[i]).powi(2)).sum::<f32>() <= 2500.0)
                .map(|(s, _)| *s)
                .collect();
            out.sort();
            want.sort();
            assert_eq!(out, want);
        }
    }
}
