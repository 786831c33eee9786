//! The static embedder: one precomputed vector per vocabulary token,
//! distilled from MiniLM (see [`super::distill`]); a text's embedding is the
//! normalised sum of its tokens' vectors. About a microsecond per short text,
//! against milliseconds for the transformer, at a moderate loss of quality.
//!
//! # Files
//!
//! A static model is two files, written by `mneme distill`:
//!
//! * `embeddings.safetensors`: one `F32` tensor `embeddings` of shape
//!   `[vocabulary, dimensions]`, row *i* being token id *i*'s vector with its
//!   SIF weight already applied; rows of tokens that never carry meaning
//!   (`[PAD]`, `[UNK]`, `[CLS]`, `[unused…]`) are zero. The header's
//!   `__metadata__` holds `format` (= [`STATIC_MODEL_FORMAT`]),
//!   `source_model`, `tokenizer_sha256` and the distillation settings.
//! * `tokenizer.json`: the source model's tokenizer, unchanged; its SHA-256
//!   must match `tokenizer_sha256`, so the two files cannot be mixed up.
//!
//! # Tokenization
//!
//! The Hugging Face tokenizer costs about 20 times more than the rest of the
//! embedding, so ASCII text takes a fast path that reproduces the
//! BERT-uncased pipeline — clean text, lower-case, split on whitespace and
//! punctuation, greedy longest-match WordPiece — with no allocation per
//! token. In text with some non-ASCII characters, only the whitespace-free
//! runs that contain them go through the Hugging Face tokenizer; a text that
//! may contain a special token such as `[SEP]` goes through it whole. Tests
//! check on handwritten and generated text that the ids are the same.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use candle_core::{DType, Device};
use tokenizers::{Model, ModelWrapper, NormalizerWrapper, PreTokenizerWrapper, Tokenizer};

use super::json::{self, Value};
use super::{Embedder, normalize, sha256_hex};
use crate::IndexError;

/// The `format` written into, and required in, the embeddings file's
/// metadata. Bump it when the meaning of the file changes.
pub const STATIC_MODEL_FORMAT: &str = "mneme-static-embeddings/1";

/// Name of the tensor that holds the token vectors.
const EMBEDDINGS_TENSOR: &str = "embeddings";

/// The bytes of a distilled static model, ready to be written to a directory
/// as [`StaticModelFiles::EMBEDDINGS_FILE`] and
/// [`StaticModelFiles::TOKENIZER_FILE`], and loaded back with
/// [`StaticEmbedder::from_bytes`].
#[derive(Clone)]
pub struct StaticModelFiles {
    /// `embeddings.safetensors`.
    pub embeddings_safetensors: Vec<u8>,
    /// `tokenizer.json`, the source model's, byte for byte.
    pub tokenizer_json: Vec<u8>,
    /// The model id these files load as (see [`StaticEmbedder`]).
    pub model_id: String,
}

impl StaticModelFiles {
    pub const EMBEDDINGS_FILE: &'static str = "embeddings.safetensors";
    pub const TOKENIZER_FILE: &'static str = "tokenizer.json";

