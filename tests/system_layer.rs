//! The system layer: what the orchestration layer announces once, for
//! every agent of every swarm of a deployment. Its events (swarm `system`,
//! scope `system`) live on a log of their own, are applied once per
//! process into one memory, and every swarm's search and context read
//! through it. Replay rebuilds it like any memory: `replay --verify` over
//! the API and offline, and a restart restores it from its checkpoint.

mod common;

use common::MnemeServer;
use mneme_api::context::ContextAnswer;
use mneme_api::log::AcceptedEvents;
use mneme_api::memory::{Digest, ReplayAnswer, SearchAnswer};
use serde_json::{Value, json};

/// An event of the system layer, number `number`, by the orchestrator:
/// announcements, and facts whose value changes (so that the layer's own
/// consolidation has something to find).
fn system_event(number: u64) -> Value {
    let (kind, data) = match number % 3 {
        0 => (
            "fact_asserted",
            json!({"subject": "release-train", "predicate": "freeze_day", "object": format!("day-{}", number % 4)}),
        ),
        1 => (
            "message_recorded",
            json!({"role": "assistant", "text": format!("announcement {number}: every swarm logs its cost in the ledger")}),
        ),
        _ => (
            "decision_made",
            json!({"title": format!("convention {number}"), "choice": "branches are named after the ticket", "rationale": "org-wide"}),
        ),
    };
    json!({
        "id": ulid::Ulid::from_parts(1_772_445_600_000 + number * 1000, u128::from(number)).to_string(),
        "swarm": "system",
        "agent": "orchestrator",
        "ts": format!("2026-03-02T09:{:02}:{:02}Z", number / 60, number % 60),
        "scope": "system",
        "kind": kind,
        "data": data,
    })
}

fn publish_system(server: &MnemeServer, range: std::ops::Range<u64>) -> u64 {
    let body = Value::Array(range.map(system_event).collect());
    let accepted: AcceptedEvents = server.post_typed("/v1/events", &body.to_string());
    accepted.accepted.iter().map(|accepted| accepted.seq).max().unwrap()
}

fn system_digest(server: &MnemeServer, min_seq: u64) -> Digest {
    server.get_typed(&format!("/v1/swarms/system/agents/system/digest?min_seq={min_seq}"))
}

#[test]
fn the_system_layer_reaches_every_swarm_and_replays_to_the_same_memory() {
    let work = tempfile::tempdir().unwrap();
    let publishers = format!("{}system_publishers = [\"orchestrator\"]\n\n", common::SWARM_KEYS);
    let mut server = MnemeServer::start_swarms(work.path(), None, &[("alpha", &publishers), ("beta", "")], &[]);
    let last = publish_system(&server, 0..60);
    // A swarm's own event, shared: it stays in its swarm.
    let own = json!({"id": "01KGD00000000000000000000A", "swarm": "alpha", "agent": "coder", "ts": "2026-03-02T10:00:00Z",
        "scope": "shared", "kind": "message_recorded", "data": {"role": "assistant", "text": "alpha keeps its ledger in pangolin"}});
    let alpha_seq = server.post_typed::<AcceptedEvents>("/v1/events", &own.to_string()).accepted[0].seq;

    // Every agent of both swarms reads the layer, in every search mode.
    for swarm in ["alpha", "beta"] {
        for mode in ["bm25", "vector", "hybrid"] {
            let path = format!(
                "/v1/swarms/{swarm}/agents/planner/search?q=ledger+cost+announcement&mode={mode}&k=5&min_system_seq={last}"
            );
            let answer: SearchAnswer = server.get_typed(&path);
            assert!(answer.hits.iter().any(|hit| hit.scope == "system"), "{swarm} {mode}: {answer:?}");
        }
        let body = json!({"query": "which day is the release freeze", "budget": 1500, "min_system_seq": last});
        let context: ContextAnswer =
            server.post_typed(&format!("/v1/swarms/{swarm}/agents/coder/context"), &body.to_string());
        assert_eq!(context.as_of_system_seq, Some(last), "{context:?}");
        assert!(context.tokens <= 1500, "{}", context.tokens);
        assert!(context.items.iter().any(|item| item.tier == "system"), "{context:?}");
    }
    // A swarm's shared event does not cross to the other swarm.
    let path = format!("/v1/swarms/beta/agents/coder/search?q=pangolin&mode=bm25&min_seq={alpha_seq}");
    assert!(server.get_typed::<SearchAnswer>(&path).hits.is_empty());

    // The layer's one memory replays to the same digest, over the API...
    let replay: ReplayAnswer = server.post_typed("/v1/swarms/system/agents/system/replay?verify=true", "");
    assert_eq!(replay.matches, Some(true), "{replay:?}");
    let before = system_digest(&server, last);
    assert_eq!(before.seq, last);
    // ...comes back from its checkpoint after a restart...
    server.restart();
    let after = system_digest(&server, last);
    assert_eq!((after.seq, &after.digest, after.items), (before.seq, &before.digest, before.items));
    let more = publish_system(&server, 60..70);
    let path = format!("/v1/swarms/beta/agents/coder/search?q=announcement+64&mode=bm25&min_system_seq={more}");
    assert!(server.get_typed::<SearchAnswer>(&path).hits.iter().any(|hit| hit.text.contains("announcement 64")));
    // ...and offline, from its data dir beside the swarms'.
    server.stop();
    let output = std::process::Command::new(common::MNEME)
        .args(["replay", "--swarm", "system", "--agent", "system", "--verify", "--data-dir"])
        .arg(server.data_dir.join("system"))
        .arg("--config")
        .arg(&server.config_path)
        .env("MNEME_LOG", "warn")
        .output()
        .unwrap();
    let stdout = common::stdout_of(&output);
    assert!(stdout.contains("MATCH") && !stdout.contains("MISMATCH"), "{stdout}");
}
