//! The API's request parameters and their limits: every check a query's
//! parameters pass before any memory is asked, over HTTP and NATS alike.
//!
//! Every parameter set refuses a field it does not know
//! (`deny_unknown_fields`), in a query string and in a JSON body alike:
//! [`ParameterError::unknown_field`] names it.
//!
//! Free of HTTP and of the projection crates, like the whole of
//! `mneme-api`, so that the fuzz target `fuzz/fuzz_targets/query_params.rs`
//! links it with only `mneme-events` and serde beside it.

use mneme_events::Scope;

use crate::query::{
    GraphInput, ItemPage, ItemState, ItemsInput, PhaseInput, PhaseLevel, ProvenanceInput, TimelineInput,
};
use crate::search::{Fusion, KindFilter, SearchFilters, SearchInput, SearchMode, WeightOverrides};
use serde::{Deserialize, Serialize};

use crate::check::{DEFAULT_EVENTS_PAGE, DEFAULT_HOPS, DEFAULT_ITEMS_PAGE};
pub use crate::check::{
    DEFAULT_TIMELINE_ENTRIES, MAX_BUDGET_TOKENS, MAX_COMMAND_BODY_BYTES, MAX_EVENTS_PAGE, MAX_EVENTS_PER_REQUEST,
    MAX_HOPS, MAX_ITEMS_PAGE, MAX_K, MAX_QUERY_BYTES, MAX_RECENT_ERRORS, MAX_TIMELINE_ENTRIES, ParameterError,
    QUOTED_CHARS, check_between, check_item_id, check_query_text, check_text_length, comma_separated, quote,
    timestamp_parameter,
};

/// The query string of a route that takes no parameters: any parameter is
/// refused, named, like a misspelt one elsewhere.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// `GET …/search` parameters, and the body of a NATS `search` query.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    pub q: String,
    pub k: Option<usize>,
    /// `bm25`, `vector`, `graph` or `hybrid` (default).
    pub mode: Option<String>,
    /// Comma-separated kinds to keep; `phase` alone searches completed
    /// phases (their findings) instead of items.
    pub kind: Option<String>,
    /// Only items with event time at or after / before these RFC 3339 times.
    pub since: Option<String>,
    pub until: Option<String>,
    /// Comma-separated scopes to keep.
    pub scope: Option<String>,
    /// Only items linked to this entity in the fact graph (id or name).
    pub entity: Option<String>,
    pub correlation_id: Option<String>,
    /// Report each retriever's rank and score per hit.
    #[serde(default)]
    pub explain: bool,
    pub rrf_k: Option<f32>,
    pub bm25_weight: Option<f32>,
    pub vector_weight: Option<f32>,
    pub deep_share: Option<f32>,
    pub graph_weight: Option<f32>,
    pub recency_weight: Option<f32>,
    pub usage_weight: Option<f32>,
    /// How hybrid search fuses its retrievers: `score` (normalised scores)
    /// or `rrf` (reciprocal rank).
    pub fusion: Option<String>,
    /// Wait until the agent has applied its events up to this seq.
    pub min_seq: Option<u64>,
    /// Wait until this process's system layer has applied the system log
    /// up to this seq (what publishing an event of swarm `system` answered).
    pub min_system_seq: Option<u64>,
}

