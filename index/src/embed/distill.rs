//! Distillation of a static embedding model from MiniLM, following the
//! model2vec recipe (Tulkens & van Dongen, 2024):
//!
//! 1. **Token outputs.** Every vocabulary token runs through MiniLM alone, as
//!    the sequence `[CLS] token [SEP]` (ids fed directly, no re-tokenizing),
//!    and its three output vectors are mean-pooled: the token's meaning in
//!    the teacher's sentence space.
//! 2. **PCA.** The pooled vectors are centred on their mean and projected on
//!    the top `dimensions` eigenvectors of their 384×384 covariance
//!    (computed in `f64`). PCA decorrelates the dimensions and drops the
//!    ones that mostly encode noise; model2vec found it helps, not just
//!    shrinks.
//! 3. **SIF weighting.** Frequent tokens carry little meaning, so each row is
//!    scaled by `a / (a + p(token))` (smooth inverse frequency, Arora et al.,
//!    2017), `a` = `sif_coefficient`. With no corpus counts at hand,
//!    `p(token)` comes from Zipf's law on the vocabulary rank, exactly as
//!    model2vec does: the token with id `r` (of `V` ids) gets
//!    `p = (1 / (r + 2)) / Σ_{i<V} 1 / (i + 2)`. BERT's vocabulary is ordered
//!    by frequency only roughly (reserved ids, then single characters, then
//!    words by frequency, then `##` pieces), so this down-weights the
//!    punctuation and single characters most and common words mildly.
//!
//! Tokens that carry no meaning of their own get a zero row and take no part
//! in the PCA: the tokenizer's special tokens (`[PAD]`, `[UNK]`, `[CLS]`,
//! `[SEP]`, `[MASK]`) and the reserved `[unused…]` slots. A text's static
//! embedding then simply ignores them.
//!
//! **Determinism.** The same teacher, vocabulary selection and options give
//! bit-identical files on the same machine: tokens are processed in id order,
//! in fixed batches, and every reduction has a fixed order. Two caveats
//! about floats: the matrix kernels pick SIMD code for the CPU at run time,
//! so a machine with other vector instructions (AVX-512 against AVX2) may
//! round differently; and changing `batch_size` changes the kernels' blocking
//! and may change the last bits. The resulting model id (a hash of the file)
//! records exactly which weights a memory was built with either way.

use nalgebra::{DMatrix, SymmetricEigen};

use super::minilm::MiniLmEmbedder;
use super::static_model::{STATIC_MODEL_FORMAT, StaticModelFiles, encode_embeddings_file, static_model_id};
use super::{Embedder, sha256_hex};
use crate::IndexError;

/// Which vocabulary tokens to distill; the others get zero rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VocabularySelection {
    /// Every token but the special and reserved ones: a real model.
    All,
    /// The first `n` distillable tokens in id order: a quick, small model
    /// for tests.
    FirstTokens(usize),
    /// These tokens (vocabulary strings such as `"memory"` or `"##ing"`);
    /// unknown, special or reserved tokens are an error.
    Tokens(Vec<String>),
}

/// Settings of [`distill_static_model`].
#[derive(Debug, Clone, PartialEq)]
pub struct DistillOptions {
    /// Dimensions kept by the PCA (at most the teacher's 384).
    pub dimensions: usize,
    /// SIF's `a`: smaller values down-weight frequent tokens more.
    pub sif_coefficient: f64,
    /// Tokens per MiniLM forward pass (part of what makes the output
    /// bit-reproducible; see the module documentation).
    pub batch_size: usize,
    /// Which tokens get vectors: all of them for a real model.
    pub vocabulary: VocabularySelection,
}

impl Default for DistillOptions {
    /// model2vec's defaults: 256 dimensions, SIF coefficient 1e-4, the whole
    /// vocabulary; 256 tokens per forward pass.
    fn default() -> Self {
        DistillOptions { dimensions: 256, sif_coefficient: 1e-4, batch_size: 256, vocabulary: VocabularySelection::All }
    }
}

/// How far the token pass of a distillation is (the PCA after it takes a
/// second or two).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DistillProgress {
    pub tokens_done: usize,
    pub tokens_total: usize,
}

/// Distills a static model from `teacher`; see the module documentation for
/// the recipe. The whole vocabulary takes about half a minute in a release
/// build on two cores.
pub fn distill_static_model(
    teacher: &MiniLmEmbedder,
    options: &DistillOptions,
) -> Result<StaticModelFiles, IndexError> {
    distill_static_model_with_progress(teacher, options, &mut |_| {})
}

