//! Whether two short texts say the same thing in words, and which pairs of
//! many texts are worth asking about.
//!
//! Sentence embeddings place "tests pass" next to "tests fail" and "port
//! 8080" next to "port 8081", so a cosine threshold alone would merge them.
//! Consolidation merges two memories only when the cosine is high and
//! [`lexically_equivalent`] agrees: enough shared content words, the same
//! numbers and code names, the same count of negations, and no word in one
//! text whose opposite is in the other. [`minhash`](fn@minhash) and
//! [`candidate_pairs`] find the pairs worth checking among 100,000 memories
//! without comparing every pair. [`predicate_polarity`] and
//! [`objects_negate`] serve contradiction detection.
//!
//! **Invariant:** everything here is a pure function of its arguments. The
//! hashes are written here (FNV-1a and the splitmix64 finaliser, fixed
//! seeds) rather than std's `DefaultHasher`, whose output may change between
//! Rust releases, and every list returned is sorted, so a replay decides
//! exactly as the live run did.
//!
//! The words of a text are read in `terms.rs` ([`ContentTerms`]), opposite
//! words are listed in `opposites.rs`, signatures and candidate pairs are
//! in `minhash.rs`, and what contradiction detection asks of words in
//! `polarity.rs`.

mod minhash;
mod opposites;
mod polarity;
mod terms;

pub use minhash::{
    LSH_BANDS, LSH_ROWS_PER_BAND, MAX_BUCKET, MinHashSignature, OVERSIZED_BUCKET_NEIGHBOURS, SIGNATURE_LEN,
    candidate_pairs, minhash,
};
pub use polarity::{objects_explicitly_negate, objects_negate, predicate_polarity, refines};
pub use terms::{ContentTerms, content_terms};

use opposites::holds_opposite_of;

/// Smallest Jaccard similarity of the content words of two texts that say
/// the same thing.
///
/// Case, order, punctuation, stop words and inflections are already gone
/// from the words, so a restatement scores 1.0; what this threshold allows is
/// a little rewording. At 0.6 a text of n content words may gain up to 2n/3
/// extra words (n / (n + k) >= 0.6), and may swap one word for another from
/// four words up ((n - 1) / (n + 1) >= 0.6), two from eight words up. A
/// swap in a shorter text is refused: "alice fixed the login" against "bob
/// fixed the login" is 0.5. It is deliberately no stricter: paraphrases
/// swap a word or two, and the embedding cosine (>= 0.92) asked alongside,
/// the guards and the opposite words catch what a bag of words cannot.
pub const LEXICAL_MIN_JACCARD: f64 = 0.6;

/// Jaccard similarity of the content words of two texts; 1.0 when neither
/// has any.
pub fn word_jaccard(a: &ContentTerms, b: &ContentTerms) -> f64 {
    let shared = a.words.iter().filter(|word| b.words.binary_search(word).is_ok()).count();
    let union = a.words.len() + b.words.len() - shared;
    if union == 0 { 1.0 } else { shared as f64 / union as f64 }
}

/// Whether two texts say the same thing in words: the same numbers and code
/// tokens, the same count of negations, content words with Jaccard
/// similarity of at least [`LEXICAL_MIN_JACCARD`], and no word in one whose
/// opposite is in the other. Two texts without any term ("Thanks!",
/// "thanks.") are equivalent.
pub fn lexically_equivalent(a: &ContentTerms, b: &ContentTerms) -> bool {
    equivalent_but_for_values(a, b) && !substitutes_a_value(a, b)
}

/// Whether two texts say the same thing in words but that each names a
/// value the other lacks (a day, a month: "release approved for Friday" /
/// "… for Sunday"): not duplicates, and not both true at once.
pub fn value_conflict(a: &ContentTerms, b: &ContentTerms) -> bool {
    substitutes_a_value(a, b) && equivalent_but_for_values(a, b)
}

fn equivalent_but_for_values(a: &ContentTerms, b: &ContentTerms) -> bool {
    a.negations == b.negations
        && a.numbers == b.numbers
        && a.code_tokens == b.code_tokens
        && !name_different_things(a, b)
        && word_jaccard(a, b) >= LEXICAL_MIN_JACCARD
        && !holds_opposite_of(a, b)
        && !holds_opposite_of(b, a)
}

/// Each side names a value of [`ContentTerms::values`] the other lacks;
/// one side alone naming one is a rewording ("on Friday" / "then").
fn substitutes_a_value(a: &ContentTerms, b: &ContentTerms) -> bool {
    let lacks = |one: &ContentTerms, other: &ContentTerms| {
        one.values.iter().any(|value| other.values.binary_search(value).is_err())
    };
    lacks(a, b) && lacks(b, a)
}

