//! `[[agents]]`: the agents of a swarm, and what Mneme does for each when a
//! request leaves it unsaid.

use std::collections::BTreeSet;

use mneme_events::Scope;
use serde::Deserialize;

use super::{SwarmConfig, name_error};

/// Above this no model Mneme targets has the context to use the bundle; a
/// budget this large is a typo (an extra zero or two).
const MAX_CONTEXT_BUDGET: usize = 1_000_000;

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// The agent's name, as its events give it.
    pub name: String,
    /// What it does (`implementer`, `reviewer`…): shown at the top of its core memory.
    #[serde(default)]
    pub role: String,
    /// Scope of an event this agent posts without one. Private by default,
    /// as in the envelope, so that nothing is shared by omission.
    #[serde(default)]
    pub default_scope: Scope,
    /// Tokens of context assembled for this agent when a request does not
    /// say how many.
    #[serde(default = "default_context_budget")]
    pub context_budget: usize,
    /// The share of its budget the agent's model may spend reasoning, from 0
    /// to 1; unset: the model's own default.
    #[serde(default)]
    pub thinking_budget: Option<f32>,
}

fn default_context_budget() -> usize {
    4000
}

impl AgentConfig {
    /// An agent with every setting but its name at its default.
    pub fn named(name: &str) -> AgentConfig {
        AgentConfig {
            name: name.to_string(),
            role: String::new(),
            default_scope: Scope::default(),
            context_budget: default_context_budget(),
            thinking_budget: None,
        }
    }

    fn check(&self) -> Result<(), String> {
        mneme_events::validate_name(&self.name).map_err(|error| name_error("agents.name", &self.name, error))?;
        if !(1..=MAX_CONTEXT_BUDGET).contains(&self.context_budget) {
            return Err(format!(
                "agents.context_budget = {} for agent {:?}; expected a number of tokens from 1 to {MAX_CONTEXT_BUDGET}",
                self.context_budget, self.name
            ));
        }
        if self.default_scope == Scope::System {
            return Err(format!(
                "agents.default_scope = \"system\" for agent {:?}: system events are the deployment's system layer, \
                 published as swarm \"system\" by the agents [swarm] system_publishers lists; expected \"private\" \
                 or \"shared\"",
                self.name
            ));
        }
        // Written so that NaN fails too: `contains` is false for NaN.
        if let Some(thinking_budget) = self.thinking_budget.filter(|budget| !(0.0..=1.0).contains(budget)) {
            return Err(format!(
                "agents.thinking_budget = {thinking_budget} for agent {:?}; expected a number from 0 to 1",
                self.name
            ));
        }
        Ok(())
    }
}

pub(super) fn check_agents(agents: &[AgentConfig]) -> Result<(), String> {
    let mut seen = BTreeSet::new();
    for agent in agents {
        agent.check()?;
        if !seen.insert(agent.name.as_str()) {
            return Err(format!("agents.name = {:?} is listed twice; agent names must be unique", agent.name));
        }
    }
    Ok(())
}

impl SwarmConfig {
    /// The agent listed under `[[agents]]` with this name.
    pub fn agent(&self, name: &str) -> Option<&AgentConfig> {
        self.agents.iter().find(|agent| agent.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::super::error_of;
    use super::*;

    fn agents_of(agent_keys: &str) -> String {
        format!("[swarm]\nname = \"s\"\n[[agents]]\nname = \"coder\"\n{agent_keys}\n")
    }

    #[test]
    fn an_agent_without_settings_takes_the_defaults() {
        let config = SwarmConfig::parse(&agents_of(""), "swarm.toml").unwrap();
        assert_eq!(config.agent("coder"), Some(&AgentConfig::named("coder")));
        assert_eq!(AgentConfig::named("coder").default_scope, Scope::Private);
        assert_eq!(AgentConfig::named("coder").context_budget, 4000);
        assert_eq!(config.agent("planner"), None);
    }

    #[test]
    fn an_agent_keeps_its_settings() {
        let text = agents_of(
            "role = \"implementer\"\ndefault_scope = \"shared\"\ncontext_budget = 8000\nthinking_budget = 0.25",
        );
        let config = SwarmConfig::parse(&text, "swarm.toml").unwrap();
        let expected = AgentConfig {
            role: "implementer".to_string(),
            default_scope: Scope::Shared,
            context_budget: 8000,
            thinking_budget: Some(0.25),
            ..AgentConfig::named("coder")
        };
        assert_eq!(config.agent("coder"), Some(&expected));
    }

    #[test]
    fn an_unknown_default_scope_names_the_key_and_the_expected_values() {
        let message = error_of(&agents_of("default_scope = \"public\""));
        for expected in ["agents.default_scope", "public", "private", "shared", "system"] {
            assert!(message.contains(expected), "{expected}: {message}");
        }
    }

    #[test]
    fn a_zero_or_too_large_context_budget_is_refused() {
        for (budget, shown) in [("0", "0"), ("1_000_001", "1000001")] {
            let message = error_of(&agents_of(&format!("context_budget = {budget}")));
            assert!(
                message.contains(&format!("agents.context_budget = {shown} for agent \"coder\""))
                    && message.contains("from 1 to 1000000"),
                "{message}"
            );
        }
        assert!(SwarmConfig::parse(&agents_of("context_budget = 1_000_000"), "swarm.toml").is_ok());
    }

    #[test]
    fn a_thinking_budget_outside_zero_to_one_is_refused() {
        for (budget, shown) in [("1.5", "1.5"), ("-0.1", "-0.1"), ("nan", "NaN")] {
            let message = error_of(&agents_of(&format!("thinking_budget = {budget}")));
            assert!(
                message.contains(&format!("agents.thinking_budget = {shown} for agent \"coder\""))
                    && message.contains("from 0 to 1"),
                "{message}"
            );
        }
        for budget in ["0.0", "1.0"] {
            assert!(SwarmConfig::parse(&agents_of(&format!("thinking_budget = {budget}")), "swarm.toml").is_ok());
        }
    }

    #[test]
    fn duplicate_agents_are_refused() {
        let message = error_of("[swarm]\nname = \"s\"\n[[agents]]\nname = \"a\"\n[[agents]]\nname = \"a\"\n");
        assert!(message.contains("listed twice"), "{message}");
    }

    #[test]
    fn the_shipped_agents_share_by_default() {
        let config = SwarmConfig::parse(include_str!("../../../swarm.toml"), "swarm.toml").unwrap();
        for name in ["planner", "coder", "reviewer"] {
            let agent = config.agent(name).unwrap();
            assert_eq!(agent.default_scope, Scope::Shared, "{name}");
        }
    }
}
