//! Placement: which `mneme serve` processes hold which swarms, when the
//! swarms of a deployment outgrow one machine.
//!
//! One JetStream key-value bucket per deployment, `MNEME_placement`, whose
//! `max_age` is the time a record lives without being written again:
//!
//! - `node.<node>`: a live process, the HTTP address it answers on and the
//!   swarms it is configured to hold ([`NodeRecord`]), written again by the
//!   process every third of the time to live. A process that dies drops
//!   out of the bucket when its record expires.
//! - `held.<swarm>.<node>`: a process holding a swarm, and whether it has
//!   caught up with the swarm's log and answers for it ([`HoldRecord`]).
//!
//! Which processes should hold a swarm is not stored: every process
//! computes it from the live nodes by rendezvous hashing ([`placement`]),
//! so processes that see the same nodes agree without a coordinator, and a
//! process joining or leaving moves about `1/n` of the swarms.

use std::collections::BTreeMap;
use std::time::Duration;

use async_nats::jetstream::{self, kv, stream};
use bytes::Bytes;
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::validate_name;
use crate::{Credentials, LogError};

/// The deployment's placement bucket.
pub const PLACEMENT_BUCKET: &str = "MNEME_placement";

/// A live process, as it announces itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeRecord {
    /// The base URL of its HTTP API (`http://host:port`).
    pub url: String,
    /// The swarms it is configured to hold, sorted.
    pub swarms: Vec<String>,
}

/// A process holding a swarm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HoldRecord {
    /// The base URL of its HTTP API.
    pub url: String,
    /// True once its memories have applied the swarm's log up to where it
    /// ended when the process began to hold it: it answers from then on.
    pub ready: bool,
}

/// The bucket as read at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlacementView {
    /// Live processes by name.
    pub nodes: BTreeMap<String, NodeRecord>,
    /// By swarm, the processes holding it, by name.
    pub holds: BTreeMap<String, BTreeMap<String, HoldRecord>>,
}

impl PlacementView {
    /// The processes that should hold `swarm`: the `holders` live processes
    /// configured for it that rank first for it ([`placement`]).
    pub fn target(&self, swarm: &str, holders: usize) -> Vec<String> {
        let offering = self
            .nodes
            .iter()
            .filter(|(_, node)| node.swarms.iter().any(|offered| offered == swarm))
            .map(|(name, _)| name.as_str());
        placement(swarm, offering, holders)
    }

    /// The live processes that answer for `swarm` now, with their URLs.
    pub fn ready_holders(&self, swarm: &str) -> Vec<(&str, &str)> {
        self.holds
            .get(swarm)
            .into_iter()
            .flatten()
            .filter(|(node, hold)| hold.ready && self.nodes.contains_key(node.as_str()))
            .map(|(node, hold)| (node.as_str(), hold.url.as_str()))
            .collect()
    }
}

/// The `holders` nodes that hold `swarm`: those with the highest rendezvous
/// score, a hash of the swarm and the node's name. Every process computes
/// the same answer from the same nodes; removing a node moves only its own
/// swarms, adding one moves to it only the swarms it now ranks first for.
pub fn placement<'a>(swarm: &str, nodes: impl IntoIterator<Item = &'a str>, holders: usize) -> Vec<String> {
    let mut ranked: Vec<([u8; 8], &str)> = nodes.into_iter().map(|node| (score(swarm, node), node)).collect();
    ranked.sort_by(|a, b| b.cmp(a));
    ranked.into_iter().take(holders).map(|(_, node)| node.to_string()).collect()
}

fn score(swarm: &str, node: &str) -> [u8; 8] {
    let mut hash = Sha256::new();
    hash.update(swarm.as_bytes());
    hash.update([0]);
    hash.update(node.as_bytes());
    let digest = hash.finalize();
    let mut score = [0; 8];
    score.copy_from_slice(&digest[..8]);
    score
}

/// The placement bucket of a deployment, on its NATS cluster.
pub struct PlacementBoard {
    store: kv::Store,
}

impl PlacementBoard {
    /// Connects to NATS at `url` (several servers separated by commas) and
    /// opens the bucket, creating it with `ttl` as its records' lifetime
    /// and `replicas` copies if it does not exist.
    pub async fn connect(
        url: &str,
        credentials: Option<&Credentials>,
        ttl: Duration,
        replicas: usize,
    ) -> Result<PlacementBoard, LogError> {
        let client = crate::jetstream::connect_client(url, credentials, "mneme-placement").await?;
        let context = jetstream::new(client);
        let store = match context.get_key_value(PLACEMENT_BUCKET).await {
            Ok(store) => store,
            Err(_) => context
                .create_key_value(kv::Config {
                    bucket: PLACEMENT_BUCKET.to_string(),
                    description: "Mneme: which processes hold which swarms".to_string(),
                    history: 1,
                    max_age: ttl,
                    storage: stream::StorageType::File,
                    num_replicas: replicas,
                    ..Default::default()
                })
                .await
                .map_err(|error| LogError::Nats(format!("could not create the bucket {PLACEMENT_BUCKET}: {error}")))?,
        };
        Ok(PlacementBoard { store })
    }

