//! A memory's indexes of its own: BM25 statistics and documents (the
//! swarm's text index holds the documents, see [`Bm25Index`]), the vectors
//! of its private items (the swarm's shared ones are the swarm's), and the
//! documents `kind=phase` searches score completed phases by.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use mneme_index::ann::AnnGraph;
use mneme_index::embed::{Embedder, embedded_text};
use mneme_index::vector::QuantizedVector;
use mneme_index::{AnnPolicy, Bm25Index, IndexError, VectorSet};

use crate::phases::{Phase, PhaseLevel, PhaseTracker};

/// The indexes of one memory. Its deep tier (see `deep.rs`) is here too:
/// the deep vectors of its private items, and which items took one.
pub struct Indexes {
    bm25: Bm25Index,
    vectors: VectorSet,
    /// The deep vectors of its private items, in the order the enricher
    /// recorded them (the swarm's shared ones are the swarm's).
    deep: VectorSet,
    /// The items, private or shared, that took a deep vector here.
    deep_applied: roaring::RoaringTreemap,
    /// Whether this memory, restored from a snapshot, took its documents
    /// over from the text index on disk (rather than indexing them again).
    text_reused: bool,
    /// Derived from the phases on first use and kept until a phase's text
    /// changes; never saved.
    phase_documents: Mutex<PhaseDocuments>,
}

impl Indexes {
    pub(super) fn new(bm25: Bm25Index, dimensions: usize, deep_dimensions: usize, graph: AnnPolicy) -> Indexes {
        Indexes {
            bm25,
            vectors: VectorSet::with_policy(dimensions, graph),
            deep: VectorSet::with_policy(deep_dimensions, graph),
            deep_applied: roaring::RoaringTreemap::new(),
            text_reused: false,
            phase_documents: Mutex::new(PhaseDocuments::default()),
        }
    }

    pub fn bm25(&self) -> &Bm25Index {
        &self.bm25
    }

    /// The vectors of this memory's private items.
    pub fn vectors(&self) -> &VectorSet {
        &self.vectors
    }

    /// The deep vectors of this memory's private items.
    pub fn deep_vectors(&self) -> &VectorSet {
        &self.deep
    }

    /// Whether the item at `seq` took a deep vector in this memory.
    pub fn has_deep(&self, seq: u64) -> bool {
        self.deep_applied.contains(seq)
    }

    /// How many items took a deep vector in this memory (none purged).
    pub fn deep_count(&self) -> u64 {
        self.deep_applied.len()
    }

    pub(super) fn deep_applied(&self) -> &roaring::RoaringTreemap {
        &self.deep_applied
    }

    /// A private item's deep vector.
    pub(super) fn add_deep_own(&mut self, seq: u64, vector: QuantizedVector) {
        self.deep.insert(seq, vector);
        self.deep_applied.insert(seq);
    }

    /// A shared item took its deep vector (the swarm keeps it).
    pub(super) fn mark_deep_shared(&mut self, seq: u64) {
        self.deep_applied.insert(seq);
    }

    /// See [`crate::AgentMemory::settle_vector_graphs`].
    pub(super) fn settle_vector_graphs(&mut self) {
        self.vectors.settle();
        self.deep.settle();
    }

    /// Saves this memory's graphs that grew enough (see
    /// [`VectorSet::graph_to_save`]) as `{agent}` and `{agent}.deep`.
    pub(super) fn save_vector_graphs(&self, directory: &Path, agent: &str) -> Result<usize, IndexError> {
        save_graphs(directory, [(agent.to_string(), &self.vectors), (format!("{agent}.deep"), &self.deep)])
    }

    /// Starts this (empty) memory's vector sets from the graphs saved for
    /// it, when there are usable ones; those that are not are built again.
    pub(super) fn restore_vector_graphs(&mut self, directory: &Path, agent: &str) {
        restore_graph(directory, agent, &mut self.vectors);
        restore_graph(directory, &format!("{agent}.deep"), &mut self.deep);
    }

    /// See [`VectorSet::finish_restore`].
    pub(super) fn finish_restore(&mut self) {
        self.vectors.finish_restore();
        self.deep.finish_restore();
    }

    /// See [`crate::AgentMemory::vectors_in_graphs`].
    pub(super) fn vectors_in_graphs(&self) -> usize {
        [&self.vectors, &self.deep].iter().filter_map(|set| set.graph_len()).sum()
    }

    /// Whether these indexes were restored with their documents taken over
    /// from the text index on disk.
    pub fn text_reused(&self) -> bool {
        self.text_reused
    }

    /// Whether everything added is searchable.
    pub fn is_committed(&self) -> bool {
        self.bm25.is_committed()
    }

    pub(super) fn set_text_reused(&mut self, reused: bool) {
        self.text_reused = reused;
    }

    pub(super) fn bm25_mut(&mut self) -> &mut Bm25Index {
        &mut self.bm25
    }

    /// Adds a private item's document and vector.
    pub(super) fn add_own(&mut self, seq: u64, kind: &str, text: &str, vector: &[f32]) -> Result<(), IndexError> {
        self.bm25.add(seq, kind, text)?;
        self.vectors.insert(seq, QuantizedVector::of(vector));
        Ok(())
    }

