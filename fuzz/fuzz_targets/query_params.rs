//! The API's parameter parsing and checks on arbitrary input: a query
//! string parsed the way actix-web's `web::Query` parses it
//! (serde_urlencoded), or a JSON body as `POST …/context` and NATS queries
//! parse it, then the same checks the routes run. Nothing may panic, what
//! passes is within every limit, and what is refused names its parameter.
//!
//! The first byte picks the parameters and their encoding; the rest is the
//! query string or body.

#![no_main]

// The wire crate the server and its clients use: it has no IO and no
// server dependency, so linking it builds only what the checks need.
use mneme_api::params::*;
use mneme_api::query::{GraphInput, ItemsInput, TimelineInput};
use mneme_api::search::{KindFilter, RetrievalWeights, SearchMode};
use libfuzzer_sys::fuzz_target;
use serde::de::DeserializeOwned;

const DEFAULT_BUDGET: usize = 2000;

fuzz_target!(|bytes: &[u8]| {
    let Some((selector, input)) = bytes.split_first() else { return };
    match selector % 15 {
        0 => search(query_string(input)),
        1 => search(json_body(input)),
        2 => graph(query_string(input)),
        3 => graph(json_body(input)),
        4 => events_page(query_string(input)),
        5 => context(query_string::<ContextParams>(input).map(ContextParams::into_body)),
        6 => context(json_body(input)),
        7 => provenance(json_body(input)),
        8 => item_id(input),
        9 => parsed_only::<MinSeqParams>(input),
        10 => parsed_only::<ReplayParams>(input),
        11 => phase(query_string(input)),
        12 => items(query_string(input)),
        13 => items(json_body::<ItemQuery>(input).map(|query| ItemsParams::from(&query))),
        _ => timeline(json_body(input)),
    }
});

/// As `web::Query::from_query` does; a parse error is a 400 there.
fn query_string<T: DeserializeOwned>(input: &[u8]) -> Option<T> {
    serde_urlencoded::from_bytes(input).ok()
}

fn json_body<T: DeserializeOwned>(input: &[u8]) -> Option<T> {
    serde_json::from_slice(input).ok()
}

fn parsed_only<T: DeserializeOwned>(input: &[u8]) {
    let _ = query_string::<T>(input);
}

/// What every refusal must say: the parameter, and for an over-limit value
/// the limit, both in the message a client reads.
fn check_refusal(error: &ParameterError) {
    let message = error.to_string();
    assert!(!error.field().is_empty() && !message.is_empty());
    match error {
        ParameterError::OutOfRange { field, value, max } => {
            assert!(*value == 0 || value > max, "{field}={value} refused within 1..={max}");
            assert!(message.contains(field) && message.contains(&max.to_string()), "{message}");
        }
        ParameterError::TooLong { bytes, max, .. } => {
            assert!(bytes > max);
            assert!(message.contains(&max.to_string()), "{message}");
        }
        ParameterError::TooMany { count, max, .. } => {
            assert!(count > max);
            assert!(message.contains(&max.to_string()), "{message}");
        }
        ParameterError::Invalid { .. } => {}
        ParameterError::UnknownField { field, .. } => assert!(message.contains(field.as_str()), "{message}"),
    }
}

fn search(params: Option<SearchParams>) {
    let Some(params) = params else { return };
    match params.input().and_then(|input| input.check(&RetrievalWeights::default())) {
        Ok(checked) => {
            assert!(checked.query.len() <= MAX_QUERY_BYTES);
            assert!((1..=MAX_K).contains(&checked.k));
            assert!(SearchMode::ALL.contains(&checked.mode));
            // Every item kind, some known event kinds, or the phases.
            if let KindFilter::Items(kinds) = &checked.filters.kinds {
                assert!(!kinds.is_empty() && kinds.iter().all(|kind| mneme_events::EventKind::NAMES.contains(kind)));
            }
            let weights = checked.weights;
            let set = [weights.rrf_k, weights.bm25, weights.vector, weights.graph, weights.recency, weights.usage];
            for weight in set {
                assert!(weight.is_finite() && weight >= 0.0, "weight {weight} passed");
            }
        }
        Err(error) => check_refusal(&error),
    }
}