    /// Announces `node` as live (again).
    pub async fn announce(&self, node: &str, record: &NodeRecord) -> Result<(), LogError> {
        validate_name("node", node)?;
        self.put(&format!("node.{node}"), record).await
    }

    /// Records that `node` holds `swarm`, ready or catching up.
    pub async fn hold(&self, swarm: &str, node: &str, record: &HoldRecord) -> Result<(), LogError> {
        validate_name("node", node)?;
        self.put(&format!("held.{swarm}.{node}"), record).await
    }

    /// Records that `node` no longer holds `swarm`.
    pub async fn release(&self, swarm: &str, node: &str) -> Result<(), LogError> {
        self.store.delete(format!("held.{swarm}.{node}")).await.map_err(LogError::nats)
    }

    /// Records that `node` has left: its record and its holds go at once
    /// rather than when they expire.
    pub async fn leave(&self, node: &str, swarms: &[String]) -> Result<(), LogError> {
        for swarm in swarms {
            self.release(swarm, node).await?;
        }
        self.store.delete(format!("node.{node}")).await.map_err(LogError::nats)
    }

    /// The live records.
    pub async fn view(&self) -> Result<PlacementView, LogError> {
        let keys: Vec<String> =
            self.store.keys().await.map_err(LogError::nats)?.try_collect().await.map_err(LogError::nats)?;
        let mut view = PlacementView::default();
        for key in keys {
            let Some(value) = self.store.get(&key).await.map_err(LogError::nats)? else { continue };
            if let Some(node) = key.strip_prefix("node.") {
                if let Ok(record) = serde_json::from_slice(&value) {
                    view.nodes.insert(node.to_string(), record);
                }
            } else if let Some((swarm, node)) = key.strip_prefix("held.").and_then(|rest| rest.split_once('.'))
                && let Ok(record) = serde_json::from_slice(&value)
            {
                view.holds.entry(swarm.to_string()).or_default().insert(node.to_string(), record);
            }
        }
        Ok(view)
    }

    async fn put(&self, key: &str, record: &impl Serialize) -> Result<(), LogError> {
        let value = serde_json::to_vec(record).map_err(|error| LogError::Nats(error.to_string()))?;
        self.store.put(key, Bytes::from(value)).await.map_err(LogError::nats)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_process_computes_the_same_placement_and_a_leaving_node_moves_only_its_swarms() {
        let nodes = ["a", "b", "c"];
        let swarms: Vec<String> = (0..40).map(|index| format!("swarm{index}")).collect();
        let before: Vec<Vec<String>> = swarms.iter().map(|swarm| placement(swarm, nodes, 1)).collect();
        // The order nodes are listed in does not matter.
        for (swarm, placed) in swarms.iter().zip(&before) {
            assert_eq!(&placement(swarm, ["c", "a", "b"], 1), placed);
        }
        // Every node gets some of forty swarms.
        for node in nodes {
            assert!(before.iter().any(|placed| placed[0] == node), "{node} holds none");
        }
        // Without "b", only b's swarms move.
        for (swarm, placed) in swarms.iter().zip(&before) {
            let after = placement(swarm, ["a", "c"], 1);
            if placed[0] != "b" {
                assert_eq!(&after, placed, "{swarm} moved though its node stayed");
            }
        }
        // Two holders: the first is the one-holder placement; never twice the same node.
        for (swarm, placed) in swarms.iter().zip(&before) {
            let two = placement(swarm, nodes, 2);
            assert_eq!(two.len(), 2);
            assert_eq!(two[0], placed[0]);
            assert_ne!(two[0], two[1]);
        }
        assert_eq!(placement("s", ["a"], 3), vec!["a".to_string()]);
    }

    #[test]
    fn only_live_ready_holders_answer() {
        let mut view = PlacementView::default();
        let node = |swarms: &[&str]| NodeRecord {
            url: "http://x".into(),
            swarms: swarms.iter().map(|swarm| swarm.to_string()).collect(),
        };
        view.nodes.insert("a".into(), node(&["s"]));
        view.nodes.insert("b".into(), node(&["s", "t"]));
        let holds = view.holds.entry("s".into()).or_default();
        holds.insert("a".into(), HoldRecord { url: "http://a".into(), ready: false });
        holds.insert("b".into(), HoldRecord { url: "http://b".into(), ready: true });
        holds.insert("gone".into(), HoldRecord { url: "http://gone".into(), ready: true });
        assert_eq!(view.ready_holders("s"), vec![("b", "http://b")]);
        assert_eq!(view.target("t", 2), vec!["b".to_string()]);
        assert_eq!(view.target("s", 5).len(), 2);
    }
}
