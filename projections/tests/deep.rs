//! The deep tier as memories apply it: vectors recorded on the log
//! (`embeddings_computed`) lift a reworded question's answer; an item
//! takes the first vector of the memory's deep model recorded for it, from
//! its author only; shared vectors reach every memory holding the item, a
//! private item's only its author's; a purge takes them out; a snapshot
//! keeps them, and replay gives the same memory.

mod common;

use common::{Log, minilm};
use mneme_events::MessageRecorded;
use mneme_events::{ComputedVector, EmbeddingsComputed, Event, EventId, EventKind, Int8Values, MemoryPurged, Scope};
use mneme_index::QuantizedVector;
use mneme_index::embed::{Embedder, embedded_text};
use mneme_projections::{AgentMemory, MemoryConfig, SearchMode, SearchRequest};

fn said(text: &str) -> EventKind {
    EventKind::MessageRecorded(MessageRecorded { role: "user".into(), text: text.into() })
}

/// The memory configuration of the tests: hashed static vectors (no
/// meaning), all-MiniLM-L6-v2 as the deep model.
fn config() -> MemoryConfig {
    MemoryConfig::default().with_deep_embedder(Some(minilm()))
}

/// The vectors of `items` (event, text as the memory indexes it) by `model`.
fn computed(model: &dyn Embedder, items: &[(&Event, String)]) -> EmbeddingsComputed {
    let (name, hash) = EmbeddingsComputed::model_parts(model.model_id());
    EmbeddingsComputed {
        model: name.into(),
        model_hash: hash.into(),
        dimensions: model.dimensions() as u32,
        vectors: items
            .iter()
            .map(|(event, text)| {
                let quantized = QuantizedVector::of(&model.embed(embedded_text(text)));
                ComputedVector { event_id: event.id, scale: quantized.scale, values: Int8Values(quantized.values) }
            })
            .collect(),
    }
}

/// The text a memory indexes of `event`'s item (what the enricher embeds).
fn indexed(memory: &AgentMemory, event: &Event) -> String {
    memory.item(&event.id.to_string()).expect("the item").text.indexed().to_string()
}

fn apply_all(memory: &mut AgentMemory, log: &Log) {
    for (seq, event) in &log.events {
        if *seq > memory.checkpoint() {
            memory.apply(*seq, event).unwrap();
        }
    }
    memory.commit().unwrap();
}

fn hybrid(memory: &AgentMemory, query: &str) -> Vec<String> {
    let request = SearchRequest { mode: SearchMode::Hybrid, ..SearchRequest::new(query, 3) };
    mneme_projections::search(memory, &request).unwrap().into_iter().map(|hit| hit.item_id).collect()
}

const TEXTS: [&str; 6] = [
    "The nightly database migration finished at noon without errors.",
    "Our ledger service stores its balances in postgres.",
    "I finally joined the bouldering gym and now climb three evenings a week.",
    "The deploy failed because an environment variable was missing.",
    "Please rotate the signing keys before Friday's release.",
    "The flaky integration test was quarantined until the fix lands.",
];
const QUESTION: &str = "Which sport did she take up recently?";

#[test]
fn a_reworded_question_finds_its_answer_once_its_items_have_deep_vectors() {
    let mut log = Log::starting_at(1_765_000_000_000);
    let events: Vec<Event> = TEXTS.iter().map(|text| log.push("coder", Scope::Private, None, said(text))).collect();
    let mut memory = AgentMemory::new("demo", "coder", config()).unwrap();
    apply_all(&mut memory, &log);
    assert_eq!(memory.deep_backlog(), 6);
    let answer = events[2].id.to_string();
    let before = hybrid(&memory, QUESTION);

    let items: Vec<(&Event, String)> = events.iter().map(|event| (event, indexed(&memory, event))).collect();
    log.push("coder", Scope::Private, None, EventKind::EmbeddingsComputed(computed(minilm().as_ref(), &items)));
    apply_all(&mut memory, &log);
    assert_eq!((memory.deep_count(), memory.deep_backlog()), (6, 0));
    let after = hybrid(&memory, QUESTION);
    assert_eq!(after.first(), Some(&answer), "deep vectors find the climbing gym; hashed vectors gave {before:?}");
    assert_ne!(before.first(), Some(&answer), "the test's question must need the deep tier");
}

