//! Where Mneme's files are when nothing says otherwise: its home (the
//! default data directory and the embedding models), and the places a model
//! is looked for, so that `mneme` started from any directory — by an MCP
//! host, a service manager, a person — finds the model it was installed
//! with.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The environment variable that moves Mneme's home.
pub const HOME_ENV: &str = "MNEME_HOME";

/// Mneme's home: `MNEME_HOME`, else the per-user data directory
/// (`$XDG_DATA_HOME/mneme`, by default `~/.local/share/mneme`; the
/// platform's equivalent elsewhere), else `./.mneme` where the system has
/// no home for the user. The default data directory is `<home>/data` and
/// `scripts/install.sh` puts the models in `<home>/models`.
pub fn mneme_home() -> PathBuf {
    match std::env::var_os(HOME_ENV) {
        Some(home) if !home.is_empty() => PathBuf::from(home),
        _ => user_home().unwrap_or_else(|| PathBuf::from(".mneme")),
    }
}

/// The per-user data directory's `mneme`.
fn user_home() -> Option<PathBuf> {
    dirs::data_dir().map(|directory| directory.join("mneme"))
}

/// Where a model named `name` (a directory such as `static-minilm-l6-256`)
/// is looked for when the configuration names no directory, first to last:
///
/// 1. `$MNEME_HOME/models/<name>`, when `MNEME_HOME` is set;
/// 2. `<the binary's directory>/../share/mneme/models/<name>`: where
///    `scripts/install.sh --prefix DIR` and the Debian package put it;
/// 3. the per-user data directory's `mneme/models/<name>`: where
///    `scripts/install.sh` puts it by default;
/// 4. `./models/<name>`: a checkout of the repository.
pub fn model_search_path(name: &str) -> Vec<PathBuf> {
    let mut places = Vec::new();
    if let Some(home) = std::env::var_os(HOME_ENV).filter(|home| !home.is_empty()) {
        places.push(PathBuf::from(home).join("models").join(name));
    }
    if let Some(prefix) = std::env::current_exe().ok().and_then(|exe| exe.parent()?.parent().map(Path::to_path_buf)) {
        places.push(prefix.join("share/mneme/models").join(name));
    }
    if let Some(home) = user_home() {
        places.push(home.join("models").join(name));
    }
    places.push(Path::new("models").join(name));
    let mut unique = Vec::with_capacity(places.len());
    for place in places {
        if !unique.contains(&place) {
            unique.push(place);
        }
    }
    unique
}

/// Which sentence-embedding model the vector index uses.
#[derive(Debug, Clone, Copy, serde::Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum EmbedderKind {
    /// The static model, found where [`model_search_path`] looks (or in
    /// `static_model_dir`). Without it the process refuses to start, unless
    /// `allow_hashed_fallback` (or `--allow-hashed-vectors`) lets it run on
    /// `hashed` with a warning.
    #[default]
    Auto,
    /// The static model distilled from all-MiniLM-L6-v2 (`mneme distill`).
    Static,
    /// all-MiniLM-L6-v2 itself: better, about a thousand times slower.
    Minilm,
    /// Hashed word and character n-grams: no model, no semantics.
    Hashed,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct EmbedderSection {
    /// Which model the vector index runs on.
    #[serde(default)]
    pub kind: EmbedderKind,
    /// The static model's directory. Unset: looked for, in order, in
    /// `$MNEME_HOME/models`, beside the binary (`../share/mneme/models`), in
    /// `~/.local/share/mneme/models` and in `./models` (see
    /// [`model_search_path`]). A relative path is taken from the directory
    /// the process starts in.
    #[serde(default)]
    pub static_model_dir: Option<PathBuf>,
    /// all-MiniLM-L6-v2's directory; unset: looked for like the static
    /// model.
    #[serde(default)]
    pub minilm_dir: Option<PathBuf>,
    /// With `kind = "auto"`: run on hashed n-grams, with a warning, when no
    /// static model is found, instead of refusing to start.
    #[serde(default)]
    pub allow_hashed_fallback: bool,
}
