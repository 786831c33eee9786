//! The deep tier's 8-bit all-MiniLM-L6-v2 on ONNX Runtime, against the
//! float model it was quantised from.
//!
//! The files come from `scripts/fetch-deep-model.sh` into
//! `<repo>/models/all-MiniLM-L6-v2-int8/` (and the float model's from
//! `scripts/fetch-model.sh`); without them these tests fail with that
//! instruction, they never skip.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use mneme_index::embed::{Embedder, MiniLmEmbedder, OnnxMiniLmEmbedder, cosine};

const INT8_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/all-MiniLM-L6-v2-int8");
const FLOAT_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/all-MiniLM-L6-v2");

fn read(directory: &str, name: &str, script: &str) -> Vec<u8> {
    let path = PathBuf::from(directory).join(name);
    std::fs::read(&path).unwrap_or_else(|error| panic!("cannot read {} ({error}): run {script}", path.display()))
}

fn runtime() -> PathBuf {
    Path::new(INT8_DIR).join("libonnxruntime.so")
}

fn int8() -> &'static OnnxMiniLmEmbedder {
    static MODEL: OnceLock<OnnxMiniLmEmbedder> = OnceLock::new();
    MODEL.get_or_init(|| {
        let script = "scripts/fetch-deep-model.sh";
        let (model, tokenizer) = (read(INT8_DIR, "model.onnx", script), read(INT8_DIR, "tokenizer.json", script));
        OnnxMiniLmEmbedder::load(&model, &tokenizer, &runtime(), 2).expect("the 8-bit model loads")
    })
}

fn float() -> &'static MiniLmEmbedder {
    static MODEL: OnceLock<MiniLmEmbedder> = OnceLock::new();
    MODEL.get_or_init(|| {
        let files = ["model.safetensors", "tokenizer.json", "config.json"]
            .map(|name| read(FLOAT_DIR, name, "scripts/fetch-model.sh"));
        MiniLmEmbedder::lean_from_bytes(&files[0], &files[1], &files[2]).expect("all-MiniLM-L6-v2 loads")
    })
}

/// Texts of every length up to past the model's 256 word pieces: chat
/// turns, code, a stack trace, a long tool output.
fn texts() -> Vec<String> {
    let mut texts: Vec<String> = [
        "ok",
        "I joined the bouldering gym last week",
        "Which sport did she take up recently?",
        "the login session dies after fifteen minutes",
        "users get signed out once the access token expires",
        "TokenExpiredError at src/auth/token.rs:42 in refresh_access_token()",
        "fn parse_bert_config(config_json: &[u8]) -> Result<Config, IndexError> {",
        "ünïcödé, 東京 and emoji 🚀",
    ]
    .map(str::to_owned)
    .to_vec();
    texts.push("error[E0308]: mismatched types in the enricher's batch, expected Vec<f32>; ".repeat(6));
    texts.push("running 42 tests, test store::tests::roundtrip ... ok, test graph::walk ... FAILED; ".repeat(20));
    texts
}

#[test]
fn gives_unit_vectors_of_384_dimensions_and_names_its_weights() {
    let model = int8();
    assert_eq!(model.dimensions(), 384);
    assert!(model.model_id().starts_with("all-minilm-l6-v2-int8@sha256:bbc29756693277ea"), "{}", model.model_id());
    for text in texts() {
        let vector = model.embed(&text);
        assert_eq!(vector.len(), 384);
        let norm = vector.iter().map(|value| value * value).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{text:?}: norm {norm}");
    }
    assert!(model.embed("").iter().all(|value| *value == 0.0));
    assert!(model.embed(" \n\t ").iter().all(|value| *value == 0.0));
}

/// 8 bits move the vectors a little (cosine to the float model's: 0.95 at
/// worst, 0.98 on average), not the meaning.
#[test]
fn stays_close_to_the_float_model() {
    let texts = texts();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let (quantised, reference) = (int8().embed_batch(&texts), float().embed_batch(&texts));
    let similarities: Vec<f32> = quantised.iter().zip(&reference).map(|(a, b)| cosine(a, b)).collect();
    for (text, similarity) in texts.iter().zip(&similarities) {
        assert!(*similarity > 0.95, "{text:?}: cosine to the float model {similarity}");
    }
    let mean = similarities.iter().sum::<f32>() / similarities.len() as f32;
    assert!(mean > 0.98, "mean cosine to the float model {mean}: {similarities:?}");
}

/// The similarity matrix the sentence-transformers documentation prints for
/// all-MiniLM-L6-v2, to within what 8 bits move.
#[test]
fn keeps_the_reference_similarities() {
    let vectors =
        int8().embed_batch(&["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]);
    let expected = [[1.0, 0.6660, 0.1046], [0.6660, 1.0, 0.1411], [0.1046, 0.1411, 1.0]];
    for (row, expected_row) in expected.iter().enumerate() {
        for (column, expected) in expected_row.iter().enumerate() {
            let similarity = cosine(&vectors[row], &vectors[column]);
            assert!(
                (similarity - expected).abs() < 0.03,
                "similarity[{row}][{column}] = {similarity:.4}, expected {expected}"
            );
        }
    }
    let model = int8();
    let query = model.embed("the login session dies after fifteen minutes");
    let paraphrase = model.embed("users get signed out once the access token expires");
    let unrelated = model.embed("the database migration finished");
    let (near, far) = (cosine(&query, &paraphrase), cosine(&query, &unrelated));
    assert!(near > far + 0.1, "paraphrase {near} vs unrelated {far}");
}

/// Each text runs alone: its vector is the same, bit for bit, whether it is
/// embedded as a question or within any batch, in any order, on any of the
/// batch sessions (the model here has two).
#[test]
fn vectors_do_not_depend_on_the_batch() {
    let model = int8();
    let texts = texts();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let batch = model.embed_batch(&texts);
    for (text, batched) in texts.iter().zip(&batch) {
        assert_eq!(&model.embed(text), batched, "{text:?} depends on its batch");
    }
    let reversed: Vec<&str> = texts.iter().rev().copied().collect();
    assert!(batch.iter().eq(model.embed_batch(&reversed).iter().rev()));
    assert_eq!(model.embed_batch(&[]), Vec::<Vec<f32>>::new());
}

#[test]
fn refuses_what_it_cannot_run() {
    let tokenizer = read(INT8_DIR, "tokenizer.json", "scripts/fetch-deep-model.sh");
    let error = OnnxMiniLmEmbedder::load(b"not an onnx graph", &tokenizer, &runtime(), 1)
        .err()
        .expect("garbage is refused")
        .to_string();
    assert!(error.contains("model.onnx"), "{error}");
    let model = read(INT8_DIR, "model.onnx", "scripts/fetch-deep-model.sh");
    let error = OnnxMiniLmEmbedder::load(&model, b"{}", &runtime(), 1).err().expect("a bad tokenizer is refused");
    assert!(error.to_string().contains("tokenizer.json"), "{error}");
    let elsewhere = Path::new(INT8_DIR).join("no-such-libonnxruntime.so");
    let error = OnnxMiniLmEmbedder::load(&model, &tokenizer, &elsewhere, 1).err().expect("a second runtime is refused");
    assert!(error.to_string().contains("no-such-libonnxruntime.so"), "{error}");
}
