//! Whether two short texts say the same thing in words, and which pairs of
//! many texts are worth asking about.
//!
//! Sentence embeddings place "tests pass" next to "tests fail" and "port
//! 8080" next to "port 8081", so a cosine threshold alone would merge them.
//! Consolidation merges two memories only when the cosine is high and
//! [`lexically_equivalent`] agrees: enough shared content words, the same
//! numbers and code names, the same count of negations, and no word in one
//! text whose opposite is in the other. [`minhash`] and [`candidate_pairs`]
//! find the pairs worth checking among 100,000 memories without comparing
//! every pair. [`predicate_polarity`] and [`objects_negate`] serve
//! contradiction detection.
//!
//! **Invariant:** everything here is a pure function of its arguments. The
//! hashes are written here (FNV-1a and the splitmix64 finaliser, fixed
//! seeds) rather than std's `DefaultHasher`, whose output may change between
//! Rust releases, and every list returned is sorted, so a replay decides
//! exactly as the live run did.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

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

/// Values in a [`MinHashSignature`]: [`LSH_BANDS`] bands of
/// [`LSH_ROWS_PER_BAND`] rows.
pub const SIGNATURE_LEN: usize = LSH_BANDS * LSH_ROWS_PER_BAND;

/// Bands of the LSH banding in [`candidate_pairs`].
///
/// Two texts of Jaccard s share one band with probability s^4, so they
/// become a candidate with probability 1 - (1 - s^4)^32: 0.9882 at s = 0.6
/// (the [`LEXICAL_MIN_JACCARD`] threshold), 0.9998 at 0.7, 0.873 at 0.5,
/// 0.56 at 0.4, 0.23 at 0.3 and 0.05 at 0.2. Sixty-four values could not do
/// both: 16 bands of 4 rows find only 0.89 of pairs at 0.6, and 21 bands of
/// 3 rows make 0.44 of the pairs at 0.3 candidates.
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

/// The words of a text that carry its meaning, normalised for comparison.
///
/// Content words are lowercased and stemmed, without stop words, sorted and
/// deduplicated. Numbers and code-like tokens are guards: two texts are
/// duplicates only if they hold exactly the same ones. Negations are
/// counted rather than flagged, so that "x is not enabled and y is not
/// enabled" differs from "x is not enabled and y is enabled". Particles (in,
/// out, on, off, up, down...) are dropped from the words like stop words but
/// remembered, for "logged in" against "logged out".
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ContentTerms {
    words: Vec<String>,
    numbers: Vec<String>,
    code_tokens: Vec<String>,
    /// Hyphenated words ("audit-daemon", "read-only"), whole, lowercased;
    /// their parts are in `words` too. Sorted, unique.
    hyphenated: Vec<String>,
    negations: u32,
    particles: u16,
}

impl ContentTerms {
    /// Content words: lowercased, stemmed, stop words dropped; sorted, unique.
    pub fn words(&self) -> &[String] {
        &self.words
    }

    /// Tokens that contain a digit (`8080`, `v2.0`, `sha256`), and number
    /// words as digits ("two" is `2`), lowercased; sorted, unique.
    pub fn numbers(&self) -> &[String] {
        &self.numbers
    }

    /// Paths, file names, identifiers with `_` or `::`, dotted names,
    /// CamelCase names and command-line flags, lowercased but not stemmed;
    /// sorted, unique.
    pub fn code_tokens(&self) -> &[String] {
        &self.code_tokens
    }

    /// How many negations the text holds (not, no, never, n't, without...).
    pub fn negation_count(&self) -> u32 {
        self.negations
    }

    /// Whether the text holds a negation.
    pub fn is_negated(&self) -> bool {
        self.negations > 0
    }

    /// Whether the text has no word, number or code token at all.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty() && self.numbers.is_empty() && self.code_tokens.is_empty()
    }
}

/// The content terms of a text; see [`ContentTerms`].
pub fn content_terms(text: &str) -> ContentTerms {
    let mut terms = ContentTerms::default();
    for token in text.split(|character: char| !is_token_character(character)) {
        let token = trim_token(token);
        if !token.is_empty() {
            add_token(&mut terms, token);
        }
    }
    for list in [&mut terms.words, &mut terms.numbers, &mut terms.code_tokens, &mut terms.hyphenated] {
        list.sort_unstable();
        list.dedup();
    }
    terms
}

