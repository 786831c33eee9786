//! `mneme-tools bench search`: latency of every search mode, of 2-hop graph
//! queries and of embedding, in one agent's memory of N items, in process.
//! BM25 search is the baseline every other latency is compared with.

use mneme_index::tokens;
use mneme_projections::{Activity, ContextRequest, ContextSignals};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use mneme_actors::SwarmConfig;
use mneme_events::{DecodeLimits, decode_json};
use mneme_projections::graph::GraphQuery;
use mneme_projections::{AgentMemory, ItemPage, ItemState, SearchMode, SearchRequest};

use crate::bench::{Vocabulary, WordStream};

const AGENT: &str = "agent-0";
/// Words in the Zipfian vocabulary: about what a year of a project's agent
/// chatter and tool output uses, identifiers included.
const ZIPF_VOCABULARY: usize = 20_000;

/// Queries: single words, identifiers, paths and short phrases, as agents ask.
const QUERIES: &[&str] = &[
    "token refresh",
    "TokenExpiredError",
    "src/auth/token.rs",
    "refresh_access_token",
    "why does the cache timeout",
    "database migration fails",
    "cargo test panic unwrap",
    "review the middleware config",
    "retry after timeout",
    "session expired before deploy",
];

/// `only_hybrid`: no other row, for a profiler attached once the memory is
/// built (`perf record -p`).
pub fn run(items: usize, queries: usize, vocabulary: Vocabulary, only_hybrid: bool) -> anyhow::Result<ExitCode> {
    let config = SwarmConfig::with_name("bench");
    let embedder = mneme::model::load_configured_embedder(&config)?;
    out!("{}", crate::bench::machine_description());
    let vocabulary_name = match vocabulary {
        Vocabulary::Zipf => "zipf",
        Vocabulary::Narrow => "narrow",
    };
    let only = if only_hybrid { " --only-hybrid" } else { "" };
    out!("command: mneme-tools bench search --items {items} --queries {queries} --vocabulary {vocabulary_name}{only}");
    out!("embedder: {}", embedder.model_id());

    let agents = vec![AGENT.to_string()];
    let mut event_words = match vocabulary {
        Vocabulary::Zipf => WordStream::zipf(ZIPF_VOCABULARY),
        Vocabulary::Narrow => WordStream::default(),
    };
    let events = crate::bench::synthetic_events_from(items, &agents, &mut event_words);
    let limits = DecodeLimits::default();
    let mut words = WordStream::default();
    let texts: Vec<String> = (0..items).map(|index| words.sentence(5 + index % 11)).collect();
    let started = Instant::now();
    for text in &texts {
        std::hint::black_box(embedder.embed(text));
    }
    let embed_rate = texts.len() as f64 / started.elapsed().as_secs_f64();
    out!("embedding: {embed_rate:.0} texts/s (short texts of 5-15 words, one thread)");

    let mut memory = AgentMemory::new("bench", AGENT, config.memory_config(embedder.clone()))?;
    let started = Instant::now();
    for (index, json) in events.iter().enumerate() {
        let event = decode_json(json.as_bytes(), &limits).context("decoding a synthetic event")?;
        memory.apply(index as u64 + 1, &event)?;
    }
    memory.commit()?;
    let apply_rate = items as f64 / started.elapsed().as_secs_f64();
    out!(
        "memory: {} items applied at {apply_rate:.0} items/s; graph {} nodes, {} edges",
        memory.item_count(),
        memory.graph().view().node_count(),
        memory.graph().view().edge_count()
    );
    let started = Instant::now();
    memory.settle_vector_graphs();
    out!(
        "vector graphs: the last built {:.1} s after the last apply (built off the write path, by the builder workers)",
        started.elapsed().as_secs_f64()
    );

    let texts: Vec<String> = memory.items().iter().map(|item| item.text.indexed().to_string()).collect();
    let bare = bare_libraries(&texts, embedder.as_ref())?;
    out!(
        "bare libraries on the same {} texts, one thread, no Mneme code: embedding {:.0}/s, tantivy add+commit {:.0}/s, \
         hnsw_rs insert (M 16, ef_construction 64) {:.0}/s; all three {:.0}/s; embedding + tantivy (Mneme's vectors \
         are not a graph) {:.0}/s",
        texts.len(),
        bare.rate(bare.embed),
        bare.rate(bare.tantivy),
        bare.rate(bare.hnsw),
        bare.rate(bare.embed + bare.tantivy + bare.hnsw),
        bare.rate(bare.embed + bare.tantivy)
    );
    out!(
        "Mneme's apply against the bare libraries: {:.2}x of all three, {:.2}x of embedding + tantivy",
        apply_rate / bare.rate(bare.embed + bare.tantivy + bare.hnsw),
        apply_rate / bare.rate(bare.embed + bare.tantivy)
    );

    vector_tiers(&mut memory, embedder.as_ref(), 200)?;

    let mut rows = Vec::new();
    let modes: &[SearchMode] = if only_hybrid {
        &[SearchMode::Hybrid]
    } else {
        &[SearchMode::Bm25, SearchMode::Vector, SearchMode::Graph, SearchMode::Hybrid]
    };
    for &mode in modes {
        let latencies = measure(queries, |index| {
            let request = SearchRequest::new(QUERIES[index % QUERIES.len()], 10).with_mode(mode);
            std::hint::black_box(mneme_projections::search(&memory, &request).expect("search works"));
        });
        rows.push((format!("search {} (k=10)", mode.as_str()), latencies));
    }
    // The tail of the hybrid row is the cost of its slowest questions:
    // each one's own figures say which.
    let by_question: Vec<(&str, Vec<Duration>)> = QUERIES
        .iter()
        .map(|query| {
            let request = SearchRequest::new(*query, 10).with_mode(SearchMode::Hybrid);
            let latencies = measure((queries / QUERIES.len()).max(10), |_| {
                std::hint::black_box(mneme_projections::search(&memory, &request).expect("search works"));
            });
            (*query, latencies)
        })
        .collect();
    if !only_hybrid {
        rows.extend(graph_and_context_rows(&mut memory, queries)?);
    }
    let baseline_p99 = percentile(&rows[0].1, 0.99);
    out!("");
    out!("| operation | p50 (ms) | p99 (ms) | p99 / BM25 p99 |");
    out!("|---|---:|---:|---:|");
    for (name, latencies) in &rows {
        let p50 = percentile(latencies, 0.50);
        let p99 = percentile(latencies, 0.99);
        out!(
            "| {name} | {:.3} | {:.3} | {:.2} |",
            p50.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3,
            p99.as_secs_f64() / baseline_p99.as_secs_f64()
        );
    }
    out!("");
    out!("| hybrid search (k=10), by question | p50 (ms) | p99 (ms) |");
    out!("|---|---:|---:|");
    for (query, latencies) in &by_question {
        out!(
            "| {query} | {:.3} | {:.3} |",
            percentile(latencies, 0.50).as_secs_f64() * 1e3,
            percentile(latencies, 0.99).as_secs_f64() * 1e3
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Latencies of a graph neighbourhood and of context requests.
fn graph_and_context_rows(memory: &mut AgentMemory, queries: usize) -> anyhow::Result<Vec<(String, Vec<Duration>)>> {
    let mut rows = Vec::new();
    let entities: Vec<String> = ["file:src/auth/token.rs", "command:cargo test", "symbol:refresh_access_token"]
        .iter()
        .filter(|id| memory.graph().view().node(id).is_some())
        .map(|id| id.to_string())
        .collect();
    anyhow::ensure!(!entities.is_empty(), "the synthetic memory has none of the benchmark's entities");
    let latencies = measure(queries, |index| {
        let query = GraphQuery::new(entities[index % entities.len()].clone(), 2);
        std::hint::black_box(memory.neighbourhood(&query));
    });
    rows.push(("graph 2 hops".to_string(), latencies));
    for (budget, label, signals) in [
        (2000, "context 2,000 tokens", ContextSignals::default()),
        (8000, "context 8,000 tokens", ContextSignals::default()),
        (
            8000,
            "context 8,000 tokens, debugging a file and an error",
            ContextSignals {
                current_file: Some("src/auth/token.rs".to_string()),
                recent_errors: vec!["TokenExpiredError: token expired".to_string()],
                activity: Activity::Debugging,
                ..ContextSignals::default()
            },
        ),
    ] {
        let latencies = measure(queries, |index| {
            let request = ContextRequest::new(QUERIES[index % QUERIES.len()], budget).with_signals(signals.clone());
            let context = mneme_projections::context(memory, &request).expect("context works");
            assert!(context.tokens <= budget);
            std::hint::black_box(context);
        });
        rows.push((label.to_string(), latencies));
    }
    rows.extend(browsing_rows(memory, queries));
    Ok(rows)
}

/// Latencies of what the web view's memory page asks (`GET …/items`): the
/// counts per state and pinned, and a page of 50 items, newest first (the
/// first page, and one far back), or of one state no item is in (a scan of
/// every item).
fn browsing_rows(memory: &AgentMemory, queries: usize) -> Vec<(String, Vec<Duration>)> {
    let items = memory.items().iter().count() as u64;
    let oldest = memory.items().iter().next().map_or(0, |item| item.seq);
    let pages = [
        ("items page, newest 50", None, None),
        ("items page, 50 from the middle", None, Some(oldest + items / 2)),
        ("items page, a state no item is in", Some(ItemState::Purged), None),
    ];
    let mut rows = Vec::new();
    rows.push((
        "item counts per state and pinned".to_string(),
        measure(queries, |_| {
            std::hint::black_box(mneme_projections::state_counts(memory));
        }),
    ));
    for (label, state, before_seq) in pages {
        let page = ItemPage { state, pinned_only: false, before_seq, limit: 50 };
        let latencies = measure(queries, |_| {
            std::hint::black_box(mneme_projections::item_page(memory, &page));
        });
        rows.push((label.to_string(), latencies));
    }
    rows
}

/// Seconds the bare libraries take for a list of texts.
struct BareLibraries {
    texts: usize,
    embed: f64,
    tantivy: f64,
    hnsw: f64,
}

impl BareLibraries {
    fn rate(&self, seconds: f64) -> f64 {
        self.texts as f64 / seconds
    }
}

/// `1 - dot` for the embedder's unit vectors, clamped at 0, as Mneme's
/// vector index used with hnsw_rs before issue 18.
#[derive(Clone, Copy, Default)]
struct UnitCosine;

impl hnsw_rs::prelude::Distance<f32> for UnitCosine {
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        (1.0 - a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>()).max(0.0)
    }
}

/// The limit of the design: the texts Mneme indexed, through the embedder,
/// a tantivy index (one text field, one indexing thread, one commit at the
/// end) and an hnsw_rs graph (one insert at a time), with no Mneme code
/// around them.
fn bare_libraries(texts: &[String], embedder: &dyn mneme_index::embed::Embedder) -> anyhow::Result<BareLibraries> {
    use tantivy::schema::{Schema, TEXT};
    let started = Instant::now();
    let vectors: Vec<Vec<f32>> =
        texts.iter().map(|text| embedder.embed(mneme_index::embed::embedded_text(text))).collect();
    let embed = started.elapsed().as_secs_f64();

    let mut schema = Schema::builder();
    let field = schema.add_text_field("text", TEXT);
    let index = tantivy::Index::create_in_ram(schema.build());
    let options = tantivy::indexer::IndexWriterOptions::builder().num_worker_threads(1).num_merge_threads(1).build();
    let started = Instant::now();
    let mut writer: tantivy::IndexWriter = index.writer_with_options(options)?;
    for text in texts {
        writer.add_document(tantivy::doc!(field => text.as_str()))?;
    }
    writer.commit()?;
    let tantivy = started.elapsed().as_secs_f64();
    drop(writer);

    let started = Instant::now();
    let hnsw = hnsw_rs::prelude::Hnsw::<f32, UnitCosine>::new(16, texts.len().max(1), 16, 64, UnitCosine);
    for (index, vector) in vectors.iter().enumerate() {
        hnsw.insert((vector.as_slice(), index));
    }
    let hnsw_seconds = started.elapsed().as_secs_f64();
    std::hint::black_box(hnsw);
    Ok(BareLibraries { texts: texts.len(), embed, tantivy, hnsw: hnsw_seconds })
}

/// Recall@10 against exact search over the items' unquantized vectors,
/// over `queries` queries drawn from the benchmark's word stream: through
/// the memory's vector retriever, then of each vector tier alone over the
/// same 8-bit vectors (no memory around them), with its latency: the scan
/// at several pools, the graph at several breadths.
fn vector_tiers(
    memory: &mut AgentMemory,
    embedder: &dyn mneme_index::embed::Embedder,
    queries: usize,
) -> anyhow::Result<()> {
    use mneme_index::{QuantizedVector, VectorIndex, ann::AnnGraph};
    let items: Vec<(u64, Vec<f32>)> = memory
        .items()
        .iter()
        .map(|item| (item.seq, embedder.embed(mneme_index::embed::embedded_text(item.text.indexed()))))
        .collect();
    let mut words = WordStream::zipf(ZIPF_VOCABULARY);
    let questions: Vec<(String, Vec<f32>, Vec<u64>)> = (0..queries)
        .map(|index| {
            let query = words.sentence(4 + index % 5);
            let vector = embedder.embed(mneme_index::embed::embedded_text(&query));
            let mut exact: Vec<(f32, u64)> = items.iter().map(|(seq, item)| (cosine(&vector, item), *seq)).collect();
            exact.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
            let nearest = exact.iter().take(10).map(|(_, seq)| *seq).collect();
            (query, vector, nearest)
        })
        .collect();
    let wanted: usize = questions.iter().map(|(_, _, nearest)| nearest.len()).sum::<usize>().max(1);
    let recall_of = |search: &mut dyn FnMut(&[f32]) -> Vec<u64>| {
        let mut found = 0;
        let mut latencies = Vec::with_capacity(questions.len());
        for (_, vector, nearest) in &questions {
            let started = Instant::now();
            let hits = search(vector);
            latencies.push(started.elapsed());
            found += nearest.iter().filter(|seq| hits.contains(seq)).count();
        }
        latencies.sort();
        (found as f64 / wanted as f64, latencies)
    };
    let mut found = 0;
    for (query, _, nearest) in &questions {
        let hits = mneme_projections::search(memory, &SearchRequest::new(query, 10).with_mode(SearchMode::Vector))?;
        found += nearest.iter().filter(|seq| hits.iter().any(|hit| hit.seq == **seq)).count();
    }
    out!(
        "vector recall@10 against exact search over the unquantized vectors, through the memory: {:.3} ({queries} \
         queries of 4-8 words)",
        found as f64 / wanted as f64
    );
    out!("each vector tier alone over the same {} 8-bit vectors, one thread:", items.len());
    out!("| tier | recall@10 | p50 (ms) | p99 (ms) |");
    out!("|---|---:|---:|---:|");
    let mut scan = VectorIndex::new(embedder.dimensions());
    for (seq, vector) in &items {
        scan.insert(*seq, vector);
    }
    for pool in [1_000, 5_000, 16_000, items.len()] {
        let (recall, latencies) = recall_of(&mut |vector| {
            let hits = VectorIndex::search_all_scoring(&[&scan], vector, 10, pool, None);
            hits.into_iter().map(|(_, seq)| seq).collect()
        });
        let tier = if pool >= items.len() {
            "scan, every vector scored (the 8-bit vectors' own ceiling)".to_string()
        } else {
            format!("scan, 4-bit query against the codes, {pool} rescored")
        };
        out!(
            "| {tier} | {recall:.3} | {:.3} | {:.3} |",
            ms(percentile(&latencies, 0.5)),
            ms(percentile(&latencies, 0.99))
        );
    }
    // The scan's best, scored again at full precision: their vectors
    // embedded again from their texts (the static model is a pure
    // function of the text), as the memory's vector retriever does.
    let texts: std::collections::HashMap<u64, &str> =
        memory.items().iter().map(|item| (item.seq, mneme_index::embed::embedded_text(item.text.indexed()))).collect();
    for (pool, refined) in
        [(1_000usize, 20usize), (2_000, 20), (4_000, 20), (5_000, 20), (5_000, 50), (8_000, 20), (16_000, 20)]
    {
        let (recall, latencies) = recall_of(&mut |vector| {
            let hits = VectorIndex::search_all_scoring(&[&scan], vector, refined, pool, None);
            let mut exact: Vec<(f32, u64)> = hits
                .into_iter()
                .map(|(_, seq)| {
                    let full = embedder.embed(texts[&seq]);
                    (cosine(vector, &full), seq)
                })
                .collect();
            exact.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
            exact.into_iter().take(10).map(|(_, seq)| seq).collect()
        });
        out!(
            "| scan, 4-bit query against the codes, {pool} rescored, the best {refined} embedded again and scored in full precision \
             | {recall:.3} | {:.3} | {:.3} |",
            ms(percentile(&latencies, 0.5)),
            ms(percentile(&latencies, 0.99))
        );
    }
    let started = Instant::now();
    let graph = AnnGraph::build(
        embedder.dimensions(),
        items.iter().map(|(seq, vector)| (*seq, QuantizedVector::of(vector))).collect::<Vec<_>>().into_iter(),
    );
    let build = started.elapsed().as_secs_f64();
    for breadth in [64, 128, 256, 512] {
        let (recall, latencies) =
            recall_of(&mut |vector| graph.search(vector, 10, breadth, None).into_iter().map(|(_, seq)| seq).collect());
        out!(
            "| graph (hnsw_rs, M {}, ef_construction {}), breadth {breadth} | {recall:.3} | {:.3} | {:.3} |",
            mneme_index::ann::MAX_CONNECTIONS,
            mneme_index::ann::EF_CONSTRUCTION,
            ms(percentile(&latencies, 0.5)),
            ms(percentile(&latencies, 0.99))
        );
    }
    out!("graph build, one insert at a time: {:.0} vectors/s", items.len() as f64 / build);
    Ok(())
}

/// The cosine of two unit vectors at full precision.
fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// Times `operation` `count` times, after a warm-up of a tenth as many.
fn measure(count: usize, mut operation: impl FnMut(usize)) -> Vec<Duration> {
    for index in 0..count / 10 {
        operation(index);
    }
    let mut latencies: Vec<Duration> = (0..count)
        .map(|index| {
            let started = Instant::now();
            operation(index);
            started.elapsed()
        })
        .collect();
    latencies.sort();
    latencies
}

pub(crate) fn percentile(sorted: &[Duration], quantile: f64) -> Duration {
    let index = ((sorted.len() as f64 * quantile).ceil() as usize).saturating_sub(1).min(sorted.len() - 1);
    sorted[index]
}

/// `mneme-tools bench phases`: how much the example trajectory's completed phases
/// shrink at each level, counted in cl100k_base tokens. Original tokens are
/// the phase's events as memory renders them.
pub fn phases() -> anyhow::Result<ExitCode> {
    let path = std::path::Path::new("examples/trajectory.jsonl");
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let limits = DecodeLimits::default();
    let events: Vec<mneme_events::Event> = text
        .lines()
        .map(|line| decode_json(line.as_bytes(), &limits).context("decoding the example trajectory"))
        .collect::<anyhow::Result<_>>()?;
    out!("{}", crate::bench::machine_description());
    out!("command: mneme-tools bench phases (examples/trajectory.jsonl, {} events)", events.len());
    out!("");
    out!("| agent | phase | events | original | findings | summary | compressed | index | original / findings |");
    out!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut totals = [0usize; 5];
    let mut ratios = Vec::new();
    for agent in ["planner", "coder", "reviewer"] {
        let mut memory = AgentMemory::new("demo", agent, mneme_projections::MemoryConfig::default())?;
        for (index, event) in events.iter().enumerate().filter(|(_, event)| event.agent == agent) {
            memory.apply(index as u64 + 1, event)?;
        }
        for phase in memory.phases().phases().iter().filter(|phase| phase.is_completed()) {
            let levels = phase.levels.as_ref().expect("completed phases have levels");
            let original = phase.notes.item_tokens as usize;
            let counts = [
                original,
                tokens::count(&levels.findings),
                tokens::count(&levels.summary),
                tokens::count(&levels.compressed),
                tokens::count(&levels.index),
            ];
            for (total, count) in totals.iter_mut().zip(counts) {
                *total += count;
            }
            let ratio = counts[0] as f64 / counts[1].max(1) as f64;
            ratios.push(ratio);
            out!(
                "| {agent} | {} | {} | {} | {} | {} | {} | {} | {ratio:.1}× |",
                phase.name,
                phase.event_seqs.len(),
                counts[0],
                counts[1],
                counts[2],
                counts[3],
                counts[4]
            );
        }
    }
    let ratio = |level: usize| totals[0] as f64 / totals[level].max(1) as f64;
    out!(
        "| all | {} phases | | {} | {} | {} | {} | {} | {:.1}× |",
        ratios.len(),
        totals[0],
        totals[1],
        totals[2],
        totals[3],
        totals[4],
        ratio(1)
    );
    out!("");
    out!(
        "original / level, all phases: findings {:.1}×, summary {:.1}×, compressed {:.1}×, index {:.1}×",
        ratio(1),
        ratio(2),
        ratio(3),
        ratio(4)
    );
    Ok(ExitCode::SUCCESS)
}
