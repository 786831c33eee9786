//! `[enrichment]`: the deep tier. An enricher embeds items with a model
//! stronger than the write path's, off it, and records the vectors on the
//! log (`embeddings_computed`; see `enricher.rs`).

use mneme_events::MAX_COMPUTED_VECTORS;
use serde::Deserialize;

/// Which model computes the deep vectors, and how the enricher paces
/// itself.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EnrichmentSection {
    /// `auto`: all-MiniLM-L6-v2 with 8-bit weights on ONNX Runtime where its
    /// files are found (`minilm_int8_dir`, or where models are looked for),
    /// else the float all-MiniLM-L6-v2 where its files are found (`[embedder]
    /// minilm_dir`, or where models are looked for), else no deep tier;
    /// `minilm-int8` and `minilm`: that model, and an error without its
    /// files; `off`: no deep tier (recorded vectors change nothing). The two
    /// models' vectors differ: a memory fuses only those of the model it
    /// runs.
    #[serde(default)]
    pub model: EnrichmentModel,
    /// The directory of the 8-bit model (`model.onnx`, `tokenizer.json`,
    /// `libonnxruntime.so`, as `scripts/fetch-deep-model.sh` builds them);
    /// unset: looked for as `all-MiniLM-L6-v2-int8` where models are.
    #[serde(default)]
    pub minilm_int8_dir: Option<std::path::PathBuf>,
    /// Cores the 8-bit model's enricher computes on: 1 leaves the other
    /// cores to the write path and to queries (which have a session of
    /// their own); more drains a backlog faster. The float model runs on
    /// every core whatever this says.
    #[serde(default = "default_threads")]
    pub threads: usize,
    /// Items embedded together, and at most one event's vectors.
    #[serde(default = "default_batch")]
    pub batch: usize,
    /// How long the enricher rests when no item waits, in milliseconds.
    #[serde(default = "default_idle_ms")]
    pub idle_ms: u64,
}

/// The deep model.
#[derive(Debug, Clone, Copy, serde::Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum EnrichmentModel {
    #[default]
    Auto,
    #[serde(rename = "minilm-int8")]
    MiniLmInt8,
    #[serde(rename = "minilm")]
    MiniLm,
    Off,
}

impl Default for EnrichmentSection {
    fn default() -> Self {
        EnrichmentSection {
            model: EnrichmentModel::default(),
            minilm_int8_dir: None,
            threads: default_threads(),
            batch: default_batch(),
            idle_ms: default_idle_ms(),
        }
    }
}

fn default_threads() -> usize {
    1
}
fn default_batch() -> usize {
    128
}
fn default_idle_ms() -> u64 {
    1000
}

impl EnrichmentSection {
    pub(super) fn check(&self) -> Result<(), String> {
        if !(1..=MAX_COMPUTED_VECTORS).contains(&self.batch) {
            return Err(format!(
                "enrichment.batch = {}; expected 1 to {MAX_COMPUTED_VECTORS} (the most vectors an event carries)",
                self.batch
            ));
        }
        if !(1..=64).contains(&self.threads) {
            return Err(format!("enrichment.threads = {}; expected 1 to 64", self.threads));
        }
        if !(10..=3_600_000).contains(&self.idle_ms) {
            return Err(format!("enrichment.idle_ms = {}; expected 10 to 3600000 milliseconds", self.idle_ms));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<EnrichmentSection, String> {
        let section: EnrichmentSection = toml::from_str(text).map_err(|error| error.to_string())?;
        section.check().map(|()| section)
    }

    #[test]
    fn reads_every_model_and_refuses_settings_out_of_range() {
        assert_eq!(parsed("").unwrap(), EnrichmentSection::default());
        for (name, model) in [
            ("auto", EnrichmentModel::Auto),
            ("minilm-int8", EnrichmentModel::MiniLmInt8),
            ("minilm", EnrichmentModel::MiniLm),
            ("off", EnrichmentModel::Off),
        ] {
            assert_eq!(parsed(&format!("model = \"{name}\"")).unwrap().model, model);
        }
        assert!(parsed("model = \"minilm_int8\"").is_err());
        assert_eq!(parsed("threads = 2").unwrap().threads, 2);
        for (setting, named) in [
            ("threads = 0", "enrichment.threads"),
            ("threads = 65", "enrichment.threads"),
            ("batch = 0", "enrichment.batch"),
            ("batch = 257", "enrichment.batch"),
            ("idle_ms = 5", "enrichment.idle_ms"),
        ] {
            let error = parsed(setting).unwrap_err();
            assert!(error.contains(named), "{setting}: {error}");
        }
    }
}
