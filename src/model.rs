//! Embedding models on the binary's side: `mneme distill`, and choosing and
//! loading the embedder a swarm runs with. `mneme-projections` does no IO, so
//! the files are read (and written) here.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use mneme_actors::SwarmConfig;
use mneme_actors::swarm_config::{EmbedderKind, EmbedderSection, model_search_path};
use mneme_index::embed::{
    DistillOptions, Embedder, HashedNgramEmbedder, MiniLmEmbedder, OnnxMiniLmEmbedder, StaticEmbedder,
    StaticModelFiles, distill_static_model_with_progress,
};

/// The files of the all-MiniLM-L6-v2 directory `scripts/fetch-model.sh` fills.
const MINILM_WEIGHTS_FILE: &str = "model.safetensors";
const MINILM_TOKENIZER_FILE: &str = "tokenizer.json";
const MINILM_CONFIG_FILE: &str = "config.json";
/// The files of the 8-bit model's directory `scripts/fetch-deep-model.sh`
/// fills (with a tokenizer.json).
const MINILM_INT8_MODEL_FILE: &str = "model.onnx";
const ONNX_RUNTIME_FILE: &str = "libonnxruntime.so";

#[derive(Args, Debug, Clone)]
pub struct DistillArgs {
    /// Directory holding all-MiniLM-L6-v2 (model.safetensors, tokenizer.json,
    /// config.json), as downloaded by scripts/fetch-model.sh.
    #[arg(long, default_value = "models/all-MiniLM-L6-v2")]
    pub minilm: PathBuf,
    /// Directory to write the static model into (created if missing; its
    /// model files are replaced).
    #[arg(long, default_value = "models/static-minilm-l6-256")]
    pub out: PathBuf,
}

/// `mneme distill`: builds the static model from MiniLM (about a minute) and
/// writes its two files into `args.out`, each atomically.
pub fn run_distill(args: &DistillArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let teacher = load_minilm(&args.minilm)?;
    eprintln!(
        "loaded {} from {} in {:.1}s",
        teacher.model_id(),
        args.minilm.display(),
        started.elapsed().as_secs_f64()
    );

    let distill_started = Instant::now();
    let bar = crate::progress::bar(0, "vocabulary tokens through MiniLM");
    let files = distill_static_model_with_progress(&teacher, &DistillOptions::default(), &mut |progress| {
        bar.set_length(progress.tokens_total as u64);
        bar.set_position(progress.tokens_done as u64);
    })
    .with_context(|| format!("distilling a static model from {}", args.minilm.display()))?;
    bar.finish_and_clear();
    let distill_seconds = distill_started.elapsed().as_secs_f64();

    write_static_model(&args.out, &files)?;
    out!("distilled {} in {distill_seconds:.1}s into {}", files.model_id, args.out.display());
    Ok(ExitCode::SUCCESS)
}

/// Which embedder to run; `swarm.toml`'s `[embedder] kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedderChoice {
    /// The static model if its files exist, else the hashed fallback (with a
    /// warning).
    Auto,
    /// The static model; an error if it cannot be loaded.
    Static,
    /// all-MiniLM-L6-v2 itself; an error if it cannot be loaded.
    MiniLm,
    /// Hashed n-grams: no model, no semantics.
    Hashed,
}

impl From<EmbedderKind> for EmbedderChoice {
    fn from(kind: EmbedderKind) -> Self {
        match kind {
            EmbedderKind::Auto => EmbedderChoice::Auto,
            EmbedderKind::Static => EmbedderChoice::Static,
            EmbedderKind::Minilm => EmbedderChoice::MiniLm,
            EmbedderKind::Hashed => EmbedderChoice::Hashed,
        }
    }
}

/// The embedder `config`'s `[embedder]` section asks for.
pub fn load_configured_embedder(config: &SwarmConfig) -> anyhow::Result<Arc<dyn Embedder>> {
    let section = &config.embedder;
    load_embedder(section.kind.into(), section)
}

/// Embedders loaded for the swarms of one process: swarms whose
/// `[embedder]` sections ask for the same model share one copy of it.
#[derive(Default)]
pub struct EmbedderCache {
    loaded: Vec<(EmbedderSection, Arc<dyn Embedder>)>,
}

