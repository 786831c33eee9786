//! A search, from what a caller asks to what the memory answers: the one
//! request type ([`SearchRequest`]) that HTTP, NATS, MCP and the CLI all
//! end in, its modes, filters and weights, and the typed input
//! ([`SearchInput`]) the service checks once, with the swarm's weights,
//! to make it.
//!
//! The projections search with these types as they are: nothing between
//! the wire and the memory parses a mode or a fusion again.

use std::str::FromStr;

use mneme_events::{EventKind, PHASE_SEARCH_KIND, Scope, Timestamp};
use serde::{Deserialize, Serialize};

use crate::check::{DEFAULT_K, MAX_K, ParameterError, check_between, check_query_text};

/// How a search finds memories: which retrievers answer it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SearchMode {
    /// Full text (BM25): the query's words.
    Bm25,
    /// Meaning: the embedding model's nearest memories.
    Vector,
    /// The fact graph around the entities the query names.
    Graph,
    /// Full text, meaning and the fact graph, fused (the default).
    #[default]
    Hybrid,
}

impl SearchMode {
    /// Every mode, in the order the docs list them.
    pub const ALL: [SearchMode; 4] = [SearchMode::Bm25, SearchMode::Vector, SearchMode::Graph, SearchMode::Hybrid];

    pub fn as_str(self) -> &'static str {
        match self {
            SearchMode::Bm25 => "bm25",
            SearchMode::Vector => "vector",
            SearchMode::Graph => "graph",
            SearchMode::Hybrid => "hybrid",
        }
    }
}

impl FromStr for SearchMode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "bm25" => Ok(SearchMode::Bm25),
            "vector" => Ok(SearchMode::Vector),
            "graph" => Ok(SearchMode::Graph),
            "hybrid" => Ok(SearchMode::Hybrid),
            other => Err(format!("unknown search mode {other:?}; expected bm25, vector, graph or hybrid")),
        }
    }
}

/// Which hits a search may return, by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum KindFilter {
    /// Items of every kind.
    #[default]
    Any,
    /// Items of these event kinds only: wire names, each one of
    /// [`EventKind::NAMES`], never empty.
    Items(Vec<&'static str>),
    /// Completed phases instead of items ([`PHASE_SEARCH_KIND`]).
    Phases,
}

impl KindFilter {
    /// The filter a request's kind names ask for (`kind=` over HTTP,
    /// `kinds` over NATS and MCP): none is every item kind, event kinds
    /// are those items, and [`PHASE_SEARCH_KIND`] alone is the phases.
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> Result<KindFilter, ParameterError> {
        let mut kinds = Vec::with_capacity(names.len());
        for name in names.iter().map(AsRef::as_ref) {
            if name == PHASE_SEARCH_KIND {
                if names.len() > 1 {
                    return Err(ParameterError::invalid(
                        "kind",
                        format!(
                            "{PHASE_SEARCH_KIND:?} searches completed phases and cannot be combined with item kinds"
                        ),
                    ));
                }
                return Ok(KindFilter::Phases);
            }
            let Some(kind) = EventKind::NAMES.iter().find(|known| **known == name) else {
                return Err(ParameterError::invalid(
                    "kind",
                    format!(
                        "unknown kind {}; expected event kinds, or {PHASE_SEARCH_KIND:?} alone",
                        crate::check::quote(name)
                    ),
                ));
            };
            kinds.push(*kind);
        }
        Ok(if kinds.is_empty() { KindFilter::Any } else { KindFilter::Items(kinds) })
    }

    /// The item kinds a search is restricted to; empty for every kind.
    pub fn item_kinds(&self) -> &[&'static str] {
        match self {
            KindFilter::Items(kinds) => kinds,
            KindFilter::Any | KindFilter::Phases => &[],
        }
    }

    /// Whether an item of this kind may be a hit.
    pub fn admits(&self, kind: &str) -> bool {
        match self {
            KindFilter::Any => true,
            KindFilter::Items(kinds) => kinds.contains(&kind),
            KindFilter::Phases => false,
        }
    }
}