/// [`distill_static_model`], reporting progress after every batch.
pub fn distill_static_model_with_progress(
    teacher: &MiniLmEmbedder,
    options: &DistillOptions,
    on_progress: &mut dyn FnMut(DistillProgress),
) -> Result<StaticModelFiles, IndexError> {
    let hidden_size = teacher.dimensions();
    if options.dimensions == 0 || options.dimensions > hidden_size {
        return Err(invalid(format!("dimensions must be between 1 and {hidden_size}, not {}", options.dimensions)));
    }
    if !(options.sif_coefficient.is_finite() && options.sif_coefficient > 0.0) {
        return Err(invalid(format!("sif_coefficient must be positive, not {}", options.sif_coefficient)));
    }
    if options.batch_size == 0 {
        return Err(invalid("batch_size must be at least 1".to_owned()));
    }

    let vocabulary = Vocabulary::of(teacher);
    let selected = vocabulary.select(&options.vocabulary)?;
    if selected.len() < 2 {
        return Err(invalid(format!("at least 2 tokens are needed for the PCA, {} selected", selected.len())));
    }

    // 1. Token outputs, row-major [selected, hidden].
    let mut outputs = Vec::with_capacity(selected.len() * hidden_size);
    for batch in selected.chunks(options.batch_size) {
        for row in teacher.pooled_single_token_outputs(batch)? {
            if row.len() != hidden_size {
                return Err(IndexError::Model(format!("teacher output has {} values, not {hidden_size}", row.len())));
            }
            outputs.extend(row.into_iter().map(f64::from));
        }
        on_progress(DistillProgress { tokens_done: outputs.len() / hidden_size, tokens_total: selected.len() });
    }

    // 2. PCA.
    let projected =
        principal_components(DMatrix::from_row_slice(selected.len(), hidden_size, &outputs), options.dimensions)?;

    // 3. SIF weights from the Zipf probability of each token's rank, over the
    //    whole vocabulary (so a subset distillation weighs tokens the same).
    let rows = vocabulary.size();
    let zipf_normaliser: f64 = (0..rows).map(|rank| 1.0 / (rank as f64 + 2.0)).sum();
    let mut embeddings = vec![0.0f32; rows * options.dimensions];
    for (index, &token_id) in selected.iter().enumerate() {
        let probability = 1.0 / (f64::from(token_id) + 2.0) / zipf_normaliser;
        let weight = options.sif_coefficient / (options.sif_coefficient + probability);
        let start = token_id as usize * options.dimensions;
        for (dimension, value) in embeddings[start..start + options.dimensions].iter_mut().enumerate() {
            *value = (projected[(index, dimension)] * weight) as f32;
        }
    }

    let metadata = [
        ("format", STATIC_MODEL_FORMAT.to_owned()),
        ("source_model", teacher.model_id().to_owned()),
        ("tokenizer_sha256", sha256_hex(teacher.tokenizer_json())),
        ("recipe", "model2vec: [CLS] token [SEP] mean-pooled, PCA, SIF with Zipf-by-rank probabilities".to_owned()),
        ("dimensions", options.dimensions.to_string()),
        ("sif_coefficient", options.sif_coefficient.to_string()),
        ("distilled_tokens", selected.len().to_string()),
    ];
    let embeddings_safetensors = encode_embeddings_file(&embeddings, rows, options.dimensions, &metadata);
    Ok(StaticModelFiles {
        model_id: static_model_id(options.dimensions, &embeddings_safetensors),
        embeddings_safetensors,
        tokenizer_json: teacher.tokenizer_json().to_vec(),
    })
}

fn invalid(message: String) -> IndexError {
    IndexError::Model(format!("cannot distill: {message}"))
}

/// The teacher's vocabulary by id, and which ids can be distilled.
struct Vocabulary {
    by_token: std::collections::HashMap<String, u32>,
    /// Per id: special, reserved or unused, hence never distilled.
    excluded: Vec<bool>,
}

impl Vocabulary {
    fn of(teacher: &MiniLmEmbedder) -> Vocabulary {
        let tokenizer = teacher.tokenizer();
        let by_token = tokenizer.get_vocab(true);
        let size = by_token.values().max().map_or(0, |&largest| largest as usize + 1);
        let mut tokens: Vec<Option<&str>> = vec![None; size];
        for (token, &id) in &by_token {
            tokens[id as usize] = Some(token);
        }
        let mut excluded: Vec<bool> = tokens
            .iter()
            .map(|token| token.is_none_or(|token| token.starts_with("[unused") && token.ends_with(']')))
            .collect();
        for (id, token) in tokenizer.get_added_tokens_decoder() {
            if token.special
                && let Some(flag) = excluded.get_mut(id as usize)
            {
                *flag = true;
            }
        }
        Vocabulary { by_token, excluded }
    }