/// Characters a token may hold: letters, digits and the punctuation found
/// inside paths, identifiers, versions, flags and contractions.
fn is_token_character(character: char) -> bool {
    character.is_alphanumeric() || matches!(character, '_' | '.' | '/' | '\\' | ':' | '-' | '\'' | '’')
}

/// Drops sentence punctuation around a token, but keeps a leading `/` (an
/// absolute path), `-` (a flag or a negative number) or single `.` (a
/// dotfile).
fn trim_token(token: &str) -> &str {
    let mut token = token.trim_start_matches([':', '\'', '’']).trim_end_matches(['.', ':', '\'', '’', '-']);
    if token.starts_with("..") && !token.contains(['/', '\\']) {
        token = token.trim_start_matches('.');
    }
    token
}

fn add_token(terms: &mut ContentTerms, token: &str) {
    // Most tokens are plain lowercase words: one scan decides it.
    if token.bytes().all(|byte| byte.is_ascii_lowercase()) {
        add_normalised_word(terms, token);
    } else if !token.chars().any(char::is_alphanumeric) {
        // Punctuation alone, such as "--" or "/".
    } else if token.bytes().any(|byte| byte.is_ascii_digit()) {
        terms.numbers.push(lowercase(token).into_owned());
    } else if is_code_like(token) {
        terms.code_tokens.push(lowercase(token).into_owned());
    } else if token.contains('.') {
        // An abbreviation such as "e.g." or "U.S.": one letter between dots.
        add_word(terms, &token.replace('.', ""));
    } else {
        if token.contains('-') {
            terms.hyphenated.push(lowercase(token).into_owned());
        }
        for part in token.split('-') {
            add_word(terms, part);
        }
    }
}

/// Whether a token without digits names code: a path, a file or dotted
/// name, an identifier joined by `_` or `::`, a CamelCase name, a flag.
fn is_code_like(token: &str) -> bool {
    token.starts_with('-')
        || token.contains(['/', '\\', '_', ':'])
        || (token.contains('.') && token.split('.').any(|part| part.chars().count() > 1))
        || is_camel_case(token)
}

/// "TokenRefresh", "camelCase", "PostgreSQL": a capital after the first
/// letter, and lowercase letters, so neither "The" nor "HTTP" is code.
fn is_camel_case(token: &str) -> bool {
    let mut characters = token.chars();
    let starts_with_letter = characters.next().is_some_and(char::is_alphabetic);
    starts_with_letter && characters.any(char::is_uppercase) && token.chars().any(char::is_lowercase)
}

/// Lowercases without allocating when the token already is lowercase ASCII.
fn lowercase(token: &str) -> Cow<'_, str> {
    if token.is_ascii() && !token.bytes().any(|byte| byte.is_ascii_uppercase()) {
        Cow::Borrowed(token)
    } else {
        Cow::Owned(token.to_lowercase())
    }
}

fn add_word(terms: &mut ContentTerms, raw_word: &str) {
    let mut word = lowercase(raw_word);
    if word.contains('’') {
        word = Cow::Owned(word.replace('’', "'"));
    }
    if word.ends_with("n't") {
        // "don't", "isn't", "can't", "won't": the auxiliary is a stop word.
        terms.negations += 1;
        return;
    }
    // "it's", "user's", "we're": the part before the apostrophe.
    add_normalised_word(terms, word.split('\'').next().unwrap_or_default());
}

/// Adds a lowercased word without apostrophe to the terms it belongs to.
fn add_normalised_word(terms: &mut ContentTerms, word: &str) {
    if word.is_empty() {
        return;
    }
    if is_negation_word(word) {
        terms.negations += 1;
    } else if let Some(digits) = number_word(word) {
        terms.numbers.push(digits.to_string());
    } else if let Some(bit) = particle_bit(word) {
        terms.particles |= bit;
    } else if !is_stop_word(word) {
        terms.words.push(stem(word));
    }
}

fn is_negation_word(word: &str) -> bool {
    matches!(
        word,
        "not"
            | "no"
            | "nope"
            | "never"
            | "none"
            | "nobody"
            | "nothing"
            | "nowhere"
            | "neither"
            | "nor"
            | "cannot"
            | "without"
            | "non"
            // Contractions typed without their apostrophe.
            | "dont"
            | "doesnt"
            | "didnt"
            | "isnt"
            | "arent"
            | "wasnt"
            | "werent"
            | "cant"
            | "wont"
            | "couldnt"
            | "shouldnt"
            | "wouldnt"
            | "hasnt"
            | "havent"
            | "hadnt"
            | "aint"
            | "mustnt"
            | "neednt"
    )
}

