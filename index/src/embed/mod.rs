//! Sentence embeddings for the vector index.
//!
//! An [`Embedder`] turns text into an L2-normalised vector, deterministically:
//! the same model and text always give the same vector, so a replay rebuilds
//! the same vector index. The model's identity is part of a memory's digest.
//!
//! Models are handed in as bytes (read by the caller): this crate does no IO
//! but loading ONNX Runtime's library, which only a path can name (`onnx.rs`).

mod bert;
mod distill;
mod hashed;
mod minilm;
mod onnx;
mod static_model;

pub use distill::{
    DistillOptions, DistillProgress, VocabularySelection, distill_static_model, distill_static_model_with_progress,
};
pub use hashed::HashedNgramEmbedder;
pub use minilm::MiniLmEmbedder;
pub use onnx::OnnxMiniLmEmbedder;
pub use static_model::{STATIC_MODEL_FORMAT, StaticEmbedder, StaticModelFiles};

/// Text in, unit vector out.
pub trait Embedder: Send + Sync {
    /// Names the model and its exact weights, e.g.
    /// `static-minilm-l6-256@sha256:1a2b…`; it enters the memory digest, so
    /// two memories built with different models never compare equal.
    fn model_id(&self) -> &str;

    /// Length of every vector this embedder returns.
    fn dimensions(&self) -> usize;

    /// The L2-normalised embedding of `text` (all zeros for empty text).
    fn embed(&self, text: &str) -> Vec<f32>;

    /// Embeddings of several texts; models that batch override this.
    fn embed_batch(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        texts.iter().map(|text| self.embed(text)).collect()
    }

    /// Whether an embedding costs microseconds (a table lookup per token,
    /// not a network), so that a search may embed stored texts again to
    /// score them at full precision. False unless a model says so.
    fn embeds_in_microseconds(&self) -> bool {
        false
    }
}

/// Text longer than this is embedded by its beginning: the static model
/// averages tokens, and a long tool output would drown its own first lines.
pub const EMBEDDED_TEXT_BYTES: usize = 2000;

/// The beginning of a text, cut at a character boundary, for embedding:
/// what the vector index embeds of an item, and of a query.
pub fn embedded_text(text: &str) -> &str {
    crate::tokens::floor_char_boundary(text, EMBEDDED_TEXT_BYTES)
}

/// Scales `vector` to unit length in place; leaves a zero vector alone.
pub fn normalize(vector: &mut [f32]) {
    let norm = vector.iter().map(|value| value * value).sum::<f32>().sqrt();
    if norm > 0.0 {
        for value in vector.iter_mut() {
            *value /= norm;
        }
    }
}

/// Cosine similarity of two unit vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Lower-case hex of the SHA-256 of `bytes`: model ids and file checks name
/// weights by their hash.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    use std::fmt::Write;
    let digest = sha2::Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for byte in digest {
        // Writing to a String cannot fail.
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// JSON for the two documents this module reads and writes: the model's
/// `config.json` and the header of a safetensors file.
pub(crate) mod json {
    pub(crate) use serde_json::Value;

    pub(crate) fn parse(text: &str) -> Result<Value, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Appends `text` as a JSON string literal.
    pub(crate) fn write_string(out: &mut String, text: &str) {
        out.push_str(&serde_json::to_string(text).expect("a string always serialises"));
    }

    /// `as_u64` that fits the platform's `usize`.
    pub(crate) trait AsUsize {
        fn as_usize(&self) -> Option<usize>;
    }

    impl AsUsize for Value {
        fn as_usize(&self) -> Option<usize> {
            self.as_u64().and_then(|number| usize::try_from(number).ok())
        }
    }
}
