//! `mneme-tools bench embed`: the deep model (all-MiniLM-L6-v2, the full
//! transformer) on Mneme's lean forward pass against the same model on
//! candle's `BertModel` (the bare library, the baseline) and against the
//! static model distilled from it, in process.
//! One query at a time, by length in word pieces (p50/p99: the deep tier's
//! query embedding must stay within 15 ms at p99), and batches of item texts
//! by length (word pieces per second: what an enricher can keep up with).
//! Word pieces are counted by the model's own tokenizer, [CLS] and [SEP]
//! included.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use mneme_actors::SwarmConfig;
use mneme_index::embed::{Embedder, MiniLmEmbedder};

use crate::bench::WordStream;
use crate::bench::search::percentile;

/// Query lengths, in word pieces: a keyword, a phrase, a question.
const QUERY_LENGTHS: [usize; 3] = [8, 16, 32];
/// Item lengths, in word pieces: a message, a tool result, a long one (the
/// model truncates at 256).
const ITEM_LENGTHS: [usize; 3] = [64, 128, 256];
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
    let stock = mneme::model::load_minilm(&directory)?;
    let deep = mneme::model::load_lean_minilm(&directory)?;
    let fast = mneme::model::load_embedder(mneme::model::EmbedderChoice::Static, section)
        .context("the static model, the baseline")?;
    out!("{}", crate::bench::machine_description());
    out!("command: mneme-tools bench embed --queries {queries}");
    out!(
        "deep: {} (lean forward; stock: candle's BertModel); static: {}; compute threads: {} (RAYON_NUM_THREADS)",
        deep.model_id(),
        fast.model_id(),
        std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "all cores".to_string())
    );
    out!("");
    out!(
        "| one query of | deep p50 (ms) | deep p99 (ms) | stock p50 (ms) | stock p99 (ms) | deep / stock (p50) | static p50 (ms) |"
    );
    out!("|---|---:|---:|---:|---:|---:|---:|");
    let mut words = WordStream::default();
    for length in QUERY_LENGTHS {
        let texts: Vec<String> = (0..queries).map(|_| text_of(&deep, &mut words, length)).collect();
        let deep_latencies = latencies(&texts, |text| drop(deep.embed(text)));
        let stock_latencies = latencies(&texts, |text| drop(stock.embed(text)));
        let fast_latencies = latencies(&texts, |text| drop(fast.embed(text)));
        let (deep_p50, stock_p50) = (percentile(&deep_latencies, 0.5), percentile(&stock_latencies, 0.5));
        out!(
            "| {length} word pieces | {:.2} | {:.2} | {:.2} | {:.2} | {:.2}x | {:.3} |",
            millis(deep_p50),
            millis(percentile(&deep_latencies, 0.99)),
            millis(stock_p50),
            millis(percentile(&stock_latencies, 0.99)),
            deep_p50.as_secs_f64() / stock_p50.as_secs_f64(),
            millis(percentile(&fast_latencies, 0.5)),
        );
    }
    out!("");
    out!(
        "| batches of {BATCH} items of | deep (word pieces/s) | stock (word pieces/s) | deep / stock | deep (texts/s) | static (texts/s) |"
    );
    out!("|---|---:|---:|---:|---:|---:|");
    for length in ITEM_LENGTHS {
        let texts: Vec<String> = (0..BATCH * BATCHES).map(|_| text_of(&deep, &mut words, length)).collect();
        let pieces: usize = texts.iter().map(|text| word_pieces(&deep, text)).sum();
        let deep_seconds = seconds(&texts, |batch| drop(deep.embed_batch(batch)));
        let stock_seconds = seconds(&texts, |batch| drop(stock.embed_batch(batch)));
        let fast_seconds = seconds(&texts, |batch| drop(fast.embed_batch(batch)));
        out!(
            "| {length} word pieces | {:.0} | {:.0} | {:.2}x | {:.1} | {:.0} |",
            pieces as f64 / deep_seconds,
            pieces as f64 / stock_seconds,
            stock_seconds / deep_seconds,
            texts.len() as f64 / deep_seconds,
            texts.len() as f64 / fast_seconds,
        );
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