    /// The files as (file name, contents) pairs.
    pub fn files(&self) -> [(&'static str, &[u8]); 2] {
        [(Self::EMBEDDINGS_FILE, &self.embeddings_safetensors), (Self::TOKENIZER_FILE, &self.tokenizer_json)]
    }
}

/// Embeds text as the L2-normalised sum of its tokens' static vectors.
///
/// The model id is `static-minilm-l6-<dimensions>@sha256:<first 16 hex digits
/// of the embeddings file's SHA-256>`. Embedding is a pure function of the
/// text: token vectors are summed in token order in `f32`, so the result is
/// bit-identical across runs, batches and threads.
pub struct StaticEmbedder {
    /// Row-major `[vocabulary, dimensions]`.
    embeddings: Vec<f32>,
    dimensions: usize,
    vocabulary_size: usize,
    tokenizer: Tokenizer,
    fast_tokenizer: Option<AsciiWordPiece>,
    model_id: String,
    source_model: String,
}

impl StaticEmbedder {
    /// Loads a static model from the contents of its two files.
    pub fn from_bytes(embeddings_safetensors: &[u8], tokenizer_json: &[u8]) -> Result<StaticEmbedder, IndexError> {
        let metadata = read_safetensors_metadata(embeddings_safetensors)?;
        let format = metadata.get("format").and_then(Value::as_str);
        if format != Some(STATIC_MODEL_FORMAT) {
            return Err(IndexError::Model(format!(
                "embeddings.safetensors has format {format:?}, expected {STATIC_MODEL_FORMAT:?}"
            )));
        }
        let expected_tokenizer_sha256 = metadata.get("tokenizer_sha256").and_then(Value::as_str);
        let tokenizer_sha256 = sha256_hex(tokenizer_json);
        if expected_tokenizer_sha256 != Some(tokenizer_sha256.as_str()) {
            return Err(IndexError::Model(format!(
                "tokenizer.json (sha256 {tokenizer_sha256}) is not the one this model was distilled with ({})",
                expected_tokenizer_sha256.unwrap_or("not recorded")
            )));
        }
        let source_model = metadata.get("source_model").and_then(Value::as_str).unwrap_or("unknown").to_owned();

        let tensors = candle_core::safetensors::SliceSafetensors::new(embeddings_safetensors)
            .map_err(|error| model_error("embeddings.safetensors is unreadable", error))?;
        let tensor = tensors
            .load(EMBEDDINGS_TENSOR, &Device::Cpu)
            .map_err(|error| model_error("embeddings.safetensors has no usable `embeddings` tensor", error))?;
        if tensor.dtype() != DType::F32 {
            return Err(IndexError::Model(format!("`embeddings` is {:?}, expected F32", tensor.dtype())));
        }
        let (vocabulary_size, dimensions) =
            tensor.dims2().map_err(|error| model_error("`embeddings` must be a matrix", error))?;
        if dimensions == 0 {
            return Err(IndexError::Model("`embeddings` has zero dimensions".to_owned()));
        }
        let embeddings = tensor
            .flatten_all()
            .and_then(|flat| flat.to_vec1::<f32>())
            .map_err(|error| model_error("cannot read `embeddings`", error))?;
        if embeddings.iter().any(|value| !value.is_finite()) {
            return Err(IndexError::Model("`embeddings` holds NaN or infinite values".to_owned()));
        }

        let mut tokenizer =
            Tokenizer::from_bytes(tokenizer_json).map_err(|error| model_error("tokenizer.json is unusable", error))?;
        // Every token of a text counts: no truncation, and no padding.
        tokenizer.with_padding(None);
        tokenizer.with_truncation(None).map_err(|error| model_error("cannot disable truncation", error))?;
        let largest_id = tokenizer.get_vocab(true).into_values().max().unwrap_or(0) as usize;
        if largest_id >= vocabulary_size {
            return Err(IndexError::Model(format!(
                "tokenizer.json has token id {largest_id} but `embeddings` only {vocabulary_size} rows"
            )));
        }
        // Probe the general path once, so that it cannot fail later: its
        // only error is a WordPiece model without its unknown token, which
        // the over-long word forces it to look up.
        let probe = format!("probe, façade 語 {}", "x".repeat(1000));
        tokenizer.encode(probe, false).map_err(|error| model_error("the tokenizer cannot encode text", error))?;
        let fast_tokenizer = AsciiWordPiece::from_tokenizer(&tokenizer);

        let model_id = static_model_id(dimensions, embeddings_safetensors);
        Ok(StaticEmbedder {
            embeddings,
            dimensions,
            vocabulary_size,
            tokenizer,
            fast_tokenizer,
            model_id,
            source_model,
        })
    }

    /// The token ids the embedding of `text` sums over: the source
    /// tokenizer's ids without special tokens, from the fast path when it
    /// applies.
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        let mut ids = Vec::new();
        self.for_each_token_id(text, |id| ids.push(id));
        ids
    }

    /// The ids from the Hugging Face tokenizer alone, bypassing the fast
    /// path: the reference [`StaticEmbedder::token_ids`] must agree with.
    pub fn reference_token_ids(&self, text: &str) -> Result<Vec<u32>, IndexError> {
        let encoding = self.tokenizer.encode(text, false).map_err(|error| model_error("tokenization failed", error))?;
        Ok(encoding.get_ids().to_vec())
    }

