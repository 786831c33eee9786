//! Embedders on the real all-MiniLM-L6-v2 model: MiniLM itself, a static
//! model distilled from it (on a vocabulary subset, to stay fast), the fast
//! tokenizer against the Hugging Face one, and the model-free fallback.
//!
//! The model files come from `scripts/fetch-model.sh` into `<repo>/models/`;
//! without them these tests fail with that instruction, they never skip.

use std::path::PathBuf;
use std::sync::OnceLock;

use mneme_index::embed::{
    DistillOptions, Embedder, HashedNgramEmbedder, MiniLmEmbedder, StaticEmbedder, StaticModelFiles,
    VocabularySelection, cosine, distill_static_model,
};

const MINILM_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/all-MiniLM-L6-v2");

fn read_model_file(name: &str) -> Vec<u8> {
    let path = PathBuf::from(MINILM_DIR).join(name);
    std::fs::read(&path).unwrap_or_else(|error| {
        panic!("cannot read {} ({error}): run scripts/fetch-model.sh to download all-MiniLM-L6-v2", path.display())
    })
}

type Loader = fn(&[u8], &[u8], &[u8]) -> Result<MiniLmEmbedder, mneme_index::IndexError>;

fn load_minilm(load: Loader) -> MiniLmEmbedder {
    let files = ["model.safetensors", "tokenizer.json", "config.json"].map(read_model_file);
    load(&files[0], &files[1], &files[2]).expect("all-MiniLM-L6-v2 loads")
}

/// all-MiniLM-L6-v2 on candle's `BertModel`.
fn minilm() -> &'static MiniLmEmbedder {
    static MODEL: OnceLock<MiniLmEmbedder> = OnceLock::new();
    MODEL.get_or_init(|| load_minilm(MiniLmEmbedder::from_bytes))
}

/// all-MiniLM-L6-v2 on the lean forward pass (`bert.rs`).
fn lean_minilm() -> &'static MiniLmEmbedder {
    static MODEL: OnceLock<MiniLmEmbedder> = OnceLock::new();
    MODEL.get_or_init(|| load_minilm(MiniLmEmbedder::lean_from_bytes))
}

/// Sentences about the same things the paraphrase tests use, so that the
/// subset model has vectors for their words.
const SUBSET_CORPUS: &[&str] = &[
    "the login session dies after fifteen minutes",
    "users get signed out once the access token expires",
    "the database migration finished",
    "the build fails because a dependency is missing",
    "compilation breaks: a required package cannot be found",
    "schedule the weekly report for monday morning",
];

fn subset_options() -> DistillOptions {
    let tokenizer = minilm().tokenizer();
    let mut tokens: Vec<String> = Vec::new();
    for sentence in SUBSET_CORPUS {
        let encoding = tokenizer.encode(*sentence, false).expect("tokenizes");
        tokens.extend(encoding.get_tokens().iter().cloned());
    }
    // A few hundred common tokens besides, so the PCA has enough samples.
    let common: Vec<String> = (1996..2296).filter_map(|id| tokenizer.id_to_token(id)).collect();
    tokens.extend(common);
    tokens.sort();
    tokens.dedup();
    DistillOptions {
        dimensions: 64,
        batch_size: 64,
        vocabulary: VocabularySelection::Tokens(tokens),
        ..Default::default()
    }
}

fn subset_model_files() -> &'static StaticModelFiles {
    static FILES: OnceLock<StaticModelFiles> = OnceLock::new();
    FILES.get_or_init(|| distill_static_model(minilm(), &subset_options()).expect("subset distillation"))
}

fn subset_model() -> &'static StaticEmbedder {
    static MODEL: OnceLock<StaticEmbedder> = OnceLock::new();
    MODEL.get_or_init(|| {
        let files = subset_model_files();
        StaticEmbedder::from_bytes(&files.embeddings_safetensors, &files.tokenizer_json).expect("static model loads")
    })
}

fn assert_unit(vector: &[f32]) {
    let norm = vector.iter().map(|value| value * value).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
}

