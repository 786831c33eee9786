//! all-MiniLM-L6-v2 with 8-bit weights, run by ONNX Runtime: the deep
//! tier's default model, 2–3× the speed of the float forward in candle.
//!
//! The graph (`model.onnx`) is written by `scripts/minilm_onnx.py` from the
//! same safetensors [`super::MiniLmEmbedder`] runs, with its 36 linear
//! layers quantised to 8 bits; it takes `input_ids` and returns the mean of
//! the token outputs, which is L2-normalised here. Its vectors are close to
//! the float model's (cosine above 0.95 on every text of the tests), not
//! equal: it is a model of its own, with its own id.
//!
//! ONNX Runtime is a C++ library loaded at run time from a path
//! (`libonnxruntime.so`, shipped beside the model): the one file this crate
//! opens itself, since a library cannot be handed in as bytes.

use std::path::Path;
use std::sync::{Mutex, OnceLock};

use ort::environment::Environment;
use ort::session::Session;
use ort::session::builder::{GraphOptimizationLevel, SessionBuilder};
use ort::value::Tensor;
use tokenizers::{Tokenizer, TruncationParams};

use super::{Embedder, normalize, sha256_hex};
use crate::IndexError;

/// The model saw sequences of at most 256 word pieces in training
/// (sentence-transformers' `max_seq_length`); longer text is truncated.
const MAX_SEQUENCE_TOKENS: usize = 256;

/// What the graph returns per text.
const DIMENSIONS: usize = 384;

/// The deep tier's all-MiniLM-L6-v2, 8-bit, on ONNX Runtime.
///
/// Each text runs alone, in a forward of its own: the graph scales its
/// activations per tensor at run time, so a text batched with others would
/// get another vector. Alone, a text's vector depends on nothing else
/// (checked by a test); a batch costs no more per text than one forward per
/// text, as ONNX Runtime's kernels do not gain from batching at these sizes.
///
/// Sessions of one thread each: one for single texts (a search's question,
/// [`Embedder::embed`]) and `batch_threads` for batches (the enricher,
/// [`Embedder::embed_batch`]), so that a question never waits behind an
/// enrichment batch, and the enricher takes as many cores as it is given,
/// not all of them. Every session computes identically, so a text's vector
/// does not depend on which one ran it.
pub struct OnnxMiniLmEmbedder {
    tokenizer: Tokenizer,
    single: Mutex<Session>,
    batch: Vec<Mutex<Session>>,
    model_id: String,
}

impl OnnxMiniLmEmbedder {
    /// Loads ONNX Runtime from `runtime` (once per process: a second call
    /// must name the same library) and the model from `model_onnx` and
    /// `tokenizer_json`, with `batch_threads` sessions (at least one) for
    /// batches, then embeds a probe sentence, so that a model which loads
    /// but cannot run is refused here.
    pub fn load(
        model_onnx: &[u8],
        tokenizer_json: &[u8],
        runtime: &Path,
        batch_threads: usize,
    ) -> Result<OnnxMiniLmEmbedder, IndexError> {
        let environment = runtime_environment(runtime)?;
        let session = || -> Result<Session, IndexError> {
            let configured = || -> ort::Result<SessionBuilder> {
                Ok(Session::builder(environment)?
                    .with_optimization_level(GraphOptimizationLevel::All)?
                    .with_intra_threads(1)?
                    .with_inter_threads(1)?
                    .with_intra_op_spinning(false)?)
            };
            configured()
                .map_err(|error| model_error("cannot configure an ONNX Runtime session", error))?
                .commit_from_memory(model_onnx)
                .map_err(|error| model_error("model.onnx cannot be loaded by ONNX Runtime", error))
        };
        let single = session()?;
        let batch = (0..batch_threads.max(1)).map(|_| session()).collect::<Result<Vec<_>, _>>()?;
        for session in std::iter::once(&single).chain(&batch) {
            let names =
                |outlets: &[ort::value::Outlet]| outlets.iter().map(|outlet| outlet.name().to_owned()).collect();
            let (inputs, outputs): (Vec<String>, Vec<String>) = (names(session.inputs()), names(session.outputs()));
            if inputs != ["input_ids"] || outputs != ["pooled"] {
                return Err(IndexError::Model(format!(
                    "model.onnx takes {inputs:?} and returns {outputs:?}; expected [\"input_ids\"] and [\"pooled\"], \
                     as scripts/minilm_onnx.py writes it"
                )));
            }
        }

        let mut tokenizer =
            Tokenizer::from_bytes(tokenizer_json).map_err(|error| model_error("tokenizer.json is unusable", error))?;
        // The shipped tokenizer.json pads every text to 128: each text runs
        // alone here, unpadded.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams { max_length: MAX_SEQUENCE_TOKENS, ..TruncationParams::default() }))
            .map_err(|error| model_error("cannot set truncation on the tokenizer", error))?;

        let model_id = format!("all-minilm-l6-v2-int8@sha256:{}", &sha256_hex(model_onnx)[..16]);
        let batch = batch.into_iter().map(Mutex::new).collect();
        let embedder = OnnxMiniLmEmbedder { tokenizer, single: Mutex::new(single), batch, model_id };
        let probe = embedder.try_embed("mneme loads its embedding model", &embedder.single)?;
        if probe.iter().all(|&value| value == 0.0) {
            return Err(IndexError::Model("the probe embedding is all zeros".to_owned()));
        }
        Ok(embedder)
    }

