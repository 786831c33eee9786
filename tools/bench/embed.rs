//! `mneme-tools bench embed`: the deep tier's models in process. The 8-bit
//! all-MiniLM-L6-v2 on ONNX Runtime (the default deep model) and the float
//! one on Mneme's lean forward pass, against the same float model on
//! candle's `BertModel` (the bare library, the baseline) and the static
//! model distilled from it.
//! One query at a time, by length in word pieces (p50/p99: the deep tier's
//! query embedding must stay within 15 ms at p99), also while an enricher
//! embeds batches on another thread, as in a running server; and batches of
//! item texts by length (word pieces per second: what an enricher can keep
//! up with). Word pieces are counted by the model's own tokenizer, [CLS] and
//! [SEP] included.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use mneme_actors::SwarmConfig;
use mneme_index::embed::{Embedder, MiniLmEmbedder};

use crate::bench::WordStream;
use crate::bench::search::percentile;

/// Query lengths, in word pieces: a keyword, a phrase, a question.
const QUERY_LENGTHS: [usize; 3] = [8, 16, 32];
/// Item lengths, in word pieces: a chat turn, a message, a tool result, a
/// long one (the model truncates at 256).
const ITEM_LENGTHS: [usize; 4] = [16, 64, 128, 256];
/// Texts per batch of items, as an enricher would hand the model.
const BATCH: usize = 32;
/// Batches per item length.
const BATCHES: usize = 4;

pub fn run(queries: usize) -> anyhow::Result<ExitCode> {
    let config = SwarmConfig::with_name("bench");
    let section = &config.embedder;
    let directory =
        mneme::model::find_model(section.minilm_dir.as_deref(), mneme::model::MINILM_NAME, &mneme::model::MINILM_FILES)
            .map_err(|places| anyhow::anyhow!("no all-MiniLM-L6-v2 in {places:?}: run scripts/fetch-model.sh"))?;
    let int8_directory = mneme::model::find_model(
        config.enrichment.minilm_int8_dir.as_deref(),
        mneme::model::MINILM_INT8_NAME,
        &mneme::model::MINILM_INT8_FILES,
    )
    .map_err(|places| anyhow::anyhow!("no 8-bit all-MiniLM-L6-v2 in {places:?}: run scripts/fetch-deep-model.sh"))?;
    let stock = mneme::model::load_minilm(&directory)?;
    let lean = mneme::model::load_lean_minilm(&directory)?;
    let int8 = mneme::model::load_int8_minilm(&int8_directory, 1)?;
    let int8_two = mneme::model::load_int8_minilm(&int8_directory, 2)?;
    let fast = mneme::model::load_embedder(mneme::model::EmbedderChoice::Static, section)
        .context("the static model, the baseline")?;
    out!("{}", crate::bench::machine_description());
    out!("command: mneme-tools bench embed --queries {queries}");
    out!(
        "int8: {}; float: {} (lean forward; stock: candle's BertModel); static: {}; candle threads: {} \
         (RAYON_NUM_THREADS); ONNX Runtime: one thread per session, queries on a session of their own",
        int8.model_id(),
        lean.model_id(),
        fast.model_id(),
        std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "all cores".to_string())
    );
    let models: [(&str, &dyn Embedder); 4] =
        [("int8 (ONNX Runtime)", &int8), ("float, lean", &lean), ("float, stock", &stock), ("static", &*fast)];
    out!("");
    out!("| one query of | {} |", models.map(|(name, _)| format!("{name} p50 / p99 (ms)")).join(" | "));
    out!("|---|{}", "---:|".repeat(models.len()));
    let mut words = WordStream::default();
    for length in QUERY_LENGTHS {
        let texts: Vec<String> = (0..queries).map(|_| text_of(&lean, &mut words, length)).collect();
        let cells = models.map(|(_, model)| {
            let latencies = latencies(&texts, |text| drop(model.embed(text)));
            format!("{:.2} / {:.2}", millis(percentile(&latencies, 0.5)), millis(percentile(&latencies, 0.99)))
        });
        out!("| {length} word pieces | {} |", cells.join(" | "));
    }

    // The int8 model's questions while its enricher lane embeds tool
    // outputs on another thread, without pause, as a busy server does.
    out!("");
    out!("| one int8 query of, while the enricher embeds | p50 (ms) | p99 (ms) |");
    out!("|---|---:|---:|");
    let busy: Vec<String> = (0..BATCH).map(|_| text_of(&lean, &mut words, 128)).collect();
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let busy: Vec<&str> = busy.iter().map(String::as_str).collect();
            while !stop.load(Ordering::Relaxed) {
                drop(int8.embed_batch(&busy[..4]));
            }
        });
        for length in QUERY_LENGTHS {
            let texts: Vec<String> = (0..queries).map(|_| text_of(&lean, &mut words, length)).collect();
            let latencies = latencies(&texts, |text| drop(int8.embed(text)));
            out!(
                "| {length} word pieces | {:.2} | {:.2} |",
                millis(percentile(&latencies, 0.5)),
                millis(percentile(&latencies, 0.99))
            );
        }
        stop.store(true, Ordering::Relaxed);
    });

    out!("");
    let batched: [(&str, &dyn Embedder); 5] = [
        ("int8, 1 thread", &int8),
        ("int8, 2 threads", &int8_two),
        ("float, lean", &lean),
        ("float, stock", &stock),
        ("static", &*fast),
    ];
    out!(
        "| batches of {BATCH} items of | {} | int8 1 thread / stock |",
        batched.map(|(name, _)| format!("{name}: word pieces/s (texts/s)")).join(" | ")
    );
    out!("|---|{}---:|", "---:|".repeat(batched.len()));
    for length in ITEM_LENGTHS {
        let texts: Vec<String> = (0..BATCH * BATCHES).map(|_| text_of(&lean, &mut words, length)).collect();
        let pieces: usize = texts.iter().map(|text| word_pieces(&lean, text)).sum();
        let times = batched.map(|(_, model)| seconds(&texts, |batch| drop(model.embed_batch(batch))));
        let cells =
            times.map(|seconds| format!("{:.0} ({:.1})", pieces as f64 / seconds, texts.len() as f64 / seconds));
        out!("| {length} word pieces | {} | {:.2}x |", cells.join(" | "), times[3] / times[0]);
    }
    Ok(ExitCode::SUCCESS)
}

