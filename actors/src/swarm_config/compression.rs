//! `[compression]`: how memory compresses what it keeps (large tool
//! outputs, completed phases), and the optional model that summarises
//! phases (`[compression.llm]`).

use serde::Deserialize;

/// How memory compresses what it keeps: large tool outputs, and completed
/// phases. The log always keeps everything whole.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CompressionSection {
    /// A tool output larger than this (in bytes) is kept whole only in the
    /// log; projections keep a compressed form and a pointer to the event.
    #[serde(default = "default_large_output_bytes")]
    pub large_output_bytes: usize,
    /// An optional model that summarises completed phases. Without one,
    /// phases keep their deterministic extractive levels.
    #[serde(default)]
    pub llm: Option<LlmSection>,
}

/// An OpenAI-compatible chat completion endpoint that summarises phases.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LlmSection {
    /// The API's base URL, e.g. `http://127.0.0.1:8080/v1`; requests go to
    /// `{url}/chat/completions`.
    pub url: String,
    /// The model name sent with each request.
    pub model: String,
    /// The environment variable that holds the API key. The key itself never
    /// appears in this file, so a shared `swarm.toml` cannot leak it.
    #[serde(default = "default_api_key_env")]
    pub api_key_env: String,
    /// How long one request may take before the extractive levels are kept.
    #[serde(default = "default_llm_timeout_ms")]
    pub timeout_ms: u64,
    /// The phase transcript sent to the model is cut to this many tokens.
    #[serde(default = "default_max_transcript_tokens")]
    pub max_transcript_tokens: usize,
    /// 0 by default: summaries should be as repeatable as the model allows.
    #[serde(default)]
    pub temperature: f32,
}

/// Below this, "large" would catch ordinary tool outputs, and their pointers
/// would cost about as much as the outputs they replace.
const MIN_LARGE_OUTPUT_BYTES: usize = 1024;

fn default_large_output_bytes() -> usize {
    16 * 1024
}
fn default_api_key_env() -> String {
    "MNEME_LLM_API_KEY".to_string()
}
fn default_llm_timeout_ms() -> u64 {
    30_000
}
fn default_max_transcript_tokens() -> usize {
    6000
}

impl Default for CompressionSection {
    fn default() -> Self {
        CompressionSection { large_output_bytes: default_large_output_bytes(), llm: None }
    }
}

