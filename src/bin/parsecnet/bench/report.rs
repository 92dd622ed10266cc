//! The benchmark's results: sections of named figures with units, baselines and targets; the
//! table printed at the end; and the JSON form written next to the plots.

use std::fmt::Write as _;

use super::json::Json;

/// A target a figure is held against.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Target {
    AtMost(f64),
    AtLeast(f64),
}

impl Target {
    pub fn met(self, value: f64) -> bool {
        match self {
            Target::AtMost(t) => value <= t,
            Target::AtLeast(t) => value >= t,
        }
    }

    fn text(self) -> String {
        match self {
            Target::AtMost(t) => format!("<= {}", number(t)),
            Target::AtLeast(t) => format!(">= {}", number(t)),
        }
    }
}

/// One measured figure.
#[derive(Clone, Debug)]
pub struct Figure {
    /// Short stable name for the JSON file ("ratio_p50").
    pub key: String,
    /// What it is, for the table ("whole stack / raw UDP, p50").
    pub label: String,
    pub value: f64,
    pub unit: &'static str,
    /// The same quantity measured for the baseline in the same run, if there is one.
    pub baseline: Option<f64>,
    pub target: Option<Target>,
}

impl Figure {
    pub fn new(key: &str, label: &str, value: f64, unit: &'static str) -> Figure {
        Figure {
            key: key.to_string(),
            label: label.to_string(),
            value,
            unit,
            baseline: None,
            target: None,
        }
    }

    pub fn baseline(mut self, baseline: f64) -> Figure {
        self.baseline = Some(baseline);
        self
    }

    /// value / baseline, if there is a baseline.
    pub fn ratio(&self) -> Option<f64> {
        self.baseline.map(|b| self.value / b)
    }

    pub fn target(mut self, target: Target) -> Figure {
        self.target = Some(target);
        self
    }

    pub fn met(&self) -> Option<bool> {
        self.target.map(|t| t.met(self.value))
    }
}

/// The figures of one measurement.
#[derive(Clone, Debug)]
pub struct Section {
    pub key: &'static str,
    pub title: &'static str,
    pub figures: Vec<Figure>,
    /// How it was measured (one line each).
    pub notes: Vec<String>,
    /// Raw data for the JSON file (samples, per-run values).
    pub data: Vec<(String, Json)>,
    /// Why the measurement could not be completed, if it failed.
    pub error: Option<String>,
}

impl Section {
    pub fn new(key: &'static str, title: &'static str) -> Section {
        Section {
            key,
            title,
            figures: Vec::new(),
            notes: Vec::new(),
            data: Vec::new(),
            error: None,
        }
    }

    pub fn failed(key: &'static str, title: &'static str, error: String) -> Section {
        Section {
            error: Some(error),
            ..Section::new(key, title)
        }
    }

    pub fn figure(&mut self, figure: Figure) {
        self.figures.push(figure);
    }

    pub fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    fn to_json(&self) -> Json {
        let figures = self.figures.iter().map(|f| {
            let mut pairs = vec![
                ("key", Json::str(&f.key)),
                ("label", Json::str(&f.label)),
                ("value", Json::Num(f.value)),
                ("unit", Json::str(f.unit)),
            ];
            if let (Some(b), Some(r)) = (f.baseline, f.ratio()) {
                pairs.push(("baseline", Json::Num(b)));
                pairs.push(("ratio", Json::Num(r)));
            }
            if let Some(t) = f.target {
                let (kind, value) = match t {
                    Target::AtMost(v) => ("at_most", v),
                    Target::AtLeast(v) => ("at_least", v),
                };
                pairs.push(("target", Json::obj([(kind, Json::Num(value))])));
                pairs.push(("met", Json::Bool(t.met(f.value))));
            }
            Json::obj(pairs)
        });
        let mut pairs = vec![
            ("key".to_string(), Json::str(self.key)),
            ("title".to_string(), Json::str(self.title)),
            ("figures".to_string(), Json::Arr(figures.collect())),
            (
                "notes".to_string(),
                Json::Arr(self.notes.iter().map(Json::str).collect()),
            ),
        ];
        if let Some(e) = &self.error {
            pairs.push(("error".to_string(), Json::str(e)));
        }
        pairs.push(("data".to_string(), Json::Obj(self.data.clone())));
        Json::Obj(pairs)
    }
}

