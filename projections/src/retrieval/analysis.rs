//! Query analysis: what a question asks, read before any retriever sees it.
//!
//! - **Keywords.** Question words and stop words leave the BM25 query
//!   ("what", "did", "the"): they match nearly every document, so they
//!   lift long texts over relevant ones and give rank fusion a vote that
//!   means nothing. Identifiers, paths, names and numbers stay.
//! - **Time.** A time the question names ("in May 2025", "last week", "three
//!   days ago", "before March") is resolved against the memory's newest
//!   event (not the clock: the same memory answers the same question the
//!   same way), into a range that search boosts. A time named by an event
//!   ("before the migration", "since we switched to Postgres") is an
//!   anchor: search finds the item that best matches the question's
//!   keywords, the event's among them, and the range ends or starts at that
//!   item's time, the item included. The event's words stay keywords: what
//!   happened "after it was adopted" is asked with the adoption.
//! - **Answer kind.** What the question wants, where its words say it: a
//!   decision ("what was decided"), a fix ("what fixed"), a person ("who"),
//!   a date ("when"), a place ("where").
//!
//! No model and no lexicon beyond the word lists here: it runs in
//! microseconds, on every search.

use mneme_events::Timestamp;

use crate::words::is_stop_word;
use time::{Date, Month, OffsetDateTime, Time};

/// A question, read.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryAnalysis {
    /// The query for BM25: its words less question and stop words, in
    /// order; the whole query when nothing else would be left.
    pub keywords: String,
    /// The time the question names, as `[since, until)`.
    pub time: Option<TimeRange>,
    /// What the question wants, if its words say.
    pub wants: Option<AnswerKind>,
    /// The code identifiers the question names, lower case
    /// (`rotate_signing_keys`, `TokenExpiredError`, `auth::token`; not file
    /// names): an item that holds one exactly is what it points at.
    pub identifiers: Vec<String>,
    /// Words that look like names of people (capitalised, letters only,
    /// not where a sentence starts unless possessive), lower case: search
    /// asks whether someone of that name speaks in the memory.
    pub names: Vec<String>,
    /// A time named by an event rather than a date ("before the
    /// migration"), when the question names no date: resolved by search.
    pub anchor: Option<TimeAnchor>,
}

/// "before the migration": which side of the event, and its words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeAnchor {
    /// `true` for before and until; `false` for after and since.
    pub before: bool,
    /// The event's words, less stop words ("migration").
    pub phrase: String,
}

impl TimeAnchor {
    /// The range on this side of an event at `ts`, the event included.
    pub fn range(&self, ts: Timestamp) -> TimeRange {
        if self.before {
            TimeRange { since: Timestamp(i64::MIN), until: Timestamp(ts.unix_nanos().saturating_add(1)) }
        } else {
            TimeRange { since: ts, until: Timestamp(i64::MAX) }
        }
    }
}

/// At most this many words after "before" name the event.
const ANCHOR_WORDS: usize = 3;

/// An interval of event time, `since` included and `until` excluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeRange {
    pub since: Timestamp,
    pub until: Timestamp,
}

impl TimeRange {
    pub fn contains(&self, ts: Timestamp) -> bool {
        self.since <= ts && ts < self.until
    }
}

/// What kind of thing answers a question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerKind {
    Decision,
    Fix,
    Person,
    Date,
    Place,
}

impl AnswerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AnswerKind::Decision => "decision",
            AnswerKind::Fix => "fix",
            AnswerKind::Person => "person",
            AnswerKind::Date => "date",
            AnswerKind::Place => "place",
        }
    }
}

const MONTHS: [(&str, Month); 12] = [
    ("january", Month::January),
    ("february", Month::February),
    ("march", Month::March),
    ("april", Month::April),
    ("may", Month::May),
    ("june", Month::June),
    ("july", Month::July),
    ("august", Month::August),
    ("september", Month::September),
    ("october", Month::October),
    ("november", Month::November),
    ("december", Month::December),
];

/// A word of the query: its text as written, lower-cased, and whether it
/// is part of a time expression.
struct Word<'q> {
    written: &'q str,
    lower: String,
    temporal: bool,
}