/// For each (query, paraphrase) pair, whether the paraphrase is the nearest
/// of all candidates (every paraphrase plus the distractors) to the query.
fn paraphrase_top1(embedder: &dyn Embedder, pairs: &[(&str, &str)], distractors: &[&str]) -> usize {
    let candidates: Vec<&str> =
        pairs.iter().map(|(_, paraphrase)| *paraphrase).chain(distractors.iter().copied()).collect();
    let candidate_vectors = embedder.embed_batch(&candidates);
    pairs
        .iter()
        .enumerate()
        .filter(|(index, (query, _))| {
            let query = embedder.embed(query);
            let best = candidate_vectors
                .iter()
                .enumerate()
                .max_by(|(_, a), (_, b)| cosine(&query, a).total_cmp(&cosine(&query, b)))
                .map(|(best, _)| best);
            best == Some(*index)
        })
        .count()
}

const PARAPHRASES: &[(&str, &str)] = &[
    ("the login session dies after fifteen minutes", "users get signed out once the access token expires"),
    ("the build fails because a dependency is missing", "compilation breaks: a required package cannot be found"),
    ("schedule the weekly report for monday morning", "plan the weekly summary to go out at the start of the week"),
    ("the server ran out of memory and crashed", "the process was killed after exhausting its RAM"),
];
const DISTRACTORS: &[&str] = &["the database migration finished", "she bought fresh bread at the bakery"];

#[test]
fn minilm_gives_unit_vectors_of_384_dimensions() {
    let model = minilm();
    assert_eq!(model.dimensions(), 384);
    assert!(model.model_id().starts_with("all-minilm-l6-v2@sha256:53aa51172d142c89"), "{}", model.model_id());
    for text in ["hello world", "cargo test fails with a panic in the tokenizer", "ünïcödé, 東京 and emoji 🚀"]
    {
        let vector = model.embed(text);
        assert_eq!(vector.len(), 384);
        assert_unit(&vector);
    }
    assert!(model.embed("").iter().all(|value| *value == 0.0));
    assert!(model.embed(" \n\t ").iter().all(|value| *value == 0.0));
}