/// Number words as digits, so that "two tests failed" and "2 tests failed"
/// agree and "two" against "three" is a guard mismatch.
fn number_word(word: &str) -> Option<&'static str> {
    Some(match word {
        "zero" => "0",
        "one" => "1",
        "two" => "2",
        "three" => "3",
        "four" => "4",
        "five" => "5",
        "six" => "6",
        "seven" => "7",
        "eight" => "8",
        "nine" => "9",
        "ten" => "10",
        "eleven" => "11",
        "twelve" => "12",
        "twenty" => "20",
        "once" => "1x",
        "twice" => "2x",
        "thrice" => "3x",
        _ => return None,
    })
}

/// Prepositions and adverbs that are noise in a bag of words but flip the
/// meaning of a phrasal verb. Opposites are neighbours: bit 2k against bit
/// 2k + 1.
const PARTICLES: [&str; 14] =
    ["in", "out", "on", "off", "up", "down", "before", "after", "above", "below", "inside", "outside", "over", "under"];

fn particle_bit(word: &str) -> Option<u16> {
    PARTICLES.iter().position(|particle| *particle == word).map(|index| 1 << index)
}

/// Function words and chat filler: they change how a text reads, not what
/// it states. Quantifiers (all, some, only), modals other than "will", and
/// question words are kept: they change what it states.
fn is_stop_word(word: &str) -> bool {
    matches!(
        word,
        "a" | "an"
            | "the"
            | "this"
            | "that"
            | "these"
            | "those"
            | "it"
            | "its"
            | "itself"
            | "i"
            | "me"
            | "my"
            | "myself"
            | "we"
            | "us"
            | "our"
            | "ours"
            | "you"
            | "your"
            | "yours"
            | "he"
            | "him"
            | "his"
            | "she"
            | "her"
            | "hers"
            | "they"
            | "them"
            | "their"
            | "theirs"
            | "what"
            | "which"
            | "who"
            | "whom"
            | "whose"
            | "there"
            | "here"
            | "is"
            | "are"
            | "was"
            | "were"
            | "be"
            | "been"
            | "being"
            | "am"
            | "do"
            | "does"
            | "did"
            | "doing"
            | "have"
            | "has"
            | "had"
            | "having"
            | "will"
            | "shall"
            | "of"
            | "at"
            | "by"
            | "for"
            | "with"
            | "to"
            | "from"
            | "into"
            | "onto"
            | "about"
            | "as"
            | "than"
            | "then"
            | "so"
            | "and"
            | "or"
            | "but"
            | "if"
            | "because"
            | "while"
            | "also"
            | "just"
            | "now"
            | "still"
            | "already"
            | "yet"
            | "very"
            | "really"
            | "actually"
            | "basically"
            | "quite"
            | "too"
            | "again"
            | "ok"
            | "okay"
            | "please"
            | "thanks"
            | "thank"
            | "hey"
            | "hi"
            | "hello"
            | "well"
            | "eg"
            | "ie"
            | "etc"
            | "vs"
            | "via"
            | "per"
            | "upon"
    )
}

/// A light stemmer: plural, third-person, past and progressive endings go,
/// then a final "e", so that "pass", "passes", "passed" and "passing" meet
/// in "pass", and "cache", "caches", "cached" and "caching" in "cach". Stems
/// are comparison keys, not words. Only ASCII words of four letters or more
/// are stemmed, apart from a short list of irregular forms.
fn stem(word: &str) -> String {
    if let Some(irregular) = irregular_stem(word) {
        return irregular.to_string();
    }
    if word.len() <= 3 || !word.is_ascii() {
        return word.to_string();
    }
    let mut stem = strip_past_or_progressive(strip_plural(word));
    if stem.len() >= 4 && stem.ends_with('e') {
        stem.pop();
    }
    stem
}

fn strip_plural(word: &str) -> String {
    let length = word.len();
    if word.ends_with("ies") && length > 4 {
        format!("{}y", &word[..length - 3])
    } else if word.ends_with("sses")
        || word.ends_with("ches")
        || word.ends_with("shes")
        || word.ends_with("xes")
        || word.ends_with("zes")
    {
        // "passes", "matches", "pushes", "fixes", "sizes": the "es" goes.
        word[..length - 2].to_string()
    } else if word.ends_with('s') && !word.ends_with("ss") && !word.ends_with("us") && !word.ends_with("is") {
        word[..length - 1].to_string()
    } else {
        word.to_string()
    }
}