    /// Whether the fast tokenizer is in use: true for BERT WordPiece
    /// tokenizers such as MiniLM's; other tokenizers always take the Hugging
    /// Face path.
    pub fn has_fast_tokenizer(&self) -> bool {
        self.fast_tokenizer.is_some()
    }

    /// The model this one was distilled from, as recorded in its metadata.
    pub fn source_model(&self) -> &str {
        &self.source_model
    }

    /// Number of rows (token ids) in the embedding matrix.
    pub fn vocabulary_size(&self) -> usize {
        self.vocabulary_size
    }

    /// The static vector of one token id (SIF-weighted, not normalised);
    /// `None` past the vocabulary.
    pub fn token_vector(&self, token_id: u32) -> Option<&[f32]> {
        let start = (token_id as usize).checked_mul(self.dimensions)?;
        self.embeddings.get(start..start + self.dimensions)
    }

    fn for_each_token_id(&self, text: &str, mut on_token: impl FnMut(u32)) {
        let Some(fast) = &self.fast_tokenizer else {
            return self.reference_tokenize(text, &mut on_token);
        };
        let bytes = text.as_bytes();
        if fast.may_contain_added_token(bytes) {
            return self.reference_tokenize(text, &mut on_token);
        }
        if bytes.is_ascii() {
            return fast.tokenize_ascii(bytes, &mut on_token);
        }
        if fast.added_tokens_are_normalized {
            // Such a token could match non-ASCII text after normalisation,
            // which the added-token check above does not see.
            return self.reference_tokenize(text, &mut on_token);
        }
        // Mixed text: every step of the BERT pipeline is local to the runs
        // between ASCII whitespace (whitespace always separates pre-tokens and
        // is dropped; cleaning, accent stripping, lower-casing and Chinese
        // character splitting act within a run), so the runs can be tokenized
        // one by one, the ASCII ones on the fast path.
        for run in text.split([' ', '\t', '\n', '\r']) {
            if run.is_ascii() {
                fast.tokenize_ascii(run.as_bytes(), &mut on_token);
            } else {
                self.reference_tokenize(run, &mut on_token);
            }
        }
    }

    fn reference_tokenize(&self, text: &str, on_token: &mut impl FnMut(u32)) {
        match self.tokenizer.encode(text, false) {
            Ok(encoding) => encoding.get_ids().iter().for_each(|&id| on_token(id)),
            // `from_bytes` probed this tokenizer: it only fails without an
            // unknown token, which the probe rules out.
            Err(error) => panic!("{}: tokenizer failed after a successful load: {error}", self.model_id),
        }
    }
}

impl Embedder for StaticEmbedder {
    fn embeds_in_microseconds(&self) -> bool {
        true
    }

    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// Sum of the token vectors, normalised. The SIF weights baked into the
    /// rows make this the weighted mean of model2vec (normalising makes sum
    /// and mean the same); the zero rows of `[UNK]` and other special tokens
    /// drop them, as model2vec drops unknown tokens.
    fn embed(&self, text: &str) -> Vec<f32> {
        let mut vector = vec![0.0f32; self.dimensions];
        self.for_each_token_id(text, |id| {
            if let Some(row) = self.token_vector(id) {
                for (sum, value) in vector.iter_mut().zip(row) {
                    *sum += value;
                }
            }
        });
        normalize(&mut vector);
        vector
    }
}

/// `static-minilm-l6-<dimensions>@sha256:<first 16 hex digits of the
/// embeddings file's SHA-256>`.
pub(crate) fn static_model_id(dimensions: usize, embeddings_safetensors: &[u8]) -> String {
    format!("static-minilm-l6-{dimensions}@sha256:{}", &sha256_hex(embeddings_safetensors)[..16])
}

fn model_error(what: &str, error: impl std::fmt::Display) -> IndexError {
    IndexError::Model(format!("{what}: {error}"))
}