impl CompressionSection {
    pub(super) fn check(&self) -> Result<(), String> {
        if self.large_output_bytes < MIN_LARGE_OUTPUT_BYTES {
            return Err(format!(
                "compression.large_output_bytes = {}; expected at least {MIN_LARGE_OUTPUT_BYTES}",
                self.large_output_bytes
            ));
        }
        let Some(llm) = &self.llm else { return Ok(()) };
        if llm.url.starts_with("https://") {
            // The HTTP client is built without TLS to keep the build lean;
            // refusing here beats failing on the first completed phase.
            return Err(format!(
                "compression.llm.url = {:?}; this build speaks plain http:// only: point it at a local \
                 OpenAI-compatible gateway such as \"http://127.0.0.1:8080/v1\"",
                llm.url
            ));
        }
        if !llm.url.starts_with("http://") {
            return Err(format!(
                "compression.llm.url = {:?}; expected an http:// URL such as \"http://127.0.0.1:8080/v1\"",
                llm.url
            ));
        }
        if llm.model.trim().is_empty() {
            return Err(format!("compression.llm.model = {:?}; expected a model name", llm.model));
        }
        if llm.api_key_env.trim().is_empty() {
            return Err(format!(
                "compression.llm.api_key_env = {:?}; expected the name of an environment variable",
                llm.api_key_env
            ));
        }
        if llm.timeout_ms == 0 {
            return Err("compression.llm.timeout_ms = 0; expected a positive number".to_string());
        }
        if llm.max_transcript_tokens == 0 {
            return Err("compression.llm.max_transcript_tokens = 0; expected a positive number".to_string());
        }
        if !llm.temperature.is_finite() || llm.temperature < 0.0 {
            return Err(format!(
                "compression.llm.temperature = {}; expected a number of zero or more",
                llm.temperature
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{SwarmConfig, error_of};
    use super::*;

    const LLM: &str = "[swarm]\nname = \"s\"\n[compression.llm]\nurl = \"http://127.0.0.1:8080/v1\"\nmodel = \"m\"\n";

    #[test]
    fn compression_defaults_to_no_model() {
        let config = SwarmConfig::parse("[swarm]\nname = \"s\"\n[compression]\n", "swarm.toml").unwrap();
        assert_eq!(config.compression.large_output_bytes, 16384);
        assert_eq!(config.compression.llm, None);
    }

    #[test]
    fn an_llm_section_takes_defaults() {
        let llm = SwarmConfig::parse(LLM, "swarm.toml").unwrap().compression.llm.unwrap();
        let expected = LlmSection {
            url: "http://127.0.0.1:8080/v1".to_string(),
            model: "m".to_string(),
            api_key_env: "MNEME_LLM_API_KEY".to_string(),
            timeout_ms: 30000,
            max_transcript_tokens: 6000,
            temperature: 0.0,
        };
        assert_eq!(llm, expected);
    }

    #[test]
    fn an_llm_section_without_a_model_is_refused() {
        let message = error_of("[swarm]\nname = \"s\"\n[compression.llm]\nurl = \"http://h/v1\"\n");
        assert!(message.contains("model"), "{message}");
    }

    #[test]
    fn an_api_key_in_the_file_is_refused() {
        let message = error_of(&format!("{LLM}api_key = \"sk-secret\"\n"));
        assert!(message.contains("api_key"), "{message}");
    }

    #[test]
    fn a_small_large_output_threshold_is_refused() {
        let message = error_of("[swarm]\nname = \"s\"\n[compression]\nlarge_output_bytes = 100\n");
        assert!(message.contains("compression.large_output_bytes = 100") && message.contains("1024"), "{message}");
    }

    #[test]
    fn an_https_llm_url_is_refused_naming_the_reason() {
        let message = error_of(
            "[swarm]\nname = \"demo\"\n[compression.llm]\nurl = \"https://api.example.com/v1\"\nmodel = \"m\"\n",
        );
        assert!(message.contains("compression.llm.url") && message.contains("plain http://"), "{message}");
    }

    #[test]
    fn a_non_http_llm_url_is_refused() {
        let message = error_of(&LLM.replace("http://127.0.0.1:8080/v1", "127.0.0.1:8080"));
        assert!(
            message.contains("compression.llm.url = \"127.0.0.1:8080\"") && message.contains("http://"),
            "{message}"
        );
    }

    #[test]
    fn an_empty_llm_model_is_refused() {
        let message = error_of(&LLM.replace("model = \"m\"", "model = \" \""));
        assert!(message.contains("compression.llm.model = \" \"") && message.contains("model name"), "{message}");
    }

    #[test]
    fn an_empty_api_key_env_is_refused() {
        let message = error_of(&format!("{LLM}api_key_env = \"\"\n"));
        assert!(message.contains("compression.llm.api_key_env = \"\""), "{message}");
    }

    #[test]
    fn a_zero_llm_timeout_is_refused() {
        let message = error_of(&format!("{LLM}timeout_ms = 0\n"));
        assert!(message.contains("compression.llm.timeout_ms = 0") && message.contains("positive"), "{message}");
    }

    #[test]
    fn a_zero_transcript_budget_is_refused() {
        let message = error_of(&format!("{LLM}max_transcript_tokens = 0\n"));
        assert!(message.contains("compression.llm.max_transcript_tokens = 0"), "{message}");
    }

    #[test]
    fn a_negative_temperature_is_refused() {
        let message = error_of(&format!("{LLM}temperature = -0.5\n"));
        assert!(message.contains("compression.llm.temperature = -0.5"), "{message}");
    }
}
