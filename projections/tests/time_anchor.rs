//! Issue 21, item 2: a time named by an event. "before the migration"
//! ends the question's time at the item that best matches "migration".

use mneme_events::{EventKind, MessageRecorded, Scope};
use mneme_projections::SearchRequest;

mod common;

use common::Log;

fn message(text: &str) -> EventKind {
    EventKind::MessageRecorded(MessageRecorded { role: "assistant".into(), text: text.into() })
}

#[test]
fn before_an_event_means_before_the_item_that_names_it() {
    let mut log = Log::starting_at(1_766_000_000_000);
    let old = log.push("planner", Scope::Shared, None, message("The ledger stores balances in MySQL, dumped nightly."));
    log.push("planner", Scope::Shared, None, message("Migration finished: cut over at 02:00 without errors."));
    let new = log.push("planner", Scope::Shared, None, message("The ledger stores balances in Postgres, streamed."));
    let mut memory = log.memory_of("planner");
    let top = |memory: &mut mneme_projections::AgentMemory, query: &str| {
        let mut request = SearchRequest::new(query, 3);
        request.explain = true;
        memory.commit().unwrap();
        mneme_projections::search(memory, &request).unwrap().remove(0)
    };
    let before = top(&mut memory, "where did the ledger store balances before the migration");
    assert_eq!(before.item_id, old.id.to_string(), "{before:?}");
    assert!(before.explain.iter().any(|rank| rank.retriever == "time"), "{:?}", before.explain);
    let after = top(&mut memory, "where did the ledger store balances after the migration");
    assert_eq!(after.item_id, new.id.to_string(), "{after:?}");
    assert!(after.explain.iter().any(|rank| rank.retriever == "time"), "{:?}", after.explain);
}
