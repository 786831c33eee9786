//! Hybrid retrieval on a real model: fusion finds what each retriever alone
//! misses — a paraphrase BM25 cannot match, an exact identifier the vectors
//! blur — and explains where each hit came from.
//!
//! Uses all-MiniLM-L6-v2 from `scripts/fetch-model.sh`; without it these
//! tests fail with that instruction, they never skip.

mod common;

use mneme_events::{Event, EventId, EventKind, MessageRecorded, Scope, Timestamp};
use std::sync::Arc;

use mneme_index::QuantizedVector;
use mneme_index::embed::{Embedder, HashedNgramEmbedder, embedded_text};
use mneme_projections::{AgentMemory, KindFilter, MemoryConfig, SearchMode, SearchRequest};

fn message(counter: u64, text: &str) -> Event {
    Event::new(
        "demo",
        "coder",
        EventKind::MessageRecorded(MessageRecorded { role: "assistant".into(), text: text.into() }),
    )
    .with_id(EventId::from_parts(1_767_000_000_000 + counter, u128::from(counter)))
    .with_ts(Timestamp::from_unix_millis(1_767_000_000_000 + counter as i64 * 1000))
    .with_scope(Scope::Shared)
}

/// A memory holding `texts` as messages, seq = position + 1.
fn memory_of(texts: &[&str]) -> AgentMemory {
    let config = MemoryConfig { embedder: common::minilm(), ..MemoryConfig::default() };
    let mut memory = AgentMemory::new("demo", "coder", config).unwrap();
    for (position, text) in texts.iter().enumerate() {
        memory.apply(position as u64 + 1, &message(position as u64, text)).unwrap();
    }
    memory
}

/// Seqs of the top `k` hits in a mode.
fn top(memory: &mut AgentMemory, query: &str, k: usize, mode: SearchMode) -> Vec<u64> {
    let request = SearchRequest::new(query, k).with_mode(mode);
    memory.commit().unwrap();
    mneme_projections::search(memory, &request).unwrap().iter().map(|hit| hit.seq).collect()
}

/// Texts that share words with the queries below but not their meaning.
const DISTRACTORS: &[&str] = &[
    "the nightly build takes fifteen minutes on the shared runner",
    "login page styles still use the old colour palette",
    "the session at the conference starts after lunch",
    "cargo test takes about fifteen minutes with the integration suite",
    "the minutes of the planning meeting are in the wiki",
    "renamed the login button and updated the screenshot tests",
    "the database migration dies when the disk fills up",
    "after the refactor the parser handles nested lists",
];

/// The vector retriever's best are scored at full precision when the
/// model embeds in microseconds: a hit's score is the cosine of the
/// query's and its text's vectors, where the 8-bit vectors the index keeps
/// are off by some thousandths, the order of the gaps between near
/// neighbours. A transformer as the static model is not run again per
/// search: its hits keep the 8-bit scores.
#[test]
fn the_vector_retrievers_best_are_scored_at_full_precision() {
    let hashed: Arc<dyn Embedder> = Arc::new(HashedNgramEmbedder::default());
    for (embedder, exact_scores) in [(hashed, true), (common::minilm(), false)] {
        let config = MemoryConfig { embedder: embedder.clone(), ..MemoryConfig::default() };
        let mut memory = AgentMemory::new("demo", "coder", config).unwrap();
        for (position, text) in DISTRACTORS.iter().enumerate() {
            memory.apply(position as u64 + 1, &message(position as u64, text)).unwrap();
        }
        memory.commit().unwrap();
        let query = "the build and the tests take fifteen minutes";
        let request = SearchRequest::new(query, 5).with_mode(SearchMode::Vector);
        let hits = mneme_projections::search(&memory, &request).unwrap();
        assert_eq!(hits.len(), 5);
        let query_vector = embedder.embed(embedded_text(query));
        let mut off_in_8_bits = 0.0f32;
        for hit in &hits {
            let text = memory.item(&hit.item_id).expect("the item").text.indexed().to_string();
            let full = embedder.embed(embedded_text(&text));
            let exact: f32 = query_vector.iter().zip(&full).map(|(a, b)| a * b).sum();
            let quantized = QuantizedVector::of(&full);
            let approximate: f32 =
                query_vector.iter().zip(&quantized.values).map(|(a, b)| a * f32::from(*b)).sum::<f32>()
                    * quantized.scale;
            let expected = if exact_scores { exact } else { approximate };
            assert!((hit.score - expected).abs() < 1e-5, "{}: {} against {expected}", hit.seq, hit.score);
            off_in_8_bits = off_in_8_bits.max((approximate - exact).abs());
        }
        assert!(off_in_8_bits > 1e-4, "the 8-bit scores differ from the exact ones ({off_in_8_bits})");
        assert!(hits.windows(2).all(|pair| pair[0].score >= pair[1].score));
    }
}