impl SearchParams {
    /// What this request asks for, typed: names (mode, fusion, scopes,
    /// times) parsed, everything else checked once by
    /// [`SearchInput::check`] with the swarm's weights.
    pub fn input(&self) -> Result<SearchInput, ParameterError> {
        let mode = self
            .mode
            .as_deref()
            .map(|mode| mode.parse::<SearchMode>().map_err(|message| ParameterError::invalid("mode", message)))
            .transpose()?;
        let scopes = comma_separated(self.scope.as_deref())
            .iter()
            .map(|scope| scope.parse::<Scope>().map_err(|error| ParameterError::invalid("scope", error.message)))
            .collect::<Result<Vec<_>, _>>()?;
        let fusion = self
            .fusion
            .as_deref()
            .map(|fusion| fusion.parse::<Fusion>().map_err(|message| ParameterError::invalid("fusion", message)))
            .transpose()?;
        Ok(SearchInput {
            query: self.q.clone(),
            k: self.k,
            mode,
            filters: SearchFilters {
                kinds: KindFilter::from_names(&comma_separated(self.kind.as_deref()))?,
                since: timestamp_parameter("since", self.since.as_deref())?,
                until: timestamp_parameter("until", self.until.as_deref())?,
                scopes,
                entity: self.entity.clone(),
                correlation_id: self.correlation_id.clone(),
            },
            weights: WeightOverrides {
                rrf_k: self.rrf_k,
                bm25: self.bm25_weight,
                vector: self.vector_weight,
                deep_share: self.deep_share,
                graph: self.graph_weight,
                recency: self.recency_weight,
                usage: self.usage_weight,
                fusion,
            },
            explain: self.explain,
            min_seq: self.min_seq,
            min_system_seq: self.min_system_seq,
        })
    }
}

/// `GET …/graph` parameters, and the body of a NATS `graph` query.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GraphParams {
    pub entity: String,
    pub hops: Option<usize>,
    /// Comma-separated relations to follow; all when absent.
    pub relations: Option<String>,
    /// Only facts and edges valid at this RFC 3339 event time.
    pub as_of: Option<String>,
    pub min_seq: Option<u64>,
}

impl GraphParams {
    /// The typed input, parsed; [`GraphInput::check`] checks its limits.
    pub fn input(&self) -> Result<GraphInput, ParameterError> {
        Ok(GraphInput {
            entity: self.entity.clone(),
            hops: self.hops.unwrap_or(DEFAULT_HOPS),
            relations: comma_separated(self.relations.as_deref()),
            as_of: timestamp_parameter("as_of", self.as_of.as_deref())?,
            min_seq: self.min_seq,
        })
    }
}

/// `GET /v1/swarms/{swarm}/events` parameters.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventsParams {
    pub from_seq: Option<u64>,
    pub agent: Option<String>,
    pub limit: Option<usize>,
    /// A `text/event-stream` of every entry from `from_seq` on, then each
    /// new one as it is appended, instead of a page (`limit` is refused).
    #[serde(default)]
    pub follow: bool,
}

/// A page of the log, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedEventsPage {
    /// At least 1: seqs start there.
    pub from_seq: u64,
    pub agent: Option<String>,
    pub limit: usize,
}

impl EventsParams {
    pub fn check(&self) -> Result<CheckedEventsPage, ParameterError> {
        if self.follow && self.limit.is_some() {
            return Err(ParameterError::invalid("limit", "a followed stream has no pages: send limit without follow"));
        }
        let limit = self.limit.unwrap_or(DEFAULT_EVENTS_PAGE);
        check_between("limit", limit, MAX_EVENTS_PAGE)?;
        if let Some(agent) = &self.agent {
            mneme_events::validate_name(agent).map_err(|error| ParameterError::invalid("agent", error.message))?;
        }
        let from_seq = self.from_seq.unwrap_or(1).max(1);
        Ok(CheckedEventsPage { from_seq, agent: self.agent.clone(), limit })
    }
}

/// The body of a NATS `provenance` query; over HTTP the item id is in the
/// path.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProvenanceParams {
    pub item_id: String,
    pub min_seq: Option<u64>,
}

impl ProvenanceParams {
    pub fn input(&self) -> ProvenanceInput {
        ProvenanceInput { item_id: self.item_id.clone(), min_seq: self.min_seq }
    }
}

/// Parameters of routes that take nothing but `min_seq`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MinSeqParams {
    pub min_seq: Option<u64>,
}

/// `POST …/replay` parameters.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayParams {
    #[serde(default)]
    pub verify: bool,
    pub min_seq: Option<u64>,
}

