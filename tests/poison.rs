//! Poison on the log: records that reached the JetStream log without
//! passing the API (another writer, an older or newer producer, a damaged
//! import). Each is
//! dead-lettered once with its reason and counted in the metrics; the
//! consumer applies every good event around them, never stalls and never
//! loops, also across a restart.

mod common;

use common::{MnemeServer, typed};
use mneme_api::ErrorBody;
use mneme_api::log::{AcceptedEvents, DeadLetters};
use mneme_api::memory::{ItemAnswer, ReplayAnswer, SearchAnswer};
use mneme_nats::server::NatsServer;
use serde_json::{Value, json};

fn good_event(number: u32, agent: &str, text: &str) -> Value {
    json!({"id": format!("01KG00000000000000000000{number:02}"), "swarm": "demo", "agent": agent,
        "ts": format!("2026-04-01T10:00:{number:02}Z"), "kind": "message_recorded",
        "data": {"role": "assistant", "text": text}})
}

/// Each poison record, filed under an agent, and the words its dead letter's
/// reason must contain.
fn poison() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let mut missing_field = good_event(50, "coder", "x");
    missing_field["data"] = json!({"role": "assistant"});
    let mut unknown_kind = good_event(51, "coder", "x");
    unknown_kind["kind"] = json!("thought_teleported");
    let mut future_schema = good_event(52, "coder", "x");
    future_schema["schema_version"] = json!(99);
    let mut other_swarm = good_event(53, "coder", "x");
    other_swarm["swarm"] = json!("elsewhere");
    let filed_under_another_agent = good_event(54, "planner", "a valid event filed under the coder's subject");
    let mut bad_timestamp = good_event(55, "coder", "x");
    bad_timestamp["ts"] = json!("yesterday at noon");
    // The id of the first good event (posted before any poison) with other
    // content, published with no `Nats-Msg-Id`, as after the server's
    // duplicate window: stored, and refused by memory (issue 16).
    let conflicting_duplicate = good_event(0, "coder", "other content under the first event's id");

    vec![
        ("coder", b"\x00\x9f\x92\x96 not even utf-8".to_vec(), "malformed_json"),
        ("coder", b"{\"this is\": \"not an event\"}".to_vec(), "unknown_field"),
        ("coder", b"[1, 2, 3]".to_vec(), "not_an_object"),
        ("coder", missing_field.to_string().into_bytes(), "data.text"),
        ("coder", unknown_kind.to_string().into_bytes(), "thought_teleported"),
        ("coder", future_schema.to_string().into_bytes(), "schema_version 99"),
        ("coder", other_swarm.to_string().into_bytes(), "swarm \"elsewhere\""),
        ("coder", filed_under_another_agent.to_string().into_bytes(), "agent \"planner\""),
        ("coder", bad_timestamp.to_string().into_bytes(), "invalid_timestamp"),
        (
            "coder",
            conflicting_duplicate.to_string().into_bytes(),
            // The seq the first good event got (the log may hold a lease's
            // fence before it): filled in once it is known.
            "conflicting_duplicate: event id 01KG0000000000000000000000 was first applied at seq {first_seq}",
        ),
    ]
}

fn metric(server: &MnemeServer, name_and_labels: &str) -> u64 {
    let metrics = ureq::get(&format!("{}/metrics", server.url)).call().unwrap().into_string().unwrap();
    metrics
        .lines()
        .find(|line| line.starts_with(name_and_labels))
        .and_then(|line| line.rsplit(' ').next())
        .map(|value| value.parse::<f64>().unwrap() as u64)
        .unwrap_or(0)
}

