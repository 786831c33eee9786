//! Normalisation of the free text that becomes entity keys and relation
//! names: whitespace, letter case, length.

use sha2::{Digest, Sha256};

/// Longest entity key kept verbatim, in bytes. Longer keys (a heredoc
/// command, a fact object that is a paragraph) are cut and suffixed with a
/// hash of the whole text, so ids stay short and still distinct.
pub(crate) const MAX_KEY_BYTES: usize = 200;

/// Trims and collapses every run of whitespace to one space.
pub(crate) fn collapse_whitespace(text: &str) -> String {
    let mut collapsed = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !collapsed.is_empty() {
            collapsed.push(' ');
        }
        collapsed.push_str(word);
    }
    collapsed
}

/// `text` if it is at most [`MAX_KEY_BYTES`] long, else its first bytes (on
/// a character boundary), `...#` and the first 12 hex digits of its SHA-256.
pub(crate) fn bounded_key(text: &str) -> String {
    if text.len() <= MAX_KEY_BYTES {
        return text.to_string();
    }
    let mut cut = MAX_KEY_BYTES - 16;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let digest = Sha256::digest(text.as_bytes());
    let hash: String = digest.iter().take(6).map(|byte| format!("{byte:02x}")).collect();
    format!("{}...#{hash}", &text[..cut])
}

/// The key of a concept: whitespace collapsed, lowercased, bounded.
pub(crate) fn concept_key(name: &str) -> String {
    bounded_key(&collapse_whitespace(name).to_lowercase())
}

/// A fact predicate as a relation name: snake_case ASCII, camelCase split
/// into words (`storesSessionIn` → `stores_session_in`), every other run of
/// non-alphanumeric characters one `_`. Letters outside ASCII are kept,
/// lowercased. Falls back to `related_to` when nothing is left.
pub(crate) fn snake_case(predicate: &str) -> String {
    let mut snake = String::with_capacity(predicate.len() + 4);
    let mut previous: Option<char> = None;
    for character in predicate.chars() {
        if character.is_alphanumeric() {
            let starts_word = character.is_uppercase()
                && previous.is_some_and(|previous| previous.is_lowercase() || previous.is_ascii_digit());
            if starts_word && !snake.ends_with('_') {
                snake.push('_');
            }
            snake.extend(character.to_lowercase());
        } else if !snake.is_empty() && !snake.ends_with('_') {
            snake.push('_');
        }
        previous = Some(character);
    }
    let trimmed = snake.trim_end_matches('_');
    if trimmed.is_empty() { "related_to".to_string() } else { bounded_key(trimmed) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predicates_become_snake_case() {
        assert_eq!(snake_case("raised_by"), "raised_by");
        assert_eq!(snake_case("Stores session in"), "stores_session_in");
        assert_eq!(snake_case("storesSessionIn"), "stores_session_in");
        assert_eq!(snake_case("  has-refresh flow!! "), "has_refresh_flow");
        assert_eq!(snake_case("TTL (seconds)"), "ttl_seconds");
        assert_eq!(snake_case("--"), "related_to");
    }

    #[test]
    fn long_keys_are_cut_and_hashed() {
        let long = "x".repeat(500);
        let key = bounded_key(&long);
        assert!(key.len() <= MAX_KEY_BYTES);
        assert!(key.contains("...#"));
        assert_ne!(key, bounded_key(&"x".repeat(501)));
        assert_eq!(bounded_key("cargo test"), "cargo test");
    }

    #[test]
    fn concepts_are_lowercased_and_collapsed() {
        assert_eq!(concept_key("  Refresh   Token\nReuse "), "refresh token reuse");
    }
}