/// `GET …/handoffs` parameters: with `follow=true`, a `text/event-stream`
/// of handoffs instead of the list.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HandoffsParams {
    #[serde(default)]
    pub follow: bool,
    pub min_seq: Option<u64>,
}

/// `POST /v1/swarms/{swarm}/consolidate` parameters.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConsolidateParams {
    /// Report what it would do; write nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Only this agent's memory.
    pub agent: Option<String>,
}

/// `GET /v1/swarms/{swarm}/contradictions` parameters.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContradictionParams {
    /// Only this agent's memory.
    pub agent: Option<String>,
}

/// The body of the NATS `phase` query: one phase at a level, or (without
/// `phase_id`) the listing.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PhaseQuery {
    pub phase_id: Option<String>,
    pub level: Option<String>,
    pub min_seq: Option<u64>,
}

/// The body of the NATS `items` query: one item with its state and
/// provenance (`GET …/items/{item_id}`), or without `item_id` the counts
/// per state and a page of items (`GET …/items`, whose parameters it takes).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ItemQuery {
    pub item_id: Option<String>,
    pub state: Option<String>,
    pub before_seq: Option<u64>,
    pub limit: Option<usize>,
    pub min_seq: Option<u64>,
}

/// `GET …/agents/{agent}/items` parameters: the counts per state come with
/// a page of the items, newest first.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ItemsParams {
    /// One of `active`, `archived`, `decayed`, `forgotten`, `merged`,
    /// `purged`, or `pinned` (pinned items in any state); all items when
    /// absent.
    pub state: Option<String>,
    /// Only items created before this seq: the last page's `next_before_seq`.
    pub before_seq: Option<u64>,
    /// Items in the page: default 50, at most 500.
    pub limit: Option<usize>,
    pub min_seq: Option<u64>,
}

impl ItemsParams {
    /// The typed input, parsed; [`ItemsInput::check`] checks its limits.
    pub fn input(&self) -> Result<ItemsInput, ParameterError> {
        let (state, pinned_only) = match self.state.as_deref() {
            None => (None, false),
            Some("pinned") => (None, true),
            Some(name) => match ItemState::from_name(name) {
                Some(state) => (Some(state), false),
                None => {
                    let names: Vec<&str> = ItemState::ALL.iter().map(|state| state.as_str()).collect();
                    return Err(ParameterError::invalid(
                        "state",
                        format!("state must be one of {}, or pinned; got {}", names.join(", "), quote(name)),
                    ));
                }
            },
        };
        let limit = self.limit.unwrap_or(DEFAULT_ITEMS_PAGE);
        Ok(ItemsInput {
            page: ItemPage { state, pinned_only, before_seq: self.before_seq, limit },
            min_seq: self.min_seq,
        })
    }
}

impl From<&ItemQuery> for ItemsParams {
    fn from(query: &ItemQuery) -> ItemsParams {
        ItemsParams {
            state: query.state.clone(),
            before_seq: query.before_seq,
            limit: query.limit,
            min_seq: query.min_seq,
        }
    }
}

/// `GET …/agents/{agent}/timeline` parameters, and the NATS `timeline`
/// body: events after `since_seq`, or from the time `since` (RFC 3339), at
/// most `limit` (default 50, at most 500).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TimelineParams {
    /// Events after this seq.
    pub since_seq: Option<u64>,
    /// Or events from this RFC 3339 time.
    pub since: Option<String>,
    /// At most this many entries, 1 to 500 (default 50).
    pub limit: Option<usize>,
}

impl TimelineParams {
    /// The typed input, parsed; [`TimelineInput::check`] checks its limit.
    pub fn input(&self) -> Result<TimelineInput, ParameterError> {
        Ok(TimelineInput {
            since_seq: self.since_seq,
            since: timestamp_parameter("since", self.since.as_deref())?,
            limit: self.limit.unwrap_or(DEFAULT_TIMELINE_ENTRIES),
        })
    }
}

