//! Hybrid search reads the question before it searches (issue 21): the
//! time it names, the people it names, the kind of answer it wants; a
//! reply is found through the question it answers; and a rare word BM25
//! finds is not outvoted by items the vector model cannot tell apart.
//!
//! Each test also runs the search with the step turned off, so that it
//! fails if the step stops mattering, not only if the answer moves.
//!
//! Uses all-MiniLM-L6-v2 from `scripts/fetch-model.sh`; without it these
//! tests fail with that instruction, they never skip.

mod common;

use mneme_events::{DecisionMade, Event, EventId, EventKind, MessageRecorded, Scope, Timestamp};
use mneme_projections::{AgentMemory, Fusion, MemoryConfig, SearchHit, SearchMode, SearchRequest};

/// 2025-01-06T00:00:00Z.
const START_MS: i64 = 1_736_121_600_000;
const DAY_MS: i64 = 86_400_000;

/// A memory of `observer`, who sees everyone's shared events.
struct Conversation {
    memory: AgentMemory,
    seq: u64,
}

impl Conversation {
    fn new() -> Conversation {
        let config = MemoryConfig { embedder: common::minilm(), ..MemoryConfig::default() };
        Conversation { memory: AgentMemory::new("demo", "observer", config).unwrap(), seq: 0 }
    }

    /// `agent` says `text` at `ms` after the start; returns its seq.
    fn say(&mut self, agent: &str, ms: i64, text: &str) -> u64 {
        let said = EventKind::MessageRecorded(MessageRecorded { role: "user".into(), text: text.into() });
        self.push(agent, ms, said)
    }

    fn push(&mut self, agent: &str, ms: i64, kind: EventKind) -> u64 {
        self.seq += 1;
        let event = Event::new("demo", agent, kind)
            .with_id(EventId::from_parts((START_MS + ms) as u64, u128::from(self.seq)))
            .with_ts(Timestamp::from_unix_millis(START_MS + ms))
            .with_scope(Scope::Shared);
        self.memory.apply(self.seq, &event).unwrap();
        self.seq
    }

    fn rank(&mut self, query: &str, seq: u64, adjust: impl Fn(&mut SearchRequest)) -> Option<usize> {
        let hits = self.hits(query, adjust);
        hits.iter().position(|hit| hit.seq == seq).map(|position| position + 1)
    }

    /// The top 10 hybrid hits, explained.
    fn hits(&mut self, query: &str, adjust: impl Fn(&mut SearchRequest)) -> Vec<SearchHit> {
        let mut request = SearchRequest::new(query, 10).with_mode(SearchMode::Hybrid);
        adjust(&mut request);
        request.explain = true;
        self.memory.commit().unwrap();
        let hits = mneme_projections::search(&self.memory, &request).unwrap();
        if std::env::var("DEBUG_RANKS").is_ok() {
            eprintln!("QUERY {query}");
            for hit in &hits {
                let explain: Vec<String> = hit
                    .explain
                    .iter()
                    .map(|rank| format!("{}:{}:{:.2}", rank.retriever, rank.rank, rank.score))
                    .collect();
                eprintln!("  {} {:.3} {} {:?}", hit.seq, hit.score, &hit.text[..hit.text.len().min(70)], explain);
            }
        }
        hits
    }
}

/// Small talk between two people, `count` turns from `ms` on, a minute apart.
fn small_talk(conversation: &mut Conversation, ms: i64, count: usize) {
    const LINES: &[&str] = &[
        "The weather has been so gloomy this week, I barely left the house.",
        "Ugh, same here.",
        "Work was chaos, we had three meetings about one meeting.",
        "Ha, that sounds about right.",
        "I made lentil soup for dinner last night, it turned out alright.",
        "Oh I know what you mean.",
        "My commute was awful today, the train stopped for twenty minutes.",
        "Honestly, relatable.",
    ];
    for turn in 0..count {
        let agent = if turn % 2 == 0 { "jon" } else { "maria" };
        conversation.say(agent, ms + turn as i64 * 60_000, LINES[turn % LINES.len()]);
    }
}

