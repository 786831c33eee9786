//! The second kind of swarm `mneme-tools eval` asks: long conversations
//! between pairs of people over months, one turn per `message_recorded`
//! event at the time it was said, with turn-level ground truth.
//!
//! Each person has a life drawn from word lists (`people`): hobbies taken
//! up and how they went, trips, a pet and what it did, a relative who
//! moved and their news, a new job, an achievement, a dislike, books. Each
//! is told once, in one session, often as the reply to the other person's
//! question ("How was your trip?" / "We just got back from Lisbon…"), in
//! between greetings, small talk and hearsay that shares the facts' words
//! but not their person. Sessions of different pairs interleave in time.
//!
//! Questions are of five types (single-hop, multi-hop, temporal, list,
//! inference) and name the turns that answer them; a question is scored by
//! the fraction of those turns retrieved. They are written from what each
//! turn says, never from what a retriever is expected to find. As with the
//! SWE swarm, the same seed and size give the same bytes.

mod people;

use std::collections::BTreeMap;

use mneme_events::{EventId, Timestamp};
use serde_json::{Map, Value, json};

use crate::eval::dataset::{Dataset, EVAL_SWARM, GroundTruth, Question, QuestionKind, Scoring};
use crate::eval::generator::SeededRandom;
use people::*;

/// 2025-01-06T00:00:00Z: the conversations run from the start of 2025.
const START_UNIX_MS: u64 = 1_736_121_600_000;
const MILLIS_PER_DAY: u64 = 86_400_000;

/// How many pairs talk, and how many sessions each pair has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConversationSize {
    pub pairs: usize,
    pub sessions: usize,
}

impl ConversationSize {
    /// `tiny`, `small` (about 800 turns), `medium` (about 3,300), `large`
    /// (about 13,000), or `pairs:sessions`.
    pub fn parse(text: &str) -> Result<ConversationSize, String> {
        let size = match text {
            "tiny" => ConversationSize { pairs: 1, sessions: 6 },
            "small" => ConversationSize { pairs: 3, sessions: 16 },
            "medium" => ConversationSize { pairs: 8, sessions: 24 },
            "large" => ConversationSize { pairs: 24, sessions: 32 },
            custom => {
                let numbers: Vec<Option<usize>> = custom.split(':').map(|part| part.parse().ok()).collect();
                let [Some(pairs), Some(sessions)] = numbers.as_slice() else {
                    return Err(format!(
                        "size {custom:?}: expected tiny, small, medium, large or pairs:sessions (e.g. 3:16)"
                    ));
                };
                ConversationSize { pairs: *pairs, sessions: *sessions }
            }
        };
        let most_pairs = NAMES.len() / 2;
        if size.pairs == 0 || size.pairs > most_pairs || size.sessions < 4 {
            return Err(format!("size {text:?}: expected 1 to {most_pairs} pairs and at least 4 sessions"));
        }
        Ok(size)
    }
}

/// One thing a person tells, in the session it is told in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Beat {
    Hobby(usize),
    HobbyProgress,
    Trip(usize),
    Pet,
    PetNews,
    Relative,
    RelativeNews,
    Job,
    Achievement,
    Dislike,
    Book(usize),
}

/// A person's life, as indices into the word lists.
struct Person {
    name: &'static str,
    agent: String,
    hobbies: [usize; 3],
    trips: Vec<usize>,
    pet: (usize, usize, usize),
    relative: (usize, usize, usize, usize, usize),
    job: usize,
    achievement: usize,
    dislike: usize,
    books: [usize; 2],
}

impl Person {
    fn draw(random: &mut SeededRandom, name: &'static str) -> Person {
        // At least one trip abroad, so "has X been abroad?" has an answer.
        let abroad: Vec<usize> = (0..TRIPS.len()).filter(|index| TRIPS[*index].abroad).collect();
        let first = abroad[random.below(abroad.len())];
        let mut trips = vec![first];
        while trips.len() < 2 + random.below(2) {
            let candidate = random.below(TRIPS.len());
            if !trips.contains(&candidate) {
                trips.push(candidate);
            }
        }
        Person {
            name,
            agent: name.to_lowercase(),
            hobbies: random.distinct::<3>(HOBBIES.len()),
            trips,
            pet: (random.below(PETS.len()), random.below(PET_NAMES.len()), random.below(PET_NEWS.len())),
            relative: (
                random.below(RELATIVES.len()),
                random.below(RELATIVE_NAMES.len()),
                random.below(CITIES.len()),
                random.below(WORKPLACES.len()),
                random.below(RELATIVE_NEWS.len()),
            ),
            job: random.below(JOBS.len()),
            achievement: random.below(ACHIEVEMENTS.len()),
            dislike: random.below(DISLIKES.len()),
            books: random.distinct::<2>(BOOKS.len()),
        }
    }