#[test]
fn poison_records_are_dead_lettered_once_with_their_reason_and_the_consumer_moves_on() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let nats = runtime.block_on(NatsServer::require());
    let work = tempfile::tempdir().unwrap();
    let mut server = MnemeServer::start(work.path(), Some(&nats.url()));
    let poison = poison();

    // Good events through the API, poison straight onto the events
    // subjects with a plain client, as a foreign or broken producer would.
    let jetstream =
        runtime.block_on(async { async_nats::jetstream::new(async_nats::connect(nats.url()).await.unwrap()) });
    let mut poison_seqs = Vec::new();
    let mut first_seq = None;
    for (number, (agent, bytes, _)) in poison.iter().enumerate() {
        let good = good_event(number as u32, "coder", &format!("the coder rotated signing key number {number}"));
        let (status, accepted) = server.post("/v1/events", &good.to_string());
        assert_eq!(status, 202, "{accepted}");
        first_seq.get_or_insert(typed::<AcceptedEvents>("POST /v1/events", accepted).accepted[0].seq);
        let subject = format!("mneme.demo.{agent}.events.message_recorded");
        let seq = runtime.block_on(async {
            jetstream.publish(subject, bytes.clone().into()).await.unwrap().await.unwrap().sequence
        });
        poison_seqs.push(seq);
    }
    eprintln!("injected: {} poison records interleaved with {} good events on the log", poison.len(), poison.len());
    // Not poison, but it used to act like it: a valid message of 60,000
    // `file:line` references (960 KB) took graph extraction 20 s, quadratic
    // in the references, while every later event of the agent waited. It
    // must be applied within the 10 s a query waits for its seq.
    let references = good_event(39, "coder", &"src/lib.rs:10:5 ".repeat(60_000));
    let (status, accepted) = server.post("/v1/events", &references.to_string());
    assert_eq!(status, 202, "{accepted}");
    let last_good = good_event(40, "coder", "the last good event: the ledger migration finished");
    let accepted: AcceptedEvents = server.post_typed("/v1/events", &last_good.to_string());
    let last_seq = accepted.accepted[0].seq;

    // The consumer went past every poison record: the last event is found.
    let hits: SearchAnswer = server
        .get_typed(&format!("/v1/swarms/demo/agents/coder/search?q=ledger+migration&mode=bm25&min_seq={last_seq}"));
    assert_eq!(hits.hits[0].item_id, "01KG0000000000000000000040", "{hits:?}");
    let all_good: SearchAnswer = server
        .get_typed(&format!("/v1/swarms/demo/agents/coder/search?q=rotated+signing&mode=bm25&k=50&min_seq={last_seq}"));
    assert_eq!(all_good.hits.len(), poison.len(), "every good event was applied: {all_good:?}");

    let check_letters = |server: &MnemeServer| {
        let letters = server.get_typed::<DeadLetters>("/v1/swarms/demo/deadletters").dead_letters;
        let seqs: Vec<u64> = letters.iter().map(|letter| letter.seq).collect();
        assert_eq!(seqs, poison_seqs, "one dead letter per poison record, no more: {letters:?}");
        for (letter, (_, _, expected)) in letters.iter().zip(&poison) {
            let expected = &expected.replace("{first_seq}", &first_seq.expect("a good event").to_string());
            let reason = &letter.reason;
            assert!(reason.contains(expected), "seq {}: reason {reason:?} should name {expected:?}", letter.seq);
            eprintln!("checked: seq {} dead-lettered: {reason}", letter.seq);
        }
    };
    check_letters(&server);
    assert_eq!(
        metric(&server, "mneme_events_dead_lettered_total{swarm=\"demo\",agent=\"coder\"}"),
        poison.len() as u64
    );
    assert_eq!(metric(&server, "mneme_conflicting_duplicates_total{swarm=\"demo\",agent=\"coder\"}"), 1);
    let first: ItemAnswer = server.get_typed("/v1/swarms/demo/agents/coder/items/01KG0000000000000000000000");
    assert!(first.text.contains("signing key number 0"), "{first:?}");

    // Through the API a conflicting duplicate is refused before it reaches
    // the log; the same event again (a retry with a new time) is a duplicate.
    let mut retried = good_event(1, "coder", "the coder rotated signing key number 1");
    retried["ts"] = json!("2026-04-01T11:00:00Z");
    let answer: AcceptedEvents = server.post_typed("/v1/events", &retried.to_string());
    assert!(answer.accepted[0].duplicate, "{answer:?}");
    let changed = good_event(1, "coder", "different text under a used id");
    let (status, ErrorBody { error }) =
        server.post_refused("/v1/events", &json!([good_event(42, "coder", "fine"), changed]).to_string());
    assert_eq!(status, 409, "{error:?}");
    assert_eq!((error.code.as_str(), error.field.as_deref()), ("conflicting_duplicate", Some("[1].id")), "{error:?}");
    eprintln!("checked: a conflicting duplicate over HTTP is refused: {}", error.message);
    let verified: ReplayAnswer =
        server.post_typed(&format!("/v1/swarms/demo/agents/coder/replay?verify=true&min_seq={last_seq}"), "{}");
    assert_eq!(verified.matches, Some(true), "{verified:?}");
    assert_eq!(verified.dead_lettered, poison.len(), "replay skips the same records: {verified:?}");

    // After a restart the memory resumes past the poison: nothing is
    // dead-lettered again, nothing stalls.
    server.restart();
    let next = good_event(41, "coder", "after the restart the gateway timeout was raised");
    let next_seq = server.post_typed::<AcceptedEvents>("/v1/events", &next.to_string()).accepted[0].seq;
    let hits: SearchAnswer = server
        .get_typed(&format!("/v1/swarms/demo/agents/coder/search?q=gateway+timeout&mode=bm25&min_seq={next_seq}"));
    assert_eq!(hits.hits[0].item_id, "01KG0000000000000000000041", "{hits:?}");
    check_letters(&server);
    eprintln!(
        "checked: {} dead letters with their reasons, {} counted in mneme_events_dead_lettered_total, every good event applied, none re-filed after a restart",
        poison.len(),
        poison.len()
    );
}