/// What a transport parses, then what the service checks: the typed input
/// passes both or is refused by one, naming its parameter.
fn parsed_and_checked<I>(input: Result<I, ParameterError>, check: impl Fn(&I) -> Result<(), ParameterError>) -> Option<I> {
    match input.and_then(|input| check(&input).map(|()| input)) {
        Ok(input) => Some(input),
        Err(error) => {
            check_refusal(&error);
            None
        }
    }
}

fn graph(params: Option<GraphParams>) {
    let Some(params) = params else { return };
    if let Some(checked) = parsed_and_checked(params.input(), GraphInput::check) {
        assert!(checked.entity.len() <= MAX_QUERY_BYTES);
        assert!((1..=MAX_HOPS).contains(&checked.hops));
        assert!(checked.relations.iter().all(|relation| !relation.is_empty() && relation.trim() == relation));
    }
}

fn phase(params: Option<PhaseParams>) {
    let Some(params) = params else { return };
    match params.input() {
        Ok(input) => assert!(params.level.is_none_or(|name| name == input.level.as_str())),
        Err(error) => check_refusal(&error),
    }
}

fn items(params: Option<ItemsParams>) {
    let Some(params) = params else { return };
    if let Some(input) = parsed_and_checked(params.input(), ItemsInput::check) {
        assert!((1..=MAX_ITEMS_PAGE).contains(&input.page.limit));
        assert!(!(input.page.pinned_only && input.page.state.is_some()));
    }
}

fn timeline(params: Option<TimelineParams>) {
    let Some(params) = params else { return };
    if let Some(input) = parsed_and_checked(params.input(), TimelineInput::check) {
        assert!((1..=MAX_TIMELINE_ENTRIES).contains(&input.limit));
    }
}

fn events_page(params: Option<EventsParams>) {
    let Some(params) = params else { return };
    match params.check() {
        Ok(page) => {
            assert!(page.from_seq >= 1);
            assert!((1..=MAX_EVENTS_PAGE).contains(&page.limit));
            if let Some(agent) = &page.agent {
                assert!(mneme_events::validate_name(agent).is_ok());
            }
        }
        Err(error) => check_refusal(&error),
    }
}

fn context(body: Option<ContextBody>) {
    let Some(body) = body else { return };
    match body.check(DEFAULT_BUDGET, None) {
        Ok(checked) => {
            assert!(checked.query.len() <= MAX_QUERY_BYTES);
            assert!((1..=MAX_BUDGET_TOKENS).contains(&checked.budget));
            assert!(checked.thinking_budget.is_none_or(|thinking| (0.0..=1.0).contains(&thinking)));
            assert!(checked.recent_errors.len() <= MAX_RECENT_ERRORS);
            let signals = checked.recent_errors.iter().chain(&checked.current_file).chain(&checked.phase);
            assert!(signals.into_iter().all(|text| text.len() <= MAX_QUERY_BYTES));
        }
        Err(error) => check_refusal(&error),
    }
}

fn provenance(params: Option<ProvenanceParams>) {
    let Some(params) = params else { return };
    match params.input().check() {
        Ok(()) => assert!(params.item_id.len() <= MAX_QUERY_BYTES),
        Err(error) => check_refusal(&error),
    }
}

/// An item id from a URL path segment, percent-decoded to any text.
fn item_id(input: &[u8]) {
    let text = String::from_utf8_lossy(input);
    match check_item_id(&text) {
        Ok(()) => assert!(text.len() <= MAX_QUERY_BYTES),
        Err(error) => check_refusal(&error),
    }
}