    /// What the person tells over the conversation, each in a session:
    /// follow-ups after what they follow.
    fn schedule(&self, random: &mut SeededRandom, sessions: usize) -> Vec<(usize, Beat)> {
        let anywhere = |random: &mut SeededRandom| random.below(sessions);
        let first_half = |random: &mut SeededRandom| random.below(sessions / 2);
        let mut beats = Vec::new();
        let hobby_session = first_half(random);
        beats.push((hobby_session, Beat::Hobby(0)));
        beats.push((hobby_session + 1 + random.below(sessions - hobby_session - 1), Beat::HobbyProgress));
        beats.push((anywhere(random), Beat::Hobby(1)));
        beats.push((anywhere(random), Beat::Hobby(2)));
        for trip in 0..self.trips.len() {
            beats.push((anywhere(random), Beat::Trip(trip)));
        }
        let pet_session = first_half(random);
        beats.push((pet_session, Beat::Pet));
        beats.push((pet_session + 1 + random.below(sessions - pet_session - 1), Beat::PetNews));
        let relative_session = first_half(random);
        beats.push((relative_session, Beat::Relative));
        beats.push((relative_session + 1 + random.below(sessions - relative_session - 1), Beat::RelativeNews));
        for beat in [Beat::Job, Beat::Achievement, Beat::Dislike, Beat::Book(0), Beat::Book(1)] {
            beats.push((anywhere(random), beat));
        }
        beats
    }
}

/// Turns that tell something, by person and beat.
type Told = BTreeMap<(usize, BeatKey), Emitted>;

/// A beat as a map key.
type BeatKey = (u8, usize);

fn key(beat: Beat) -> BeatKey {
    match beat {
        Beat::Hobby(index) => (0, index),
        Beat::HobbyProgress => (1, 0),
        Beat::Trip(index) => (2, index),
        Beat::Pet => (3, 0),
        Beat::PetNews => (4, 0),
        Beat::Relative => (5, 0),
        Beat::RelativeNews => (6, 0),
        Beat::Job => (7, 0),
        Beat::Achievement => (8, 0),
        Beat::Dislike => (9, 0),
        Beat::Book(index) => (10, index),
    }
}

#[derive(Debug, Clone)]
struct Emitted {
    id: String,
    unix_ms: u64,
}

struct Writer {
    random: SeededRandom,
    clock_ms: u64,
    events: Vec<Value>,
}

impl Writer {
    /// One turn, 15 to 120 s after the previous one (times strictly
    /// increase, so ids sort in publish order).
    fn say(&mut self, person: &Person, text: String) -> Emitted {
        self.clock_ms += self.random.between(15_000, 120_000);
        let random_bits = (u128::from(self.random.next_u64()) << 64) | u128::from(self.random.next_u64());
        let id = EventId::from_parts(self.clock_ms, random_bits).to_string();
        let mut event = Map::new();
        event.insert("id".into(), Value::String(id.clone()));
        event.insert("swarm".into(), Value::String(EVAL_SWARM.into()));
        event.insert("agent".into(), Value::String(person.agent.clone()));
        event.insert("ts".into(), Value::String(rfc3339(self.clock_ms)));
        event.insert("kind".into(), Value::String("message_recorded".into()));
        event.insert("data".into(), json!({"role": "user", "text": text}));
        event.insert("scope".into(), Value::String("shared".into()));
        self.events.push(Value::Object(event));
        Emitted { id, unix_ms: self.clock_ms }
    }