fn strip_past_or_progressive(mut word: String) -> String {
    let length = word.len();
    if word.ends_with("ied") && length > 4 {
        word.truncate(length - 3);
        word.push('y');
        return word;
    }
    // "succeed", "need", "speed": the "ed" is the word's own.
    let suffix_length = if word.ends_with("eed") {
        return word;
    } else if word.ends_with("ed") {
        2
    } else if word.ends_with("ing") {
        3
    } else {
        return word;
    };
    let remainder = &word[..length - suffix_length];
    // "string", "bring", "shred": no vowel or too short to be a verb stem.
    if remainder.len() < 3 || !remainder.bytes().any(|byte| matches!(byte, b'a' | b'e' | b'i' | b'o' | b'u' | b'y')) {
        return word;
    }
    word.truncate(length - suffix_length);
    // "stopped" -> "stop", "running" -> "run"; but "passed", "called", "added".
    let bytes = word.as_bytes();
    let last = bytes.len() - 1;
    if bytes.len() >= 4 && bytes[last] == bytes[last - 1] && !matches!(bytes[last], b'l' | b's' | b'z' | b'e' | b'o') {
        word.pop();
    }
    word
}

/// Irregular forms, mapped to the stem of their base form.
fn irregular_stem(word: &str) -> Option<&'static str> {
    Some(match word {
        "used" | "using" => "use",
        "made" => "mak",
        "ran" => "run",
        "went" | "gone" | "goes" => "go",
        "got" | "gotten" => "get",
        "built" => "build",
        "rebuilt" => "rebuild",
        "sent" => "send",
        "found" => "find",
        "broke" | "broken" => "break",
        "wrote" | "written" => "writ",
        "rewrote" | "rewritten" => "rewrit",
        "took" | "taken" => "tak",
        "gave" | "given" => "giv",
        "saw" | "seen" => "see",
        "knew" | "known" => "know",
        "shown" => "show",
        "threw" | "thrown" => "throw",
        "kept" => "keep",
        "lost" => "los",
        "won" => "win",
        "began" | "begun" => "begin",
        "chose" | "chosen" => "choos",
        "held" => "hold",
        "led" => "lead",
        "fell" | "fallen" => "fall",
        "grew" | "grown" => "grow",
        "drew" | "drawn" => "draw",
        "spent" => "spend",
        "understood" => "understand",
        "children" => "child",
        // The regular rules would read "embed" as a past tense.
        "embed" | "embeds" => "embed",
        _ => return None,
    })
}

