//! A lean forward pass of a BERT encoder over sequences without padding,
//! for [`super::MiniLmEmbedder`]: the same arithmetic as candle's
//! `BertModel`, with fewer and fused operations.
//!
//! - The query, key and value projections are one matrix product (their
//!   weights concatenated at load), not three.
//! - No attention mask: every sequence of a forward has the same length and
//!   no padding (see `MiniLmEmbedder`), so the mask candle builds and adds
//!   in every layer is all zeros.
//! - Softmax and layer norm are candle's fused kernels
//!   (`softmax_last_dim`, `ops::layer_norm`), not chains of elementwise
//!   operations each allocating its tensor.
//! - Activations stay two-dimensional (tokens × hidden) between layers.
//!
//! Dropout is absent (inference). Position embeddings are absolute and the
//! token type is 0 throughout (single-segment input), as the embedder needs.

use candle_core::{DType, Module, Result, Tensor};
use candle_nn::{Linear, VarBuilder};
use candle_transformers::models::bert::{Config, HiddenAct};

/// The encoder: embeddings, then its layers.
pub(crate) struct LeanBert {
    word_embeddings: Tensor,
    position_embeddings: Tensor,
    /// Row 0 of the token type embeddings: the only segment used.
    token_type: Tensor,
    embeddings_norm: Norm,
    layers: Vec<Layer>,
    activation: HiddenAct,
    heads: usize,
    head_size: usize,
    hidden: usize,
}

struct Layer {
    /// Query, key and value in one: hidden → 3 × hidden.
    qkv: Linear,
    attention_out: Linear,
    attention_norm: Norm,
    intermediate: Linear,
    output: Linear,
    output_norm: Norm,
}

/// Layer norm with weight and bias.
struct Norm {
    weight: Tensor,
    bias: Tensor,
    eps: f32,
}

impl Norm {
    fn load(variables: VarBuilder, size: usize, eps: f64) -> Result<Norm> {
        Ok(Norm { weight: variables.get(size, "weight")?, bias: variables.get(size, "bias")?, eps: eps as f32 })
    }

    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        candle_nn::ops::layer_norm(xs, &self.weight, &self.bias, self.eps)
    }
}

fn linear(variables: VarBuilder, inputs: usize, outputs: usize) -> Result<Linear> {
    Ok(Linear::new(variables.get((outputs, inputs), "weight")?, Some(variables.get(outputs, "bias")?)))
}

impl LeanBert {
    /// The weights of a BERT export (`embeddings.*`, `encoder.layer.N.*`, as
    /// sentence-transformers saves them), as `config` describes them.
    pub(crate) fn load(variables: VarBuilder, config: &Config) -> Result<LeanBert> {
        let hidden = config.hidden_size;
        let embeddings = variables.pp("embeddings");
        let token_types = embeddings.get((config.type_vocab_size, hidden), "token_type_embeddings.weight")?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for index in 0..config.num_hidden_layers {
            let layer = variables.pp(format!("encoder.layer.{index}"));
            let attention = layer.pp("attention");
            let own = attention.pp("self");
            let weight = |name: &str| own.pp(name).get((hidden, hidden), "weight");
            let bias = |name: &str| own.pp(name).get(hidden, "bias");
            let qkv_weight = Tensor::cat(&[weight("query")?, weight("key")?, weight("value")?], 0)?;
            let qkv_bias = Tensor::cat(&[bias("query")?, bias("key")?, bias("value")?], 0)?;
            layers.push(Layer {
                qkv: Linear::new(qkv_weight, Some(qkv_bias)),
                attention_out: linear(attention.pp("output.dense"), hidden, hidden)?,
                attention_norm: Norm::load(attention.pp("output.LayerNorm"), hidden, config.layer_norm_eps)?,
                intermediate: linear(layer.pp("intermediate.dense"), hidden, config.intermediate_size)?,
                output: linear(layer.pp("output.dense"), config.intermediate_size, hidden)?,
                output_norm: Norm::load(layer.pp("output.LayerNorm"), hidden, config.layer_norm_eps)?,
            });
        }
        Ok(LeanBert {
            word_embeddings: embeddings.get((config.vocab_size, hidden), "word_embeddings.weight")?,
            position_embeddings: embeddings
                .get((config.max_position_embeddings, hidden), "position_embeddings.weight")?,
            token_type: token_types.get(0)?,
            embeddings_norm: Norm::load(embeddings.pp("LayerNorm"), hidden, config.layer_norm_eps)?,
            layers,
            activation: config.hidden_act,
            heads: config.num_attention_heads,
            head_size: hidden / config.num_attention_heads,
            hidden,
        })
    }

    /// The last layer's output for `input_ids` (rows × length, no padding):
    /// rows × length × hidden.
    pub(crate) fn forward(&self, input_ids: &Tensor) -> Result<Tensor> {
        let (rows, length) = input_ids.dims2()?;
        let words = self.word_embeddings.index_select(&input_ids.flatten_all()?, 0)?;
        let positions = self.position_embeddings.narrow(0, 0, length)?.repeat((rows, 1))?;
        let embedded = (words + positions)?.broadcast_add(&self.token_type)?;
        let mut states = self.embeddings_norm.forward(&embedded)?;
        for layer in &self.layers {
            states = self.layer_forward(layer, &states, rows, length)?;
        }
        states.reshape((rows, length, self.hidden))
    }

    /// One layer over `states` (rows·length × hidden).
    fn layer_forward(&self, layer: &Layer, states: &Tensor, rows: usize, length: usize) -> Result<Tensor> {
        let qkv = layer.qkv.forward(states)?;
        // rows × length × (q, k, v) × heads × head size → (q, k, v) × rows × heads × length × head size.
        let qkv = qkv.reshape((rows, length, 3, self.heads, self.head_size))?.permute((2, 0, 3, 1, 4))?;
        let query = qkv.get(0)?.contiguous()?;
        let key = qkv.get(1)?.contiguous()?;
        let value = qkv.get(2)?.contiguous()?;
        let scale = 1.0 / (self.head_size as f64).sqrt();
        let scores = (query.matmul(&key.t()?)? * scale)?;
        let probabilities = candle_nn::ops::softmax_last_dim(&scores)?;
        let context =
            probabilities.matmul(&value)?.transpose(1, 2)?.contiguous()?.reshape((rows * length, self.hidden))?;
        let attended = layer.attention_norm.forward(&(layer.attention_out.forward(&context)? + states)?)?;
        let inner = layer.intermediate.forward(&attended)?;
        let inner = match self.activation {
            HiddenAct::Gelu => inner.gelu_erf()?,
            HiddenAct::GeluApproximate => inner.gelu()?,
            HiddenAct::Relu => inner.relu()?,
        };
        layer.output_norm.forward(&(layer.output.forward(&inner)? + &attended)?)
    }
}

/// Mean of the token outputs per row (every token counts: no padding),
/// unnormalised: rows × hidden.
pub(crate) fn mean_pooled(outputs: &Tensor) -> Result<Vec<Vec<f32>>> {
    outputs.mean(1)?.to_dtype(DType::F32)?.to_vec2::<f32>()
}