/// The BERT-uncased tokenization of ASCII text, equal to the Hugging Face
/// pipeline it is built from (`BertNormalizer` with `clean_text`,
/// `BertPreTokenizer`, `WordPiece`) on the texts it accepts.
///
/// On ASCII input that pipeline reduces to: drop control characters (all
/// below 0x20 but tab, newline and carriage return, and 0x7f), split at
/// whitespace, isolate each ASCII punctuation character (`is_ascii_punctuation`
/// covers every ASCII character of the Unicode punctuation categories, plus
/// the symbols BERT also splits on), lower-case if the normaliser does, and
/// run greedy longest-match WordPiece on each piece. Accents, Chinese
/// characters and Unicode case rules only concern non-ASCII text, which is
/// refused.
struct AsciiWordPiece {
    /// Vocabulary pieces that may start a word.
    word_starts: HashMap<Box<[u8]>, u32, BuildHasherDefault<ShortKeyHasher>>,
    /// Pieces that continue a word, stored without their `##` prefix so that
    /// lookups need no allocation.
    continuations: HashMap<Box<[u8]>, u32, BuildHasherDefault<ShortKeyHasher>>,
    unknown_id: u32,
    /// Longer words become a single unknown token, as in WordPiece.
    max_word_chars: usize,
    lowercase: bool,
    /// Added tokens (`[CLS]`, `[SEP]`, …), lower-cased: the Hugging Face
    /// tokenizer matches them in the raw text before normalising, so a text
    /// that may contain one goes the general way.
    added_tokens: Vec<Vec<u8>>,
    /// The bytes an added token can start with, to skip the search in the
    /// common case of a text with none of them.
    added_token_first_bytes: [bool; 256],
    /// Whether some added token is matched after normalisation (none of
    /// BERT's are); then non-ASCII text always takes the general path.
    added_tokens_are_normalized: bool,
}

impl AsciiWordPiece {
    /// The fast path for `tokenizer`, or `None` when its pipeline is not the
    /// BERT one this reproduces.
    fn from_tokenizer(tokenizer: &Tokenizer) -> Option<AsciiWordPiece> {
        let lowercase = match tokenizer.get_normalizer()? {
            NormalizerWrapper::BertNormalizer(normalizer) if normalizer.clean_text => normalizer.lowercase,
            _ => return None,
        };
        if !matches!(tokenizer.get_pre_tokenizer()?, PreTokenizerWrapper::BertPreTokenizer(_)) {
            return None;
        }
        let ModelWrapper::WordPiece(word_piece) = tokenizer.get_model() else {
            return None;
        };
        let vocabulary = word_piece.get_vocab();
        let unknown_id = vocabulary.get(&word_piece.unk_token).copied()?;
        let prefix = word_piece.continuing_subword_prefix.as_str();
        let mut word_starts = HashMap::default();
        let mut continuations = HashMap::default();
        for (piece, id) in vocabulary {
            // WordPiece looks a word's first piece up in the whole vocabulary,
            // and a continuation as prefix + piece.
            if let Some(rest) = piece.strip_prefix(prefix).filter(|_| !prefix.is_empty()) {
                continuations.insert(rest.as_bytes().into(), id);
            }
            word_starts.insert(piece.into_bytes().into_boxed_slice(), id);
        }
        let added = tokenizer.get_added_tokens_decoder();
        let added_tokens_are_normalized = added.values().any(|token| token.normalized);
        let added_tokens: Vec<Vec<u8>> = added
            .into_values()
            .map(|token| token.content.to_ascii_lowercase().into_bytes())
            .filter(|content| !content.is_empty())
            .collect();
        let mut added_token_first_bytes = [false; 256];
        for token in &added_tokens {
            added_token_first_bytes[usize::from(token[0])] = true;
            added_token_first_bytes[usize::from(token[0].to_ascii_uppercase())] = true;
        }
        Some(AsciiWordPiece {
            word_starts,
            continuations,
            unknown_id,
            max_word_chars: word_piece.max_input_chars_per_word,
            lowercase,
            added_tokens,
            added_token_first_bytes,
            added_tokens_are_normalized,
        })
    }