/// The similarity matrix the sentence-transformers documentation prints for
/// these sentences with all-MiniLM-L6-v2 (to 4 decimals): tokenizer, encoder,
/// pooling and normalisation together match the reference implementation.
#[test]
fn minilm_reproduces_the_sentence_transformers_reference_similarities() {
    let model = minilm();
    let vectors =
        model.embed_batch(&["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]);
    let expected = [[1.0, 0.6660, 0.1046], [0.6660, 1.0, 0.1411], [0.1046, 0.1411, 1.0]];
    for (row, expected_row) in expected.iter().enumerate() {
        for (column, expected) in expected_row.iter().enumerate() {
            let similarity = cosine(&vectors[row], &vectors[column]);
            assert!(
                (similarity - expected).abs() < 1e-3,
                "similarity[{row}][{column}] = {similarity:.4}, expected {expected}"
            );
        }
    }
}

#[test]
fn minilm_ranks_paraphrases_above_unrelated_sentences() {
    let model = minilm();
    let query = model.embed("the login session dies after fifteen minutes");
    let paraphrase = model.embed("users get signed out once the access token expires");
    let unrelated = model.embed("the database migration finished");
    assert!(
        cosine(&query, &paraphrase) > cosine(&query, &unrelated) + 0.1,
        "paraphrase {} vs unrelated {}",
        cosine(&query, &paraphrase),
        cosine(&query, &unrelated)
    );
    assert_eq!(paraphrase_top1(model, PARAPHRASES, DISTRACTORS), PARAPHRASES.len());
}

/// The lean forward is candle's `BertModel` with fused operations: the
/// same vectors to within float rounding, on texts of every length up to
/// the model's 256 word pieces.
#[test]
fn the_lean_forward_gives_the_stock_forward_s_vectors() {
    let mut texts: Vec<String> = SUBSET_CORPUS.iter().map(|text| text.to_string()).collect();
    texts.push("ok".into());
    texts.push("TokenExpiredError at src/auth/token.rs:42 in refresh_access_token()".into());
    texts.push(SUBSET_CORPUS.join(", and then ").repeat(8));
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let (stock, lean) = (minilm().embed_batch(&texts), lean_minilm().embed_batch(&texts));
    for ((text, stock), lean) in texts.iter().zip(&stock).zip(&lean) {
        let largest = stock.iter().zip(lean).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        assert!(largest < 1e-5, "{text:?}: the vectors differ by up to {largest}");
        assert!(cosine(stock, lean) > 0.99999, "{text:?}");
    }
    assert_eq!(lean_minilm().model_id(), minilm().model_id());
}

#[test]
fn minilm_vectors_do_not_depend_on_the_batch() {
    for model in [minilm(), lean_minilm()] {
        vectors_do_not_depend_on_the_batch(model);
    }
}

fn vectors_do_not_depend_on_the_batch(model: &MiniLmEmbedder) {
    // Texts of different and of equal token lengths, and an empty one: a
    // replay that batches differently must rebuild the same vectors, bit for bit.
    let texts = [
        "short",
        "",
        "a considerably longer sentence about tokenizers, padding and attention masks",
        "the planner handed the task to the coder",
        "the coder handed the review to the planner",
        "retry the request",
        "ok",
    ];
    let batch = model.embed_batch(&texts);
    assert_eq!(batch.len(), texts.len());
    for (text, batched) in texts.iter().zip(&batch) {
        assert_eq!(&model.embed(text), batched, "{text:?} depends on its batch");
    }
    let reversed: Vec<&str> = texts.iter().rev().copied().collect();
    let reversed_batch = model.embed_batch(&reversed);
    assert!(batch.iter().eq(reversed_batch.iter().rev()));
    assert!(batch[1].iter().all(|value| *value == 0.0));
}

#[test]
fn distilled_subset_model_gives_unit_vectors_deterministically() {
    let files = subset_model_files();
    let model = subset_model();
    assert_eq!(model.dimensions(), 64);
    assert_eq!(&files.model_id, model.model_id());
    assert!(model.model_id().starts_with("static-minilm-l6-64@sha256:"), "{}", model.model_id());
    assert_eq!(model.source_model(), minilm().model_id());
    assert_eq!(model.vocabulary_size(), 30522);

    // Only the subset's tokens have vectors: embed texts made of them.
    for text in SUBSET_CORPUS.iter().chain(["The DATABASE: migration, finished!"].iter()) {
        assert_unit(&model.embed(text));
    }
    assert!(model.embed("").iter().all(|value| *value == 0.0));
    // Special tokens have zero rows, so they add nothing.
    assert!(model.embed("[CLS] [SEP]").iter().all(|value| *value == 0.0));
    assert_eq!(model.embed("the database migration finished"), model.embed("the database migration finished"));

    let again = distill_static_model(minilm(), &subset_options()).expect("second distillation");
    assert_eq!(again.model_id, files.model_id);
    assert!(again.embeddings_safetensors == files.embeddings_safetensors, "distillation is not deterministic");
}

#[test]
fn distilled_subset_model_still_separates_meaning() {
    let model = subset_model();
    let query = model.embed("the login session dies after fifteen minutes");
    let paraphrase = model.embed("users get signed out once the access token expires");
    let unrelated = model.embed("the database migration finished");
    assert!(cosine(&query, &paraphrase) > cosine(&query, &unrelated));
}

#[test]
fn static_model_refuses_a_foreign_tokenizer_and_garbage() {
    let files = subset_model_files();
    let mut other_tokenizer = files.tokenizer_json.clone();
    other_tokenizer.push(b'\n');
    assert!(StaticEmbedder::from_bytes(&files.embeddings_safetensors, &other_tokenizer).is_err());
    assert!(StaticEmbedder::from_bytes(b"not a safetensors file", &files.tokenizer_json).is_err());
    let truncated = &files.embeddings_safetensors[..files.embeddings_safetensors.len() - 4];
    assert!(StaticEmbedder::from_bytes(truncated, &files.tokenizer_json).is_err());
}

#[test]
fn fast_tokenizer_matches_the_hugging_face_tokenizer() {
    let model = subset_model();
    assert!(model.has_fast_tokenizer());
    let long_word = "x".repeat(101);
    let handwritten = [
        "",
        "Hello, World!",
        "  leading and trailing whitespace\t\n",
        "fn parse_bert_config(config_json: &[u8]) -> Result<Config, ProjectionError> {",
        "std::collections::HashMap<String, Vec<u32>>::new()",
        "/usr/local/lib/python3.11/site-packages/torch/__init__.py:123",
        "C:\\Users\\agent\\AppData\\Local\\Temp\\build-7f3a.log",
        "https://example.com/api/v1/events?agent=planner&limit=50#top",
        "camelCaseIdentifier and SCREAMING_SNAKE_CASE and kebab-case-name",
        "error[E0277]: the trait bound `T: Send` is not satisfied",
        "version 0.11.1-rc.3+build.42, 3.14159, 1e-12, 0xDEADBEEF",
        "email: someone@example.org; cc: other.person+tag@example.co.uk",
        "tabs\tand\nnew\r\nlines, and a bell\u{7} in the middle of wo\u{1}rd",
        "unbelievably antidisestablishmentarianism supercalifragilisticexpialidocious",
        "$HOME ~/.cargo/registry `backticks` 'quotes' \"double\" {braces} [brackets] <angle> |pipe| ^caret^",
        "[CLS] special tokens [SEP] in text [MASK] and [unk] and [pad]",
        "[brackets] that are not special [CLS",
        long_word.as_str(),
        "naïve café résumé — “curly quotes” and ellipsis…",
        "東京 and 北京 are cities; ünïcödé; emoji 🚀🔥; Ελληνικά; русский текст",
        "zero\u{200b}width and non\u{a0}breaking spaces",
    ];
    for text in handwritten {
        assert_eq!(
            model.token_ids(text),
            model.reference_token_ids(text).expect("reference tokenization"),
            "token ids differ for {text:?}"
        );
    }

    // Generated text: letters of every case, digits, all ASCII punctuation,
    // whitespace and control characters, in words of every length; half of
    // the texts also get non-ASCII characters that normalisation changes,
    // removes or splits at (accents, combining marks, Unicode spaces and
    // controls, CJK, emoji, case mappings that change length).
    let non_ascii = [
        "é", "Ü", "ß", "İ", "\u{212a}", "ﬁ", "\u{301}", "\u{a0}", "\u{3000}", "\u{200b}", "\u{85}", "\u{fffd}", "—",
        "’", "“", "…", "¿", "€", "Ω", "東", "京", "🚀", "ǅ", "ा",
    ];
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for round in 0..6000 {
        let length = (next() % 120) as usize;
        let mut text = String::new();
        for _ in 0..length {
            let roll = next() % 100;
            if roll < 70 {
                // Mostly letters, so that real word pieces occur.
                text.push(char::from(b"etaoinshrdlucmfwypvbgkjqxzETAOIN "[(next() % 32) as usize]));
            } else if round % 2 == 1 && roll < 75 {
                text.push_str(non_ascii[(next() % non_ascii.len() as u64) as usize]);
            } else {
                text.push(char::from((next() % 128) as u8));
            }
        }
        assert_eq!(
            model.token_ids(&text),
            model.reference_token_ids(&text).expect("reference tokenization"),
            "token ids differ for {text:?}"
        );
    }
}

#[test]
fn hashed_fallback_needs_no_model() {
    let embedder = HashedNgramEmbedder::default();
    let query = embedder.embed("token refresh failure");
    assert_eq!(query.len(), 256);
    assert_unit(&query);
    let related = embedder.embed("the token refresh failed again");
    let unrelated = embedder.embed("database migration of the ledger");
    assert!(cosine(&query, &related) > cosine(&query, &unrelated));
}