/// A number with as many decimals as its size deserves.
pub fn number(v: f64) -> String {
    if !v.is_finite() {
        return "-".to_string();
    }
    let a = v.abs();
    if a >= 1000.0 || v.fract() == 0.0 {
        let whole = format!("{:.0}", v);
        // Thousands separated by commas for readability.
        let (sign, digits) = whole.split_at(usize::from(whole.starts_with('-')));
        let mut grouped = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                grouped.push(',');
            }
            grouped.push(c);
        }
        format!("{sign}{grouped}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// The table of every figure: measurement, figure, value, unit, baseline, ratio, target, met.
pub fn table(sections: &[Section]) -> String {
    const COLUMNS: usize = 8;
    let header = [
        "measurement",
        "figure",
        "value",
        "unit",
        "baseline",
        "ratio",
        "target",
        "met",
    ];
    let mut rows: Vec<[String; COLUMNS]> = vec![header.map(String::from)];
    for s in sections {
        if let Some(e) = &s.error {
            let mut row: [String; COLUMNS] = Default::default();
            row[0] = s.title.into();
            row[1] = format!("FAILED: {e}");
            rows.push(row);
            continue;
        }
        for (i, f) in s.figures.iter().enumerate() {
            rows.push([
                if i == 0 {
                    s.title.into()
                } else {
                    String::new()
                },
                f.label.clone(),
                number(f.value),
                f.unit.to_string(),
                f.baseline.map(number).unwrap_or_default(),
                f.ratio().map(number).unwrap_or_default(),
                f.target.map(Target::text).unwrap_or_default(),
                match f.met() {
                    Some(true) => "yes".into(),
                    Some(false) => "NO".into(),
                    None => String::new(),
                },
            ]);
        }
    }
    let widths: Vec<usize> = (0..COLUMNS)
        .map(|c| {
            rows.iter()
                .filter(|r| !r[1].starts_with("FAILED") || c != 1)
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, w))| {
                if matches!(c, 2 | 4 | 5) {
                    format!("{cell:>w$}")
                } else {
                    format!("{cell:<w$}")
                }
            })
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
        if i == 0 {
            let total: usize = widths.iter().sum::<usize>() + 2 * (widths.len() - 1);
            let _ = writeln!(out, "{}", "-".repeat(total));
        }
    }
    out
}

/// The whole report as JSON.
pub fn to_json(sections: &[Section], quick: bool, machine: &str) -> Json {
    Json::obj([
        ("program", Json::str("parsecnet bench")),
        ("version", Json::str(env!("CARGO_PKG_VERSION"))),
        ("mode", Json::str(if quick { "quick" } else { "full" })),
        ("machine", Json::str(machine)),
        (
            "build",
            Json::str(if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }),
        ),
        (
            "sections",
            Json::Arr(sections.iter().map(Section::to_json).collect()),
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(number(1234567.0), "1,234,567");
        assert_eq!(number(-1234.4), "-1,234");
        assert_eq!(number(12.345), "12.35");
        assert_eq!(number(0.01234), "0.012");
        assert_eq!(number(0.0), "0");
        assert_eq!(number(f64::NAN), "-");
    }

    #[test]
    fn table_marks_targets() {
        let mut s = Section::new("x", "thing");
        s.figure(Figure::new("a", "ratio", 1.2, "").target(Target::AtMost(1.15)));
        s.figure(Figure::new("b", "rate", 2.0e6, "/s").target(Target::AtLeast(1.5e6)));
        s.figure(Figure::new("c", "time", 3.0, "us").baseline(2.0));
        let t = table(&[s, Section::failed("y", "other", "boom".into())]);
        assert!(t.contains("NO"), "{t}");
        assert!(t.contains("yes"), "{t}");
        assert!(t.contains("FAILED: boom"), "{t}");
        assert!(t.contains("1.50"), "{t}");
    }
}