#[test]
fn a_reply_is_found_through_the_question_it_answers() {
    let mut conversation = Conversation::new();
    small_talk(&mut conversation, 0, 8);
    conversation.say("jon", DAY_MS, "Did you end up going anywhere over the long weekend?");
    let reply = conversation.say("maria", DAY_MS + 60_000, "Yes! We drove up north and stayed in a cabin by the lake.");
    small_talk(&mut conversation, 2 * DAY_MS, 8);
    conversation.say("jon", 3 * DAY_MS, "My weekend was quiet, I mostly cleaned the flat.");
    // The reply shares no word with the question; the turn it answers does.
    let query = "the long weekend away";
    let with_context = conversation.rank(query, reply, |_| {}).expect("the reply is found");
    let without = conversation.rank(query, reply, |request| request.weights.context_share = 0.0);
    assert!(with_context <= 2, "the reply ranks {with_context}");
    assert!(without.is_none_or(|without| without > with_context), "context lifts it: {without:?} → {with_context}");
}

#[test]
fn a_time_the_question_names_lifts_what_was_said_then() {
    let mut conversation = Conversation::new();
    // Two outings told alike, one in February and one in May 2025.
    let february = conversation.say("maria", 30 * DAY_MS, "We spent Saturday at the climbing gym, my arms still hurt.");
    small_talk(&mut conversation, 31 * DAY_MS, 6);
    let may = conversation.say(
        "maria",
        120 * DAY_MS,
        "We spent Saturday at the pottery studio, my hands still smell of clay.",
    );
    small_talk(&mut conversation, 121 * DAY_MS, 6);
    conversation.say("maria", 160 * DAY_MS, "Nothing much happening lately.");
    let query = "What did Maria do on the weekend in May 2025?";
    assert_eq!(conversation.rank(query, may, |_| {}), Some(1));
    let query = "What did Maria do on the weekend in February 2025?";
    assert_eq!(conversation.rank(query, february, |_| {}), Some(1));
    // The boost is what decides: without it one of the two months loses.
    let unboosted = [
        conversation
            .rank("What did Maria do on the weekend in May 2025?", may, |request| request.weights.time_weight = 0.0),
        conversation.rank("What did Maria do on the weekend in February 2025?", february, |request| {
            request.weights.time_weight = 0.0
        }),
    ];
    assert!(unboosted.iter().any(|rank| *rank != Some(1)), "{unboosted:?}");
}

#[test]
fn a_person_the_question_names_lifts_what_they_said() {
    let mut conversation = Conversation::new();
    let hearsay = conversation.say("jon", 0, "A friend of mine tried a pottery class once and hated every minute.");
    small_talk(&mut conversation, DAY_MS, 6);
    let own =
        conversation.say("maria", 2 * DAY_MS, "I signed up for a pottery class, my first bowl came out lopsided.");
    small_talk(&mut conversation, 3 * DAY_MS, 6);
    let query = "Has Maria tried a pottery class?";
    let ranked = conversation.rank(query, own, |_| {}).unwrap();
    let other = conversation.rank(query, hearsay, |_| {}).unwrap();
    assert!(ranked < other, "Maria's own words first: {ranked} vs {other}");
    let query = "Has Jon tried a pottery class?";
    let ranked = conversation.rank(query, hearsay, |_| {}).unwrap();
    let other = conversation.rank(query, own, |_| {}).unwrap();
    assert!(ranked < other, "Jon's words first when Jon is asked about: {ranked} vs {other}");
}

