//! MinHash signatures of content terms, and the LSH banding over them that
//! finds the pairs worth checking among many texts without comparing every
//! pair.

use super::terms::ContentTerms;

/// Values in a [`MinHashSignature`]: [`LSH_BANDS`] bands of
/// [`LSH_ROWS_PER_BAND`] rows.
pub const SIGNATURE_LEN: usize = LSH_BANDS * LSH_ROWS_PER_BAND;

/// Bands of the LSH banding in [`candidate_pairs`].
///
/// Two texts of Jaccard s share one band with probability s^4, so they
/// become a candidate with probability 1 - (1 - s^4)^32: 0.9882 at s = 0.6
/// (the [`LEXICAL_MIN_JACCARD`](super::LEXICAL_MIN_JACCARD) threshold),
/// 0.9998 at 0.7, 0.873 at 0.5, 0.56 at 0.4, 0.23 at 0.3 and 0.05 at 0.2.
/// Sixty-four values could not do both: 16 bands of 4 rows find only 0.89
/// of pairs at 0.6, and 21 bands of 3 rows make 0.44 of the pairs at 0.3
/// candidates.
pub const LSH_BANDS: usize = 32;

/// Rows (signature values) per band; see [`LSH_BANDS`].
pub const LSH_ROWS_PER_BAND: usize = 4;

/// A bucket (texts sharing a band) larger than this is not paired
/// all-to-all; see [`OVERSIZED_BUCKET_NEIGHBOURS`].
pub const MAX_BUCKET: usize = 64;

/// In a bucket larger than [`MAX_BUCKET`], each member is paired only with
/// this many members that follow it in key order, and with this many of the
/// bucket's first members.
///
/// Such buckets come from many copies of one text (a status line repeated
/// all day) or from texts with a single common term. Pairing every member
/// would be quadratic; neighbours and first members are linear. Neighbours
/// in key (log) order are the likeliest repeats of one another; the first
/// members give every copy of a repeated text a pair with its oldest copy,
/// so that a merge, which groups duplicates as a star around one survivor,
/// folds all the copies into it in one run.
pub const OVERSIZED_BUCKET_NEIGHBOURS: usize = 4;

/// A MinHash signature of a text's content words, numbers and code tokens:
/// for each of [`SIGNATURE_LEN`] fixed hash functions, the least hash of any
/// term. Two signatures agree at a position with probability equal to the
/// Jaccard similarity of the two term sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MinHashSignature(pub [u64; SIGNATURE_LEN]);

impl MinHashSignature {
    /// The share of positions where two signatures agree: an estimate of
    /// the Jaccard similarity of their terms, with a standard deviation of
    /// at most 0.045 at 128 values.
    pub fn estimated_jaccard(&self, other: &MinHashSignature) -> f64 {
        let agreeing = self.0.iter().zip(other.0.iter()).filter(|(one, another)| one == another).count();
        agreeing as f64 / SIGNATURE_LEN as f64
    }
}

/// The hash functions of the signature, `hash * multiplier + addend`
/// modulo 2^64 over an already mixed term hash (the multiply-add-shift
/// family: the high bits that decide the minimum depend on every bit of the
/// input). One multiplication each rather than a full mix, because there are
/// 128 of them per term. Drawn once from splitmix64 with a fixed seed, at
/// compile time; multipliers are odd.
const PERMUTATIONS: [(u64, u64); SIGNATURE_LEN] = permutations();

const fn permutations() -> [(u64, u64); SIGNATURE_LEN] {
    let mut permutations = [(0, 0); SIGNATURE_LEN];
    // "mneme-lx" in ASCII: any fixed value would do.
    let mut state: u64 = 0x6d6e_656d_652d_6c78;
    let mut index = 0;
    while index < SIGNATURE_LEN {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let multiplier = mix64(state) | 1;
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        permutations[index] = (multiplier, mix64(state));
        index += 1;
    }
    permutations
}