    /// A restored private item's vector.
    pub(super) fn insert_quantized(&mut self, seq: u64, vector: QuantizedVector) {
        self.vectors.insert(seq, vector);
    }

    pub(super) fn commit(&mut self) -> Result<(), IndexError> {
        self.bm25.commit()
    }

    /// Replaces the BM25 view by `bm25` and keeps only the vectors `keep`
    /// says; the old view's documents are deleted as it drops.
    pub(super) fn rebuilt(&mut self, bm25: Bm25Index, keep: impl Fn(u64) -> bool) {
        self.vectors.retain(&keep);
        self.deep.retain(&keep);
        let dropped: Vec<u64> = self.deep_applied.iter().filter(|seq| !keep(*seq)).collect();
        for seq in dropped {
            self.deep_applied.remove(seq);
        }
        self.bm25 = bm25;
    }

    /// Phase texts may quote what a purge erased: derived again when asked.
    pub(super) fn forget_phase_documents(&mut self) {
        *self.phase_documents.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner()) = PhaseDocuments::default();
    }

    /// The documents of the completed phases of `tracker`, those completed,
    /// recompressed or redacted since the last ask derived now.
    pub fn phase_documents(&self, tracker: &PhaseTracker, embedder: &dyn Embedder) -> MutexGuard<'_, PhaseDocuments> {
        let mut documents = self.phase_documents.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        documents.refresh(tracker, &self.bm25, embedder);
        documents
    }
}

/// What a phase is searched by, derived from its text.
#[derive(Debug, Clone)]
pub struct PhaseDocument {
    /// What the text was derived from.
    version: PhaseVersion,
    pub text: String,
    /// Its distinct terms as the BM25 text field's analyzer makes them,
    /// sorted.
    pub terms: Vec<String>,
    pub vector: Vec<f32>,
}

/// A phase's completion, how many events made it (a `phase_compressed`
/// adds one), and whether a purge redacted it: its text changes with these.
type PhaseVersion = (Option<u64>, usize, bool);

/// Every completed phase's document, by phase id: derived, never saved.
#[derive(Debug, Clone, Default)]
pub struct PhaseDocuments(HashMap<String, PhaseDocument>);

impl PhaseDocuments {
    pub fn get(&self, phase_id: &str) -> Option<&PhaseDocument> {
        self.0.get(phase_id)
    }

    /// Derives the documents of phases completed, recompressed or redacted
    /// since the last refresh.
    fn refresh(&mut self, tracker: &PhaseTracker, bm25: &Bm25Index, embedder: &dyn Embedder) {
        let stale: Vec<(String, String, PhaseVersion)> = tracker
            .phases()
            .iter()
            .chain(tracker.shared_phases())
            .filter(|phase| phase.is_completed())
            .filter(|phase| self.0.get(&phase.phase_id).is_none_or(|document| document.version != version(phase)))
            .filter_map(|phase| Some((phase.phase_id.clone(), phase_text(phase)?, version(phase))))
            .collect();
        for (phase_id, text, version) in stale {
            let terms = bm25.text_terms(&text);
            let vector = embedder.embed(embedded_text(&text));
            self.0.insert(phase_id, PhaseDocument { version, text, terms, vector });
        }
    }
}

/// A phase's searchable text: what it was, and what it found.
fn phase_text(phase: &Phase) -> Option<String> {
    let findings = phase.levels.as_ref()?.text(PhaseLevel::Findings)?;
    let mut text = format!("Phase {} ({})", phase.name, phase.agent);
    if let Some(goal) = &phase.goal {
        text.push_str(&format!(", goal: {goal}"));
    }
    if let Some(outcome) = &phase.outcome {
        text.push_str(&format!(", outcome: {outcome}"));
    }
    text.push_str(".\n");
    text.push_str(findings);
    Some(text)
}

fn version(phase: &Phase) -> PhaseVersion {
    (phase.completed_seq, phase.provenance.len(), phase.redacted)
}

/// Saves each set's graph that grew enough under its name; returns how
/// many vectors were written.
pub(crate) fn save_graphs<'a>(
    directory: &Path,
    sets: impl IntoIterator<Item = (String, &'a VectorSet)>,
) -> Result<usize, IndexError> {
    let mut written = 0;
    for (name, set) in sets {
        if let Some(graph) = set.graph_to_save() {
            let count = graph.save_named(directory, &name)?;
            set.graph_saved(count);
            written += count;
        }
    }
    Ok(written)
}

/// Starts `set` from the graph saved as `name`, if there is a usable one.
pub(crate) fn restore_graph(directory: &Path, name: &str, set: &mut VectorSet) {
    match AnnGraph::load_named(directory, name, set.dimensions()) {
        Ok(Some(graph)) => {
            let count = graph.len();
            match set.restore_graph(graph) {
                Ok(()) => tracing::info!(graph = name, vectors = count, "vector graph restored from its snapshot"),
                Err(error) => tracing::warn!(graph = name, %error, "vector graph not restored; it is built again"),
            }
        }
        Ok(None) => {}
        Err(error) => tracing::warn!(graph = name, %error, "vector graph unusable; it is built again"),
    }
}