#[test]
fn vectors_apply_to_their_authors_items_by_scope_and_the_first_of_the_model_wins() {
    let config = config();
    let model = minilm();
    let mut log = Log::starting_at(1_765_000_000_000);
    let shared = log.push("coder", Scope::Shared, None, said(TEXTS[0]));
    let private = log.push("coder", Scope::Private, None, said(TEXTS[1]));
    let reviewer_own = log.push("reviewer", Scope::Private, None, said(TEXTS[2]));
    let mut coder = AgentMemory::new("demo", "coder", config.clone()).unwrap();
    let mut reviewer = AgentMemory::new("demo", "reviewer", config.clone()).unwrap();
    apply_all(&mut coder, &log);
    apply_all(&mut reviewer, &log);
    let shared_text = indexed(&coder, &shared);
    // The reviewer may not set the vector of the coder's shared item.
    log.push(
        "reviewer",
        Scope::Shared,
        None,
        EventKind::EmbeddingsComputed(computed(model.as_ref(), &[(&shared, shared_text.clone())])),
    );
    // Another model's vectors change nothing.
    let mut other = computed(model.as_ref(), &[(&shared, shared_text.clone())]);
    other.model_hash = "sha256:0000000000000000".into();
    log.push("coder", Scope::Shared, None, EventKind::EmbeddingsComputed(other));
    // Nor does a shared item's vector in a private event: the reviewer's
    // memory, which holds the item too, does not see it.
    log.push(
        "coder",
        Scope::Private,
        None,
        EventKind::EmbeddingsComputed(computed(model.as_ref(), &[(&shared, shared_text.clone())])),
    );
    apply_all(&mut coder, &log);
    apply_all(&mut reviewer, &log);
    assert_eq!((coder.deep_count(), reviewer.deep_count()), (0, 0));

    // The coder's own: the shared item's reaches both memories, the
    // private one's only the coder's, even in a shared event.
    log.push(
        "coder",
        Scope::Shared,
        None,
        EventKind::EmbeddingsComputed(computed(
            model.as_ref(),
            &[(&shared, shared_text.clone()), (&private, indexed(&coder, &private))],
        )),
    );
    apply_all(&mut coder, &log);
    apply_all(&mut reviewer, &log);
    assert_eq!((coder.deep_count(), reviewer.deep_count()), (2, 1));
    assert_eq!((coder.deep_backlog(), reviewer.deep_backlog()), (0, 1), "the reviewer's own item still waits");
    let waiting: Vec<EventId> =
        reviewer.awaiting_deep(0, 10).iter().map(|item| item.item_id.parse().unwrap()).collect();
    assert_eq!(waiting, vec![reviewer_own.id]);

    // A later vector for the same item is not taken: every score stays.
    let scored = |memory: &AgentMemory| {
        let request = SearchRequest { mode: SearchMode::Hybrid, ..SearchRequest::new(TEXTS[1], 3) };
        mneme_projections::search(memory, &request).unwrap()
    };
    let before = scored(&coder);
    let mut moved = computed(model.as_ref(), &[(&shared, "something else entirely".to_string())]);
    moved.vectors[0].event_id = shared.id;
    log.push("coder", Scope::Shared, None, EventKind::EmbeddingsComputed(moved));
    apply_all(&mut coder, &log);
    assert_eq!(scored(&coder), before);
}

#[test]
fn a_purge_takes_deep_vectors_out_and_snapshots_and_replay_keep_the_same_memory() {
    let config = config();
    let model = minilm();
    let mut log = Log::starting_at(1_765_000_000_000);
    let events: Vec<Event> = TEXTS
        .iter()
        .enumerate()
        .map(|(index, text)| {
            let scope = if index % 2 == 0 { Scope::Shared } else { Scope::Private };
            log.push("coder", scope, None, said(text))
        })
        .collect();
    let mut live = AgentMemory::new("demo", "coder", config.clone()).unwrap();
    apply_all(&mut live, &log);
    for scope in [Scope::Shared, Scope::Private] {
        let items: Vec<(&Event, String)> =
            events.iter().filter(|event| event.scope == scope).map(|event| (event, indexed(&live, event))).collect();
        log.push("coder", scope, None, EventKind::EmbeddingsComputed(computed(model.as_ref(), &items)));
    }
    let purge = MemoryPurged {
        item_ids: vec![events[2].id.to_string(), events[3].id.to_string()],
        before: None,
        of_agent: None,
        reason: None,
    };
    log.push("coder", Scope::Private, None, EventKind::MemoryPurged(purge));
    apply_all(&mut live, &log);
    assert_eq!((live.deep_count(), live.deep_backlog()), (4, 0), "the purged items' vectors are gone");
    let answers = hybrid(&live, QUESTION);
    assert!(!answers.contains(&events[2].id.to_string()), "a purged item is never found: {answers:?}");

    // Restored from its snapshot, into a swarm that has none of its shared
    // content: the same digest, the same answers.
    let snapshot = live.to_snapshot().unwrap();
    let fresh = config.clone().with_fresh_shared_content();
    let restored = AgentMemory::from_snapshot(&snapshot, "demo", "coder", fresh.clone()).unwrap();
    assert_eq!(restored.digest(), live.digest());
    assert_eq!(hybrid(&restored, TEXTS[4]), hybrid(&live, TEXTS[4]));
    assert_eq!(restored.deep_count(), 4);

    // Replayed from the log: the same.
    let mut replayed = AgentMemory::new("demo", "coder", config.with_fresh_shared_content()).unwrap();
    apply_all(&mut replayed, &log);
    assert_eq!(replayed.digest(), live.digest());

    // A snapshot of another deep model is refused (the memory is rebuilt).
    let without = MemoryConfig::default().with_fresh_shared_content();
    let error = AgentMemory::from_snapshot(&snapshot, "demo", "coder", without).err().expect("refused");
    assert!(error.to_string().contains("deep"), "{error}");
}