/// Reads `query`; `now` is the time relative expressions count from.
pub fn analyze(query: &str, now: Timestamp) -> QueryAnalysis {
    let mut words: Vec<Word> = query
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '?' | '!' | '(' | ')' | '"'))
        .filter(|word| !word.is_empty())
        .map(|word| {
            let written = word.trim_end_matches(['.', ':']).trim_start_matches(['\'', '`']);
            let written = written.strip_suffix("'s").or_else(|| written.strip_suffix("’s")).unwrap_or(written);
            Word { written, lower: written.to_lowercase(), temporal: false }
        })
        .filter(|word| !word.written.is_empty())
        .collect();
    let time = resolve_time(&mut words, now);
    let anchor = if time.is_none() { time_anchor(&words) } else { None };
    let wants = answer_kind(&words);
    let names = names(query, &words);
    // File names and paths are not among them: a question naming a file
    // asks about what happened to it ("what was decided for src/cart/
    // index.rs"), and every read, run and diff of the file names it.
    let mut identifiers: Vec<String> = mneme_index::identifiers(query)
        .into_iter()
        .filter(|identifier| !identifier.contains('.'))
        .map(str::to_lowercase)
        .collect();
    identifiers.sort();
    identifiers.dedup();
    let kept: Vec<&str> = words
        .iter()
        .filter(|word| !word.temporal && !is_stop_word(&word.lower) && !is_stop_word_phrase_part(&word.lower))
        .map(|word| word.written)
        .collect();
    let keywords = if kept.is_empty() { query.to_string() } else { kept.join(" ") };
    QueryAnalysis { keywords, time, wants, identifiers, names, anchor }
}

/// "before|after|since|until" and the content words that follow (up to
/// [`ANCHOR_WORDS`], to the end of the clause).
fn time_anchor(words: &[Word]) -> Option<TimeAnchor> {
    let start =
        words.iter().position(|word| matches!(word.lower.as_str(), "before" | "after" | "since" | "until" | "till"))?;
    let before = matches!(words[start].lower.as_str(), "before" | "until" | "till");
    let mut phrase: Vec<String> = Vec::new();
    let mut end = start + 1;
    while end < words.len() && phrase.len() < ANCHOR_WORDS {
        let word = &words[end].lower;
        if matches!(word.as_str(), "and" | "or" | "but" | "when" | "while" | "where") {
            break;
        }
        if !is_stop_word(word) && !is_stop_word_phrase_part(word) {
            phrase.push(words[end].written.to_string());
        }
        end += 1;
    }
    if phrase.is_empty() {
        return None;
    }
    Some(TimeAnchor { before, phrase: phrase.join(" ") })
}

fn names(query: &str, words: &[Word]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (position, word) in words.iter().enumerate() {
        let mut letters = word.written.chars();
        let capitalised = letters.next().is_some_and(char::is_uppercase) && letters.all(char::is_lowercase);
        let possessive =
            query.contains(&format!("{}'s", word.written)) || query.contains(&format!("{}’s", word.written));
        let name = capitalised
            && (position > 0 || possessive)
            && !word.temporal
            && !is_stop_word(&word.lower)
            && month_of(&word.lower).is_none();
        if name && !names.contains(&word.lower) {
            names.push(word.lower.clone());
        }
    }
    names
}

/// Contractions split by the tokenizer ("didn't" → "didn", "t").
fn is_stop_word_phrase_part(word: &str) -> bool {
    matches!(word, "didn't" | "doesn't" | "don't" | "isn't" | "wasn't" | "weren't" | "hasn't" | "haven't")
}

fn answer_kind(words: &[Word]) -> Option<AnswerKind> {
    let has = |wanted: &[&str]| words.iter().any(|word| wanted.contains(&word.lower.as_str()));
    if has(&["decided", "decide", "decision", "decisions", "chose", "chosen", "choose"]) {
        Some(AnswerKind::Decision)
    } else if has(&["fixed", "fix", "fixes", "resolved", "solved", "repaired"]) {
        Some(AnswerKind::Fix)
    } else {
        match words.first().map(|word| word.lower.as_str()) {
            Some("who" | "whom" | "whose") => Some(AnswerKind::Person),
            Some("when") => Some(AnswerKind::Date),
            Some("where") => Some(AnswerKind::Place),
            _ => None,
        }
    }
}

