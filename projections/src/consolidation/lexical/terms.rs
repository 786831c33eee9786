//! The content terms of a text: its tokens sorted into content words,
//! numbers and code names, negations counted, particles remembered, stop
//! words dropped, and words stemmed.

use std::borrow::Cow;

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
    pub(super) words: Vec<String>,
    pub(super) numbers: Vec<String>,
    pub(super) code_tokens: Vec<String>,
    /// Hyphenated words ("audit-daemon", "read-only"), whole, lowercased;
    /// their parts are in `words` too. Sorted, unique.
    pub(super) hyphenated: Vec<String>,
    pub(super) negations: u32,
    pub(super) particles: u16,
    /// Words naming a value of a closed class — a day of the week, a month,
    /// a day relative to today — lowercased; sorted, unique. Two texts
    /// that each name one the other lacks ("approved for Friday" /
    /// "approved for Sunday") say different things in the same words.
    pub(super) values: Vec<String>,
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
    for list in [&mut terms.words, &mut terms.numbers, &mut terms.code_tokens, &mut terms.hyphenated, &mut terms.values]
    {
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

/// Words of closed classes of values (see [`ContentTerms`]): one in place
/// of another changes what a sentence says.
const VALUE_WORDS: &[&str] = &[
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "january",
    "february",
    "march",
    "april",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "today",
    "tonight",
    "tomorrow",
    "yesterday",
    "weekend",
    "morning",
    "afternoon",
    "evening",
    "night",
    "noon",
    "midnight",
];

/// Adds a lowercased word without apostrophe to the terms it belongs to.
fn add_normalised_word(terms: &mut ContentTerms, word: &str) {
    if word.is_empty() {
        return;
    }
    if VALUE_WORDS.contains(&word) {
        terms.values.push(word.to_string());
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
pub(super) const PARTICLES: [&str; 14] =
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
pub(super) fn stem(word: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