#[test]
fn a_memory_behind_the_others_does_not_read_a_shared_vector_it_has_not_applied() {
    let config = config();
    let model = minilm();
    let mut log = Log::starting_at(1_765_000_000_000);
    let events: Vec<Event> = TEXTS.iter().map(|text| log.push("coder", Scope::Shared, None, said(text))).collect();
    let mut ahead = AgentMemory::new("demo", "coder", config.clone()).unwrap();
    let mut behind = AgentMemory::new("demo", "reviewer", config.clone()).unwrap();
    apply_all(&mut ahead, &log);
    apply_all(&mut behind, &log);
    let answers_before = hybrid(&behind, QUESTION);
    let items: Vec<(&Event, String)> = events.iter().map(|event| (event, indexed(&ahead, event))).collect();
    log.push("coder", Scope::Shared, None, EventKind::EmbeddingsComputed(computed(model.as_ref(), &items)));
    apply_all(&mut ahead, &log);
    // The coder's memory put the vectors in the swarm's copy; the
    // reviewer's has not applied the event: it answers as before.
    assert_eq!(behind.deep_count(), 0);
    assert_eq!(hybrid(&behind, QUESTION), answers_before);
    apply_all(&mut behind, &log);
    assert_eq!(behind.deep_count(), 6);
    assert_eq!(hybrid(&behind, QUESTION).first(), Some(&events[2].id.to_string()));
}

/// Issue 39: asked about a person, the deep model reads the question
/// without their name. Every shared item of Maria's reads "(from maria)
/// …", so with the name the question was nearest her shortest remarks,
/// whatever they said.
#[test]
fn the_deep_model_reads_a_question_about_a_person_without_their_name() {
    let mut log = Log::starting_at(1_765_000_000_000);
    let mut events = Vec::new();
    for (agent, text) in [
        ("maria", "Ha! Classic."),
        ("jon", "The weather has been so gloomy this week, I barely left the house."),
        ("maria", "Honestly, relatable."),
        ("maria", "I finally joined the bouldering gym and now climb three evenings a week."),
        ("maria", "Ugh, same here."),
        ("jon", "The deploy failed because an environment variable was missing."),
        ("maria", "Oh I know what you mean."),
    ] {
        events.push((agent, log.push(agent, Scope::Shared, None, said(text))));
    }
    let mut memory = AgentMemory::new("demo", "observer", config()).unwrap();
    apply_all(&mut memory, &log);
    for agent in ["maria", "jon"] {
        let items: Vec<(&Event, String)> = events
            .iter()
            .filter(|(author, _)| *author == agent)
            .map(|(_, event)| (event, indexed(&memory, event)))
            .collect();
        log.push(agent, Scope::Shared, None, EventKind::EmbeddingsComputed(computed(minilm().as_ref(), &items)));
    }
    apply_all(&mut memory, &log);
    assert_eq!(memory.deep_backlog(), 0);
    let gym = events[3].1.id.to_string();
    let request = SearchRequest {
        mode: SearchMode::Hybrid,
        explain: true,
        ..SearchRequest::new("Which sport has Maria taken up?", 5)
    };
    let hits = mneme_projections::search(&memory, &request).unwrap();
    let deep_first = hits
        .iter()
        .find(|hit| hit.explain.iter().any(|rank| rank.retriever == "deep" && rank.rank == 1))
        .map(|hit| (hit.item_id.clone(), hit.text.clone()));
    assert_eq!(deep_first.as_ref().map(|(id, _)| id), Some(&gym), "the deep model's first: {deep_first:?}");
    assert_eq!(hits.first().map(|hit| &hit.item_id), Some(&gym));
}