/// A text of `length` word pieces (or the closest below), of the bench's
/// words. The tokenizer truncates at the model's 256: a text that stops
/// growing is as long as the model reads.
fn text_of(model: &MiniLmEmbedder, words: &mut WordStream, length: usize) -> String {
    let (mut text, mut pieces) = (String::new(), 0);
    loop {
        let mut longer = text.clone();
        if !longer.is_empty() {
            longer.push(' ');
        }
        longer.push_str(words.next_word());
        let longer_pieces = word_pieces(model, &longer);
        if longer_pieces > length || longer_pieces == pieces {
            return text;
        }
        (text, pieces) = (longer, longer_pieces);
    }
}

fn word_pieces(model: &MiniLmEmbedder, text: &str) -> usize {
    model.tokenizer().encode(text, true).map_or(0, |encoding| encoding.get_ids().len())
}

fn latencies(texts: &[String], embed: impl Fn(&str)) -> Vec<Duration> {
    // One untimed call first: the first forward allocates.
    embed(&texts[0]);
    let mut latencies: Vec<Duration> = texts
        .iter()
        .map(|text| {
            let started = Instant::now();
            embed(text);
            started.elapsed()
        })
        .collect();
    latencies.sort();
    latencies
}

fn seconds(texts: &[String], embed: impl Fn(&[&str])) -> f64 {
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    embed(&texts[..1]);
    let started = Instant::now();
    for batch in texts.chunks(BATCH) {
        embed(batch);
    }
    started.elapsed().as_secs_f64()
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