    fn pick(&mut self, items: &[&'static str]) -> &'static str {
        items[self.random.below(items.len())]
    }
}

/// A session: which pair, and when it starts.
struct Session {
    pair: usize,
    index: usize,
    start_ms: u64,
}

/// Conversations of `size`, the same for the same `seed`.
pub fn generate_conversations(seed: u64, size: ConversationSize) -> Dataset {
    let mut random = SeededRandom::new(seed ^ 0x636f_6e76);
    let order = shuffled(&mut random, NAMES.len());
    let people: Vec<Person> =
        order.iter().take(size.pairs * 2).map(|index| Person::draw(&mut random, NAMES[*index])).collect();
    let schedules: Vec<Vec<(usize, Beat)>> =
        people.iter().map(|person| person.schedule(&mut random, size.sessions)).collect();
    let mut sessions = Vec::new();
    for pair in 0..size.pairs {
        let mut day = random.below(10) as u64;
        for index in 0..size.sessions {
            let hour = random.between(8, 21);
            sessions.push(Session { pair, index, start_ms: START_UNIX_MS + day * MILLIS_PER_DAY + hour * 3_600_000 });
            day += random.between(3, 12);
        }
    }
    sessions.sort_by_key(|session| (session.start_ms, session.pair));

    let mut writer = Writer { random, clock_ms: START_UNIX_MS, events: Vec::new() };
    let mut told = Told::new();
    for session in &sessions {
        writer.clock_ms = writer.clock_ms.max(session.start_ms);
        let pair = [session.pair * 2, session.pair * 2 + 1];
        let beats: Vec<(usize, Beat)> = pair
            .iter()
            .flat_map(|person| {
                schedules[*person].iter().filter(|(at, _)| *at == session.index).map(|(_, beat)| (*person, *beat))
            })
            .collect();
        tell_session(&mut writer, &people, pair, &beats, &mut told);
    }

    let mut truth = GroundTruth::default();
    for (index, person) in people.iter().enumerate() {
        ask(&mut truth, index, person, &told);
    }
    for (number, question) in truth.questions.iter_mut().enumerate() {
        question.id = format!("c{number:04}");
    }
    let agents = people.iter().map(|person| person.agent.clone()).collect();
    Dataset {
        seed,
        swarm: crate::eval::dataset::SwarmKind::Conversations,
        size: format!("{}:{}", size.pairs, size.sessions),
        agents,
        events: writer.events,
        truth,
    }
}

fn shuffled(random: &mut SeededRandom, count: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..count).collect();
    for index in (1..count).rev() {
        order.swap(index, random.below(index + 1));
    }
    order
}

fn tell_session(writer: &mut Writer, people: &[Person], pair: [usize; 2], beats: &[(usize, Beat)], told: &mut Told) {
    let opener = pair[writer.random.below(2)];
    let other = if opener == pair[0] { pair[1] } else { pair[0] };
    let greeting = writer.pick(GREETINGS).replace("{other}", people[other].name);
    writer.say(&people[opener], greeting);
    let reply = writer.pick(GREETING_REPLIES).to_string();
    writer.say(&people[other], reply);
    // Small talk falls between the beats; the beats keep their order.
    let mut sequence: Vec<Option<(usize, Beat)>> = beats.iter().copied().map(Some).collect();
    for _ in 0..2 + writer.random.below(5) {
        let at = writer.random.below(sequence.len() + 1);
        sequence.insert(at, None);
    }
    for slot in sequence {
        match slot {
            Some((person, beat)) => {
                let partner = if person == pair[0] { pair[1] } else { pair[0] };
                tell_beat(writer, people, person, partner, beat, told);
            }
            None => chat(writer, people, pair),
        }
    }
    let closer = pair[writer.random.below(2)];
    let goodbye = writer.pick(GOODBYES).to_string();
    writer.say(&people[closer], goodbye);
}

/// Small talk, or hearsay: the facts' words about nobody in the pair.
fn chat(writer: &mut Writer, people: &[Person], pair: [usize; 2]) {
    let speaker = pair[writer.random.below(2)];
    let listener = if speaker == pair[0] { pair[1] } else { pair[0] };
    let text = if writer.random.chance(0.3) {
        let hobby = HOBBIES[writer.random.below(HOBBIES.len())].name;
        let place = TRIPS[writer.random.below(TRIPS.len())].place;
        let pet = PETS[writer.random.below(PETS.len())].0;
        let book = BOOKS[writer.random.below(BOOKS.len())].0;
        writer
            .pick(HEARSAY)
            .replace("{hobby}", hobby)
            .replace("{place}", place)
            .replace("{pet}", pet)
            .replace("{book}", book)
    } else {
        let thing = writer.pick(SMALL_TALK_THINGS);
        writer.pick(SMALL_TALK).replace("{thing}", thing)
    };
    writer.say(&people[speaker], text);
    let reply = writer.pick(SMALL_TALK_REPLIES).to_string();
    writer.say(&people[listener], reply);
}

fn tell_beat(writer: &mut Writer, people: &[Person], person: usize, partner: usize, beat: Beat, told: &mut Told) {
    let who = &people[person];
    let prompts: &[&str] = match beat {
        Beat::Hobby(_) => HOBBY_PROMPTS,
        Beat::Trip(_) => TRIP_PROMPTS,
        Beat::Pet => PET_PROMPTS,
        Beat::Relative | Beat::RelativeNews => FAMILY_PROMPTS,
        Beat::Job => WORK_PROMPTS,
        Beat::Book(_) => READING_PROMPTS,
        Beat::HobbyProgress | Beat::PetNews | Beat::Achievement | Beat::Dislike => &[],
    };
    if !prompts.is_empty() && writer.random.chance(0.5) {
        let prompt = writer.pick(prompts).to_string();
        writer.say(&people[partner], prompt);
    }
    let text = match beat {
        Beat::Hobby(index) => {
            let hobby = &HOBBIES[who.hobbies[index]];
            format!("{}.", capitalise(hobby.started[writer.random.below(2)]))
        }
        Beat::HobbyProgress => format!("Quick update: {}.", HOBBIES[who.hobbies[0]].progress),
        Beat::Trip(index) => format!("We just got back from {}.", TRIPS[who.trips[index]].told),
        Beat::Pet => {
            let (species, name, _) = who.pet;
            format!("We adopted a {} last weekend, we named her {}!", PETS[species].0, PET_NAMES[name])
        }
        Beat::PetNews => {
            let (_, name, news) = who.pet;
            format!("{}.", PET_NEWS[news].replace("{pet}", PET_NAMES[name]))
        }
        Beat::Relative => {
            let (relation, name, city, workplace, _) = who.relative;
            format!(
                "My {} {} just moved to {} to work at {}.",
                RELATIVES[relation], RELATIVE_NAMES[name], CITIES[city], WORKPLACES[workplace]
            )
        }
        Beat::RelativeNews => {
            let (_, name, _, _, news) = who.relative;
            format!("Oh, and {}.", RELATIVE_NEWS[news].replace("{name}", RELATIVE_NAMES[name]))
        }
        Beat::Job => {
            let (role, place) = JOBS[who.job];
            format!("I handed in my notice! I'm starting as a {role} at {place} next month.")
        }
        Beat::Achievement => format!("Big news: {}!", ACHIEVEMENTS[who.achievement].said),
        Beat::Dislike => format!("{}.", capitalise(DISLIKES[who.dislike].0)),
        Beat::Book(index) => {
            let (title, reaction) = BOOKS[who.books[index]];
            format!("I just finished {title}, {reaction}.")
        }
    };
    let emitted = writer.say(who, text);
    told.insert((person, key(beat)), emitted);
    let reaction = writer.pick(REACTIONS).to_string();
    writer.say(&people[partner], reaction);
}

fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map(|first| first.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

fn month_of(unix_ms: u64) -> (usize, i32) {
    let timestamp = Timestamp::from_unix_millis(unix_ms as i64).to_string();
    // RFC 3339: "2025-05-14T…".
    let year = timestamp[..4].parse().expect("a year");
    let month: usize = timestamp[5..7].parse().expect("a month");
    (month - 1, year)
}

/// The person's questions, each naming the turns that answer it.
fn ask(truth: &mut GroundTruth, index: usize, person: &Person, told: &Told) {
    let name = person.name;
    let turn = |beat: Beat| told[&(index, key(beat))].clone();
    let mut question = |kind: QuestionKind, text: String, answers: Vec<Emitted>| {
        truth.questions.push(Question {
            id: String::new(),
            kind,
            agent: person.agent.clone(),
            text,
            as_of: None,
            entity: None,
            answers: answers.into_iter().map(|emitted| emitted.id).collect(),
            scoring: Scoring::Each,
        });
    };
    let (species, pet_name, _) = person.pet;
    let pet_kind = PETS[species].1;
    let (relation, _, city, _, _) = person.relative;
    let relation = RELATIVES[relation];

    // Single-hop: one turn says it, in other words than the question.
    question(QuestionKind::SingleHop, format!("What is the name of {name}'s {pet_kind}?"), vec![turn(Beat::Pet)]);
    question(
        QuestionKind::SingleHop,
        format!("Which city did {name}'s {relation} relocate to?"),
        vec![turn(Beat::Relative)],
    );
    question(QuestionKind::SingleHop, format!("What is {name}'s new job?"), vec![turn(Beat::Job)]);

    // Multi-hop: the second turn names what the question asks about only
    // through the first.
    question(
        QuestionKind::MultiHop,
        format!("What happened with {name}'s {pet_kind} after it was adopted?"),
        vec![turn(Beat::Pet), turn(Beat::PetNews)],
    );
    question(
        QuestionKind::MultiHop,
        format!("What news did {name} share about the {relation} who moved to {}?", CITIES[city]),
        vec![turn(Beat::Relative), turn(Beat::RelativeNews)],
    );
    let started = turn(Beat::Hobby(0));
    let (month, year) = month_of(started.unix_ms);
    question(
        QuestionKind::MultiHop,
        format!("How is the hobby {name} took up in {} {year} going?", MONTHS[month]),
        vec![started, turn(Beat::HobbyProgress)],
    );

    // Temporal: when something happened, or what happened in a month.
    let trip = &TRIPS[person.trips[0]];
    question(QuestionKind::Temporal, format!("When did {name} go to {}?", trip.place), vec![turn(Beat::Trip(0))]);
    let achievement = &ACHIEVEMENTS[person.achievement];
    question(QuestionKind::Temporal, format!("When did {name} {}?", achievement.asked), vec![turn(Beat::Achievement)]);
    question(QuestionKind::Temporal, format!("When did {name} adopt {}?", PET_NAMES[pet_name]), vec![turn(Beat::Pet)]);
    let mut by_month: BTreeMap<(i32, usize), Vec<Emitted>> = BTreeMap::new();
    for ((teller, _), emitted) in told.range((index, (0, 0))..=(index, (u8::MAX, usize::MAX))) {
        debug_assert_eq!(*teller, index);
        let (month, year) = month_of(emitted.unix_ms);
        by_month.entry((year, month)).or_default().push(emitted.clone());
    }
    if let Some(((year, month), turns)) =
        by_month.into_iter().filter(|(_, turns)| turns.len() >= 2).max_by_key(|(_, turns)| turns.len())
    {
        question(QuestionKind::Temporal, format!("What did {name} get up to in {} {year}?", MONTHS[month]), turns);
    }

    // List: several turns, each one item of the answer.
    question(
        QuestionKind::List,
        format!("Which hobbies has {name} picked up?"),
        (0..3).map(|hobby| turn(Beat::Hobby(hobby))).collect(),
    );
    question(
        QuestionKind::List,
        format!("Where has {name} travelled?"),
        (0..person.trips.len()).map(|trip| turn(Beat::Trip(trip))).collect(),
    );
    question(
        QuestionKind::List,
        format!("What books has {name} read?"),
        (0..2).map(|book| turn(Beat::Book(book))).collect(),
    );

    // Inference: the answer is stated in other words, or needs a step.
    let abroad: Vec<Emitted> = (0..person.trips.len())
        .filter(|trip| TRIPS[person.trips[*trip]].abroad)
        .map(|trip| turn(Beat::Trip(trip)))
        .collect();
    question(QuestionKind::Inference, format!("Has {name} ever been abroad?"), abroad);
    question(QuestionKind::Inference, DISLIKES[person.dislike].1.replace("{name}", name), vec![turn(Beat::Dislike)]);
    question(QuestionKind::Inference, format!("Does {name} have any pets?"), vec![turn(Beat::Pet)]);
    if achievement.sporty {
        question(QuestionKind::Inference, format!("Is {name} into fitness?"), vec![turn(Beat::Achievement)]);
    }
    if relation.contains("brother") || relation.contains("sister") {
        question(QuestionKind::Inference, format!("Does {name} have any siblings?"), vec![turn(Beat::Relative)]);
    }
}

fn rfc3339(unix_ms: u64) -> String {
    Timestamp::from_unix_millis(unix_ms as i64).to_string()
}

#[cfg(test)]
mod tests;