#[test]
fn a_question_about_a_decision_ranks_the_decision_first() {
    let mut conversation = Conversation::new();
    conversation.say("jon", 0, "We argued about the cache TTL for the ledger service all morning.");
    conversation.say("maria", 60_000, "The cache TTL of the ledger service drives me mad, it is far too long.");
    let decided = conversation.push(
        "maria",
        120_000,
        EventKind::DecisionMade(DecisionMade {
            title: "Cache TTL of the ledger service".into(),
            choice: "invalidate on every write and keep 300 s as a backstop".into(),
            rationale: "readers saw stale totals for minutes".into(),
            supersedes: None,
        }),
    );
    conversation.say("jon", 180_000, "Fine by me, the cache TTL debate is over for the ledger service.");
    let query = "What was decided about the cache TTL of the ledger service?";
    assert_eq!(conversation.rank(query, decided, |_| {}), Some(1));
    // The kind counts twice: as a boost, and in the graph's ranking.
    let without = conversation.rank(query, decided, |request| {
        request.weights.kind_weight = 0.0;
        request.weights.graph = 0.0;
    });
    assert_ne!(without, Some(1), "the kind it asks for is what lifts it");
}

/// Issue 21: in a memory of near-identical messages, a unique identifier
/// that BM25 ranks first stays first in hybrid; under rank fusion, newer
/// items the vectors cannot tell from it outvoted it.
#[test]
fn a_rare_identifier_bm25_finds_is_not_outvoted_by_vector_ties() {
    let mut conversation = Conversation::new();
    let mut wanted = 0;
    for number in 9000..9400u32 {
        let seq = conversation.say("coder", i64::from(number) * 1000, &format!("durable fact ferret{number}"));
        if number == 9129 {
            wanted = seq;
        }
    }
    assert_eq!(conversation.rank("ferret9129", wanted, |_| {}), Some(1));
    let by_rank = conversation.rank("ferret9129", wanted, |request| request.weights.fusion = Fusion::Rrf);
    assert_ne!(by_rank, Some(1), "rank fusion loses it, so this case still tests something");
}

/// What one retriever or boost gave a hit, if anything.
fn given(hit: &SearchHit, retriever: &str) -> Option<f32> {
    hit.explain.iter().find(|rank| rank.retriever == retriever).map(|rank| rank.score)
}

/// Issue 39: asked about a person, search weighs what they said, not how
/// often they spoke. Another agent's shared item reads "(from maria) …",
/// so the name alone matched, in BM25, every remark Maria made, the
/// shortest most, and her "Ha! Classic." outranked what she told.
#[test]
fn a_named_persons_remarks_do_not_outrank_what_they_told() {
    let mut conversation = Conversation::new();
    let mut told = Vec::new();
    for (day, (news, remark)) in [
        ("I signed up for a pottery class at the community studio, my first bowl came out lopsided.", "Ha! Classic."),
        ("I joined the bouldering gym downtown, my forearms hurt after every session.", "Honestly, relatable."),
        ("I bought binoculars and a field guide, I go out to the marsh at dawn spotting herons.", "Ugh, same here."),
    ]
    .into_iter()
    .enumerate()
    {
        let day = day as i64 * 7 * DAY_MS;
        small_talk(&mut conversation, day, 8);
        conversation.say("jon", day + DAY_MS, "Any new hobbies lately?");
        told.push(conversation.say("maria", day + DAY_MS + 60_000, news));
        conversation.say("jon", day + DAY_MS + 120_000, "A friend of mine took up knitting and loves it.");
        conversation.say("maria", day + DAY_MS + 180_000, remark);
    }
    let hits = conversation.hits("Which hobbies has Maria picked up?", |_| {});
    let first_told = hits.iter().position(|hit| told.contains(&hit.seq)).expect("something Maria told is found");
    let remarks: Vec<&str> = hits[..first_told].iter().map(|hit| hit.text.as_str()).collect();
    assert!(first_told <= 2, "what Maria told ranks {}, after {remarks:?}", first_told + 1);
    for hit in &hits {
        // Her name is no keyword: BM25 gives a remark of hers nothing.
        if hit.agent == "maria" && !told.contains(&hit.seq) {
            assert_eq!(given(hit, "bm25"), None, "{hit:?}");
        }
    }
}

