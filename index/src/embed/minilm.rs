//! all-MiniLM-L6-v2, the sentence-transformers model, run on the CPU with
//! candle: a 6-layer BERT whose token outputs are mean-pooled over the
//! attention mask and L2-normalised, exactly as sentence-transformers does.
//!
//! It is the quality reference (and the teacher the static model is distilled
//! from), at about 110 sentences per CPU-second; the static model is the one
//! to index with.

use std::collections::BTreeMap;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config, HiddenAct, PositionEmbeddingType};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use super::bert::{LeanBert, mean_pooled};
use super::json::{self, AsUsize, Value};
use super::{Embedder, normalize, sha256_hex};
use crate::IndexError;

/// The model was trained on sequences of at most 256 word pieces
/// (sentence-transformers' `max_seq_length`); longer text is truncated.
const MAX_SEQUENCE_TOKENS: usize = 256;

/// Texts per forward pass in [`MiniLmEmbedder::try_embed_batch`]: enough to
/// keep the matrix kernels busy while memory stays bounded.
const TEXTS_PER_FORWARD: usize = 32;

/// The sentence-transformers all-MiniLM-L6-v2 embedder (384 dimensions).
///
/// A text's vector does not depend on the texts it is batched with, bit for
/// bit, which a replay that batches differently from the live path needs.
/// Padding would break that: masked positions contribute exact zeros, but a
/// longer padded sequence changes the summation order inside the kernels
/// (measured: half of 200 texts differed in the last bits, up to 1.5e-7).
/// So batches only ever hold texts of the same token length, which the
/// kernels compute row by row identically whatever the batch size (checked
/// by a test). The results are still specific to the CPU's vector
/// instructions, as all float kernels are.
pub struct MiniLmEmbedder {
    forward: Forward,
    /// Truncation at [`MAX_SEQUENCE_TOKENS`] and padding to the longest text
    /// of a batch, overriding the shipped tokenizer.json, which pads and
    /// truncates everything to a fixed 128. (Inference then cuts each
    /// encoding back to its own length; see the type's documentation.)
    tokenizer: Tokenizer,
    /// The tokenizer.json as given, copied beside a distilled static model.
    tokenizer_json: Vec<u8>,
    /// The ids the tokenizer puts around one sequence: `[CLS]` and `[SEP]`.
    sequence_prefix_ids: Vec<u32>,
    sequence_suffix_ids: Vec<u32>,
    hidden_size: usize,
    model_id: String,
    device: Device,
}

impl MiniLmEmbedder {
    /// Loads the model from the three files of a sentence-transformers BERT
    /// export: `model.safetensors`, `tokenizer.json` and `config.json`.
    ///
    /// Embeds a probe sentence before returning, so that a model which loads
    /// but cannot run is refused here, not at the first event.
    pub fn from_bytes(
        safetensors: &[u8],
        tokenizer_json: &[u8],
        config_json: &[u8],
    ) -> Result<MiniLmEmbedder, IndexError> {
        MiniLmEmbedder::load(safetensors, tokenizer_json, config_json, ForwardKind::Stock)
    }

    /// As [`MiniLmEmbedder::from_bytes`], running the lean forward pass of
    /// `bert.rs` (fused projections and kernels, no mask) instead of
    /// candle's `BertModel`: the same vectors to within float rounding
    /// (checked by a test), in less time. Distillation keeps the stock
    /// forward, so that a distilled static model stays what it was.
    pub fn lean_from_bytes(
        safetensors: &[u8],
        tokenizer_json: &[u8],
        config_json: &[u8],
    ) -> Result<MiniLmEmbedder, IndexError> {
        MiniLmEmbedder::load(safetensors, tokenizer_json, config_json, ForwardKind::Lean)
    }