    /// Calls `on_token` with each token id of `bytes`, which must be ASCII
    /// and hold no added token (see [`AsciiWordPiece::may_contain_added_token`]).
    fn tokenize_ascii(&self, bytes: &[u8], on_token: &mut impl FnMut(u32)) {
        debug_assert!(bytes.is_ascii());
        let mut word = Vec::with_capacity(32);
        for &byte in bytes {
            match byte {
                b' ' | b'\t' | b'\n' | b'\r' => self.flush_word(&mut word, on_token),
                // Control characters are deleted, not split at: "a\x01b" is one word.
                0x00..=0x1f | 0x7f => {}
                punctuation if punctuation.is_ascii_punctuation() => {
                    self.flush_word(&mut word, on_token);
                    word.push(punctuation);
                    self.flush_word(&mut word, on_token);
                }
                letter => word.push(if self.lowercase { letter.to_ascii_lowercase() } else { letter }),
            }
        }
        self.flush_word(&mut word, on_token);
    }

    /// Whether an added token may occur in `bytes` (compared ignoring ASCII
    /// case, so this errs towards yes).
    fn may_contain_added_token(&self, bytes: &[u8]) -> bool {
        (0..bytes.len()).filter(|&start| self.added_token_first_bytes[usize::from(bytes[start])]).any(|start| {
            self.added_tokens.iter().any(|token| {
                bytes.get(start..start + token.len()).is_some_and(|window| window.eq_ignore_ascii_case(token))
            })
        })
    }

    /// WordPiece on one pre-token: the longest vocabulary piece that starts
    /// the word, then the longest continuation piece, and so on; a word with
    /// a remainder no piece matches is one unknown token.
    fn flush_word(&self, word: &mut Vec<u8>, on_token: &mut impl FnMut(u32)) {
        if word.is_empty() {
            return;
        }
        if word.len() > self.max_word_chars {
            on_token(self.unknown_id);
            word.clear();
            return;
        }
        // Pieces are found first and emitted after, because a failure late
        // in the word turns the whole word into one unknown token. Words are
        // short: a small stack buffer covers nearly all of them.
        let mut pieces = PieceBuffer::default();
        let mut start = 0;
        while start < word.len() {
            let table = if start == 0 { &self.word_starts } else { &self.continuations };
            let found =
                (start + 1..=word.len()).rev().find_map(|end| table.get(&word[start..end]).map(|&id| (id, end)));
            match found {
                Some((id, end)) => {
                    pieces.push(id);
                    start = end;
                }
                None => {
                    on_token(self.unknown_id);
                    word.clear();
                    return;
                }
            }
        }
        pieces.as_slice().iter().for_each(|&id| on_token(id));
        word.clear();
    }
}

/// The ids of one word's pieces: inline up to 16, then on the heap.
#[derive(Default)]
struct PieceBuffer {
    inline: [u32; 16],
    length: usize,
    spilled: Vec<u32>,
}

impl PieceBuffer {
    fn push(&mut self, id: u32) {
        if self.length < self.inline.len() {
            self.inline[self.length] = id;
        } else {
            if self.spilled.is_empty() {
                self.spilled.extend_from_slice(&self.inline);
            }
            self.spilled.push(id);
        }
        self.length += 1;
    }

    fn as_slice(&self) -> &[u32] {
        if self.length <= self.inline.len() { &self.inline[..self.length] } else { &self.spilled }
    }
}

/// A fast hash for the short byte strings of a vocabulary (FxHash's
/// multiply-rotate over 8-byte words). The standard SipHash is several
/// times slower here and its DoS resistance is not needed: the keys are the
/// fixed vocabulary, not user input.
#[derive(Default)]
struct ShortKeyHasher {
    state: u64,
}

impl ShortKeyHasher {
    const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

    fn add(&mut self, word: u64) {
        self.state = (self.state.rotate_left(5) ^ word).wrapping_mul(Self::SEED);
    }
}

impl Hasher for ShortKeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let remainder = chunks.remainder();
        if !remainder.is_empty() {
            let mut word = [0u8; 8];
            word[..remainder.len()].copy_from_slice(remainder);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_usize(&mut self, value: usize) {
        self.add(value as u64);
    }

    fn finish(&self) -> u64 {
        self.state
    }
}