/// The body of the NATS `core` query: read core memory, or with `block`
/// and `content` replace one block.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CoreQuery {
    pub block: Option<String>,
    pub content: Option<String>,
    pub min_seq: Option<u64>,
}

/// The body of the NATS `ack` query.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AcknowledgeQuery {
    pub handoff_id: String,
    pub note: Option<String>,
}

/// `GET …/phases/{phase_id}` parameters.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PhaseParams {
    pub level: Option<String>,
    pub min_seq: Option<u64>,
}

impl PhaseParams {
    /// The typed input: the level parsed (summary when absent).
    pub fn input(&self) -> Result<PhaseInput, ParameterError> {
        let level = match self.level.as_deref() {
            None => PhaseLevel::Summary,
            Some(name) => PhaseLevel::from_name(name).ok_or_else(|| {
                ParameterError::invalid(
                    "level",
                    format!(
                        "unknown level {}; expected index, compressed, summary, findings, full or original",
                        quote(name)
                    ),
                )
            })?,
        };
        Ok(PhaseInput { level, min_seq: self.min_seq })
    }
}

/// `GET …/context` parameters. `recent_errors` is newline-separated.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextParams {
    #[serde(default)]
    pub q: String,
    pub budget: Option<usize>,
    pub current_file: Option<String>,
    pub recent_errors: Option<String>,
    pub activity: Option<String>,
    pub phase: Option<String>,
    pub thinking_budget: Option<f32>,
    pub min_seq: Option<u64>,
    /// Wait until this process's system layer has applied the system log
    /// up to this seq (what publishing an event of swarm `system` answered).
    pub min_system_seq: Option<u64>,
}

impl ContextParams {
    /// The same request as a `POST …/context` body.
    pub fn into_body(self) -> ContextBody {
        let recent_errors = self
            .recent_errors
            .map(|errors| errors.lines().map(str::trim).filter(|line| !line.is_empty()).map(str::to_string).collect())
            .unwrap_or_default();
        let signals = SignalsBody {
            current_file: self.current_file,
            recent_errors,
            activity: self.activity,
            phase: self.phase,
            thinking_budget: self.thinking_budget,
        };
        ContextBody {
            query: self.q,
            budget: self.budget,
            signals,
            min_seq: self.min_seq,
            min_system_seq: self.min_system_seq,
        }
    }
}

/// `POST …/context` body (and a NATS `context` query's): the same as the
/// query parameters, with `recent_errors` a list.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextBody {
    /// The search verb's `q` is refused here (unknown field), not taken as
    /// the query: a client that confuses the two learns it at once.
    #[serde(default)]
    pub query: String,
    pub budget: Option<usize>,
    #[serde(default)]
    pub signals: SignalsBody,
    pub min_seq: Option<u64>,
    /// Wait until this process's system layer has applied the system log
    /// up to this seq (what publishing an event of swarm `system` answered).
    pub min_system_seq: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SignalsBody {
    pub current_file: Option<String>,
    #[serde(default)]
    pub recent_errors: Vec<String>,
    pub activity: Option<String>,
    pub phase: Option<String>,
    pub thinking_budget: Option<f32>,
}

/// A context request with every parameter checked and defaulted; the
/// activity is still a name (the binary maps it, unknown names included).
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedContext {
    pub query: String,
    pub budget: usize,
    pub current_file: Option<String>,
    pub recent_errors: Vec<String>,
    pub activity: Option<String>,
    pub phase: Option<String>,
    pub thinking_budget: Option<f32>,
    pub min_seq: Option<u64>,
    pub min_system_seq: Option<u64>,
}

