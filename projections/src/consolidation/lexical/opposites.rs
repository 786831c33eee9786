//! Opposite words: word families that are never duplicates of each other
//! ("pass" / "fail"), words made opposite by a negating prefix ("valid" /
//! "invalid"), and opposite particles ("in" / "out").

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use super::terms::{ContentTerms, PARTICLES, stem};

/// Word families that are never duplicates of each other: a text that
/// holds a word of one side, against a text that holds a word of the other
/// and not that word, states something else. Written as words; stemmed on
/// first use.
const OPPOSITE_WORDS: &[(&[&str], &[&str])] = &[
    (&["pass", "success", "successful", "succeed", "work"], &["fail", "failure", "unsuccessful", "broken"]),
    (&["success", "successful", "succeed", "stable"], &["error", "errored", "crash", "crashed"]),
    (&["fix", "fixed", "repair"], &["broken", "break", "regress", "regression"]),
    (&["green"], &["red"]),
    (&["true", "yes", "correct", "right"], &["false", "wrong", "incorrect"]),
    (&["enable", "enabled", "activate", "active"], &["disable", "disabled", "deactivate", "inactive"]),
    (
        &["add", "insert", "create", "include", "install", "append", "attach", "mount", "keep"],
        &["remove", "delete", "drop", "destroy", "exclude", "uninstall", "detach", "unmount", "discard"],
    ),
    (
        &["allow", "accept", "approve", "permit", "grant"],
        &["deny", "reject", "block", "forbid", "refuse", "decline", "revoke"],
    ),
    (&["open"], &["close", "closed", "shut"]),
    (&["valid"], &["invalid"]),
    (
        &["increase", "raise", "grow", "more", "higher", "max", "maximum", "upgrade", "expand", "bigger", "larger"],
        &[
            "decrease",
            "reduce",
            "lower",
            "shrink",
            "less",
            "fewer",
            "min",
            "minimum",
            "downgrade",
            "collapse",
            "smaller",
        ],
    ),
    (&["start", "begin", "launch", "resume"], &["stop", "end", "finish", "halt", "pause", "kill", "terminate"]),
    (
        &["online", "connect", "connected", "login", "available", "reachable", "healthy"],
        &["offline", "disconnect", "logout", "unavailable", "unreachable", "unhealthy"],
    ),
    (
        &["push", "upload", "send", "export", "write", "output"],
        &["pull", "download", "receive", "import", "read", "input"],
    ),
    (&["public", "external", "remote"], &["private", "internal", "local"]),
    (&["first", "earliest", "oldest", "old", "older"], &["last", "latest", "newest", "new", "newer"]),
    (&["visible", "show", "shown"], &["hidden", "hide", "invisible"]),
    (&["good", "better", "best", "safe", "clean", "stable"], &["bad", "worse", "worst", "unsafe", "dirty", "unstable"]),
    (&["empty"], &["full"]),
    (&["encrypt", "encrypted"], &["decrypt", "decrypted", "plaintext"]),
    (&["lock", "locked"], &["unlock", "unlocked"]),
    (&["commit", "apply", "merge"], &["rollback", "revert", "abort"]),
    (
        &["sync", "synchronous", "blocking", "sequential", "serial"],
        &["async", "asynchronous", "nonblocking", "parallel", "concurrent"],
    ),
    (&["dev", "development", "staging"], &["prod", "production"]),
    (&["dev", "development"], &["staging"]),
    (&["client", "frontend", "request"], &["server", "backend", "response"]),
    (&["source"], &["destination", "target"]),
    (&["debug"], &["release"]),
    (&["ascending", "asc"], &["descending", "desc"]),
    (&["fast", "faster", "quick"], &["slow", "slower"]),
    (&["hot", "warm"], &["cold"]),
    (&["required", "mandatory"], &["optional"]),
    (&["found", "exists", "present"], &["missing", "absent", "lost"]),
    (&["win"], &["lose"]),
    (&["major"], &["minor"]),
    (&["lowercase"], &["uppercase"]),
    (&["inbound", "ingress"], &["outbound", "egress"]),
    (&["able"], &["unable"]),
    (&["always"], &["sometimes", "rarely"]),
    (&["all", "every"], &["some", "few"]),
];