/// The splitmix64 finaliser: every input bit moves every output bit.
const fn mix64(mut value: u64) -> u64 {
    value = (value ^ (value >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    value = (value ^ (value >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    value ^ (value >> 31)
}

/// FNV-1a over a kind tag and the term's bytes, mixed: the tag keeps a word
/// and a code token with the same letters apart.
fn term_hash(kind_tag: u8, term: &str) -> u64 {
    const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = (FNV_OFFSET_BASIS ^ u64::from(kind_tag)).wrapping_mul(FNV_PRIME);
    for byte in term.bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(FNV_PRIME);
    }
    mix64(hash)
}

/// The MinHash signature of a text's terms. A text without terms gets
/// `u64::MAX` everywhere, so all such texts share every band.
pub fn minhash(terms: &ContentTerms) -> MinHashSignature {
    let mut signature = [u64::MAX; SIGNATURE_LEN];
    let tagged_terms = (terms.words.iter().map(|word| (b'w', word)))
        .chain(terms.numbers.iter().map(|number| (b'n', number)))
        .chain(terms.code_tokens.iter().map(|code_token| (b'c', code_token)));
    for (kind_tag, term) in tagged_terms {
        let hash = term_hash(kind_tag, term);
        for (least, (multiplier, addend)) in signature.iter_mut().zip(PERMUTATIONS.iter()) {
            *least = (*least).min(hash.wrapping_mul(*multiplier).wrapping_add(*addend));
        }
    }
    MinHashSignature(signature)
}

/// Candidate near-duplicate pairs by LSH banding: two keys are paired when
/// their signatures agree on all [`LSH_ROWS_PER_BAND`] rows of one of the
/// [`LSH_BANDS`] bands (or, with probability 2^-64, their band hashes collide) (see there for the probabilities). Buckets larger
/// than [`MAX_BUCKET`] pair each member with its next
/// [`OVERSIZED_BUCKET_NEIGHBOURS`] in key order only, so the work is
/// O(n log n) per band whatever the input. Each pair comes once as
/// (smaller key, larger key); the list is sorted and free of duplicates and
/// does not depend on the order of `signatures`.
pub fn candidate_pairs<S: std::borrow::Borrow<MinHashSignature>>(signatures: &[(u64, S)]) -> Vec<(u64, u64)> {
    let mut pairs = Vec::new();
    // Pairs found in several bands are collapsed whenever the list doubles,
    // so that its memory stays proportional to the distinct pairs.
    let mut collapse_at = signatures.len().max(1024) * 4;
    let mut band_members: Vec<(u64, u64)> = Vec::with_capacity(signatures.len());
    for band in 0..LSH_BANDS {
        band_members.clear();
        band_members.extend(signatures.iter().map(|(key, signature)| (band_hash(signature.borrow(), band), *key)));
        band_members.sort_unstable();
        for bucket in band_members.chunk_by(|one, other| one.0 == other.0) {
            pair_bucket_members(bucket, &mut pairs);
        }
        if pairs.len() > collapse_at {
            pairs.sort_unstable();
            pairs.dedup();
            collapse_at = collapse_at.max(pairs.len() * 2);
        }
    }
    pairs.sort_unstable();
    pairs.dedup();
    pairs
}

/// The rows of one band hashed to one value: sorting 16-byte entries
/// rather than 40-byte ones halves the time of [`candidate_pairs`]. Two
/// different bands collide with probability 2^-64, and a collision only
/// adds a candidate, which the caller checks anyway.
fn band_hash(signature: &MinHashSignature, band: usize) -> u64 {
    let first_row = band * LSH_ROWS_PER_BAND;
    signature.0[first_row..first_row + LSH_ROWS_PER_BAND].iter().fold(band as u64, |hash, value| mix64(hash ^ value))
}

/// Pairs the members of one bucket, which are sorted by key.
fn pair_bucket_members(bucket: &[(u64, u64)], pairs: &mut Vec<(u64, u64)>) {
    let reach = if bucket.len() > MAX_BUCKET { OVERSIZED_BUCKET_NEIGHBOURS } else { bucket.len() };
    for (index, (_, key)) in bucket.iter().enumerate() {
        for (_, later_key) in bucket[index + 1..].iter().take(reach) {
            if later_key != key {
                pairs.push((*key, *later_key));
            }
        }
        // Beyond the neighbours' reach, the bucket's first members too.
        let first_members = index.saturating_sub(reach).min(reach);
        for (_, first_key) in &bucket[..first_members] {
            if first_key != key {
                pairs.push((*first_key, *key));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::super::{content_terms, lexically_equivalent};
    use super::*;

    /// splitmix64 with a fixed seed: generated inputs are the same on every run.
    struct FixedRandom(u64);

    impl FixedRandom {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            mix64(self.0)
        }

        fn pick<'a>(&mut self, words: &[&'a str]) -> &'a str {
            words[(self.next() % words.len() as u64) as usize]
        }
    }

    #[test]
    fn minhash_estimates_jaccard_and_is_deterministic() {
        let words = |range: std::ops::Range<usize>| ContentTerms {
            words: {
                let mut words: Vec<String> = range.map(|index| format!("word{index}")).collect();
                words.sort();
                words
            },
            ..ContentTerms::default()
        };
        let mut total_error = 0.0;
        for trial in 0..20 {
            // 30 shared words, 10 of each own: Jaccard 30 / 50 = 0.6.
            let base = trial * 100;
            let mut a = words(base..base + 40);
            a.words.sort();
            let mut b = words(base + 10..base + 50);
            b.words.sort();
            let estimate = minhash(&a).estimated_jaccard(&minhash(&b));
            assert!((estimate - 0.6).abs() < 0.2, "trial {trial}: estimate {estimate}");
            total_error += estimate - 0.6;
        }
        assert!((total_error / 20.0).abs() < 0.05, "mean error {}", total_error / 20.0);
        // Short texts: 200 pairs of 8-word sets sharing 6 (Jaccard 0.6). The
        // estimates should scatter like a binomial: standard deviation
        // sqrt(0.6 * 0.4 / 128) = 0.043.
        let estimates: Vec<f64> = (0..200)
            .map(|trial| {
                let base = 10_000 + trial * 20;
                minhash(&words(base..base + 8)).estimated_jaccard(&minhash(&words(base + 2..base + 10)))
            })
            .collect();
        let mean = estimates.iter().sum::<f64>() / 200.0;
        let deviation = (estimates.iter().map(|estimate| (estimate - mean).powi(2)).sum::<f64>() / 200.0).sqrt();
        assert!((mean - 0.6).abs() < 0.02, "mean {mean}");
        assert!(deviation < 0.06, "standard deviation {deviation}");
        let terms = content_terms("the token refresh fix works in src/auth.rs since v2");
        assert_eq!(minhash(&terms), minhash(&terms.clone()));
        assert_eq!(minhash(&ContentTerms::default()).0, [u64::MAX; SIGNATURE_LEN]);
    }

    /// Distinct sentences from word lists: "the <subject> <verb> the
    /// <object> in the <place> after <count> attempts", each two-word phrase
    /// drawn word by word.
    fn generated_sentences(count: usize, seed: u64) -> Vec<String> {
        const SUBJECTS: [[&str; 16]; 2] = [
            [
                "billing", "search", "auth", "payment", "email", "image", "report", "cache", "session", "audit",
                "metrics", "token", "profile", "upload", "webhook", "invoice",
            ],
            [
                "worker",
                "indexer",
                "gateway",
                "ledger",
                "notifier",
                "resizer",
                "scheduler",
                "warmer",
                "broker",
                "trail",
                "collector",
                "minter",
                "store",
                "queue",
                "relay",
                "renderer",
            ],
        ];
        const VERBS: [&str; 16] = [
            "retried",
            "throttled",
            "archived",
            "rebuilt",
            "validated",
            "compressed",
            "replayed",
            "mirrored",
            "flagged",
            "rerouted",
            "quarantined",
            "batched",
            "signed",
            "hashed",
            "sampled",
            "tagged",
        ];
        const OBJECTS: [[&str; 16]; 2] = [
            [
                "refund", "nightly", "customer", "shipping", "tax", "avatar", "coupon", "ledger", "signup", "pricing",
                "loyalty", "partner", "vendor", "survey", "quota", "billing",
            ],
            [
                "request",
                "export",
                "record",
                "label",
                "report",
                "thumbnail",
                "batch",
                "entry",
                "form",
                "table",
                "ticket",
                "digest",
                "manifest",
                "snapshot",
                "bundle",
                "receipt",
            ],
        ];
        const PLACES: [[&str; 12]; 2] = [
            ["eu", "canary", "asia", "backup", "edge", "west", "batch", "test", "north", "spare", "blue", "shadow"],
            ["cluster", "pool", "shard", "site", "node", "zone", "farm", "rack", "region", "fleet", "cell", "ring"],
        ];
        let mut random = FixedRandom(seed);
        let mut seen = BTreeSet::new();
        let mut sentences = Vec::new();
        while sentences.len() < count {
            let sentence = format!(
                "the {} {} {} the {} {} in the {} {} after {} attempts",
                random.pick(&SUBJECTS[0]),
                random.pick(&SUBJECTS[1]),
                random.pick(&VERBS),
                random.pick(&OBJECTS[0]),
                random.pick(&OBJECTS[1]),
                random.pick(&PLACES[0]),
                random.pick(&PLACES[1]),
                random.next() % 1000
            );
            if seen.insert(sentence.clone()) {
                sentences.push(sentence);
            }
        }
        sentences
    }

    fn keyed_signatures(texts: &[String]) -> Vec<(u64, MinHashSignature)> {
        texts.iter().enumerate().map(|(index, text)| (index as u64 * 3 + 1, minhash(&content_terms(text)))).collect()
    }

    #[test]
    fn candidate_pairs_find_a_planted_duplicate_among_generated_sentences() {
        let mut texts = generated_sentences(2000, 7);
        let original_index = 777;
        let original = texts[original_index].clone();
        // "the X Y the Z in the P after N attempts" restated: other order,
        // case and punctuation, a passive voice.
        let words: Vec<&str> = original.split(' ').collect();
        let planted = format!(
            "After {} ATTEMPTS in the {} {}, the {} {} was {} by the {} {}.",
            words[12], words[9], words[10], words[5], words[6], words[3], words[1], words[2]
        );
        assert!(
            lexically_equivalent(&content_terms(&original), &content_terms(&planted)),
            "{original:?} / {planted:?}"
        );
        texts.push(planted);
        let signatures = keyed_signatures(&texts);
        let pairs = candidate_pairs(&signatures);
        let (original_key, planted_key) = (signatures[original_index].0, signatures[texts.len() - 1].0);
        assert!(pairs.contains(&(original_key, planted_key)), "the planted duplicate is not a candidate");
        assert!(pairs.len() < 20 * texts.len(), "{} candidate pairs", pairs.len());
        assert!(pairs.windows(2).all(|window| window[0] < window[1]), "pairs are sorted and unique");
        assert!(pairs.iter().all(|(smaller, larger)| smaller < larger));
    }

    #[test]
    fn candidate_pairs_do_not_depend_on_input_order() {
        let texts = generated_sentences(500, 11);
        let signatures = keyed_signatures(&texts);
        let mut shuffled = signatures.clone();
        let mut random = FixedRandom(3);
        for index in (1..shuffled.len()).rev() {
            shuffled.swap(index, (random.next() % (index as u64 + 1)) as usize);
        }
        let pairs = candidate_pairs(&signatures);
        assert_eq!(pairs, candidate_pairs(&shuffled));
        assert_eq!(pairs, candidate_pairs(&signatures));
    }

    #[test]
    fn candidate_pairs_find_most_pairs_at_the_jaccard_threshold() {
        // 100 pairs of 40-word sets sharing 30 words: Jaccard 0.6, where
        // banding should find 98.8% of them.
        let mut signatures = Vec::new();
        for pair in 0..100u64 {
            for (side, range) in [(0, 0..40), (1, 10..50)] {
                let mut words: Vec<String> = range.map(|index| format!("p{pair}w{index}")).collect();
                words.sort();
                let terms = ContentTerms { words, ..ContentTerms::default() };
                signatures.push((pair * 2 + side, minhash(&terms)));
            }
        }
        let pairs = candidate_pairs(&signatures);
        let found = (0..100u64).filter(|pair| pairs.binary_search(&(pair * 2, pair * 2 + 1)).is_ok()).count();
        assert!(found >= 93, "{found} of 100 pairs at Jaccard 0.6 found");
    }

    #[test]
    fn an_oversized_bucket_is_paired_linearly() {
        let signature = minhash(&content_terms("build finished, all checks green"));
        let signatures: Vec<(u64, MinHashSignature)> = (0..500u64).map(|key| (key * 10, signature.clone())).collect();
        let pairs = candidate_pairs(&signatures);
        assert!(pairs.len() <= signatures.len() * 2 * OVERSIZED_BUCKET_NEIGHBOURS, "{} pairs", pairs.len());
        // A chain links every copy to the next one in key order, and every
        // copy is paired with the first (the star a merge groups around).
        for key in 0..499u64 {
            assert!(pairs.binary_search(&(key * 10, key * 10 + 10)).is_ok());
            assert!(pairs.binary_search(&(0, key * 10 + 10)).is_ok());
        }
        // A small bucket is paired all-to-all.
        let pairs = candidate_pairs(&signatures[..MAX_BUCKET]);
        assert_eq!(pairs.len(), MAX_BUCKET * (MAX_BUCKET - 1) / 2);
    }

    #[test]
    fn duplicate_keys_are_not_paired_with_themselves() {
        let signature = minhash(&content_terms("tests pass"));
        let pairs = candidate_pairs(&[(5, signature.clone()), (5, signature.clone()), (2, signature)]);
        assert_eq!(pairs, [(2, 5)]);
        assert!(candidate_pairs::<MinHashSignature>(&[]).is_empty());
    }

    /// Texts of about twenty words: a skewed pick from 5,000 made-up words
    /// (a few are common, most rare), stop words, and a number in one text
    /// of four.
    fn realistic_texts(count: usize) -> Vec<String> {
        const SYLLABLES: [&str; 20] = [
            "ka", "to", "ren", "mi", "sol", "va", "dex", "lo", "ru", "pen", "qui", "tar", "bo", "nel", "fi", "gra",
            "shu", "wen", "zo", "pli",
        ];
        let vocabulary: Vec<String> = (0..5000usize)
            .map(|index| format!("{}{}{}", SYLLABLES[index % 20], SYLLABLES[(index / 20) % 20], SYLLABLES[index / 400]))
            .collect();
        let mut random = FixedRandom(42);
        (0..count)
            .map(|_| {
                let mut words: Vec<String> = (0..16)
                    .map(|_| {
                        let uniform = (random.next() >> 11) as f64 / (1u64 << 53) as f64;
                        vocabulary[(uniform * uniform * 5000.0) as usize].clone()
                    })
                    .collect();
                words.extend(["the", "is", "of", "and"].map(str::to_string));
                if random.next().is_multiple_of(4) {
                    words.push((random.next() % 10_000).to_string());
                }
                words.join(" ")
            })
            .collect()
    }

    #[test]
    #[ignore = "timing: cargo test --release -p mneme-projections --lib lexical -- --ignored --nocapture"]
    fn timing_over_100_000_texts() {
        let texts = realistic_texts(100_000);
        let started = std::time::Instant::now();
        let all_terms: Vec<ContentTerms> = texts.iter().map(|text| content_terms(text)).collect();
        let terms_time = started.elapsed();
        let signatures: Vec<(u64, MinHashSignature)> =
            all_terms.iter().enumerate().map(|(index, terms)| (index as u64, minhash(terms))).collect();
        let terms_and_signatures_time = started.elapsed();
        let started = std::time::Instant::now();
        let pairs = candidate_pairs(&signatures);
        let banding_time = started.elapsed();
        println!(
            "100,000 texts: content_terms {terms_time:?}, with minhash {terms_and_signatures_time:?}; \
             candidate_pairs {banding_time:?}, {} pairs",
            pairs.len()
        );
        // Worst case: 100,000 texts drawn from 40 words, every one a near
        // duplicate of every other.
        const WORDS: [&str; 40] = [
            "the",
            "tests",
            "pass",
            "after",
            "fixing",
            "token",
            "refresh",
            "in",
            "auth",
            "service",
            "worker",
            "cache",
            "retried",
            "request",
            "database",
            "postgres",
            "port",
            "8080",
            "src/auth/token.rs",
            "handler",
            "deploy",
            "staging",
            "now",
            "not",
            "enabled",
            "queue",
            "timeout",
            "while",
            "index",
            "rebuilt",
            "signing",
            "keys",
            "rotate_signing_keys",
            "is",
            "a",
            "of",
            "config",
            "flag",
            "green",
            "logs",
        ];
        let mut random = FixedRandom(42);
        let signatures: Vec<(u64, MinHashSignature)> = (0..100_000u64)
            .map(|key| {
                let text = (0..20).map(|_| random.pick(&WORDS)).collect::<Vec<_>>().join(" ");
                (key, minhash(&content_terms(&text)))
            })
            .collect();
        let started = std::time::Instant::now();
        let pairs = candidate_pairs(&signatures);
        println!("near-identical worst case: candidate_pairs {:?}, {} pairs", started.elapsed(), pairs.len());
        assert!(pairs.len() <= signatures.len() * LSH_BANDS * MAX_BUCKET / 2);
    }
}
