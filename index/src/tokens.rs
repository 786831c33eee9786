//! Token counting with a real BPE tokenizer (OpenAI's cl100k_base), so that
//! budgets mean what a model will see, not characters divided by four.

use tiktoken_rs::CoreBPE;

fn bpe() -> &'static CoreBPE {
    tiktoken_rs::cl100k_base_singleton()
}

/// The number of cl100k_base tokens in `text`.
pub fn count(text: &str) -> usize {
    bpe().encode_ordinary(text).len()
}

/// `text` cut to at most `max_tokens` tokens, with a marker saying how much
/// was left out. The marker's own tokens are included in the bound.
pub fn truncate(text: &str, max_tokens: usize) -> (String, usize) {
    // Tokenizing a megabyte of tool output to keep 500 tokens of it is
    // wasted work: no token is shorter than one byte, and cl100k averages
    // about four, so a prefix of 16 bytes per token is always enough.
    let prefix = floor_char_boundary(text, max_tokens.saturating_mul(16));
    let tokens = bpe().encode_ordinary(prefix);
    if tokens.len() <= max_tokens && prefix.len() == text.len() {
        return (text.to_string(), tokens.len());
    }
    let marker = " …[truncated]";
    let marker_tokens = count(marker);
    let keep = max_tokens.saturating_sub(marker_tokens);
    let mut kept = keep.min(tokens.len());
    loop {
        let bytes = bpe().decode_bytes(&tokens[..kept]).unwrap_or_default();
        let mut cut = String::from_utf8_lossy(&bytes).into_owned();
        // A token boundary can split a multi-byte character; the lossy
        // replacement character then re-tokenizes differently, so recount.
        cut.push_str(marker);
        let cut_tokens = count(&cut);
        if cut_tokens <= max_tokens {
            return (cut, cut_tokens);
        }
        if kept == 0 {
            // Not even the marker fits: nothing can be shown honestly.
            return (String::new(), 0);
        }
        kept -= 1;
    }
}

/// The longest beginning of `text` of at most `max_bytes`, cut at a
/// character boundary.
pub fn floor_char_boundary(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_real_tokens_not_characters() {
        assert_eq!(count("hello world"), 2);
        assert_eq!(count(""), 0);
    }

    #[test]
    fn truncation_respects_the_bound_and_says_so() {
        let long = "the quick brown fox jumps over the lazy dog ".repeat(200);
        let (cut, tokens) = truncate(&long, 50);
        assert!(tokens <= 50, "{tokens}");
        assert_eq!(tokens, count(&cut));
        assert!(cut.ends_with("[truncated]"));
    }

    #[test]
    fn short_text_is_kept_whole() {
        let (cut, tokens) = truncate("short", 50);
        assert_eq!(cut, "short");
        assert_eq!(tokens, 1);
    }

    #[test]
    fn truncation_never_splits_into_invalid_text_or_exceeds_bound() {
        let text = "日本語のテキスト🙂".repeat(100);
        for max in [3, 7, 20] {
            let (cut, tokens) = truncate(&text, max);
            assert!(tokens <= max, "{max}: {tokens}");
            assert_eq!(tokens, count(&cut));
        }
    }
}
