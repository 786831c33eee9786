//! The fallback embedder: hashed word and character n-grams. It needs no
//! model and catches shared words and spellings, not meaning; Mneme warns
//! loudly when it runs on it.

use super::{Embedder, normalize};

/// Feature hashing of lower-cased words and character trigrams into a fixed
/// number of dimensions, with a sign bit to keep collisions unbiased.
pub struct HashedNgramEmbedder {
    dimensions: usize,
    model_id: String,
}

impl HashedNgramEmbedder {
    pub fn new(dimensions: usize) -> HashedNgramEmbedder {
        let dimensions = dimensions.max(8);
        HashedNgramEmbedder { dimensions, model_id: format!("hashed-ngrams-v1-{dimensions}") }
    }

    fn add(&self, vector: &mut [f32], feature: &[u8], weight: f32) {
        let hash = fnv1a(feature);
        let index = (hash % self.dimensions as u64) as usize;
        let sign = if hash >> 63 == 0 { 1.0 } else { -1.0 };
        vector[index] += sign * weight;
    }
}

impl Default for HashedNgramEmbedder {
    fn default() -> Self {
        HashedNgramEmbedder::new(256)
    }
}

impl Embedder for HashedNgramEmbedder {
    fn embeds_in_microseconds(&self) -> bool {
        true
    }

    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn embed(&self, text: &str) -> Vec<f32> {
        let mut vector = vec![0.0; self.dimensions];
        let lowered = text.to_lowercase();
        for word in lowered.split(|c: char| !c.is_alphanumeric() && c != '_').filter(|word| !word.is_empty()) {
            self.add(&mut vector, word.as_bytes(), 1.0);
            let padded: Vec<char> = format!(" {word} ").chars().collect();
            for trigram in padded.windows(3) {
                let trigram: String = trigram.iter().collect();
                self.add(&mut vector, trigram.as_bytes(), 0.5);
            }
        }
        normalize(&mut vector);
        vector
    }
}

/// FNV-1a: a fixed, documented hash, so vectors never change with the
/// standard library's hasher.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::cosine;

    #[test]
    fn vectors_are_unit_length_and_deterministic() {
        let embedder = HashedNgramEmbedder::default();
        let a = embedder.embed("cargo test fails with a panic");
        assert_eq!(a.len(), 256);
        assert!((cosine(&a, &a) - 1.0).abs() < 1e-5);
        assert_eq!(a, embedder.embed("cargo test fails with a panic"));
        assert!(embedder.embed("").iter().all(|value| *value == 0.0));
    }

    #[test]
    fn shared_words_score_higher_than_unrelated_text() {
        let embedder = HashedNgramEmbedder::default();
        let query = embedder.embed("token refresh failure");
        let related = embedder.embed("the token refresh failed again");
        let unrelated = embedder.embed("database migration of the ledger");
        assert!(cosine(&query, &related) > cosine(&query, &unrelated));
    }
}