#[test]
fn hybrid_finds_a_paraphrase_that_bm25_alone_misses() {
    let target = "users get signed out once the access token expires";
    let mut texts = DISTRACTORS.to_vec();
    texts.push(target);
    let target_seq = texts.len() as u64;
    let mut memory = memory_of(&texts);
    let query = "the login session dies after fifteen minutes";

    // Measured: BM25 ranks the paraphrase last (it shares only "the"),
    // vectors first, hybrid fourth: agreement of both retrievers on a
    // distractor outweighs one retriever's first place, as RRF intends.
    let bm25 = top(&mut memory, query, 5, SearchMode::Bm25);
    assert!(!bm25.contains(&target_seq), "BM25 alone should miss the paraphrase: {bm25:?}");
    let vector = top(&mut memory, query, 5, SearchMode::Vector);
    assert_eq!(vector.first(), Some(&target_seq), "the model should see the paraphrase: {vector:?}");
    let hybrid = top(&mut memory, query, 5, SearchMode::Hybrid);
    assert!(hybrid.contains(&target_seq), "hybrid should find the paraphrase: {hybrid:?}");
}

/// A failing test's output that names the function once, deep in a
/// traceback: its vector is about pytest and stores, not key rotation.
/// A failing test's output that names the function once, deep in a
/// traceback: its vector is about pytest and stores, not key rotation.
const TRACEBACK: &str = "$ pytest tests/test_keys.py -x
============================= test session starts ==============================
collected 14 items

tests/test_keys.py ......F

=================================== FAILURES ===================================
______________________________ test_nightly_job _______________________________
Traceback (most recent call last):
  File \"/repo/jobs/nightly.py\", line 41, in run
    self.scheduler.run_pending()
  File \"/repo/jobs/scheduler.py\", line 88, in run_pending
    job()
  File \"/repo/auth/keys.py\", line 120, in rotate_signing_keys
    store.put(kid, material)
  File \"/repo/auth/store.py\", line 17, in put
    raise StoreFullError(len(self.slots))
StoreFullError: 64
=========================== short test summary info ============================
FAILED tests/test_keys.py::test_nightly_job - StoreFullError: 64
========================= 1 failed, 6 passed in 0.42s ==========================";

#[test]
fn hybrid_finds_an_exact_identifier_that_vectors_alone_miss() {
    let texts = [
        "we rotate the signing keys every night",
        "signing key rotation should keep the previous key for a day",
        "rotating keys invalidates tokens signed with the old key",
        "the key rotation job moved to the scheduler",
        "document how signing keys are rotated in the runbook",
        "keys are rotated by a cron job on the auth host",
        TRACEBACK,
    ];
    let target_seq = texts.len() as u64;
    let mut memory = memory_of(&texts);
    let query = "rotate_signing_keys";

    // Measured: vectors rank the traceback last of seven.
    let vector = top(&mut memory, query, 3, SearchMode::Vector);
    assert!(!vector.contains(&target_seq), "vectors alone should miss the identifier: {vector:?}");
    let bm25 = top(&mut memory, query, 3, SearchMode::Bm25);
    assert_eq!(bm25.first(), Some(&target_seq), "BM25 matches the exact identifier");
    let hybrid = top(&mut memory, query, 3, SearchMode::Hybrid);
    assert_eq!(hybrid.first(), Some(&target_seq), "hybrid should rank the identifier first: {hybrid:?}");
}

#[test]
fn explain_reports_each_retrievers_rank_and_score() {
    let mut texts = DISTRACTORS.to_vec();
    texts.push("users get signed out once the access token expires");
    let mut memory = memory_of(&texts);
    let mut request = SearchRequest::new("access token expires", 3);
    request.explain = true;
    memory.commit().unwrap();
    let hits = mneme_projections::search(&memory, &request).unwrap();
    let best = &hits[0];
    assert_eq!(best.seq, texts.len() as u64);
    let retrievers: Vec<&str> = best.explain.iter().map(|rank| rank.retriever).collect();
    assert!(retrievers.contains(&"bm25") && retrievers.contains(&"vector"), "{retrievers:?}");
    // Retrievers rank from 1; priors and boosts (context, brevity, time,
    // speaker, identifier, kind) are named with rank 0.
    for rank in &best.explain {
        let retriever = ["bm25", "vector", "graph", "expansion"].contains(&rank.retriever);
        assert_eq!(rank.rank >= 1, retriever, "{:?}", best.explain);
    }
    // Under rank fusion, the fused score is the sum of weight / (rrf_k +
    // rank) over the retrievers and the recency prior.
    request.weights.fusion = mneme_projections::Fusion::Rrf;
    let hits = mneme_projections::search(&memory, &request).unwrap();
    let best = &hits[0];
    assert_eq!(best.seq, texts.len() as u64);
    let expected: f32 = best
        .explain
        .iter()
        .map(|rank| if rank.retriever == "recency" { 0.25 } else { 1.0 } / (60.0 + rank.rank as f32))
        .sum();
    assert!((best.score - expected).abs() < 1e-6, "{} vs {expected}", best.score);
}

#[test]
fn filters_apply_before_ranking() {
    let mut memory = memory_of(DISTRACTORS);
    let mut request = SearchRequest::new("fifteen minutes", 5);
    request.filters.since = Some(Timestamp::from_unix_millis(1_767_000_000_000 + 3_000));
    memory.commit().unwrap();
    let hits = mneme_projections::search(&memory, &request).unwrap();
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|hit| hit.seq >= 4), "{:?}", hits.iter().map(|hit| hit.seq).collect::<Vec<_>>());
    request.filters.since = None;
    request.filters.kinds = KindFilter::Items(vec!["decision_made"]);
    assert!(mneme_projections::search(&memory, &request).unwrap().is_empty());
}