/// Issue 16: past JetStream's duplicate window the server stores a message
/// again whatever its id. The same event again is stored and skipped by
/// memory; a different event under the id is stored too (the API does not
/// hold a publish up until memory has caught up to ask it), and its
/// agent's memory dead-letters it as a conflicting duplicate naming the
/// first seq, and keeps answering from the first.
#[test]
fn past_the_duplicate_window_a_conflicting_duplicate_is_dead_lettered_and_the_first_stays() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let nats = runtime.block_on(NatsServer::require());
    let work = tempfile::tempdir().unwrap();
    let config = format!("\n[log]\nbackend = \"nats\"\nnats_url = \"{}\"\nduplicate_window_secs = 1\n", nats.url());
    let server = MnemeServer::start_with(work.path(), None, &config);
    let first = good_event(1, "coder", "the ledger moved to postgres");
    let first_seq = server.post_typed::<AcceptedEvents>("/v1/events", &first.to_string()).accepted[0].seq;
    std::thread::sleep(std::time::Duration::from_millis(1500));

    let again: AcceptedEvents = server.post_typed("/v1/events", &first.to_string());
    assert!(!again.accepted[0].duplicate, "{again:?}");
    // Past the window of that copy too: within it the log itself would
    // compare and refuse (409).
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let changed = good_event(1, "coder", "the ledger moved to sqlite");
    let changed_seq = server.post_typed::<AcceptedEvents>("/v1/events", &changed.to_string()).accepted[0].seq;

    let item: ItemAnswer = server
        .get_typed(&format!("/v1/swarms/demo/agents/coder/items/01KG0000000000000000000001?min_seq={changed_seq}"));
    assert!(item.text.contains("postgres"), "{item:?}");
    let letters = server.get_typed::<DeadLetters>("/v1/swarms/demo/deadletters").dead_letters;
    assert_eq!(letters.len(), 1, "only the conflicting copy is dead-lettered: {letters:?}");
    assert_eq!(letters[0].seq, changed_seq);
    let reason = &letters[0].reason;
    assert!(
        reason.starts_with(&format!(
            "conflicting_duplicate: event id 01KG0000000000000000000001 was first applied at seq {first_seq}"
        )),
        "{reason}"
    );
    assert_eq!(metric(&server, "mneme_conflicting_duplicates_total{swarm=\"demo\",agent=\"coder\"}"), 1);
    let verified: ReplayAnswer =
        server.post_typed(&format!("/v1/swarms/demo/agents/coder/replay?verify=true&min_seq={changed_seq}"), "{}");
    assert_eq!(verified.matches, Some(true), "{verified:?}");
}