/// Prefixes that make a word its own opposite: "valid" / "invalid",
/// "available" / "unavailable", "connected" / "disconnected". The base must
/// have four letters or more, so "input" is not the opposite of "put".
const NEGATING_PREFIXES: [&str; 8] = ["un", "in", "im", "il", "ir", "dis", "non", "de"];

/// Each stemmed word of [`OPPOSITE_WORDS`] with the stems opposite to it.
fn opposite_stems() -> &'static BTreeMap<String, BTreeSet<String>> {
    static OPPOSITES: OnceLock<BTreeMap<String, BTreeSet<String>>> = OnceLock::new();
    OPPOSITES.get_or_init(|| {
        let mut opposites: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (one_side, other_side) in OPPOSITE_WORDS {
            for one in one_side.iter().map(|word| stem(word)) {
                for other in other_side.iter().map(|word| stem(word)) {
                    opposites.entry(one.clone()).or_default().insert(other.clone());
                    opposites.entry(other).or_default().insert(one.clone());
                }
            }
        }
        opposites
    })
}

/// Whether two stemmed words are opposites, by the list or by a negating
/// prefix.
fn are_opposite(one: &str, other: &str) -> bool {
    opposite_stems().get(one).is_some_and(|opposites| opposites.contains(other))
        || has_negating_prefix(one, other)
        || has_negating_prefix(other, one)
}

fn has_negating_prefix(longer: &str, base: &str) -> bool {
    base.len() >= 4
        && longer.ends_with(base)
        && NEGATING_PREFIXES
            .iter()
            .any(|prefix| longer.len() == prefix.len() + base.len() && longer.starts_with(prefix))
}

/// Whether `one` holds a word, absent from `other`, whose opposite `other`
/// holds. The opposite may be shared: "tests pass but lint fails" against
/// "tests pass and lint passes" is caught by "fail" against "pass".
pub(super) fn holds_opposite_of(one: &ContentTerms, other: &ContentTerms) -> bool {
    let only_in_one = one.words.iter().filter(|word| other.words.binary_search(word).is_err());
    for word in only_in_one {
        if other.words.iter().any(|other_word| are_opposite(word, other_word)) {
            return true;
        }
    }
    let particles_only_in_one = one.particles & !other.particles;
    (0..PARTICLES.len())
        .filter(|index| particles_only_in_one & (1 << index) != 0)
        .any(|index| other.particles & (1 << (index ^ 1)) != 0)
}

/// The same terms but for one word, or one particle, on each side, and the
/// two are opposites.
pub(super) fn differ_by_one_opposite(a: &ContentTerms, b: &ContentTerms) -> bool {
    let only_in_a: Vec<&String> = a.words.iter().filter(|word| b.words.binary_search(word).is_err()).collect();
    let only_in_b: Vec<&String> = b.words.iter().filter(|word| a.words.binary_search(word).is_err()).collect();
    if a.particles == b.particles {
        return matches!((&only_in_a[..], &only_in_b[..]), ([one], [other]) if are_opposite(one, other));
    }
    let particles_differ = a.particles ^ b.particles;
    let is_one_opposite_pair = particles_differ.count_ones() == 2
        && (0..PARTICLES.len()).step_by(2).any(|index| particles_differ == 0b11 << index)
        && (a.particles & particles_differ).count_ones() == 1;
    only_in_a.is_empty() && only_in_b.is_empty() && is_one_opposite_pair
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opposite_lists_never_oppose_a_word_to_itself() {
        for (word, opposites) in opposite_stems() {
            assert!(!opposites.contains(word), "{word} is listed as its own opposite");
        }
        assert!(are_opposite(&stem("passing"), &stem("failed")));
        assert!(are_opposite(&stem("available"), &stem("unavailable")));
        assert!(!are_opposite("input", "put"));
    }
}