    fn load(
        safetensors: &[u8],
        tokenizer_json: &[u8],
        config_json: &[u8],
        kind: ForwardKind,
    ) -> Result<MiniLmEmbedder, IndexError> {
        let config = parse_bert_config(config_json)?;
        let device = Device::Cpu;
        let variables = VarBuilder::from_slice_safetensors(safetensors, DType::F32, &device)
            .map_err(|error| model_error("model.safetensors is not a readable safetensors file", error))?;
        let loaded = match kind {
            ForwardKind::Stock => BertModel::load(variables, &config).map(Forward::Stock),
            ForwardKind::Lean => LeanBert::load(variables, &config).map(Forward::Lean),
        };
        let forward = loaded.map_err(|error| {
            model_error("model.safetensors does not hold the BERT weights config.json describes", error)
        })?;

        let mut tokenizer =
            Tokenizer::from_bytes(tokenizer_json).map_err(|error| model_error("tokenizer.json is unusable", error))?;
        let pad_token = tokenizer.get_padding().map(|padding| (padding.pad_id, padding.pad_token.clone()));
        let (pad_id, pad_token) = pad_token.unwrap_or_else(|| (config.pad_token_id as u32, "[PAD]".to_owned()));
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            pad_id,
            pad_token,
            ..PaddingParams::default()
        }));
        tokenizer
            .with_truncation(Some(TruncationParams { max_length: MAX_SEQUENCE_TOKENS, ..TruncationParams::default() }))
            .map_err(|error| model_error("cannot set truncation on the tokenizer", error))?;
        let vocabulary_size = tokenizer.get_vocab_size(true);
        if vocabulary_size > config.vocab_size {
            return Err(IndexError::Model(format!(
                "tokenizer.json has {vocabulary_size} tokens but the model only {} embeddings",
                config.vocab_size
            )));
        }

        // The post-processor's template for one sequence, e.g. [CLS] A [SEP]:
        // distillation wraps every vocabulary token the same way.
        let empty = tokenizer
            .encode("", true)
            .map_err(|error| model_error("the tokenizer cannot encode an empty text", error))?;
        let (sequence_prefix_ids, sequence_suffix_ids) = match empty.get_ids() {
            [prefix, suffix] => (vec![*prefix], vec![*suffix]),
            other => {
                return Err(IndexError::Model(format!(
                    "expected the tokenizer to wrap a text in two special tokens ([CLS] … [SEP]), got {other:?}"
                )));
            }
        };

        let model_id = format!("all-minilm-l6-v2@sha256:{}", &sha256_hex(safetensors)[..16]);
        let embedder = MiniLmEmbedder {
            forward,
            tokenizer,
            tokenizer_json: tokenizer_json.to_vec(),
            sequence_prefix_ids,
            sequence_suffix_ids,
            hidden_size: config.hidden_size,
            model_id,
            device,
        };
        let probe = embedder.try_embed_batch(&["mneme loads its embedding model"])?;
        if probe.first().is_none_or(|vector| vector.len() != embedder.hidden_size) {
            return Err(IndexError::Model("the probe embedding has the wrong shape".to_owned()));
        }
        Ok(embedder)
    }

    /// The embeddings of `texts`, in order, or the inference error.
    ///
    /// Texts are encoded with `[CLS]`/`[SEP]` and truncated to 256 word
    /// pieces, then grouped by their exact length and run in chunks of up to
    /// 32 texts of one length, so no text is ever padded; the outputs are
    /// mean-pooled and L2-normalised. A text with no word pieces (empty or
    /// whitespace) gets the zero vector without running the model.
    pub fn try_embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, IndexError> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|error| model_error("tokenization failed", error))?;
        let mut vectors = vec![Vec::new(); texts.len()];
        // Text indices by sequence length; ascending lengths and ascending
        // indices within a length make the work order a function of the input.
        let mut by_length: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (index, encoding) in encodings.iter().enumerate() {
            let mask = encoding.get_attention_mask().iter();
            let special = encoding.get_special_tokens_mask().iter();
            let content_tokens =
                mask.zip(special).filter(|&(&attended, &special)| attended == 1 && special == 0).count();
            if content_tokens == 0 {
                vectors[index] = vec![0.0; self.hidden_size];
            } else {
                by_length.entry(attended_length(encoding)).or_default().push(index);
            }
        }
        for (&sequence_length, indices) in &by_length {
            for chunk in indices.chunks(TEXTS_PER_FORWARD) {
                let mut token_ids = Vec::with_capacity(chunk.len() * sequence_length);
                for &index in chunk {
                    token_ids.extend_from_slice(&encodings[index].get_ids()[..sequence_length]);
                }
                let attention = vec![1; token_ids.len()];
                let pooled = self.forward_mean_pooled(token_ids, attention, chunk.len(), sequence_length)?;
                if pooled.len() != chunk.len() {
                    return Err(IndexError::Model("the model returned fewer vectors than texts".to_owned()));
                }
                for (&index, mut vector) in chunk.iter().zip(pooled) {
                    normalize(&mut vector);
                    vectors[index] = vector;
                }
            }
        }
        Ok(vectors)
    }

    /// Mean-pooled, unnormalised model outputs for single vocabulary tokens,
    /// each run alone as `[CLS] token [SEP]`: the first step of model2vec
    /// distillation. All sequences have length 3, so there is no padding.
    pub fn pooled_single_token_outputs(&self, token_ids: &[u32]) -> Result<Vec<Vec<f32>>, IndexError> {
        if token_ids.is_empty() {
            return Ok(Vec::new());
        }
        let sequence_length = self.sequence_prefix_ids.len() + 1 + self.sequence_suffix_ids.len();
        let mut ids = Vec::with_capacity(token_ids.len() * sequence_length);
        for &token_id in token_ids {
            ids.extend_from_slice(&self.sequence_prefix_ids);
            ids.push(token_id);
            ids.extend_from_slice(&self.sequence_suffix_ids);
        }
        let attention = vec![1; ids.len()];
        self.forward_mean_pooled(ids, attention, token_ids.len(), sequence_length)
    }

    /// Runs BERT on a `[rows, sequence_length]` batch and averages each row's
    /// outputs over its attended positions.
    fn forward_mean_pooled(
        &self,
        token_ids: Vec<u32>,
        attention: Vec<u32>,
        rows: usize,
        sequence_length: usize,
    ) -> Result<Vec<Vec<f32>>, IndexError> {
        let run = || -> candle_core::Result<Vec<Vec<f32>>> {
            let input_ids = Tensor::from_vec(token_ids, (rows, sequence_length), &self.device)?;
            let model = match &self.forward {
                Forward::Stock(model) => model,
                // Every forward is of unpadded sequences of one length.
                Forward::Lean(model) => return mean_pooled(&model.forward(&input_ids)?),
            };
            let attention_mask = Tensor::from_vec(attention, (rows, sequence_length), &self.device)?;
            // Single-segment input: every token type is 0.
            let token_type_ids = input_ids.zeros_like()?;
            let outputs = model.forward(&input_ids, &token_type_ids, Some(&attention_mask))?;
            let mask = attention_mask.to_dtype(DType::F32)?.unsqueeze(2)?;
            let summed = outputs.broadcast_mul(&mask)?.sum(1)?;
            let counts = mask.sum(1)?;
            summed.broadcast_div(&counts)?.to_vec2::<f32>()
        };
        run().map_err(|error| model_error("MiniLM inference failed", error))
    }

    /// The tokenizer, as configured for inference (batch-longest padding,
    /// truncation at 256).
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The tokenizer.json this model was loaded with, byte for byte.
    pub fn tokenizer_json(&self) -> &[u8] {
        &self.tokenizer_json
    }
}