impl EmbedderCache {
    /// The embedder `config` asks for, loaded once.
    pub fn load(&mut self, config: &SwarmConfig) -> anyhow::Result<Arc<dyn Embedder>> {
        if let Some((_, embedder)) = self.loaded.iter().find(|(section, _)| *section == config.embedder) {
            return Ok(embedder.clone());
        }
        let embedder = load_configured_embedder(config)?;
        self.loaded.push((config.embedder.clone(), embedder.clone()));
        Ok(embedder)
    }
}

/// The deep model `[enrichment]` asks for, loaded once per process (about
/// 90 MB for the float one, 160 MB for the 8-bit one with one enricher
/// thread; swarms that ask for the same one share it); `None` when it asks
/// for none, or for `auto` and neither all-MiniLM-L6-v2 is found.
pub fn load_deep_model(config: &SwarmConfig) -> anyhow::Result<Option<Arc<dyn Embedder>>> {
    use mneme_actors::swarm_config::EnrichmentModel;
    type Loaded = Vec<((PathBuf, usize), Arc<dyn Embedder>)>;
    static LOADED: std::sync::Mutex<Loaded> = std::sync::Mutex::new(Vec::new());
    let int8 = || find_model(config.enrichment.minilm_int8_dir.as_deref(), MINILM_INT8_NAME, &MINILM_INT8_FILES);
    let float = || find_model(config.embedder.minilm_dir.as_deref(), MINILM_NAME, &MINILM_FILES);
    let (quantised, directory) = match config.enrichment.model {
        EnrichmentModel::Off => return Ok(None),
        EnrichmentModel::MiniLmInt8 => (
            true,
            int8().map_err(|places| {
                anyhow::anyhow!(
                    "[enrichment] model = \"minilm-int8\": no 8-bit all-MiniLM-L6-v2 (model.onnx, tokenizer.json, \
                     libonnxruntime.so) in {}. Run scripts/fetch-deep-model.sh, or set [enrichment] minilm_int8_dir.",
                    listed(&places)
                )
            })?,
        ),
        EnrichmentModel::MiniLm => (
            false,
            float().map_err(|places| {
                anyhow::anyhow!(
                    "[enrichment] model = \"minilm\": no all-MiniLM-L6-v2 (model.safetensors, tokenizer.json, \
                     config.json) in {}. Run scripts/fetch-model.sh, or set [embedder] minilm_dir.",
                    listed(&places)
                )
            })?,
        ),
        EnrichmentModel::Auto => match (int8(), float()) {
            (Ok(directory), _) => (true, directory),
            (Err(_), Ok(directory)) => (false, directory),
            (Err(int8_places), Err(float_places)) => {
                tracing::info!(
                    swarm = %config.swarm.name,
                    "no all-MiniLM-L6-v2 in {} or {}: no deep tier (scripts/fetch-deep-model.sh builds it)",
                    listed(&int8_places),
                    listed(&float_places)
                );
                return Ok(None);
            }
        },
    };
    let threads = if quantised { config.enrichment.threads } else { 0 };
    let key = (directory, threads);
    let mut loaded = LOADED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, model)) = loaded.iter().find(|(loaded_key, _)| *loaded_key == key) {
        return Ok(Some(model.clone()));
    }
    let directory = &key.0;
    let model: Arc<dyn Embedder> = if quantised {
        Arc::new(load_int8_minilm(directory, threads)?)
    } else {
        Arc::new(load_lean_minilm(directory)?)
    };
    tracing::info!(model = model.model_id(), directory = %directory.display(), threads, "deep model loaded");
    loaded.push((key, model.clone()));
    Ok(Some(model))
}

/// Loads the 8-bit all-MiniLM-L6-v2 and the ONNX Runtime beside it from
/// `directory`, its batches computed on `threads` cores.
pub fn load_int8_minilm(directory: &Path, threads: usize) -> anyhow::Result<OnnxMiniLmEmbedder> {
    let fetch = "scripts/fetch-deep-model.sh";
    let model = read_model_file(directory, MINILM_INT8_MODEL_FILE, fetch)?;
    let tokenizer = read_model_file(directory, MINILM_TOKENIZER_FILE, fetch)?;
    // dlopen needs a path with a slash, or it searches the system's
    // library path instead.
    let runtime = std::path::absolute(directory.join(ONNX_RUNTIME_FILE))
        .with_context(|| format!("resolving {}", directory.display()))?;
    OnnxMiniLmEmbedder::load(&model, &tokenizer, &runtime, threads)
        .with_context(|| format!("loading the 8-bit all-MiniLM-L6-v2 from {}", directory.display()))
}