    /// Number of ids, hence of rows in the static model.
    fn size(&self) -> usize {
        self.excluded.len()
    }

    /// The ids to distill, ascending.
    fn select(&self, selection: &VocabularySelection) -> Result<Vec<u32>, IndexError> {
        let distillable = (0..self.size()).filter(|&id| !self.excluded[id]).map(|id| id as u32);
        match selection {
            VocabularySelection::All => Ok(distillable.collect()),
            VocabularySelection::FirstTokens(count) => Ok(distillable.take(*count).collect()),
            VocabularySelection::Tokens(wanted) => {
                let mut ids = Vec::with_capacity(wanted.len());
                for token in wanted {
                    match self.by_token.get(token) {
                        Some(&id) if !self.excluded[id as usize] => ids.push(id),
                        Some(_) => return Err(invalid(format!("{token:?} is a special or reserved token"))),
                        None => return Err(invalid(format!("{token:?} is not in the vocabulary"))),
                    }
                }
                ids.sort_unstable();
                ids.dedup();
                Ok(ids)
            }
        }
    }
}

/// Centres the rows of `samples` ([n, features]) and projects them on the
/// `dimensions` eigenvectors of their covariance with the largest
/// eigenvalues, in decreasing order: the PCA scores, [n, dimensions].
///
/// Eigenvectors are only defined up to sign; each is flipped so that its
/// largest-magnitude component is positive, so the result does not depend on
/// the eigen solver's internals.
fn principal_components(mut samples: DMatrix<f64>, dimensions: usize) -> Result<DMatrix<f64>, IndexError> {
    let (count, features) = samples.shape();
    for mut column in samples.column_iter_mut() {
        let mean = column.sum() / count as f64;
        column.add_scalar_mut(-mean);
    }
    let covariance = samples.tr_mul(&samples) / (count as f64 - 1.0);

    // The implicit QR iterations converge in a few dozen sweeps per
    // eigenvalue; the cap turns a pathological input into an error, not a hang.
    let eigen = SymmetricEigen::try_new(covariance, f64::EPSILON, 1000 * features)
        .ok_or_else(|| IndexError::Model("PCA: the eigen decomposition did not converge".to_owned()))?;
    let mut order: Vec<usize> = (0..features).collect();
    // Decreasing eigenvalue; equal ones keep their solver order (stable sort).
    order.sort_by(|&a, &b| eigen.eigenvalues[b].total_cmp(&eigen.eigenvalues[a]));

    let mut components = DMatrix::<f64>::zeros(features, dimensions);
    for (target, &source) in order.iter().take(dimensions).enumerate() {
        let eigenvector = eigen.eigenvectors.column(source);
        // First index of the largest magnitude, so ties resolve the same way.
        let mut pivot = 0;
        for index in 1..features {
            if eigenvector[index].abs() > eigenvector[pivot].abs() {
                pivot = index;
            }
        }
        let sign = if eigenvector[pivot] < 0.0 { -1.0 } else { 1.0 };
        components.set_column(target, &(eigenvector * sign));
    }
    Ok(samples * components)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pca_finds_the_dominant_direction_and_centres() {
        // Points along (1, 2, 0) with small noise on the third axis.
        let mut rows = Vec::new();
        for step in 0..20 {
            let t = step as f64 - 9.5;
            let noise = if step % 2 == 0 { 0.01 } else { -0.01 };
            rows.extend_from_slice(&[10.0 + t, 5.0 + 2.0 * t, noise]);
        }
        let scores = principal_components(DMatrix::from_row_slice(20, 3, &rows), 2).expect("PCA");
        assert_eq!(scores.shape(), (20, 2));
        // The first component carries the line: scores are t·|(1,2)| up to sign,
        // and the sign rule makes the largest component (the 2) positive.
        let length = 5f64.sqrt();
        for step in 0..20 {
            let t = step as f64 - 9.5;
            assert!((scores[(step, 0)] - t * length).abs() < 1e-6, "row {step}: {}", scores[(step, 0)]);
            assert!(scores[(step, 1)].abs() < 0.02);
        }
    }

    #[test]
    fn pca_is_deterministic() {
        let rows: Vec<f64> = (0..400).map(|index| ((index * 7919) % 113) as f64 / 17.0).collect();
        let first = principal_components(DMatrix::from_row_slice(50, 8, &rows), 4).expect("PCA");
        let second = principal_components(DMatrix::from_row_slice(50, 8, &rows), 4).expect("PCA");
        assert_eq!(first, second);
    }
}