/// Builds the `embeddings.safetensors` bytes: the safetensors layout (an
/// 8-byte little-endian header length, a JSON header padded with spaces to a
/// multiple of 8 bytes so the data is aligned, then the raw little-endian
/// `f32` data).
pub(crate) fn encode_embeddings_file(
    embeddings: &[f32],
    vocabulary_size: usize,
    dimensions: usize,
    metadata: &[(&str, String)],
) -> Vec<u8> {
    debug_assert_eq!(embeddings.len(), vocabulary_size * dimensions);
    let data_length = std::mem::size_of_val(embeddings);
    let mut header = String::from("{\"__metadata__\":{");
    // Sorted keys: the same metadata always gives the same bytes.
    let mut metadata: Vec<&(&str, String)> = metadata.iter().collect();
    metadata.sort_by_key(|(key, _)| *key);
    for (index, (key, value)) in metadata.iter().enumerate() {
        if index > 0 {
            header.push(',');
        }
        json::write_string(&mut header, key);
        header.push(':');
        json::write_string(&mut header, value);
    }
    header.push_str("},");
    json::write_string(&mut header, EMBEDDINGS_TENSOR);
    header.push_str(&format!(
        ":{{\"dtype\":\"F32\",\"shape\":[{vocabulary_size},{dimensions}],\"data_offsets\":[0,{data_length}]}}}}"
    ));
    while header.len() % 8 != 0 {
        header.push(' ');
    }
    let mut bytes = Vec::with_capacity(8 + header.len() + data_length);
    bytes.extend_from_slice(&(header.len() as u64).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    for value in embeddings {
        bytes.extend_from_slice(&value.to_le_bytes());
    }
    bytes
}

/// The `__metadata__` object of a safetensors file's header (an empty object
/// when there is none).
fn read_safetensors_metadata(bytes: &[u8]) -> Result<Value, IndexError> {
    let unreadable = |why: &str| IndexError::Model(format!("embeddings.safetensors: {why}"));
    let length_bytes: [u8; 8] =
        bytes.get(..8).and_then(|slice| slice.try_into().ok()).ok_or_else(|| unreadable("too short"))?;
    let header_length = usize::try_from(u64::from_le_bytes(length_bytes)).map_err(|_| unreadable("header too long"))?;
    let header = bytes.get(8..8usize.saturating_add(header_length)).ok_or_else(|| unreadable("truncated header"))?;
    let header = std::str::from_utf8(header).map_err(|_| unreadable("header is not UTF-8"))?;
    let header = json::parse(header).map_err(|error| unreadable(&format!("header: {error}")))?;
    Ok(header.get("__metadata__").cloned().unwrap_or_else(|| Value::Object(Default::default())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embeddings_file_round_trips_through_candle() {
        let embeddings: Vec<f32> = (0..12).map(|value| value as f32 * 0.5 - 1.0).collect();
        let bytes = encode_embeddings_file(&embeddings, 4, 3, &[("format", STATIC_MODEL_FORMAT.to_owned())]);
        let header_length = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")) as usize;
        assert_eq!(header_length % 8, 0, "data must be 8-byte aligned");

        let tensors = candle_core::safetensors::SliceSafetensors::new(&bytes).expect("valid safetensors");
        let tensor = tensors.load(EMBEDDINGS_TENSOR, &Device::Cpu).expect("tensor present");
        assert_eq!(tensor.dims2().expect("matrix"), (4, 3));
        assert_eq!(tensor.flatten_all().and_then(|flat| flat.to_vec1::<f32>()).expect("f32 data"), embeddings);

        let metadata = read_safetensors_metadata(&bytes).expect("metadata");
        assert_eq!(metadata.get("format").and_then(Value::as_str), Some(STATIC_MODEL_FORMAT));
    }

    #[test]
    fn short_key_hasher_separates_prefixes() {
        let hash = |bytes: &[u8]| {
            let mut hasher = ShortKeyHasher::default();
            std::hash::Hash::hash(bytes, &mut hasher);
            hasher.finish()
        };
        assert_ne!(hash(b"run"), hash(b"runs"));
        assert_ne!(hash(b"a"), hash(b"a\0"));
        assert_eq!(hash(b"tokenizer"), hash(b"tokenizer"));
    }

    #[test]
    fn piece_buffer_spills_past_its_inline_capacity() {
        let mut buffer = PieceBuffer::default();
        for id in 0..40 {
            buffer.push(id);
        }
        assert_eq!(buffer.as_slice(), (0..40).collect::<Vec<u32>>().as_slice());
    }
}