/// The static model's directory name, where nothing names its directory.
pub const STATIC_MODEL_NAME: &str = "static-minilm-l6-256";
/// all-MiniLM-L6-v2's directory name.
pub const MINILM_NAME: &str = "all-MiniLM-L6-v2";
/// The 8-bit all-MiniLM-L6-v2's directory name.
pub const MINILM_INT8_NAME: &str = "all-MiniLM-L6-v2-int8";

/// Where a model is: the configured directory, or the first of
/// [`model_search_path`]'s places that holds every one of `files`; else
/// every place looked in, for the error.
pub fn find_model(configured: Option<&Path>, name: &str, files: &[&str]) -> Result<PathBuf, Vec<PathBuf>> {
    let places = match configured {
        Some(directory) => vec![directory.to_path_buf()],
        None => model_search_path(name),
    };
    let found = places.iter().find(|place| files.iter().all(|file| place.join(file).is_file()));
    found.cloned().ok_or(places)
}

fn listed(places: &[PathBuf]) -> String {
    places.iter().map(|place| place.display().to_string()).collect::<Vec<_>>().join(", ")
}

/// The static model's files.
pub const STATIC_FILES: [&str; 2] = [StaticModelFiles::EMBEDDINGS_FILE, StaticModelFiles::TOKENIZER_FILE];
pub const MINILM_FILES: [&str; 3] = [MINILM_WEIGHTS_FILE, MINILM_TOKENIZER_FILE, MINILM_CONFIG_FILE];
/// The 8-bit all-MiniLM-L6-v2's files.
pub const MINILM_INT8_FILES: [&str; 3] = [MINILM_INT8_MODEL_FILE, MINILM_TOKENIZER_FILE, ONNX_RUNTIME_FILE];

/// Loads the chosen embedder, found as [`find_model`] says.
///
/// With [`EmbedderChoice::Auto`], a static model whose files exist but do not
/// load is an error, not a reason to fall back: a broken model should be
/// fixed, not silently replaced by one without semantics. No model at all
/// is an error too, naming every place looked in, unless the section's
/// `allow_hashed_fallback` says to run on hashed n-grams.
pub fn load_embedder(kind: EmbedderChoice, section: &EmbedderSection) -> anyhow::Result<Arc<dyn Embedder>> {
    let static_model = || find_model(section.static_model_dir.as_deref(), STATIC_MODEL_NAME, &STATIC_FILES);
    let embedder: Arc<dyn Embedder> = match kind {
        EmbedderChoice::Static => {
            let directory = static_model().map_err(|places| {
                anyhow::anyhow!(
                    "[embedder] kind = \"static\": no static model (embeddings.safetensors, tokenizer.json) in {}. \
                     {INSTALL_HINT}",
                    listed(&places)
                )
            })?;
            Arc::new(load_static(&directory)?)
        }
        EmbedderChoice::MiniLm => {
            let directory =
                find_model(section.minilm_dir.as_deref(), MINILM_NAME, &MINILM_FILES).map_err(|places| {
                    anyhow::anyhow!(
                        "[embedder] kind = \"minilm\": no all-MiniLM-L6-v2 (model.safetensors, tokenizer.json, \
                         config.json) in {}. Run scripts/fetch-model.sh, or set [embedder] minilm_dir.",
                        listed(&places)
                    )
                })?;
            Arc::new(load_minilm(&directory)?)
        }
        EmbedderChoice::Hashed => Arc::new(HashedNgramEmbedder::default()),
        EmbedderChoice::Auto => match static_model() {
            Ok(directory) => Arc::new(load_static(&directory)?),
            Err(places) if section.allow_hashed_fallback => {
                tracing::warn!(
                    "NO EMBEDDING MODEL (looked in {}): vector search falls back to hashed word n-grams, which \
                     match spellings, not meaning, as --allow-hashed-vectors (or [embedder] \
                     allow_hashed_fallback) allows. {INSTALL_HINT} (The model id is part of every memory's \
                     digest: memories built now will not compare equal to ones built with the model.)",
                    listed(&places)
                );
                Arc::new(HashedNgramEmbedder::default())
            }
            Err(places) => anyhow::bail!(
                "no embedding model: the static model (embeddings.safetensors, tokenizer.json) is in none of {}. \
                 {INSTALL_HINT} To run without one, on hashed n-grams that match spellings and not meaning, \
                 start with --allow-hashed-vectors (or set [embedder] allow_hashed_fallback = true, or kind = \
                 \"hashed\").",
                listed(&places)
            ),
        },
    };
    tracing::info!(model = embedder.model_id(), dimensions = embedder.dimensions(), "embedder loaded");
    Ok(embedder)
}