/// Conditions every hit must meet. Empty means no condition.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchFilters {
    pub kinds: KindFilter,
    /// Only items whose event time is at or after this.
    pub since: Option<Timestamp>,
    /// Only items whose event time is before this.
    pub until: Option<Timestamp>,
    pub scopes: Vec<Scope>,
    /// Only items linked in the fact graph to this entity (id or name).
    pub entity: Option<String>,
    pub correlation_id: Option<String>,
}

/// Weights of the fused rankings: the one type of them. `swarm.toml`'s
/// `[retrieval]` section is this (`rrf_k`, `bm25_weight`, `vector_weight`, `deep_share`,
/// `graph_weight`, `recency_weight`, `usage_weight`; what it leaves out is
/// the default), and a search request may override each weight.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RetrievalWeights {
    /// The `k` of reciprocal rank fusion: `score = sum(weight / (k + rank))`.
    pub rrf_k: f32,
    /// Weight of full-text (BM25) retrieval in hybrid search.
    #[serde(rename = "bm25_weight")]
    pub bm25: f32,
    /// Weight of vector (embedding) retrieval in hybrid search.
    #[serde(rename = "vector_weight")]
    pub vector: f32,
    /// The share of `vector_weight` that the deep vectors (the enricher's
    /// model, see `[enrichment]`) take in hybrid search, from 0 to 1; the
    /// static vectors keep the rest. An item not enriched yet counts its
    /// static vector's score in the deep share too. Used only when the
    /// memory holds deep vectors (the query is then embedded by the deep
    /// model as well).
    pub deep_share: f32,
    /// Weight of fact-graph retrieval in hybrid search.
    #[serde(rename = "graph_weight")]
    pub graph: f32,
    /// Weight of the recency prior, fused like a fourth retriever that ranks
    /// candidates newest first.
    #[serde(rename = "recency_weight")]
    pub recency: f32,
    /// Weight of the usage prior: candidates that were cited more than
    /// ignored (and retrieved often) ranked by how useful they proved.
    #[serde(rename = "usage_weight")]
    pub usage: f32,
    /// How the retrievers' candidates are fused: by normalised scores or
    /// by reciprocal rank (see `fusion.rs`).
    pub fusion: Fusion,
    /// The share of the turn before it that a conversation turn's BM25 and
    /// vector scores carry (score fusion only; 0 turns it off).
    pub context_share: f32,
    /// What an item inside the time the question names gains (score fusion
    /// only; the best BM25 or vector score counts 1).
    pub time_weight: f32,
    /// What an item of the kind the question asks for gains ("what was
    /// decided": decisions), in the same units.
    pub kind_weight: f32,
    /// What an item that holds an identifier or path the question names,
    /// exactly, gains (`rotate_signing_keys` in a long traceback, whose BM25
    /// score its length keeps low), in the same units.
    pub identifier_weight: f32,
    /// What an item said by a person the question names gains ("which
    /// hobbies has Maria picked up": Maria's messages), in the same units.
    pub speaker_weight: f32,
    /// What an item holding the rare words of the best hits gains at most
    /// (score fusion only; see `expansion_ranking`).
    pub expansion_weight: f32,
    /// What the messages of a conversation session gain, at most, by the
    /// best fused score among them: the session that holds the best answer
    /// holds its neighbours (score fusion only; see `session_boost`). Off
    /// by default: +0.005 and -0.005 on two seeds of the conversational
    /// eval, -0.007 on SWE (BENCHMARKS.md, issue 21).
    pub session_weight: f32,
    /// What share of its score the briefest message keeps: a message of
    /// fewer than eight words that are not stop words keeps this much plus
    /// its share of the rest (1 turns it off).
    pub brevity_floor: f32,
}