/// Word families that are never duplicates of each other: a text that
/// holds a word of one side, against a text that holds a word of the other
/// and not that word, states something else. Written as words; stemmed on
/// first use.
const OPPOSITE_WORDS: &[(&[&str], &[&str])] = &[
    (&["pass", "success", "successful", "succeed", "work"], &["fail", "failure", "unsuccessful", "broken"]),
    (&["success", "successful", "succeed", "stable"], &["error", "errored", "crash", "crashed"]),
    (&["fix", "fixed", "repair"], &["broken", "break", "regress", "regression"]),
    (&["green"], &["red"]),
    (&["true", "yes", "correct", "right"], &["false", "wrong", "incorrect"]),
    (&["enable", "enabled", "activate", "active"], &["disable", "disabled", "deactivate", "inactive"]),
    (
        &["add", "insert", "create", "include", "install", "append", "attach", "mount", "keep"],
        &["remove", "delete", "drop", "destroy", "exclude", "uninstall", "detach", "unmount", "discard"],
    ),
    (
        &["allow", "accept", "approve", "permit", "grant"],
        &["deny", "reject", "block", "forbid", "refuse", "decline", "revoke"],
    ),
    (&["open"], &["close", "closed", "shut"]),
    (&["valid"], &["invalid"]),
    (
        &["increase", "raise", "grow", "more", "higher", "max", "maximum", "upgrade", "expand", "bigger", "larger"],
        &[
            "decrease",
            "reduce",
            "lower",
            "shrink",
            "less",
            "fewer",
            "min",
            "minimum",
            "downgrade",
            "collapse",
            "smaller",
        ],
    ),
    (&["start", "begin", "launch", "resume"], &["stop", "end", "finish", "halt", "pause", "kill", "terminate"]),
    (
        &["online", "connect", "connected", "login", "available", "reachable", "healthy"],
        &["offline", "disconnect", "logout", "unavailable", "unreachable", "unhealthy"],
    ),
    (
        &["push", "upload", "send", "export", "write", "output"],
        &["pull", "download", "receive", "import", "read", "input"],
    ),
    (&["public", "external", "remote"], &["private", "internal", "local"]),
    (&["first", "earliest", "oldest", "old", "older"], &["last", "latest", "newest", "new", "newer"]),
    (&["visible", "show", "shown"], &["hidden", "hide", "invisible"]),
    (&["good", "better", "best", "safe", "clean", "stable"], &["bad", "worse", "worst", "unsafe", "dirty", "unstable"]),
    (&["empty"], &["full"]),
    (&["encrypt", "encrypted"], &["decrypt", "decrypted", "plaintext"]),
    (&["lock", "locked"], &["unlock", "unlocked"]),
    (&["commit", "apply", "merge"], &["rollback", "revert", "abort"]),
    (
        &["sync", "synchronous", "blocking", "sequential", "serial"],
        &["async", "asynchronous", "nonblocking", "parallel", "concurrent"],
    ),
    (&["dev", "development", "staging"], &["prod", "production"]),
    (&["dev", "development"], &["staging"]),
    (&["client", "frontend", "request"], &["server", "backend", "response"]),
    (&["source"], &["destination", "target"]),
    (&["debug"], &["release"]),
    (&["ascending", "asc"], &["descending", "desc"]),
    (&["fast", "faster", "quick"], &["slow", "slower"]),
    (&["hot", "warm"], &["cold"]),
    (&["required", "mandatory"], &["optional"]),
    (&["found", "exists", "present"], &["missing", "absent", "lost"]),
    (&["win"], &["lose"]),
    (&["major"], &["minor"]),
    (&["lowercase"], &["uppercase"]),
    (&["inbound", "ingress"], &["outbound", "egress"]),
    (&["able"], &["unable"]),
    (&["always"], &["sometimes", "rarely"]),
    (&["all", "every"], &["some", "few"]),
];

/// Prefixes that make a word its own opposite: "valid" / "invalid",
/// "available" / "unavailable", "connected" / "disconnected". The base must
/// have four letters or more, so "input" is not the opposite of "put".
const NEGATING_PREFIXES: [&str; 8] = ["un", "in", "im", "il", "ir", "dis", "non", "de"];

/// Each stemmed word of [`OPPOSITE_WORDS`] with the stems opposite to it.
fn opposite_stems() -> &'static BTreeMap<String, BTreeSet<String>> {
    static OPPOSITES: OnceLock<BTreeMap<String, BTreeSet<String>>> = OnceLock::new();
    OPPOSITES.get_or_init(|| {
        let mut opposites: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (one_side, other_side) in OPPOSITE_WORDS {
            for one in one_side.iter().map(|word| stem(word)) {
                for other in other_side.iter().map(|word| stem(word)) {
                    opposites.entry(one.clone()).or_default().insert(other.clone());
                    opposites.entry(other).or_default().insert(one.clone());
                }
            }
        }
        opposites
    })
}

/// Whether two stemmed words are opposites, by the list or by a negating
/// prefix.
fn are_opposite(one: &str, other: &str) -> bool {
    opposite_stems().get(one).is_some_and(|opposites| opposites.contains(other))
        || has_negating_prefix(one, other)
        || has_negating_prefix(other, one)
}

fn has_negating_prefix(longer: &str, base: &str) -> bool {
    base.len() >= 4
        && longer.ends_with(base)
        && NEGATING_PREFIXES
            .iter()
            .any(|prefix| longer.len() == prefix.len() + base.len() && longer.starts_with(prefix))
}

/// Whether `one` holds a word, absent from `other`, whose opposite `other`
/// holds. The opposite may be shared: "tests pass but lint fails" against
/// "tests pass and lint passes" is caught by "fail" against "pass".
fn holds_opposite_of(one: &ContentTerms, other: &ContentTerms) -> bool {
    let only_in_one = one.words.iter().filter(|word| other.words.binary_search(word).is_err());
    for word in only_in_one {
        if other.words.iter().any(|other_word| are_opposite(word, other_word)) {
            return true;
        }
    }
    let particles_only_in_one = one.particles & !other.particles;
    (0..PARTICLES.len())
        .filter(|index| particles_only_in_one & (1 << index) != 0)
        .any(|index| other.particles & (1 << (index ^ 1)) != 0)
}

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
    a.negations == b.negations
        && a.numbers == b.numbers
        && a.code_tokens == b.code_tokens
        && !name_different_things(a, b)
        && word_jaccard(a, b) >= LEXICAL_MIN_JACCARD
        && !holds_opposite_of(a, b)
        && !holds_opposite_of(b, a)
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