impl ContextBody {
    /// Checks the request; the budget and thinking budget it leaves out are
    /// the agent's.
    pub fn check(
        self,
        default_budget: usize,
        default_thinking_budget: Option<f32>,
    ) -> Result<CheckedContext, ParameterError> {
        // The body's field is `query`, not the search parameter's `q`.
        check_text_length("query", "query", &self.query)?;
        let budget = self.budget.unwrap_or(default_budget);
        check_between("budget", budget, MAX_BUDGET_TOKENS)?;
        let signals = self.signals;
        let thinking_budget = signals.thinking_budget.or(default_thinking_budget);
        if let Some(thinking) = thinking_budget
            && !(0.0..=1.0).contains(&thinking)
        {
            return Err(ParameterError::invalid(
                "thinking_budget",
                format!("thinking_budget must be between 0 and 1, got {thinking}"),
            ));
        }
        if signals.recent_errors.len() > MAX_RECENT_ERRORS {
            return Err(ParameterError::TooMany {
                field: "recent_errors",
                what: "recent errors",
                count: signals.recent_errors.len(),
                max: MAX_RECENT_ERRORS,
            });
        }
        let texts = signals.recent_errors.iter().chain(signals.current_file.iter()).chain(signals.phase.iter());
        for text in texts {
            check_text_length("signals", "a signal", text)?;
        }
        Ok(CheckedContext {
            query: self.query,
            budget,
            current_file: signals.current_file,
            recent_errors: signals.recent_errors,
            activity: signals.activity,
            phase: signals.phase,
            thinking_budget,
            min_seq: self.min_seq,
            min_system_seq: self.min_system_seq,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::{RetrievalWeights, SearchRequest};

    /// Parses a query string exactly as the HTTP routes' extractor does.
    fn parsed<T: serde::de::DeserializeOwned>(query_string: &str) -> T {
        serde_urlencoded::from_str::<T>(query_string).expect("parses")
    }

    fn search(query_string: &str) -> Result<SearchRequest, ParameterError> {
        parsed::<SearchParams>(query_string).input()?.check(&RetrievalWeights::default())
    }

    #[test]
    fn a_quoted_value_is_escaped_and_cut() {
        assert_eq!(quote("01KF00"), r#""01KF00""#);
        assert_eq!(quote("a\"b\nc"), r#""a\"b\nc""#);
        let long = "é".repeat(100);
        assert_eq!(quote(&long), format!("{:?}… (200 bytes)", "é".repeat(QUOTED_CHARS)));
    }

    #[test]
    fn search_defaults_and_limits() {
        let checked = search("q=rotate+keys").unwrap();
        assert_eq!((checked.k, checked.mode, checked.weights), (10, SearchMode::Hybrid, RetrievalWeights::default()));
        assert_eq!(search("q=a&k=1000").unwrap().k, MAX_K);
        let over = search("q=a&k=1001").unwrap_err();
        assert_eq!(over, ParameterError::OutOfRange { field: "k", value: 1001, max: MAX_K });
        assert_eq!(over.to_string(), "k must be between 1 and 1000, got 1001");
        assert_eq!(search("q=a&k=0").unwrap_err().field(), "k");
        let long = format!("q={}", "a".repeat(MAX_QUERY_BYTES + 1));
        assert_eq!(search(&long).unwrap_err().to_string(), "query is 4097 bytes, the limit is 4096");
    }

    #[test]
    fn search_refuses_unknown_names_and_bad_weights() {
        assert_eq!(search("q=a&mode=fuzzy").unwrap_err().field(), "mode");
        assert_eq!(search("q=a&kind=message_recorded,nope").unwrap_err().field(), "kind");
        assert_eq!(search("q=a&kind=phase").unwrap().filters.kinds, KindFilter::Phases);
        let mixed = search("q=a&kind=phase,decision_made").unwrap_err();
        assert_eq!(mixed.field(), "kind");
        assert!(mixed.to_string().contains("cannot be combined"), "{mixed}");
        assert_eq!(search("q=a&scope=everyone").unwrap_err().field(), "scope");
        assert_eq!(search("q=a&since=yesterday").unwrap_err().field(), "since");
        assert_eq!(search("q=a&bm25_weight=-1").unwrap_err().field(), "bm25_weight");
        assert_eq!(search("q=a&rrf_k=NaN").unwrap_err().field(), "rrf_k");
        assert_eq!(search("q=a&usage_weight=inf").unwrap_err().field(), "usage_weight");
        assert_eq!(search("q=a&fusion=mean").unwrap_err().field(), "fusion");
        let checked = search("q=a&mode=bm25&kind=+fact_asserted+,&scope=shared&vector_weight=0.5&fusion=rrf").unwrap();
        assert_eq!(
            (checked.mode, checked.filters.kinds, checked.weights.vector, checked.weights.bm25, checked.weights.fusion),
            (SearchMode::Bm25, KindFilter::Items(vec!["fact_asserted"]), 0.5, 1.0, Fusion::Rrf)
        );
    }

    #[test]
    fn graph_hops_and_entity_length() {
        let graph = |query_string: &str| {
            let input = parsed::<GraphParams>(query_string).input()?;
            input.check().map(|()| input)
        };
        assert_eq!(graph("entity=coder").unwrap().hops, 2);
        assert_eq!(graph("entity=coder&hops=4&relations=modified,,reads").unwrap().relations, ["modified", "reads"]);
        assert_eq!(graph("entity=coder&hops=5").unwrap_err().to_string(), "hops must be between 1 and 4, got 5");
        assert_eq!(graph("entity=coder&as_of=yesterday").unwrap_err().field(), "as_of");
        let long = format!("entity={}", "e".repeat(MAX_QUERY_BYTES + 1));
        assert_eq!(graph(&long).unwrap_err().to_string(), "entity is 4097 bytes, the limit is 4096");
    }

    #[test]
    fn phase_levels_and_timeline_limits() {
        let phase = |query_string: &str| parsed::<PhaseParams>(query_string).input();
        assert_eq!(phase("").unwrap(), PhaseInput::default());
        assert_eq!(
            phase("level=original&min_seq=3").unwrap(),
            PhaseInput { level: PhaseLevel::Original, min_seq: Some(3) }
        );
        let refused = phase("level=gist").unwrap_err();
        assert_eq!((refused.field(), refused.to_string().starts_with("unknown level \"gist\"")), ("level", true));
        let timeline = |query_string: &str| {
            let input = parsed::<TimelineParams>(query_string).input()?;
            input.check().map(|()| input)
        };
        assert_eq!(timeline("").unwrap(), TimelineInput::default());
        assert_eq!(timeline("limit=501").unwrap_err().to_string(), "limit must be between 1 and 500, got 501");
        assert_eq!(timeline("limit=0").unwrap_err().field(), "limit");
        assert_eq!(timeline("since=noon").unwrap_err().field(), "since");
    }

    #[test]
    fn events_page_limit_and_agent_name() {
        let items = |query_string: &str| {
            let input = parsed::<ItemsParams>(query_string).input()?;
            input.check().map(|()| input)
        };
        assert_eq!(items("").unwrap(), ItemsInput::default());
        assert_eq!(items("state=pinned&before_seq=9").unwrap().page.before_seq, Some(9));
        assert!(items("state=pinned").unwrap().page.pinned_only);
        assert_eq!(items("state=decayed").unwrap().page.state, Some(ItemState::Decayed));
        let refused = items("state=stale").unwrap_err();
        assert_eq!(refused.field(), "state");
        assert!(refused.to_string().contains("active, archived, decayed, forgotten, merged, purged, or pinned"));
        assert_eq!(items("limit=501").unwrap_err().field(), "limit");
        let page = |query_string: &str| parsed::<EventsParams>(query_string).check();
        assert_eq!(page("").unwrap(), CheckedEventsPage { from_seq: 1, agent: None, limit: 1000 });
        assert_eq!(page("from_seq=0&limit=10000").unwrap().from_seq, 1);
        assert_eq!(page("limit=10001").unwrap_err().to_string(), "limit must be between 1 and 10000, got 10001");
        assert_eq!(page("agent=a.b%20c").unwrap_err().field(), "agent");
        assert_eq!(page("follow=true&from_seq=5").unwrap().from_seq, 5);
        assert_eq!(page("follow=true&limit=5").unwrap_err().field(), "limit");
    }

    /// Every parameter set refuses a field it does not take, by name, in a
    /// query string and in a JSON body (nested ones by their path).
    #[test]
    fn unknown_fields_are_refused_by_name() {
        fn refusal_in_query<T: serde::de::DeserializeOwned + std::fmt::Debug>(query_string: &str) -> ParameterError {
            // What actix-web's `web::Query` parses a query string with.
            match serde_urlencoded::from_str::<T>(query_string) {
                Err(error) => ParameterError::unknown_field("", &error.to_string()).expect("an unknown field"),
                other => panic!("{query_string:?} not refused as unknown: {other:?}"),
            }
        }
        let error = refusal_in_query::<SearchParams>("q=x&kk=3");
        assert_eq!((error.field(), error.code()), ("kk", "unknown_field"));
        assert!(error.to_string().starts_with("unknown field \"kk\"; expected one of: q, k, mode"), "{error}");
        assert_eq!(refusal_in_query::<GraphParams>("entity=a&hopz=2").field(), "hopz");
        assert_eq!(refusal_in_query::<EventsParams>("form_seq=1").field(), "form_seq");
        assert_eq!(refusal_in_query::<MinSeqParams>("minseq=1").field(), "minseq");
        assert_eq!(refusal_in_query::<ReplayParams>("verfy=true").field(), "verfy");
        assert_eq!(refusal_in_query::<PhaseParams>("levle=index").field(), "levle");
        assert_eq!(refusal_in_query::<ContextParams>("q=x&k=3").field(), "k");
        let body = serde_json::from_str::<ContextBody>(r#"{"q": "x"}"#);
        let message = body.expect_err("refused").to_string();
        assert_eq!(ParameterError::unknown_field("", &message).unwrap().field(), "q");
        let body = serde_json::from_str::<ContextBody>(r#"{"query": "x", "signals": {"file": "a.rs"}}"#);
        let message = body.expect_err("refused").to_string();
        assert_eq!(ParameterError::unknown_field("signals", &message).unwrap().field(), "signals.file");
        assert_eq!(ParameterError::unknown_field("signals.file", &message).unwrap().field(), "signals.file");
        assert_eq!(ParameterError::unknown_field("", "invalid type: string, expected u64"), None);
    }

    #[test]
    fn context_budget_signals_and_defaults() {
        let context = |query_string: &str| parsed::<ContextParams>(query_string).into_body().check(2000, Some(0.5));
        let checked = context("q=why&recent_errors=E1%0A%0A+E2+").unwrap();
        assert_eq!((checked.budget, checked.thinking_budget), (2000, Some(0.5)));
        assert_eq!(checked.recent_errors, ["E1", "E2"]);
        assert_eq!(
            context("budget=1000001").unwrap_err().to_string(),
            "budget must be between 1 and 1000000, got 1000001"
        );
        assert_eq!(context("thinking_budget=1.5").unwrap_err().field(), "thinking_budget");
        let errors = (0..=MAX_RECENT_ERRORS).map(|n| format!("E{n}")).collect::<Vec<_>>().join("%0A");
        assert_eq!(
            context(&format!("recent_errors={errors}")).unwrap_err().to_string(),
            "at most 16 recent errors, got 17"
        );
        let long = format!("current_file={}", "f".repeat(MAX_QUERY_BYTES + 1));
        assert_eq!(context(&long).unwrap_err().to_string(), "a signal is 4097 bytes, the limit is 4096");
    }
}