impl Default for RetrievalWeights {
    fn default() -> Self {
        RetrievalWeights {
            rrf_k: 60.0,
            bm25: 1.0,
            vector: 1.0,
            deep_share: 0.5,
            graph: 1.0,
            recency: 0.25,
            usage: 0.25,
            fusion: Fusion::Score,
            context_share: 0.5,
            time_weight: 0.3,
            kind_weight: 1.0,
            speaker_weight: 0.7,
            identifier_weight: 1.0,
            brevity_floor: 0.5,
            expansion_weight: 0.5,
            session_weight: 0.0,
        }
    }
}

/// How hybrid search fuses its retrievers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Fusion {
    /// Normalised scores, weighted and added.
    #[default]
    Score,
    /// Reciprocal rank fusion.
    Rrf,
}

impl FromStr for Fusion {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "score" => Ok(Fusion::Score),
            "rrf" => Ok(Fusion::Rrf),
            other => Err(format!("unknown fusion {other:?}; expected score or rrf")),
        }
    }
}

/// A search.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchRequest {
    pub query: String,
    pub k: usize,
    pub mode: SearchMode,
    pub filters: SearchFilters,
    pub weights: RetrievalWeights,
    /// Report each retriever's rank and score per hit.
    pub explain: bool,
}

impl SearchRequest {
    /// A hybrid search with default weights and no filters.
    pub fn new(query: impl Into<String>, k: usize) -> SearchRequest {
        SearchRequest {
            query: query.into(),
            k,
            mode: SearchMode::default(),
            filters: SearchFilters::default(),
            weights: RetrievalWeights::default(),
            explain: false,
        }
    }

    pub fn with_mode(mut self, mode: SearchMode) -> SearchRequest {
        self.mode = mode;
        self
    }
}

/// What a caller asks for, typed but not yet checked: what the query
/// string or NATS body of `…/search` parses into, and what MCP's tool
/// arguments make. [`SearchInput::check`] makes the [`SearchRequest`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchInput {
    pub query: String,
    /// Hits wanted; 10 when `None`.
    pub k: Option<usize>,
    /// Hybrid when `None`.
    pub mode: Option<SearchMode>,
    pub filters: SearchFilters,
    pub weights: WeightOverrides,
    pub explain: bool,
    /// Wait until the agent has applied its events up to this seq.
    pub min_seq: Option<u64>,
    /// Wait until the system layer has applied the system log up to this seq.
    pub min_system_seq: Option<u64>,
}

impl SearchInput {
    /// A hybrid search for `query` with everything else defaulted.
    pub fn new(query: impl Into<String>) -> SearchInput {
        SearchInput { query: query.into(), ..SearchInput::default() }
    }

    /// The search this input asks for, every part checked; the weights it
    /// leaves out are `defaults` (the swarm's `[retrieval]`).
    pub fn check(&self, defaults: &RetrievalWeights) -> Result<SearchRequest, ParameterError> {
        check_query_text(&self.query)?;
        let k = self.k.unwrap_or(DEFAULT_K);
        check_between("k", k, MAX_K)?;
        Ok(SearchRequest {
            query: self.query.clone(),
            k,
            mode: self.mode.unwrap_or_default(),
            filters: self.filters.clone(),
            weights: self.weights.over(defaults)?,
            explain: self.explain,
        })
    }
}

/// The retrieval weights a request sets; what it leaves out stays the
/// swarm's.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WeightOverrides {
    pub rrf_k: Option<f32>,
    pub bm25: Option<f32>,
    pub vector: Option<f32>,
    pub deep_share: Option<f32>,
    pub graph: Option<f32>,
    pub recency: Option<f32>,
    pub usage: Option<f32>,
    pub fusion: Option<Fusion>,
}

