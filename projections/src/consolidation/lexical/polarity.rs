//! What contradiction detection asks of words: a fact predicate's base and
//! polarity ("does_not_use" is "use" negated), whether one fact object
//! negates another, and whether one text only adds to another.

use super::opposites::differ_by_one_opposite;
use super::terms::{ContentTerms, content_terms, stem};

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
}
