//! "Did you mean ...?" for a mistyped console command: the listed name closest to what was
//! typed, if it is close enough to be a typo rather than another word.

/// The candidate nearest to `typed` by edit distance (letter case ignored), when at most two
/// edits away (one for words of up to four letters) or when `typed` is the start of exactly
/// one candidate.
pub fn closest<'a>(typed: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let typed = typed.to_ascii_lowercase();
    if typed.is_empty() || typed.len() > 64 {
        return None;
    }
    let allowed = if typed.chars().count() <= 4 { 1 } else { 2 };
    let mut best: Option<(usize, &str)> = None;
    let mut prefix_of: Vec<&str> = Vec::new();
    for name in candidates {
        if name.starts_with(typed.as_str()) {
            prefix_of.push(name);
        }
        let d = edit_distance(&typed, name);
        if d <= allowed && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, name));
        }
    }
    best.map(|(_, name)| name)
        .or_else(|| (prefix_of.len() == 1).then(|| prefix_of[0]))
}

/// Edit distance over characters counting insertions, deletions, substitutions and swaps of
/// two neighbouring characters (`wiat` is one edit from `wait`: the commonest typo), each as
/// one edit (optimal string alignment).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows: two rows back (for swaps), the previous one and the current one.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        current[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (previous[j] + 1)
                .min(current[j - 1] + 1)
                .min(previous[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            current[j] = d;
        }
        std::mem::swap(&mut before, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: [&str; 6] = ["status", "net.subsys", "net.api", "say", "stop", "servers"];

    #[test]
    fn typos_and_unique_prefixes_are_suggested_other_words_are_not() {
        let near = |typed| closest(typed, NAMES.iter().copied());
        assert_eq!(near("stauts"), Some("status"));
        assert_eq!(near("net.subsystem"), None, "too far");
        assert_eq!(near("net.subsy"), Some("net.subsys"));
        assert_eq!(near("NET.API"), Some("net.api"));
        assert_eq!(near("serv"), Some("servers"), "the start of one command");
        assert_eq!(near("fly"), None);
        assert_eq!(near("s"), None, "the start of several");
        assert_eq!(near(""), None);
    }

    #[test]
    fn edit_distance_counts_insertions_deletions_and_substitutions() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("abc", "abc"), 0);
        assert_eq!(
            edit_distance("wiat", "wait"),
            1,
            "a swap of neighbours is one edit"
        );
        assert_eq!(edit_distance("qiut", "quit"), 1);
        assert_eq!(edit_distance("ab", "ba"), 1);
        assert_eq!(edit_distance("abc", "ca"), 3);
    }
}