/// Each side has a hyphenated name the other lacks: "the change to
/// audit-daemon is covered" and "the change to flags-api is covered" are
/// about two services. One side alone having one is a rewording
/// ("read-only" / "read only").
fn name_different_things(a: &ContentTerms, b: &ContentTerms) -> bool {
    let lacks = |one: &ContentTerms, other: &ContentTerms| {
        one.hyphenated.iter().any(|name| other.hyphenated.binary_search(name).is_err())
    };
    lacks(a, b) && lacks(b, a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn equivalent(a: &str, b: &str) -> bool {
        lexically_equivalent(&content_terms(a), &content_terms(b))
    }

    #[test]
    fn a_value_said_in_place_of_another_is_a_conflict_not_a_duplicate() {
        let friday = content_terms("The release is approved for Friday evening after the last review.");
        let sunday = content_terms("The release is approved for Sunday evening after the last review.");
        assert!(!lexically_equivalent(&friday, &sunday));
        assert!(value_conflict(&friday, &sunday) && value_conflict(&sunday, &friday));
        // A rewording that leaves the day out, or says the same day, is
        // not a conflict.
        let undated = content_terms("The release is approved after the last review.");
        assert!(!value_conflict(&friday, &undated));
        let again = content_terms("Release approved for Friday evening, after the last review.");
        assert!(lexically_equivalent(&friday, &again) && !value_conflict(&friday, &again));
    }

    fn assert_never_merged(pairs: &[(&str, &str)]) {
        for (a, b) in pairs {
            assert!(!equivalent(a, b), "{a:?} and {b:?} must not be duplicates");
            assert!(!equivalent(b, a), "{b:?} and {a:?} must not be duplicates");
        }
    }

    fn assert_merged(pairs: &[(&str, &str)]) {
        for (a, b) in pairs {
            assert!(
                equivalent(a, b),
                "{a:?} and {b:?} should be duplicates: {:?} / {:?}",
                content_terms(a),
                content_terms(b)
            );
            assert!(equivalent(b, a), "{b:?} and {a:?} should be duplicates");
        }
    }

    #[test]
    fn opposite_outcomes_are_never_duplicates() {
        assert_never_merged(&[
            ("tests pass", "tests fail"),
            ("The tests passed after the token refresh fix", "The tests failed after the token refresh fix"),
            (
                "integration tests passing on the main branch today",
                "integration tests failing on the main branch today",
            ),
            ("the nightly migration job ended in success", "the nightly migration job ended in failure"),
            ("the deploy of the billing service succeeded", "the deploy of the billing service failed"),
            (
                "the payment call to the stripe api succeeded after retry",
                "the payment call to the stripe api errored after retry",
            ),
            ("the strict mode flag of the parser is true", "the strict mode flag of the parser is false"),
            ("dark mode feature flag enabled for every user", "dark mode feature flag disabled for every user"),
            ("enable the rate limiter in the api gateway", "disable the rate limiter in the api gateway"),
            ("the rate limiter feature flag was turned on today", "the rate limiter feature flag was turned off today"),
            ("add the retry wrapper around the database client", "remove the retry wrapper around the database client"),
            (
                "added the retry wrapper around the database client",
                "removed the retry wrapper around the database client",
            ),
            ("allow writes from the reporting replica user", "deny writes from the reporting replica user"),
            ("accept the pending merge request from the bot", "reject the pending merge request from the bot"),
            ("the incident ticket for the login outage is open", "the incident ticket for the login outage is closed"),
            ("the session token in the cookie header is valid", "the session token in the cookie header is invalid"),
            (
                "the payment cluster is up since the morning deploy",
                "the payment cluster is down since the morning deploy",
            ),
            ("increase the connection pool size of the worker", "decrease the connection pool size of the worker"),
            ("run the schema migration before the deploy script", "run the schema migration after the deploy script"),
            ("the login flow on the staging site works", "the login flow on the staging site is broken"),
            ("the login flow on the staging site was fixed", "the login flow on the staging site was broken"),
            ("the ci pipeline for the release branch is green", "the ci pipeline for the release branch is red"),
            (
                "start the background indexer for the search service",
                "stop the background indexer for the search service",
            ),
            (
                "include the vendored crates in the release archive",
                "exclude the vendored crates in the release archive",
            ),
            ("the user alice logged in to the admin dashboard", "the user alice logged out of the admin dashboard"),
            (
                "the upstream mirror of the package registry is available",
                "the upstream mirror of the package registry is unavailable",
            ),
        ]);
    }

    #[test]
    fn a_shared_word_does_not_hide_an_opposite() {
        // Regression: the two texts hold the same words but "fail", which
        // is the opposite of the "pass" they share.
        assert_never_merged(&[(
            "the unit tests pass but the lint step fails",
            "the unit tests pass and the lint step passes",
        )]);
    }

    #[test]
    fn different_numbers_are_never_duplicates() {
        assert_never_merged(&[
            ("the server listens on port 8080", "the server listens on port 8081"),
            ("bumped the tokio dependency to version 1.37", "bumped the tokio dependency to version 1.38"),
            ("two tests failed in the auth suite", "three tests failed in the auth suite"),
            ("retry the request 3 times with backoff", "retry the request with backoff"),
        ]);
        assert_merged(&[("two tests failed in the auth suite", "2 tests failed in the auth suite")]);
    }

    #[test]
    fn statements_about_two_hyphenated_names_are_never_duplicates() {
        assert_never_merged(&[(
            "The change to audit-daemon is covered by the nightly integration suite.",
            "The change to flags-api is covered by the nightly integration suite.",
        )]);
        assert_merged(&[(
            "The cache is read-only after the nightly integration suite starts.",
            "After the nightly integration suite starts the cache is read only.",
        )]);
    }

    #[test]
    fn different_paths_and_identifiers_are_never_duplicates() {
        assert_never_merged(&[
            ("edit src/a.rs to handle the empty token", "edit src/b.rs to handle the empty token"),
            ("the bug is in main.rs near the token refresh", "the bug is in lib.rs near the token refresh"),
            ("rotate_signing_keys panics on an empty key ring", "rotate_access_keys panics on an empty key ring"),
            ("auth::token::refresh returns a stale expiry", "auth::session::refresh returns a stale expiry"),
            ("TokenExpiredError raised by the refresh handler", "TokenRevokedError raised by the refresh handler"),
            ("auth_service uses_database postgres", "auth_service uses_database mysql"),
            ("run cargo test with --release on the ci box", "run cargo test with --locked on the ci box"),
            ("the config lives in config.toml at the repo root", "the config lives at the repo root"),
        ]);
        assert_merged(&[("Edit SRC/A.rs to handle the empty token.", "to handle the empty token, edit src/a.rs")]);
    }

    #[test]
    fn a_statement_is_never_a_duplicate_of_its_negation() {
        assert_never_merged(&[
            ("X is enabled", "X is not enabled"),
            ("the cache layer is enabled in production", "the cache layer isn't enabled in production"),
            ("the cache layer is enabled in production", "the cache layer isn’t enabled in production"),
            ("the cache layer is enabled in production", "the cache layer isnt enabled in production"),
            ("the worker retries failed jobs", "the worker never retries failed jobs"),
            ("the worker can reach the queue", "the worker cannot reach the queue"),
            ("the worker can reach the queue", "the worker can't reach the queue"),
            ("the build finished with warnings", "the build finished without warnings"),
            ("the list of pending jobs is empty", "the list of pending jobs is non-empty"),
            ("there are errors in the log", "there are no errors in the log"),
        ]);
        assert!(content_terms("the worker can't reach the queue").is_negated());
        assert!(!content_terms("the worker can reach the queue").is_negated());
    }

    #[test]
    fn the_count_of_negations_must_match() {
        // Same words, both negated: only the count tells them apart.
        assert_never_merged(&[("X is not enabled and Y is not enabled", "X is not enabled and Y is enabled")]);
        assert_eq!(content_terms("neither x nor y is enabled").negation_count(), 2);
    }

    #[test]
    fn order_case_and_punctuation_do_not_matter() {
        assert_merged(&[
            ("The tests pass now after fixing the token refresh", "after fixing the token refresh, the TESTS pass!"),
            ("auth service: token refresh fixed", "Token refresh fixed (auth service)."),
            ("Deploy finished; all checks green.", "all checks green -- deploy finished"),
        ]);
    }

    #[test]
    fn inflections_and_stop_words_do_not_matter() {
        assert_merged(&[
            ("tests passed", "the tests pass"),
            ("fixing the token refresh bug", "fixed the token refresh bug"),
            ("The tests pass now after fixing the token refresh", "tests passed after the token refresh was fixed"),
            ("the worker is using the new cache", "worker uses new caches"),
            ("it's just that the retries really stopped", "retries stopped"),
            ("stopped the running jobs", "stops the running job"),
        ]);
    }

    #[test]
    fn the_jaccard_threshold_allows_one_swapped_word_in_four() {
        // {alice, fix, login} against {bob, fix, login}: 2 / 4.
        assert!(!equivalent("alice fixed the login", "bob fixed the login"));
        // Five shared words and one swapped: 5 / 7.
        assert!(equivalent(
            "the refresh handler rotates signing keys hourly",
            "the refresh handler rotates signing keys nightly"
        ));
        // One extra word on three: 3 / 4.
        assert!(equivalent("token refresh fixed", "token refresh finally fixed"));
        let (a, b) = (content_terms("token refresh fixed"), content_terms("token refresh finally fixed"));
        assert!((word_jaccard(&a, &b) - 0.75).abs() < 1e-12);
    }
}