/// How to get the model, in every error that did not find it.
const INSTALL_HINT: &str = "scripts/install.sh installs it (into $MNEME_HOME/models, by default \
     ~/.local/share/mneme/models); in a checkout, scripts/fetch-model.sh then `mneme distill` writes it into \
     ./models; or name its directory in [embedder] static_model_dir.";

fn load_static(directory: &Path) -> anyhow::Result<StaticEmbedder> {
    let embeddings = read_model_file(directory, StaticModelFiles::EMBEDDINGS_FILE, "mneme distill")?;
    let tokenizer = read_model_file(directory, StaticModelFiles::TOKENIZER_FILE, "mneme distill")?;
    StaticEmbedder::from_bytes(&embeddings, &tokenizer)
        .with_context(|| format!("loading the static embedding model in {}", directory.display()))
}

/// all-MiniLM-L6-v2 from its directory (`scripts/fetch-model.sh` writes it).
pub fn load_minilm(directory: &Path) -> anyhow::Result<MiniLmEmbedder> {
    load_minilm_with(directory, MiniLmEmbedder::from_bytes)
}

/// all-MiniLM-L6-v2 on the lean forward pass
/// ([`MiniLmEmbedder::lean_from_bytes`]).
pub fn load_lean_minilm(directory: &Path) -> anyhow::Result<MiniLmEmbedder> {
    load_minilm_with(directory, MiniLmEmbedder::lean_from_bytes)
}

type MiniLmLoader = fn(&[u8], &[u8], &[u8]) -> Result<MiniLmEmbedder, mneme_index::IndexError>;

fn load_minilm_with(directory: &Path, load: MiniLmLoader) -> anyhow::Result<MiniLmEmbedder> {
    let fetch = "scripts/fetch-model.sh";
    let weights = read_model_file(directory, MINILM_WEIGHTS_FILE, fetch)?;
    let tokenizer = read_model_file(directory, MINILM_TOKENIZER_FILE, fetch)?;
    let config = read_model_file(directory, MINILM_CONFIG_FILE, fetch)?;
    load(&weights, &tokenizer, &config)
        .with_context(|| format!("loading all-MiniLM-L6-v2 from {}", directory.display()))
}

fn read_model_file(directory: &Path, name: &str, how_to_create: &str) -> anyhow::Result<Vec<u8>> {
    let path = directory.join(name);
    std::fs::read(&path).with_context(|| format!("reading {} (created by {how_to_create})", path.display()))
}

/// Writes each file to a temporary name in `directory`, syncs it and renames
/// it over the old one, so a reader sees the old file or the new one, never
/// half of one. The tokenizer goes first: if the process dies between the two
/// renames, the loader's tokenizer hash check reports the mismatch.
fn write_static_model(directory: &Path, files: &StaticModelFiles) -> anyhow::Result<()> {
    use std::io::Write;
    std::fs::create_dir_all(directory).with_context(|| format!("creating {}", directory.display()))?;
    let mut ordered = files.files();
    ordered.sort_by_key(|(name, _)| *name != StaticModelFiles::TOKENIZER_FILE);
    for (name, bytes) in ordered {
        let path = directory.join(name);
        let temporary = directory.join(format!(".{name}.tmp-{}", std::process::id()));
        let write = || -> std::io::Result<()> {
            let mut file = std::fs::File::create(&temporary)?;
            file.write_all(bytes)?;
            file.sync_all()
        };
        if let Err(error) = write() {
            let _ = std::fs::remove_file(&temporary);
            return Err(error).with_context(|| format!("writing {}", temporary.display()));
        }
        std::fs::rename(&temporary, &path)
            .with_context(|| format!("renaming {} to {}", temporary.display(), path.display()))?;
    }
    Ok(())
}