/// Which forward pass a [`MiniLmEmbedder`] runs.
enum Forward {
    /// candle-transformers' `BertModel`.
    Stock(BertModel),
    /// `bert.rs`.
    Lean(LeanBert),
}

#[derive(Clone, Copy)]
enum ForwardKind {
    Stock,
    Lean,
}

impl Embedder for MiniLmEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimensions(&self) -> usize {
        self.hidden_size
    }

    fn embed(&self, text: &str) -> Vec<f32> {
        self.embed_batch(&[text]).pop().unwrap_or_else(|| vec![0.0; self.hidden_size])
    }

    /// # Panics
    ///
    /// If inference fails. Once [`MiniLmEmbedder::from_bytes`] has run its
    /// probe, the tokenizer and model only fail on a bug or memory
    /// exhaustion, and the trait has no error channel: a silent zero vector
    /// would lose the text from the index without a trace.
    fn embed_batch(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        match self.try_embed_batch(texts) {
            Ok(vectors) => vectors,
            Err(error) => panic!("{} failed after a successful load: {error}", self.model_id),
        }
    }
}

/// Number of leading positions a (right-padded) encoding attends to.
fn attended_length(encoding: &tokenizers::Encoding) -> usize {
    encoding.get_attention_mask().iter().take_while(|&&attended| attended == 1).count()
}

fn model_error(what: &str, error: impl std::fmt::Display) -> IndexError {
    IndexError::Model(format!("{what}: {error}"))
}