/// A fact predicate without its negation, and whether it was negated:
/// `does_not_use`, `doesnt_use`, `not_uses`, `never_uses` and `uses` all
/// have the base `use`; `is_not` and `isnt` the base `is`; `not_depends_on`
/// the base `depend_on`.
///
/// The base is a comparison key, not a predicate to show: `not`, `no`
/// (and `no_longer`), `never` and `non` segments are dropped wherever they
/// are, each one flipping the polarity; leading auxiliaries (is, does,
/// has, can...) are dropped while something follows them, so `is_part_of`
/// and `is_not_part_of` share `part_of`; each remaining segment is stemmed
/// like a content word, with the forms of "be", "do" and "have" written
/// `is`, `do` and `has`. A predicate that is nothing but negation has the
/// empty base.
pub fn predicate_polarity(predicate_snake_case: &str) -> (String, bool) {
    let lowered = predicate_snake_case.to_lowercase().replace(['\'', '’'], "");
    let mut segments = Vec::new();
    for segment in lowered.split(|character: char| character == '_' || character == '-' || character.is_whitespace()) {
        match contracted_auxiliary(segment) {
            Some(auxiliary) => segments.extend([auxiliary, "not"]),
            None if !segment.is_empty() => segments.push(segment),
            None => {}
        }
    }
    let mut negated = false;
    let mut kept = Vec::new();
    let mut index = 0;
    while index < segments.len() {
        match segments[index] {
            "not" | "never" | "non" => negated = !negated,
            "no" => {
                negated = !negated;
                if segments.get(index + 1) == Some(&"longer") {
                    index += 1;
                }
            }
            segment => kept.push(segment),
        }
        index += 1;
    }
    let first_kept = kept.iter().position(|segment| !is_auxiliary(segment)).unwrap_or(kept.len().saturating_sub(1));
    let base: Vec<String> = kept[first_kept..].iter().map(|segment| predicate_segment_stem(segment)).collect();
    (base.join("_"), negated)
}

/// "isnt" is "is" + "not", "cannot" and "cant" are "can" + "not"...
fn contracted_auxiliary(segment: &str) -> Option<&'static str> {
    Some(match segment {
        "isnt" => "is",
        "arent" => "are",
        "wasnt" => "was",
        "werent" => "were",
        "dont" => "do",
        "doesnt" => "does",
        "didnt" => "did",
        "hasnt" => "has",
        "havent" => "have",
        "hadnt" => "had",
        "cannot" | "cant" => "can",
        "couldnt" => "could",
        "wont" => "will",
        "wouldnt" => "would",
        "shouldnt" => "should",
        "mustnt" => "must",
        _ => return None,
    })
}

fn is_auxiliary(segment: &str) -> bool {
    matches!(
        segment,
        "is" | "are"
            | "was"
            | "were"
            | "be"
            | "been"
            | "being"
            | "am"
            | "do"
            | "does"
            | "did"
            | "has"
            | "have"
            | "had"
            | "can"
            | "could"
            | "will"
            | "would"
            | "shall"
            | "should"
            | "may"
            | "might"
            | "must"
    )
}

fn predicate_segment_stem(segment: &str) -> String {
    match segment {
        "is" | "are" | "was" | "were" | "be" | "been" | "being" | "am" => "is".to_string(),
        "do" | "does" | "did" => "do".to_string(),
        "has" | "have" | "had" | "having" => "has".to_string(),
        _ => stem(segment),
    }
}