    /// The embedding of `text` on `lane`'s session, or the inference error.
    fn try_embed(&self, text: &str, lane: &Mutex<Session>) -> Result<Vec<f32>, IndexError> {
        let encoding = self.tokenizer.encode(text, true).map_err(|error| model_error("tokenization failed", error))?;
        let content_tokens = encoding.get_special_tokens_mask().iter().filter(|&&special| special == 0).count();
        if content_tokens == 0 {
            return Ok(vec![0.0; DIMENSIONS]);
        }
        let ids: Vec<i64> = encoding.get_ids().iter().map(|&id| i64::from(id)).collect();
        let input = Tensor::from_array(([1, ids.len()], ids))
            .map_err(|error| model_error("cannot build the input tensor", error))?;
        // A poisoned lock only means another embedding panicked; the session
        // holds no state between runs.
        let mut session = lane.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let outputs =
            session.run(ort::inputs!["input_ids" => input]).map_err(|error| model_error("inference failed", error))?;
        let (shape, values) = outputs["pooled"]
            .try_extract_tensor::<f32>()
            .map_err(|error| model_error("the model's output is not a float tensor", error))?;
        if shape.iter().copied().collect::<Vec<_>>() != [1, DIMENSIONS as i64] {
            return Err(IndexError::Model(format!("the model returned shape {shape:?}, not [1, {DIMENSIONS}]")));
        }
        let mut vector = values.to_vec();
        if vector.iter().any(|value| !value.is_finite()) {
            return Err(IndexError::Model("the model returned a value that is not a finite number".to_owned()));
        }
        normalize(&mut vector);
        Ok(vector)
    }

    /// The embeddings of `texts`, in order, each run alone on one of the
    /// batch sessions (text `i` on session `i mod n`, the sessions in
    /// parallel), or the first inference error.
    pub fn try_embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, IndexError> {
        let lanes = self.batch.len().min(texts.len());
        if lanes <= 1 {
            return texts.iter().map(|text| self.try_embed(text, &self.batch[0])).collect();
        }
        let per_lane: Vec<Result<Vec<Vec<f32>>, IndexError>> = std::thread::scope(|scope| {
            let running: Vec<_> = (0..lanes)
                .map(|lane| {
                    scope.spawn(move || {
                        texts
                            .iter()
                            .skip(lane)
                            .step_by(lanes)
                            .map(|text| self.try_embed(text, &self.batch[lane]))
                            .collect()
                    })
                })
                .collect();
            running
                .into_iter()
                .map(|lane| lane.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
                .collect()
        });
        let mut per_lane = per_lane.into_iter().map(|lane| lane.map(Vec::into_iter)).collect::<Result<Vec<_>, _>>()?;
        Ok((0..texts.len()).map(|index| per_lane[index % lanes].next().expect("one vector per text")).collect())
    }
}

impl Embedder for OnnxMiniLmEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimensions(&self) -> usize {
        DIMENSIONS
    }

    /// # Panics
    ///
    /// If inference fails after the probe of [`OnnxMiniLmEmbedder::load`]
    /// succeeded: only a bug or memory exhaustion does that, and the trait
    /// has no error channel (a silent zero vector would lose the text).
    fn embed(&self, text: &str) -> Vec<f32> {
        match self.try_embed(text, &self.single) {
            Ok(vector) => vector,
            Err(error) => panic!("{} failed after a successful load: {error}", self.model_id),
        }
    }

    /// # Panics
    ///
    /// As [`OnnxMiniLmEmbedder::embed`].
    fn embed_batch(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        match self.try_embed_batch(texts) {
            Ok(vectors) => vectors,
            Err(error) => panic!("{} failed after a successful load: {error}", self.model_id),
        }
    }
}

/// ONNX Runtime's environment, loaded from `runtime` once per process.
fn runtime_environment(runtime: &Path) -> Result<&'static Environment, IndexError> {
    static LOADED: OnceLock<(std::path::PathBuf, Environment)> = OnceLock::new();
    static LOADING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = LOADING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if LOADED.get().is_none() {
        let environment = ort::init_from(runtime)
            .map_err(|error| model_error(&format!("cannot load ONNX Runtime from {}", runtime.display()), error))?
            .with_name("mneme")
            .build()
            .map_err(|error| model_error("cannot start ONNX Runtime", error))?;
        let _ = LOADED.set((runtime.to_path_buf(), environment));
    }
    let (loaded_from, environment) = LOADED.get().expect("set above");
    if loaded_from != runtime {
        return Err(IndexError::Model(format!(
            "ONNX Runtime is already loaded from {}; this process cannot load {} too",
            loaded_from.display(),
            runtime.display()
        )));
    }
    Ok(environment)
}

fn model_error(what: &str, error: impl std::fmt::Display) -> IndexError {
    IndexError::Model(format!("{what}: {error}"))
}