impl WeightOverrides {
    /// `defaults` with these set, each checked to be a number of zero or
    /// more (named as the query string names it).
    pub fn over(&self, defaults: &RetrievalWeights) -> Result<RetrievalWeights, ParameterError> {
        let weight = |field: &'static str, value: Option<f32>, default: f32| match value {
            Some(value) if !value.is_finite() || value < 0.0 => {
                Err(ParameterError::invalid(field, format!("{field} must be a number of zero or more, got {value}")))
            }
            value => Ok(value.unwrap_or(default)),
        };
        Ok(RetrievalWeights {
            rrf_k: weight("rrf_k", self.rrf_k, defaults.rrf_k)?,
            bm25: weight("bm25_weight", self.bm25, defaults.bm25)?,
            vector: weight("vector_weight", self.vector, defaults.vector)?,
            deep_share: match self.deep_share {
                Some(share) if !(0.0..=1.0).contains(&share) => {
                    return Err(ParameterError::invalid(
                        "deep_share",
                        format!("deep_share must be between 0 and 1, got {share}"),
                    ));
                }
                share => share.unwrap_or(defaults.deep_share),
            },
            graph: weight("graph_weight", self.graph, defaults.graph)?,
            recency: weight("recency_weight", self.recency, defaults.recency)?,
            usage: weight("usage_weight", self.usage, defaults.usage)?,
            fusion: self.fusion.unwrap_or(defaults.fusion),
            ..*defaults
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_filters_admit_what_their_names_ask_for() {
        let none: [&str; 0] = [];
        assert_eq!(KindFilter::from_names(&none).unwrap(), KindFilter::Any);
        let decisions = KindFilter::from_names(&["decision_made", "note_written"]).unwrap();
        assert_eq!(decisions.item_kinds(), ["decision_made", "note_written"]);
        assert!(decisions.admits("note_written") && !decisions.admits("message_recorded"));
        assert!(KindFilter::Any.admits("message_recorded") && KindFilter::Any.item_kinds().is_empty());
        let phases = KindFilter::from_names(&[PHASE_SEARCH_KIND]).unwrap();
        assert_eq!(phases, KindFilter::Phases);
        assert!(!phases.admits("decision_made"));
        assert_eq!(KindFilter::from_names(&["decision_made", PHASE_SEARCH_KIND]).unwrap_err().field(), "kind");
        assert_eq!(KindFilter::from_names(&["decisions"]).unwrap_err().field(), "kind");
    }

    #[test]
    fn modes_and_fusions_parse_from_the_names_they_print() {
        for mode in SearchMode::ALL {
            assert_eq!(mode.as_str().parse::<SearchMode>(), Ok(mode));
            assert_eq!(serde_json::to_value(mode).unwrap(), mode.as_str());
        }
        assert!("fuzzy".parse::<SearchMode>().unwrap_err().contains("bm25, vector, graph or hybrid"));
        for fusion in [Fusion::Score, Fusion::Rrf] {
            let name = serde_json::to_value(fusion).unwrap();
            assert_eq!(name.as_str().unwrap().parse::<Fusion>(), Ok(fusion));
        }
    }

    #[test]
    fn a_request_s_weights_override_the_swarm_s_and_are_checked() {
        let swarm = RetrievalWeights { bm25: 2.0, ..RetrievalWeights::default() };
        let input = SearchInput {
            weights: WeightOverrides { vector: Some(0.5), ..WeightOverrides::default() },
            ..SearchInput::new("rotate keys")
        };
        let request = input.check(&swarm).unwrap();
        assert_eq!((request.weights.bm25, request.weights.vector), (2.0, 0.5));
        let negative = SearchInput {
            weights: WeightOverrides { usage: Some(-1.0), ..WeightOverrides::default() },
            ..SearchInput::new("x")
        };
        assert_eq!(negative.check(&swarm).unwrap_err().field(), "usage_weight");
        let share = |value: f32| SearchInput {
            weights: WeightOverrides { deep_share: Some(value), ..WeightOverrides::default() },
            ..SearchInput::new("x")
        };
        assert_eq!(share(0.8).check(&swarm).unwrap().weights.deep_share, 0.8);
        assert_eq!(share(1.5).check(&swarm).unwrap_err().field(), "deep_share");
        assert_eq!(share(-0.1).check(&swarm).unwrap_err().field(), "deep_share");
    }
}