/// Whether one fact object is the explicit negation of the other. Only
/// clear cases: the same terms with one negation more ("not postgres" /
/// "postgres"), the same terms but one pair of opposite words ("disabled" /
/// "enabled", "false" / "true", "off" / "on"), or "no" / "yes".
pub fn objects_negate(a: &str, b: &str) -> bool {
    let (terms_a, terms_b) = (content_terms(a), content_terms(b));
    if terms_a.numbers != terms_b.numbers || terms_a.code_tokens != terms_b.code_tokens {
        return false;
    }
    let same_words = terms_a.words == terms_b.words && terms_a.particles == terms_b.particles;
    let negations = (terms_a.negations.min(terms_b.negations), terms_a.negations.max(terms_b.negations));
    if same_words && negations == (0, 1) {
        return !terms_a.is_empty() || terms_a.particles != 0;
    }
    (negations.0 == negations.1 && differ_by_one_opposite(&terms_a, &terms_b)) || is_no_against_yes(&terms_a, &terms_b)
}

/// Whether one object is the explicit negation of the other: the same
/// words, numbers and identifiers, one side negated ("cached" / "not
/// cached"), or a bare "no" against "yes". Unlike [`objects_negate`], two
/// opposite words ("frontend" / "backend") do not count: under a
/// multi-valued predicate both can hold.
pub fn objects_explicitly_negate(a: &str, b: &str) -> bool {
    let (terms_a, terms_b) = (content_terms(a), content_terms(b));
    if terms_a.numbers != terms_b.numbers || terms_a.code_tokens != terms_b.code_tokens {
        return false;
    }
    let same_words = terms_a.words == terms_b.words && terms_a.particles == terms_b.particles;
    let negations = (terms_a.negations.min(terms_b.negations), terms_a.negations.max(terms_b.negations));
    (same_words && negations == (0, 1) && (!terms_a.is_empty() || terms_a.particles != 0))
        || is_no_against_yes(&terms_a, &terms_b)
}

/// Whether one text only adds to the other: the same negation, and every
/// word, number and identifier of the shorter is in the longer ("postgres"
/// and "postgres with the pgvector extension"). A decision that refines
/// another does not reverse it.
pub fn refines(a: &ContentTerms, b: &ContentTerms) -> bool {
    let within = |small: &ContentTerms, large: &ContentTerms| {
        !small.is_empty()
            && small.words.iter().all(|word| large.words.binary_search(word).is_ok())
            && small.numbers.iter().all(|number| large.numbers.binary_search(number).is_ok())
            && small.code_tokens.iter().all(|token| large.code_tokens.binary_search(token).is_ok())
    };
    a.negations == b.negations && (within(a, b) || within(b, a))
}

/// The same terms but for one word, or one particle, on each side, and the
/// two are opposites.
fn differ_by_one_opposite(a: &ContentTerms, b: &ContentTerms) -> bool {
    let only_in_a: Vec<&String> = a.words.iter().filter(|word| b.words.binary_search(word).is_err()).collect();
    let only_in_b: Vec<&String> = b.words.iter().filter(|word| a.words.binary_search(word).is_err()).collect();
    if a.particles == b.particles {
        return matches!((&only_in_a[..], &only_in_b[..]), ([one], [other]) if are_opposite(one, other));
    }
    let particles_differ = a.particles ^ b.particles;
    let is_one_opposite_pair = particles_differ.count_ones() == 2
        && (0..PARTICLES.len()).step_by(2).any(|index| particles_differ == 0b11 << index)
        && (a.particles & particles_differ).count_ones() == 1;
    only_in_a.is_empty() && only_in_b.is_empty() && is_one_opposite_pair
}

