//! Words that carry no topic, shared by the reading of a question
//! (`retrieval/analysis.rs`) and the notes a phase keeps of what it did
//! (`phases/notes.rs`).

/// Words that carry no topic: articles, pronouns, auxiliaries, question
/// words, and the commonest prepositions and adverbs. Lower case.
#[rustfmt::skip]
const STOP_WORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
    "because", "been", "before", "being", "both", "but", "by", "can", "could", "d", "did", "do", "does", "doing",
    "done", "during", "each", "either", "else", "ever", "every", "few", "for", "from", "had", "has", "have", "having",
    "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it",
    "its", "itself", "just", "let", "ll", "m", "me", "might", "more", "most", "much", "must", "my", "myself", "of",
    "off", "on", "once", "only", "or", "other", "our", "ours", "out", "over", "own", "please", "re", "s", "same",
    "shall", "she", "should", "so", "some", "such", "t", "tell", "than", "that", "the", "their", "theirs", "them",
    "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up",
    "upon", "us", "ve", "very", "was", "we", "were", "what", "whatever", "when", "where", "whether", "which", "while",
    "who", "whom", "whose", "why", "will", "with", "would", "you", "your", "yours", "yourself",
];

pub(crate) fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stop_word_list_is_sorted_for_binary_search() {
        assert!(
            STOP_WORDS.windows(2).all(|pair| pair[0] < pair[1]),
            "{:?}",
            STOP_WORDS.windows(2).find(|pair| pair[0] >= pair[1])
        );
    }
}