fn number_word(word: &str) -> Option<i64> {
    let numbers =
        ["a", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"];
    if let Some(position) = numbers.iter().position(|number| *number == word) {
        return Some(position.max(1) as i64);
    }
    word.parse().ok().filter(|number| (1..=1000).contains(number))
}

fn month_of(word: &str) -> Option<Month> {
    MONTHS
        .iter()
        .find(|(name, _)| *name == word || (word.len() == 3 && name.starts_with(word)))
        .map(|(_, month)| *month)
}

fn year_of(word: &str) -> Option<i32> {
    word.parse().ok().filter(|year| (1900..=2200).contains(year))
}

/// Finds the first time expression, marks its words temporal, and returns
/// its range. "before"/"after"/"since"/"until" in front open the range on
/// that side.
fn resolve_time(words: &mut [Word], now: Timestamp) -> Option<TimeRange> {
    let now = OffsetDateTime::from_unix_timestamp_nanos(i128::from(now.unix_nanos())).ok()?;
    let today = now.date();
    for start in 0..words.len() {
        let Some((range, length)) = expression_at(words, start, today) else { continue };
        for word in &mut words[start..start + length] {
            word.temporal = true;
        }
        let side = start.checked_sub(1).map(|before| words[before].lower.as_str());
        let range = match side {
            Some("before" | "until" | "till") => TimeRange { since: Timestamp(i64::MIN), until: range.since },
            Some("after" | "since") => TimeRange { since: range.until, until: Timestamp(i64::MAX) },
            _ => range,
        };
        if let Some(previous) = start.checked_sub(1) {
            words[previous].temporal |= matches!(
                words[previous].lower.as_str(),
                "before" | "after" | "since" | "until" | "till" | "in" | "during"
            );
        }
        return Some(range);
    }
    None
}

/// The time expression starting at `words[start]`, and how many words it
/// takes.
fn expression_at(words: &[Word], start: usize, today: Date) -> Option<(TimeRange, usize)> {
    let word = words[start].lower.as_str();
    let next = words.get(start + 1).map(|word| word.lower.as_str());
    let after_next = words.get(start + 2).map(|word| word.lower.as_str());
    let previous = start.checked_sub(1).map(|before| words[before].lower.as_str());
    let days = |from: Date, count: i64| Some(range_of_days(from, count));
    match word {
        "today" => return days(today, 1).map(|range| (range, 1)),
        "yesterday" => return days(today.previous_day()?, 1).map(|range| (range, 1)),
        "recently" | "lately" => return days(today.checked_sub(time::Duration::days(30))?, 31).map(|range| (range, 1)),
        "last" | "this" | "past" | "previous" => {
            let unit = next?;
            let back = i64::from(word != "this");
            let range = match unit {
                "night" if word == "last" => range_of_days(today.previous_day()?, 2),
                "week" => range_of_days(today.checked_sub(time::Duration::days(7 * (back + 1) - 1))?, 7 * (back + 1)),
                "weekend" => {
                    let back_to_saturday = (today.weekday().number_days_from_monday() as i64 + 2) % 7;
                    let saturday = today.checked_sub(time::Duration::days(back_to_saturday))?;
                    range_of_days(saturday, 2)
                }
                "month" => month_range(shift_month(today.year(), today.month(), -back))?,
                "year" => year_range(today.year() - back as i32)?,
                _ => return None,
            };
            return Some((range, 2));
        }
        _ => {}
    }
    // "3 days ago", "two weeks ago": a window around then.
    if let (Some(count), Some(unit), Some("ago")) = (number_word(word), next, after_next) {
        let unit_days = match unit.trim_end_matches('s') {
            "day" => 1,
            "week" => 7,
            "month" => 30,
            "year" => 365,
            _ => return None,
        };
        let back = count * unit_days;
        let margin = (unit_days / 2).max(1);
        let from = today.checked_sub(time::Duration::days(back + margin))?;
        return Some((range_of_days(from, 2 * margin + 1), 3));
    }
    if let Some(month) = month_of(word) {
        // "may" is a month only as "May 2025", "in May", or capitalised
        // mid-sentence; the other months' names are months anywhere.
        let capitalised = words[start].written.starts_with(char::is_uppercase) && start > 0;
        let introduced = matches!(
            previous,
            Some("in" | "during" | "since" | "before" | "after" | "until" | "of" | "early" | "late" | "mid")
        );
        let year = next.and_then(year_of);
        if word.len() == 3 && word != "may" && !introduced && year.is_none() {
            return None;
        }
        if word == "may" && !(introduced || year.is_some() || capitalised) {
            return None;
        }
        // "May 14" / "May 14th": that day.
        if let Some(day) = next.and_then(|next| next.trim_end_matches(|c: char| c.is_alphabetic()).parse::<u8>().ok()) {
            let year = after_next.and_then(year_of).unwrap_or_else(|| latest_year_of(today, month));
            let date = Date::from_calendar_date(year, month, day).ok()?;
            let length = if after_next.and_then(year_of).is_some() { 3 } else { 2 };
            return Some((range_of_days(date, 1), length));
        }
        let year = year.unwrap_or_else(|| latest_year_of(today, month));
        let length = if next.and_then(year_of).is_some() { 2 } else { 1 };
        return month_range((year, month)).map(|range| (range, length));
    }
    // "in 2025", "during 2024".
    if let Some(year) = year_of(word)
        && matches!(previous, Some("in" | "during" | "since" | "before" | "after" | "until" | "of"))
    {
        return year_range(year).map(|range| (range, 1));
    }
    // An ISO date: 2025-05-14.
    if let Ok(date) = Date::parse(word, &time::format_description::well_known::Iso8601::DATE) {
        return Some((range_of_days(date, 1), 1));
    }
    None
}

/// The latest `month` that has begun by `today`: "in May" asked in March
/// means last May.
fn latest_year_of(today: Date, month: Month) -> i32 {
    if month as u8 <= today.month() as u8 { today.year() } else { today.year() - 1 }
}

fn shift_month(year: i32, month: Month, by: i64) -> (i32, Month) {
    let index = i64::from(year) * 12 + i64::from(month as u8 - 1) + by;
    let month = Month::try_from((index.rem_euclid(12) + 1) as u8).expect("1 to 12");
    ((index.div_euclid(12)) as i32, month)
}

fn midnight(date: Date) -> Timestamp {
    let nanos = date.with_time(Time::MIDNIGHT).assume_utc().unix_timestamp_nanos();
    Timestamp(i64::try_from(nanos).unwrap_or(if nanos < 0 { i64::MIN } else { i64::MAX }))
}

fn range_of_days(from: Date, count: i64) -> TimeRange {
    let until = from.checked_add(time::Duration::days(count)).unwrap_or(Date::MAX);
    TimeRange { since: midnight(from), until: midnight(until) }
}

fn month_range((year, month): (i32, Month)) -> Option<TimeRange> {
    let first = Date::from_calendar_date(year, month, 1).ok()?;
    let (next_year, next_month) = shift_month(year, month, 1);
    let next = Date::from_calendar_date(next_year, next_month, 1).ok()?;
    Some(TimeRange { since: midnight(first), until: midnight(next) })
}

fn year_range(year: i32) -> Option<TimeRange> {
    let first = Date::from_calendar_date(year, Month::January, 1).ok()?;
    let next = Date::from_calendar_date(year + 1, Month::January, 1).ok()?;
    Some(TimeRange { since: midnight(first), until: midnight(next) })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Wednesday 2025-06-18, 15:00 UTC.
    fn now() -> Timestamp {
        "2025-06-18T15:00:00Z".parse().unwrap()
    }

    fn range(since: &str, until: &str) -> Option<TimeRange> {
        Some(TimeRange { since: since.parse().unwrap(), until: until.parse().unwrap() })
    }

    #[test]
    fn question_and_stop_words_leave_the_keywords_and_identifiers_stay() {
        let analysis = analyze("What did the reviewer decide about rotate_signing_keys in src/auth/token.rs?", now());
        assert_eq!(analysis.keywords, "reviewer decide rotate_signing_keys src/auth/token.rs");
        assert_eq!(analysis.wants, Some(AnswerKind::Decision));
        assert_eq!(analysis.identifiers, ["rotate_signing_keys"]);
        assert_eq!(analyze("Where is TokenExpiredError raised?", now()).keywords, "TokenExpiredError raised");
        assert_eq!(
            analyze("Which hobbies has Maria's sister picked up?", now()).keywords,
            "hobbies Maria sister picked"
        );
        // Nothing but stop words: the query as it is.
        assert_eq!(analyze("what is it?", now()).keywords, "what is it?");
    }

    #[test]
    fn months_years_and_days_resolve_against_the_memorys_time() {
        let may = range("2025-05-01T00:00:00Z", "2025-06-01T00:00:00Z");
        assert_eq!(analyze("What did Maria do in May 2025?", now()).time, may);
        assert_eq!(analyze("What did Maria do in May?", now()).time, may);
        // A month still to come this year means last year's.
        assert_eq!(analyze("trips in September", now()).time, range("2024-09-01T00:00:00Z", "2024-10-01T00:00:00Z"));
        assert_eq!(
            analyze("What happened during 2024?", now()).time,
            range("2024-01-01T00:00:00Z", "2025-01-01T00:00:00Z")
        );
        assert_eq!(
            analyze("the deploy on March 3rd", now()).time,
            range("2025-03-03T00:00:00Z", "2025-03-04T00:00:00Z")
        );
        assert_eq!(analyze("errors on 2025-02-10", now()).time, range("2025-02-10T00:00:00Z", "2025-02-11T00:00:00Z"));
        let analysis = analyze("What did Maria get up to in May 2025?", now());
        assert_eq!(analysis.keywords, "Maria get");
        // "may" the verb is not a month.
        assert_eq!(analyze("may the cache grow without bound", now()).time, None);
    }

    #[test]
    fn relative_expressions_count_back_from_now() {
        assert_eq!(analyze("what broke yesterday", now()).time, range("2025-06-17T00:00:00Z", "2025-06-18T00:00:00Z"));
        assert_eq!(
            analyze("what did we decide last week", now()).time,
            range("2025-06-05T00:00:00Z", "2025-06-19T00:00:00Z")
        );
        assert_eq!(analyze("failures last month", now()).time, range("2025-05-01T00:00:00Z", "2025-06-01T00:00:00Z"));
        assert_eq!(
            analyze("the plan from two weeks ago", now()).time,
            range("2025-06-01T00:00:00Z", "2025-06-08T00:00:00Z")
        );
        assert_eq!(
            analyze("the weekend trip last weekend", now()).time,
            range("2025-06-14T00:00:00Z", "2025-06-16T00:00:00Z")
        );
        let before = analyze("What was the timeout before March 2025?", now());
        assert_eq!(before.time.map(|range| range.until), "2025-03-01T00:00:00Z".parse().ok());
        assert_eq!(before.keywords, "timeout");
        assert_eq!(before.anchor, None, "a date is not an anchor");
        let after = analyze("decisions after May 2025", now()).time.unwrap();
        assert_eq!(after.since, "2025-06-01T00:00:00Z".parse().unwrap());
    }

    #[test]
    fn an_event_names_a_time_by_its_words() {
        let question = analyze("What did the ledger use before the migration?", now());
        assert_eq!(question.time, None);
        let anchor = question.anchor.unwrap();
        assert_eq!((anchor.before, anchor.phrase.as_str()), (true, "migration"));
        assert_eq!(question.keywords, "ledger use migration");
        let since = analyze("what broke since we switched to Postgres and why", now()).anchor.unwrap();
        assert_eq!((since.before, since.phrase.as_str()), (false, "switched Postgres"));
        let at = Timestamp(1_000);
        assert!(anchor.range(at).contains(at) && !anchor.range(at).contains(Timestamp(1_001)));
        assert!(since.range(at).contains(at) && !since.range(at).contains(Timestamp(999)));
        assert_eq!(analyze("what fixed the flaky test", now()).anchor, None);
    }
}