/// "no" (a lone negation) against "yes" (a lone "yes"), either way round.
fn is_no_against_yes(a: &ContentTerms, b: &ContentTerms) -> bool {
    let is_bare_no = |terms: &ContentTerms| terms.is_empty() && terms.particles == 0 && terms.negations == 1;
    let is_bare_yes =
        |terms: &ContentTerms| terms.words == ["yes"] && terms.numbers.is_empty() && terms.code_tokens.is_empty();
    (is_bare_no(a) && b.negations == 0 && is_bare_yes(b)) || (is_bare_no(b) && a.negations == 0 && is_bare_yes(a))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn equivalent(a: &str, b: &str) -> bool {
        lexically_equivalent(&content_terms(a), &content_terms(b))
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

    #[test]
    fn content_terms_sort_words_and_keep_guards_verbatim() {
        let terms = content_terms(
            "The auth_service's TokenRefresh in src/auth/token.rs calls auth::refresh on port 8080 \
             and reads .env, e.g. twice; v2.0 of the SDK isn't used --verbose",
        );
        assert_eq!(terms.numbers(), ["2x", "8080", "v2.0"]);
        assert_eq!(
            terms.code_tokens(),
            ["--verbose", ".env", "auth::refresh", "auth_service's", "src/auth/token.rs", "tokenrefresh"]
        );
        assert_eq!(terms.words(), ["call", "port", "read", "sdk", "use"]);
        assert_eq!(terms.negation_count(), 1);
        assert!(content_terms("the of and, to!").is_empty());
    }

    #[test]
    fn inflected_forms_share_a_stem() {
        let same_stem = [
            ("tests", "test"),
            ("passed", "pass"),
            ("passes", "pass"),
            ("passing", "pass"),
            ("fixing", "fix"),
            ("fixed", "fix"),
            ("fixes", "fix"),
            ("uses", "use"),
            ("used", "use"),
            ("using", "use"),
            ("running", "run"),
            ("ran", "run"),
            ("stopped", "stop"),
            ("caches", "cache"),
            ("cached", "caching"),
            ("enabled", "enable"),
            ("dependencies", "dependency"),
            ("retried", "retry"),
            ("retrying", "retries"),
            ("succeeded", "succeed"),
            ("succeeds", "succeed"),
            ("made", "making"),
            ("broken", "breaks"),
            ("embedded", "embed"),
            ("embeddings", "embeds"),
            ("statuses", "status"),
            ("logged", "logs"),
            ("added", "add"),
            ("strings", "string"),
            ("created", "create"),
            ("closed", "close"),
            ("released", "releases"),
            ("written", "write"),
            ("lost", "lose"),
        ];
        for (one, other) in same_stem {
            assert_eq!(stem(one), stem(other), "{one} / {other}");
        }
        assert_ne!(stem("pass"), stem("fail"));
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("analysis"), "analysis");
    }

    #[test]
    fn opposite_lists_never_oppose_a_word_to_itself() {
        for (word, opposites) in opposite_stems() {
            assert!(!opposites.contains(word), "{word} is listed as its own opposite");
        }
        assert!(are_opposite(&stem("passing"), &stem("failed")));
        assert!(are_opposite(&stem("available"), &stem("unavailable")));
        assert!(!are_opposite("input", "put"));
    }

    #[test]
    fn predicate_polarity_strips_negations_to_a_shared_base() {
        let cases = [
            ("uses", "use", false),
            ("does_not_use", "use", true),
            ("doesnt_use", "use", true),
            ("not_uses", "use", true),
            ("never_uses", "use", true),
            ("no_longer_uses", "use", true),
            ("is_not", "is", true),
            ("isnt", "is", true),
            ("is", "is", false),
            ("depends_on", "depend_on", false),
            ("not_depends_on", "depend_on", true),
            ("does_not_depend_on", "depend_on", true),
            ("is_part_of", "part_of", false),
            ("is_not_part_of", "part_of", true),
            ("cannot_access", "access", true),
            ("can_access", "access", false),
            ("Has_No_Owner", "owner", true),
            ("not_not_uses", "use", false),
            ("not", "", true),
            ("", "", false),
        ];
        for (predicate, base, negated) in cases {
            assert_eq!(predicate_polarity(predicate), (base.to_string(), negated), "{predicate}");
        }
    }

    #[test]
    fn objects_negate_only_in_clear_cases() {
        let negating = [
            ("not postgres", "postgres"),
            ("false", "true"),
            ("no", "yes"),
            ("disabled", "enabled"),
            ("not enabled", "enabled"),
            ("off", "on"),
            ("Not 8080", "8080"),
            ("failing", "passing"),
            ("unavailable", "available"),
        ];
        for (a, b) in negating {
            assert!(objects_negate(a, b), "{a:?} negates {b:?}");
            assert!(objects_negate(b, a), "{b:?} negates {a:?}");
        }
        let not_negating = [
            ("postgres", "mysql"),
            ("postgres", "postgres"),
            ("not postgres", "not postgres"),
            ("not enabled", "disabled"),
            ("no", "no"),
            ("8080", "8081"),
            ("none", "alice"),
            ("", ""),
            ("not", ""),
            ("enabled in staging", "disabled in production"),
        ];
        for (a, b) in not_negating {
            assert!(!objects_negate(a, b), "{a:?} does not negate {b:?}");
            assert!(!objects_negate(b, a), "{b:?} does not negate {a:?}");
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
        assert!(equivalent(&original, &planted), "{original:?} / {planted:?}");
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
                if random.next() % 4 == 0 {
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