/// Issue 39: a brief remark keeps the same share of the boosts as of its
/// retrievers' score: said by the person asked about, "Ugh, same here."
/// still answers nothing.
#[test]
fn a_brief_remark_keeps_only_its_share_of_the_boosts() {
    let mut conversation = Conversation::new();
    small_talk(&mut conversation, 0, 16);
    let told = conversation.say(
        "maria",
        DAY_MS,
        "Work was total chaos again today, three long meetings about planning one single meeting for the quarterly budget.",
    );
    let hits = conversation.hits("What did Maria say about work?", |_| {});
    let weight = SearchRequest::new("", 10).weights.speaker_weight;
    let told = hits.iter().find(|hit| hit.seq == told).expect("what Maria said is found");
    assert_eq!((given(told, "brevity"), given(told, "speaker")), (None, Some(weight)));
    let brief: Vec<&SearchHit> =
        hits.iter().filter(|hit| hit.agent == "maria" && given(hit, "brevity").is_some()).collect();
    assert!(!brief.is_empty(), "a brief remark of hers is among the hits: {hits:?}");
    for hit in brief {
        let keeps = given(hit, "brevity").unwrap();
        assert!(keeps < 1.0);
        assert!((given(hit, "speaker").unwrap() - keeps * weight).abs() < 1e-6, "{hit:?}");
    }
}

/// Issue 39: a reply carries the turn before it when that turn asks
/// something ("Any plans for the weekend?" / "We drove up north"); a
/// remark on a statement ("We drove up north…" / "Ha! Classic.") carries
/// nothing of it, or every remark would rank with what it remarks on.
#[test]
fn a_remark_on_a_statement_does_not_carry_it() {
    let mut conversation = Conversation::new();
    small_talk(&mut conversation, 0, 8);
    let statement = conversation.say("jon", DAY_MS, "We drove up north and stayed in a cabin by the lake.");
    let remark = conversation.say("maria", DAY_MS + 60_000, "Ha! Classic.");
    small_talk(&mut conversation, 2 * DAY_MS, 8);
    let query = "the cabin by the lake up north";
    let hits = conversation.hits(query, |_| {});
    assert_eq!(hits.first().map(|hit| hit.seq), Some(statement));
    let carried = hits.iter().find(|hit| hit.seq == remark).and_then(|hit| given(hit, "context"));
    assert_eq!(carried, None, "the remark carries the statement: {hits:?}");
    // The same remark after a question carries it.
    let asked = conversation.say("jon", 3 * DAY_MS, "Did you see the cabin by the lake up north?");
    let answer = conversation.say("maria", 3 * DAY_MS + 60_000, "Ha! Classic.");
    let hits = conversation.hits(query, |_| {});
    assert!(hits.iter().any(|hit| hit.seq == asked));
    let carried = hits.iter().find(|hit| hit.seq == answer).and_then(|hit| given(hit, "context"));
    assert!(carried.is_some(), "the reply carries the question: {hits:?}");
}

/// Issue 39: asked about a person, what they asked others is not what
/// they told: "Are you still thinking about leaving your job?" is about
/// whom Maria asks, and earns no speaker boost.
#[test]
fn what_a_person_asked_is_not_what_they_told() {
    let mut conversation = Conversation::new();
    small_talk(&mut conversation, 0, 8);
    let asked = conversation.say("maria", DAY_MS, "Are you still thinking about leaving your job for a new one?");
    conversation.say("jon", DAY_MS + 60_000, "Still thinking, I'll let you know.");
    small_talk(&mut conversation, 2 * DAY_MS, 8);
    let told = conversation.say(
        "maria",
        3 * DAY_MS,
        "I handed in my notice, my new job is nurse practitioner at a clinic, I start next month.",
    );
    let hits = conversation.hits("What is Maria's new job?", |_| {});
    let rank = |seq: u64| hits.iter().position(|hit| hit.seq == seq);
    let told_rank = rank(told).expect("what Maria told is found");
    assert!(rank(asked).is_none_or(|asked| asked > told_rank), "{hits:?}");
    let asked = hits.iter().find(|hit| hit.seq == asked);
    assert!(asked.is_none_or(|hit| given(hit, "speaker").is_none()), "{asked:?}");
    assert!(given(&hits[told_rank], "speaker").is_some());
}

