//! What a swarm's file says about the deployment around it: whether the
//! swarm is placed among several processes (`[placement]`, with `[http]
//! advertise_url`), and the deployment's system layer above the swarms
//! (`[swarm] system_publishers`, `[log] system_data_dir`), whose
//! configuration is derived from the first swarm's.

use std::path::PathBuf;

use serde::Deserialize;

use super::{AgentConfig, LogBackend, SwarmConfig, SwarmSection};

/// The reserved swarm name of the deployment's system layer: its events
/// (scope `system`) are on a log of their own and reach every memory of
/// every swarm.
pub const SYSTEM_SWARM: &str = "system";
/// The one memory of the system layer, which every memory reads through.
pub const SYSTEM_READER: &str = "system";

/// How many processes hold a swarm placed among several (`[placement]`).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PlacementSection {
    /// Processes that hold the swarm at once (one holds its writer lease;
    /// the others answer queries too). At least 1.
    #[serde(default = "default_holders")]
    pub holders: usize,
}

fn default_holders() -> usize {
    1
}

/// The most processes a placed swarm asks for.
const MAX_HOLDERS: usize = 64;

impl SwarmConfig {
    /// `[placement]` on the embedded log, a number of holders out of range,
    /// or an advertised URL that is not one.
    pub(super) fn check_deployment(&self) -> Result<(), String> {
        if let Some(placement) = &self.placement {
            if self.log.backend != LogBackend::Nats {
                return Err(
                    "[placement] needs log.backend = \"nats\": processes share swarms through a NATS cluster; the \
                     embedded log is one process's"
                        .to_string(),
                );
            }
            if !(1..=MAX_HOLDERS).contains(&placement.holders) {
                return Err(format!(
                    "placement.holders = {}; expected a number of processes from 1 to {MAX_HOLDERS}",
                    placement.holders
                ));
            }
        }
        if let Some(url) = &self.http.advertise_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(format!("http.advertise_url = {url:?}; expected an http:// or https:// URL"));
        }
        Ok(())
    }

    /// Where the deployment's system layer keeps its data when this is the
    /// first swarm given: `log.system_data_dir`, or `<data_dir>/system`.
    pub fn system_data_dir(&self) -> PathBuf {
        self.log.system_data_dir.clone().unwrap_or_else(|| self.log.data_dir.join(SYSTEM_SWARM))
    }

    /// The configuration of the deployment's system layer, from the first
    /// swarm's: the same log, memory and embedder settings, swarm
    /// [`SYSTEM_SWARM`] with one memory ([`SYSTEM_READER`]) that applies
    /// every author's events, in [`SwarmConfig::system_data_dir`]; no
    /// tokens of its own (a token opens its own swarm), no placement, no
    /// model summarising its phases.
    pub fn system_layer(&self) -> SwarmConfig {
        let mut config = self.clone();
        config.swarm =
            SwarmSection { name: SYSTEM_SWARM.to_string(), admit_unknown_agents: false, system_publishers: Vec::new() };
        config.log.data_dir = self.system_data_dir();
        config.log.system_data_dir = None;
        config.http.tokens.clear();
        config.api_tokens.clear();
        config.agents = vec![AgentConfig::named(SYSTEM_READER)];
        config.placement = None;
        config.compression.llm = None;
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_needs_nats_and_at_least_one_holder() {
        let nats = "[swarm]\nname = \"s\"\n[log]\nbackend = \"nats\"\n";
        let placed = SwarmConfig::parse(&format!("{nats}[placement]\nholders = 2\n"), "t").unwrap();
        assert_eq!(placed.placement.map(|placement| placement.holders), Some(2));
        let default = SwarmConfig::parse(&format!("{nats}[placement]\n"), "t").unwrap();
        assert_eq!(default.placement.map(|placement| placement.holders), Some(1));
        let embedded = SwarmConfig::parse("[swarm]\nname = \"s\"\n[placement]\n", "t").unwrap_err().to_string();
        assert!(embedded.contains("[placement] needs log.backend = \"nats\""), "{embedded}");
        let none = SwarmConfig::parse(&format!("{nats}[placement]\nholders = 0\n"), "t").unwrap_err().to_string();
        assert!(none.contains("placement.holders = 0"), "{none}");
        let url = SwarmConfig::parse("[swarm]\nname = \"s\"\n[http]\nadvertise_url = \"host:1\"\n", "t");
        assert!(url.unwrap_err().to_string().contains("http.advertise_url"));
    }
}