/// Reads a Hugging Face BERT `config.json` into candle's [`Config`].
///
/// Required: the sizes and `hidden_act`; the rest falls back to the values
/// of `BertConfig` in transformers. Dropout and initialisation settings are
/// read for completeness but do not matter for inference.
fn parse_bert_config(config_json: &[u8]) -> Result<Config, IndexError> {
    let text = std::str::from_utf8(config_json)
        .map_err(|error| IndexError::Model(format!("config.json is not UTF-8: {error}")))?;
    let config = json::parse(text).map_err(|error| IndexError::Model(format!("config.json: {error}")))?;
    let invalid = |key: &str, expected: &str| IndexError::Model(format!("config.json: `{key}` must be {expected}"));
    let size =
        |key: &str| config.get(key).and_then(Value::as_usize).ok_or_else(|| invalid(key, "a non-negative integer"));
    let size_or = |key: &str, default: usize| match config.get(key) {
        None => Ok(default),
        Some(value) => value.as_usize().ok_or_else(|| invalid(key, "a non-negative integer")),
    };
    let number_or = |key: &str, default: f64| match config.get(key) {
        None => Ok(default),
        Some(value) => value.as_f64().ok_or_else(|| invalid(key, "a number")),
    };

    let hidden_act = match config.get("hidden_act").and_then(Value::as_str) {
        Some("gelu") => HiddenAct::Gelu,
        Some("gelu_new" | "gelu_pytorch_tanh" | "geluapproximate") => HiddenAct::GeluApproximate,
        Some("relu") => HiddenAct::Relu,
        _ => return Err(invalid("hidden_act", "one of gelu, gelu_new, relu")),
    };
    match config.get("position_embedding_type").map(|value| value.as_str()) {
        None | Some(Some("absolute")) => {}
        _ => return Err(invalid("position_embedding_type", "\"absolute\" (the only kind supported)")),
    }
    let classifier_dropout = match config.get("classifier_dropout") {
        None | Some(Value::Null) => None,
        Some(value) => Some(value.as_f64().ok_or_else(|| invalid("classifier_dropout", "a number or null"))?),
    };

    let parsed = Config {
        vocab_size: size("vocab_size")?,
        hidden_size: size("hidden_size")?,
        num_hidden_layers: size("num_hidden_layers")?,
        num_attention_heads: size("num_attention_heads")?,
        intermediate_size: size("intermediate_size")?,
        hidden_act,
        hidden_dropout_prob: number_or("hidden_dropout_prob", 0.1)?,
        max_position_embeddings: size_or("max_position_embeddings", 512)?,
        type_vocab_size: size_or("type_vocab_size", 2)?,
        initializer_range: number_or("initializer_range", 0.02)?,
        layer_norm_eps: number_or("layer_norm_eps", 1e-12)?,
        pad_token_id: size_or("pad_token_id", 0)?,
        position_embedding_type: PositionEmbeddingType::Absolute,
        use_cache: config.get("use_cache").and_then(Value::as_bool).unwrap_or(true),
        classifier_dropout,
        model_type: config.get("model_type").and_then(Value::as_str).map(str::to_owned),
    };
    if parsed.num_attention_heads == 0 || !parsed.hidden_size.is_multiple_of(parsed.num_attention_heads) {
        return Err(invalid("num_attention_heads", "a divisor of hidden_size"));
    }
    if parsed.max_position_embeddings < MAX_SEQUENCE_TOKENS {
        return Err(invalid("max_position_embeddings", "at least 256"));
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINILM_CONFIG: &str = r#"{
      "_name_or_path": "nreimers/MiniLM-L6-H384-uncased", "architectures": ["BertModel"],
      "attention_probs_dropout_prob": 0.1, "gradient_checkpointing": false, "hidden_act": "gelu",
      "hidden_dropout_prob": 0.1, "hidden_size": 384, "initializer_range": 0.02, "intermediate_size": 1536,
      "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "bert", "num_attention_heads": 12,
      "num_hidden_layers": 6, "pad_token_id": 0, "position_embedding_type": "absolute",
      "transformers_version": "4.8.2", "type_vocab_size": 2, "use_cache": true, "vocab_size": 30522
    }"#;

    #[test]
    fn reads_the_minilm_config() {
        let config = parse_bert_config(MINILM_CONFIG.as_bytes()).expect("valid config");
        assert_eq!(config.hidden_size, 384);
        assert_eq!(config.num_hidden_layers, 6);
        assert_eq!(config.num_attention_heads, 12);
        assert_eq!(config.intermediate_size, 1536);
        assert_eq!(config.vocab_size, 30522);
        assert_eq!(config.hidden_act, HiddenAct::Gelu);
        assert_eq!(config.layer_norm_eps, 1e-12);
        assert_eq!(config.model_type.as_deref(), Some("bert"));
    }

    #[test]
    fn refuses_configs_it_cannot_run() {
        let missing_size = MINILM_CONFIG.replace("\"hidden_size\": 384,", "");
        assert!(parse_bert_config(missing_size.as_bytes()).is_err());
        let odd_heads = MINILM_CONFIG.replace("\"num_attention_heads\": 12", "\"num_attention_heads\": 7");
        assert!(parse_bert_config(odd_heads.as_bytes()).is_err());
        let relative = MINILM_CONFIG.replace("\"absolute\"", "\"relative_key\"");
        assert!(parse_bert_config(relative.as_bytes()).is_err());
        assert!(parse_bert_config(b"not json").is_err());
    }
}