/// Issue 39: asked about what a person said, the expansion by the best
/// hits' rare words starts from what that person told. Started from other
/// people's hits too, it searched for their names and places, and Maria's
/// second turn about her sister (which names her only as "Ada") was
/// outvoted by theirs.
#[test]
fn the_expansion_starts_from_what_the_person_asked_about_told() {
    let mut conversation = Conversation::new();
    let moved = [
        ("maria", "My sister Ada just moved to Atlanta to work at a bakery."),
        ("priya", "My brother Tomas just moved to Minneapolis to work at a law firm."),
        ("zara", "My older sister Eli just moved to Atlanta to work at a children's hospital."),
        ("diego", "My younger brother Eli just moved to Austin to work at the city hospital."),
    ];
    for (day, (agent, text)) in moved.into_iter().enumerate() {
        small_talk(&mut conversation, day as i64 * DAY_MS, 6);
        conversation.say(agent, day as i64 * DAY_MS + 3_600_000, text);
    }
    small_talk(&mut conversation, 10 * DAY_MS, 6);
    let news = conversation.say(
        "maria",
        11 * DAY_MS,
        "Oh, and Ada bought a house with a huge yard, the housewarming is next month.",
    );
    conversation.say("zara", 11 * DAY_MS + 60_000, "Oh, and Tomas and Eli got a puppy, a tiny beagle called Biscuit.");
    small_talk(&mut conversation, 12 * DAY_MS, 6);
    let hits = conversation.hits("What news did Maria share about the sister who moved to Atlanta?", |_| {});
    let found = hits.iter().position(|hit| hit.seq == news).map(|rank| rank + 1);
    assert!(found.is_some_and(|rank| rank <= 3), "Maria's news ranks {found:?}: {hits:?}");
    // The expansion ranks it first: nothing it searched for came from the
    // others' relocations.
    let expanded: Vec<(f32, u64)> = hits.iter().filter_map(|hit| Some((given(hit, "expansion")?, hit.seq))).collect();
    let best = expanded.iter().max_by(|a, b| a.0.total_cmp(&b.0)).map(|(_, seq)| *seq);
    assert_eq!(best, Some(news), "{hits:?}");
}

/// Issue 39: a question tells nothing; the reply that answers it carries
/// it. Asked about Maria's hobbies, Jon's "Picked up any new hobbies
/// lately?" matches every word and keeps only `brevity_floor` of its
/// score, so Maria's answer, which carries it, ranks first.
#[test]
fn a_question_keeps_only_the_floor_of_its_score() {
    let mut conversation = Conversation::new();
    small_talk(&mut conversation, 0, 8);
    let asked = conversation.say("jon", DAY_MS, "Picked up any new hobbies lately?");
    let answer = conversation.say(
        "maria",
        DAY_MS + 60_000,
        "I bought binoculars and a field guide, I go out to the marsh at dawn spotting herons.",
    );
    small_talk(&mut conversation, 2 * DAY_MS, 8);
    let hits = conversation.hits("Which hobbies has Maria picked up?", |_| {});
    assert_eq!(hits.first().map(|hit| hit.seq), Some(answer), "{hits:?}");
    let floor = SearchRequest::new("", 10).weights.brevity_floor;
    let question = hits.iter().find(|hit| hit.seq == asked).expect("the question is found");
    assert_eq!(given(question, "brevity"), Some(floor), "{question:?}");
}
