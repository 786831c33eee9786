//! Carrying recorded purges into the log (issue 35, item 2): erased records
//! leave the log, records that quoted them are rewritten without the quote,
//! and a second pass changes nothing.

use mneme_actors::{carry_erasures, erasures_pending};
use mneme_events::{DecodeLimits, ERASED_TEXT, ErasedEvent, ErasureRecord, Event, EventKind, PurgeRef, decode_json};
use mneme_nats::{EventLog, SledLog, SledOptions};
use serde_json::json;

const SECRET: &str = "opah-1187";

fn event(value: serde_json::Value) -> Event {
    decode_json(value.to_string().as_bytes(), &DecodeLimits::default()).expect("a valid event")
}

fn holds_secret(dir: &std::path::Path) -> bool {
    walkdir(dir).iter().any(|path| {
        let bytes = std::fs::read(path).unwrap_or_default();
        bytes.windows(SECRET.len()).any(|window| window == SECRET.as_bytes())
    })
}

fn walkdir(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() { files.extend(walkdir(&path)) } else { files.push(path) }
    }
    files
}

#[tokio::test]
async fn erased_records_leave_the_log_quotes_of_them_are_rewritten_and_a_second_pass_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let log = SledLog::open(dir.path(), "demo", SledOptions::default()).unwrap();
    let secret_id = "01KH0000000000000000000001";
    let kept_id = "01KH0000000000000000000002";
    let handoff_id = "01KH0000000000000000000003";
    let message = |id: &str, text: &str| {
        event(json!({"id": id, "swarm": "demo", "agent": "coder", "ts": "2026-01-06T10:00:00Z", "scope": "shared",
            "kind": "message_recorded", "data": {"role": "assistant", "text": text}}))
    };
    let item = |id: &str, seq: u64, text: &str| {
        json!({"section": "finding", "item_id": id, "kind": "message_recorded", "agent": "coder", "text": text,
            "provenance": [{"seq": seq, "event_id": id}]})
    };
    let events = [
        message(secret_id, &format!("the key is {SECRET}")),
        message(kept_id, "the kept note"),
        event(json!({"id": handoff_id, "swarm": "demo", "agent": "coder", "ts": "2026-01-06T10:01:00Z",
            "scope": "shared", "kind": "handoff_sent", "data": {"to": "reviewer", "task": "review it"}})),
        event(json!({"id": "01KH0000000000000000000004", "swarm": "demo", "agent": "reviewer",
            "ts": "2026-01-06T10:02:00Z", "kind": "handoff_received",
            "data": {"from": "coder", "handoff_id": handoff_id, "package": {
                "task": "review it", "summary": "", "artifacts": [], "decisions": [], "constraints": [],
                "sent_seq": 3, "sent_at": "2026-01-06T10:01:00Z",
                "bundle": {"budget_tokens": 100, "used_tokens": 10, "files": [],
                    "items": [item(secret_id, 1, &format!("the key is {SECRET}")), item(kept_id, 2, "the kept note")]}}}})),
        event(json!({"id": "01KH0000000000000000000005", "swarm": "demo", "agent": "coder",
            "ts": "2026-01-06T10:03:00Z", "kind": "contradiction_detected",
            "data": {"contradiction_id": "c1", "a": secret_id, "b": kept_id, "reason": format!("{SECRET} vs the kept note")}})),
        event(json!({"id": "01KH0000000000000000000006", "swarm": "demo", "agent": "coder",
            "ts": "2026-01-06T10:04:00Z", "kind": "memory_purged", "data": {"item_ids": [secret_id]}})),
    ];
    let appended = log.append(&events).await.unwrap();
    assert_eq!(appended.last().unwrap().seq, 6);
    assert!(!erasures_pending(&log).await.unwrap(), "nothing recorded, nothing pending");
    let record = ErasureRecord {
        purge: PurgeRef { agent: "coder".to_string(), seq: 6, event_id: events[5].id },
        events: vec![ErasedEvent::of(1, &events[0])],
        phases: Vec::new(),
    };
    log.record_erasure(&record).await.unwrap();
    assert!(erasures_pending(&log).await.unwrap());

    let carried = carry_erasures(&log, None).await.unwrap();
    assert_eq!((carried.purges, carried.erased, carried.rewritten), (1, 1, 2), "{carried:?}");
    assert!(!erasures_pending(&log).await.unwrap());
    let entries = log.read(1, None, 10).await.unwrap();
    assert_eq!(entries.iter().map(|entry| entry.seq).collect::<Vec<_>>(), [2, 3, 4, 5, 6]);
    let text = entries.iter().map(|entry| entry.record.as_ref().unwrap().to_json()).collect::<String>();
    assert!(!text.contains(SECRET), "{text}");
    let EventKind::HandoffReceived(received) = &entries[2].record.as_ref().unwrap().kind else { panic!("a receipt") };
    let kept: Vec<&str> =
        received.package.as_ref().unwrap().bundle.items.iter().map(|item| item.item_id.as_str()).collect();
    assert_eq!(kept, [kept_id], "the package keeps what was not erased");
    let EventKind::ContradictionDetected(detected) = &entries[3].record.as_ref().unwrap().kind else { panic!() };
    assert_eq!(detected.reason, ERASED_TEXT);

    // Again: nothing left to do, and no error.
    let again = carry_erasures(&log, None).await.unwrap();
    assert_eq!((again.erased, again.rewritten), (0, 0), "{again:?}");
    drop(log);
    assert!(holds_secret(dir.path()), "sled keeps removed bytes in its files until compacted");
    SledLog::compact(dir.path()).unwrap();
    assert!(!holds_secret(dir.path()), "compacted, no file holds the erased text");
    let log = SledLog::open(dir.path(), "demo", SledOptions::default()).unwrap();
    assert_eq!(log.read(1, None, 10).await.unwrap().len(), 5);
}
