//! Who may call the HTTP API (`[[http.tokens]]`) and how Mneme logs in to
//! NATS (`log.nats_*`). **Invariant:** a secret never appears in `Debug`
//! output or in an error message; errors name the key, the token's name and
//! the environment variable instead.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use mneme_nats::Credentials;
use serde::Deserialize;

use super::{SwarmConfig, name_error};

/// Keys whose values are secrets: a parse error on their line never repeats
/// the value.
pub(super) const SECRET_KEYS: &[&str] = &["token", "nats_password", "nats_token"];

/// A shorter bearer token is within reach of guessing over the network.
const MIN_TOKEN_CHARS: usize = 16;

const NATS_USER_VARIABLE: &str = "MNEME_NATS_USER";
const NATS_PASSWORD_VARIABLE: &str = "MNEME_NATS_PASSWORD";
const NATS_TOKEN_VARIABLE: &str = "MNEME_NATS_TOKEN";

/// A password or token. Its `Debug` prints `<redacted>` and it has no
/// `Display`, so neither `{:?}` of a whole configuration nor a format string
/// can leak it by accident; [`Secret::expose`] is the one way to read it.
#[derive(Clone, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(secret: impl Into<String>) -> Secret {
        Secret(secret.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("<redacted>")
    }
}

/// One `[[http.tokens]]` entry as written in the file.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HttpTokenEntry {
    /// Names the token in logs and errors, and its environment variable:
    /// see [`api_token_environment_variable`].
    pub name: String,
    /// Optional here when the environment provides it, which is better: a
    /// shared `swarm.toml` then holds no secret.
    #[serde(default)]
    pub token: Option<Secret>,
    /// The one agent this token may act as; `None`: any agent of the swarm.
    #[serde(default)]
    pub agent: Option<String>,
}

/// A bearer token the HTTP API accepts, with its secret from the file or the
/// environment, checked at load.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiToken {
    pub name: String,
    pub secret: String,
    /// The only swarm the token opens: the one its file configures.
    pub swarm: String,
    /// The only agent the token may act as; `None`: any agent of the swarm.
    pub agent: Option<String>,
}

impl fmt::Debug for ApiToken {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("ApiToken")
            .field("name", &self.name)
            .field("secret", &"<redacted>")
            .field("swarm", &self.swarm)
            .field("agent", &self.agent)
            .finish()
    }
}

/// `MNEME_HTTP_TOKEN_CI_BOT` for the token named `ci-bot`: the name
/// uppercased, `-` turned into `_`, so that it is a portable variable name.
pub fn api_token_environment_variable(token_name: &str) -> String {
    format!("MNEME_HTTP_TOKEN_{}", token_name.to_ascii_uppercase().replace('-', "_"))
}

impl HttpTokenEntry {
    /// The secret, if it is one the API can accept. A problem is described
    /// by the secret's length, never by the secret.
    fn checked_secret(&self) -> Result<&str, String> {
        let problem = match self.token.as_ref().map(Secret::expose) {
            None => "is missing".to_string(),
            Some("") => "is empty".to_string(),
            Some(secret) if secret.chars().count() < MIN_TOKEN_CHARS => {
                format!("is {} characters long", secret.chars().count())
            }
            // A space or a control character (a newline read from a file,
            // say) could never arrive intact in an Authorization header.
            Some(secret) if !secret.bytes().all(|byte| byte.is_ascii_graphic()) => {
                "contains a character other than visible ASCII".to_string()
            }
            Some(secret) => return Ok(secret),
        };
        Err(format!(
            "http.tokens.token of the token named {:?} {problem}; expected at least {MIN_TOKEN_CHARS} visible ASCII \
             characters: set the environment variable {} (preferred) or token = \"...\" in the file",
            self.name,
            api_token_environment_variable(&self.name)
        ))
    }
}

impl SwarmConfig {
    /// The tokens the HTTP API accepts; empty: the API is open, which is
    /// safe only on a loopback address.
    pub fn api_tokens(&self) -> &[ApiToken] {
        &self.api_tokens
    }

    /// How to log in to NATS: a token, a user and password, or nothing.
    pub fn nats_credentials(&self) -> Option<Credentials> {
        let log = &self.log;
        if let Some(token) = &log.nats_token {
            return Some(Credentials::Token(token.expose().to_string()));
        }
        match (&log.nats_user, &log.nats_password) {
            (Some(user), Some(password)) => {
                Some(Credentials::UserPassword { user: user.clone(), password: password.expose().to_string() })
            }
            _ => None,
        }
    }

    /// Lets the environment provide or replace secrets, before the checks
    /// run, so that a secret from either place is checked the same way. A
    /// variable set to the empty string counts as set, and fails the checks:
    /// silently falling back to the file's value would hide a mistake.
    pub(super) fn apply_environment(&mut self, environment: &dyn Fn(&str) -> Option<String>) {
        for entry in &mut self.http.tokens {
            if let Some(secret) = environment(&api_token_environment_variable(&entry.name)) {
                entry.token = Some(Secret(secret));
            }
        }
        if let Some(user) = environment(NATS_USER_VARIABLE) {
            self.log.nats_user = Some(user);
        }
        if let Some(password) = environment(NATS_PASSWORD_VARIABLE) {
            self.log.nats_password = Some(Secret(password));
        }
        if let Some(token) = environment(NATS_TOKEN_VARIABLE) {
            self.log.nats_token = Some(Secret(token));
        }
    }

    /// Checks `http.tokens` and pairs each with its secret and swarm.
    pub(super) fn resolve_api_tokens(&self) -> Result<Vec<ApiToken>, String> {
        let listed_agents: BTreeSet<&str> = self.agents.iter().map(|agent| agent.name.as_str()).collect();
        let mut names = BTreeSet::new();
        let mut name_by_variable: BTreeMap<String, &str> = BTreeMap::new();
        let mut name_by_secret: BTreeMap<&str, &str> = BTreeMap::new();
        let mut api_tokens = Vec::with_capacity(self.http.tokens.len());
        for entry in &self.http.tokens {
            mneme_events::validate_name(&entry.name)
                .map_err(|error| name_error("http.tokens.name", &entry.name, error))?;
            if !names.insert(entry.name.as_str()) {
                return Err(format!(
                    "http.tokens.name = {:?} is listed twice; expected unique token names",
                    entry.name
                ));
            }
            let variable = api_token_environment_variable(&entry.name);
            if let Some(other_name) = name_by_variable.insert(variable.clone(), &entry.name) {
                return Err(format!(
                    "http.tokens.name = {:?} and {other_name:?} both read the environment variable {variable}; \
                     expected names that still differ uppercased with '-' as '_'",
                    entry.name
                ));
            }
            let secret = entry.checked_secret()?;
            if let Some(agent) = &entry.agent
                && !listed_agents.contains(agent.as_str())
            {
                return Err(format!(
                    "http.tokens.agent = {agent:?} of the token named {:?} is not listed under [[agents]]; \
                     expected one of: {}",
                    entry.name,
                    listed_agents.iter().copied().collect::<Vec<_>>().join(", ")
                ));
            }
            // Two callers with one secret could not be told apart, nor one
            // of them be revoked alone.
            if let Some(other_name) = name_by_secret.insert(secret, &entry.name) {
                return Err(format!(
                    "http.tokens.token of the token named {:?} is the same secret as that of {other_name:?}; \
                     expected a different secret for every token",
                    entry.name
                ));
            }
            api_tokens.push(ApiToken {
                name: entry.name.clone(),
                secret: secret.to_string(),
                swarm: self.swarm.name.clone(),
                agent: entry.agent.clone(),
            });
        }
        Ok(api_tokens)
    }

    /// On NATS with API tokens but no NATS credentials, the tokens protect
    /// nothing that a NATS client cannot reach directly: refused, naming
    /// the settings, unless `log.allow_unauthenticated_nats`; then `Ok` with
    /// the warning to repeat. `Ok(None)`: nothing to say.
    pub fn check_nats_access(&self) -> Result<Option<String>, String> {
        if self.log.backend != super::LogBackend::Nats || self.api_tokens().is_empty() {
            return Ok(None);
        }
        if self.nats_credentials().is_some() {
            return Ok(None);
        }
        let problem = format!(
            "{} API tokens are configured but Mneme connects to NATS without credentials: any NATS client can \
             then query any agent's memory, publish as any agent and forge handoffs, whatever the tokens say",
            self.api_tokens().len()
        );
        if self.log.allow_unauthenticated_nats {
            return Ok(Some(problem));
        }
        Err(format!(
            "{problem}. Give Mneme NATS credentials ({NATS_USER_VARIABLE} and {NATS_PASSWORD_VARIABLE}, or \
             {NATS_TOKEN_VARIABLE}) on a nats-server whose users and permissions confine each agent (deploy/nats/ \
             ships one), or set log.allow_unauthenticated_nats = true to start anyway"
        ))
    }

    pub(super) fn check_nats_credentials(&self) -> Result<(), String> {
        let log = &self.log;
        if log.nats_user.as_deref() == Some("") {
            return Err(format!(
                "log.nats_user = \"\"; expected a user name, or neither log.nats_user nor {NATS_USER_VARIABLE} \
                 (an empty variable counts as set)"
            ));
        }
        let secrets = [
            ("log.nats_password", NATS_PASSWORD_VARIABLE, &log.nats_password),
            ("log.nats_token", NATS_TOKEN_VARIABLE, &log.nats_token),
        ];
        for (key, variable, secret) in secrets {
            if secret.as_ref().is_some_and(|secret| secret.expose().is_empty()) {
                return Err(format!(
                    "{key} is empty; expected a secret, or neither {key} nor {variable} (an empty variable counts \
                     as set)"
                ));
            }
        }
        match (&log.nats_user, &log.nats_password, &log.nats_token) {
            (Some(user), _, Some(_)) => Err(format!(
                "log.nats_token is set and so is log.nats_user = {user:?}; expected a token or a user and \
                 password, not both (either may come from {NATS_TOKEN_VARIABLE} or {NATS_USER_VARIABLE})"
            )),
            (None, Some(_), _) => Err(format!(
                "log.nats_password is set but log.nats_user is not; expected the user the password belongs to: \
                 set log.nats_user or {NATS_USER_VARIABLE}"
            )),
            (Some(user), None, None) => Err(format!(
                "log.nats_user = {user:?} has no password; expected one: set {NATS_PASSWORD_VARIABLE} \
                 (preferred) or log.nats_password"
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::error_of;
    use super::*;
    use crate::error::ActorsError;

    const SECRET: &str = "0123456789abcdef-ci";
    const OTHER_SECRET: &str = "fedcba9876543210-ops";

    fn parse_with(text: &str, variables: &[(&str, &str)]) -> Result<SwarmConfig, ActorsError> {
        let environment =
            |variable: &str| variables.iter().find(|(name, _)| *name == variable).map(|(_, value)| value.to_string());
        SwarmConfig::parse_with_environment(text, "swarm.toml", &environment)
    }

    fn error_with(text: &str, variables: &[(&str, &str)]) -> String {
        parse_with(text, variables).unwrap_err().to_string()
    }

    fn tokens(entries: &str) -> String {
        format!("[swarm]\nname = \"s\"\n[[agents]]\nname = \"coder\"\n{entries}\n")
    }

    fn token(name: &str, secret: &str) -> String {
        format!("[[http.tokens]]\nname = \"{name}\"\ntoken = \"{secret}\"\n")
    }

    fn log(keys: &str) -> String {
        format!("[swarm]\nname = \"s\"\n[log]\n{keys}\n")
    }

    #[test]
    fn tokens_resolve_with_their_swarm_and_agent() {
        let text = tokens(&format!("{}agent = \"coder\"\n{}", token("coder-key", SECRET), token("ops", OTHER_SECRET)));
        let config = SwarmConfig::parse(&text, "swarm.toml").unwrap();
        let expected = [
            ApiToken {
                name: "coder-key".to_string(),
                secret: SECRET.to_string(),
                swarm: "s".to_string(),
                agent: Some("coder".to_string()),
            },
            ApiToken { name: "ops".to_string(), secret: OTHER_SECRET.to_string(), swarm: "s".to_string(), agent: None },
        ];
        assert_eq!(config.api_tokens(), expected);
    }

    #[test]
    fn a_token_shorter_than_16_characters_is_refused_without_showing_it() {
        let message = error_of(&tokens(&token("ci", "hunter2")));
        assert!(
            message.contains("http.tokens.token of the token named \"ci\" is 7 characters long")
                && message.contains("at least 16")
                && message.contains("MNEME_HTTP_TOKEN_CI"),
            "{message}"
        );
        assert!(!message.contains("hunter2"), "{message}");
    }

    #[test]
    fn a_missing_token_names_its_environment_variable() {
        let message = error_of(&tokens("[[http.tokens]]\nname = \"ci-bot\"\n"));
        assert!(message.contains("\"ci-bot\" is missing") && message.contains("MNEME_HTTP_TOKEN_CI_BOT"), "{message}");
    }

    #[test]
    fn a_token_with_a_newline_is_refused_without_showing_it() {
        let message =
            error_with(&tokens("[[http.tokens]]\nname = \"ci\"\n"), &[("MNEME_HTTP_TOKEN_CI", "0123456789abcdef\n")]);
        assert!(message.contains("other than visible ASCII") && !message.contains("0123456789abcdef"), "{message}");
    }

    #[test]
    fn duplicate_token_names_are_refused() {
        let message = error_of(&tokens(&format!("{}{}", token("ci", SECRET), token("ci", OTHER_SECRET))));
        assert!(message.contains("http.tokens.name = \"ci\" is listed twice"), "{message}");
    }

    #[test]
    fn token_names_that_share_an_environment_variable_are_refused() {
        let message = error_of(&tokens(&format!("{}{}", token("ci-bot", SECRET), token("CI_BOT", OTHER_SECRET))));
        assert!(message.contains("MNEME_HTTP_TOKEN_CI_BOT") && message.contains("\"ci-bot\""), "{message}");
    }

    #[test]
    fn duplicate_secrets_are_refused_without_showing_them() {
        let message = error_of(&tokens(&format!("{}{}", token("ci", SECRET), token("ops", SECRET))));
        assert!(
            message.contains("the token named \"ops\" is the same secret as that of \"ci\"")
                && !message.contains(SECRET),
            "{message}"
        );
    }

    #[test]
    fn an_invalid_token_name_is_refused() {
        let message = error_of(&tokens(&token("ci.bot", SECRET)));
        assert!(message.contains("http.tokens.name = \"ci.bot\" is not a valid name"), "{message}");
    }

    #[test]
    fn a_token_bound_to_an_unlisted_agent_is_refused() {
        let message = error_of(&tokens(&format!("{}agent = \"codr\"\n", token("ci", SECRET))));
        assert!(
            message.contains("http.tokens.agent = \"codr\" of the token named \"ci\"") && message.contains("coder"),
            "{message}"
        );
    }

    #[test]
    fn a_token_given_only_by_the_environment_is_resolved() {
        let text = tokens("[[http.tokens]]\nname = \"ci-bot\"\n");
        assert!(SwarmConfig::parse(&text, "swarm.toml").is_err());
        let config = parse_with(&text, &[("MNEME_HTTP_TOKEN_CI_BOT", SECRET)]).unwrap();
        assert_eq!(config.api_tokens()[0].secret, SECRET);
    }

    #[test]
    fn the_environment_overrides_the_token_in_the_file() {
        let text = tokens(&token("ci", "too-short"));
        let config = parse_with(&text, &[("MNEME_HTTP_TOKEN_CI", SECRET)]).unwrap();
        assert_eq!(config.api_tokens()[0].secret, SECRET);
        // An empty variable counts as set: it does not fall back to the file.
        let text = tokens(&token("ci", SECRET));
        let message = error_with(&text, &[("MNEME_HTTP_TOKEN_CI", "")]);
        assert!(message.contains("\"ci\" is empty"), "{message}");
    }

    /// Issue 17, item 5: API tokens on NATS without NATS credentials
    /// protect nothing; refused unless the operator says to start anyway.
    #[test]
    fn api_tokens_on_nats_without_nats_credentials_are_refused_unless_allowed() {
        let on_nats = |log_keys: &str| {
            let text = format!("{}[log]\nbackend = \"nats\"\n{log_keys}\n", tokens(&token("ops", SECRET)));
            SwarmConfig::parse(&text, "swarm.toml").unwrap()
        };
        let refused = on_nats("").check_nats_access().unwrap_err();
        assert!(refused.contains("allow_unauthenticated_nats") && refused.contains("MNEME_NATS_USER"), "{refused}");
        assert!(!refused.contains(SECRET), "{refused}");
        let warning = on_nats("allow_unauthenticated_nats = true").check_nats_access().unwrap();
        assert!(warning.is_some_and(|warning| warning.contains("without credentials")));
        assert_eq!(on_nats("nats_token = \"t\"").check_nats_access(), Ok(None));
        // No tokens, or the embedded log: nothing to say.
        assert_eq!(SwarmConfig::parse(&log("backend = \"nats\""), "swarm.toml").unwrap().check_nats_access(), Ok(None));
        let embedded = SwarmConfig::parse(&tokens(&token("ops", SECRET)), "swarm.toml").unwrap();
        assert_eq!(embedded.check_nats_access(), Ok(None));
    }

    #[test]
    fn nats_credentials_come_from_the_file() {
        let config = SwarmConfig::parse(&log("nats_user = \"mneme\"\nnats_password = \"pw\""), "swarm.toml").unwrap();
        assert!(matches!(
            config.nats_credentials(),
            Some(Credentials::UserPassword { user, password }) if user == "mneme" && password == "pw"
        ));
        let config = SwarmConfig::parse(&log("nats_token = \"t\""), "swarm.toml").unwrap();
        assert!(matches!(config.nats_credentials(), Some(Credentials::Token(token)) if token == "t"));
        assert!(SwarmConfig::with_name("s").nats_credentials().is_none());
        assert!(SwarmConfig::with_name("s").api_tokens().is_empty());
    }

    #[test]
    fn a_nats_password_without_a_user_is_refused() {
        let message = error_of(&log("nats_password = \"pw-secret\""));
        assert!(
            message.contains("log.nats_password is set but log.nats_user is not")
                && message.contains("MNEME_NATS_USER")
                && !message.contains("pw-secret"),
            "{message}"
        );
    }

    #[test]
    fn a_nats_user_without_a_password_is_refused() {
        let message = error_of(&log("nats_user = \"mneme\""));
        assert!(message.contains("log.nats_user = \"mneme\" has no password"), "{message}");
        assert!(message.contains("MNEME_NATS_PASSWORD"), "{message}");
    }

    #[test]
    fn a_nats_token_and_a_user_are_refused_together() {
        let message = error_of(&log("nats_user = \"mneme\"\nnats_password = \"pw\"\nnats_token = \"token-secret\""));
        assert!(
            message.contains("log.nats_token is set and so is log.nats_user = \"mneme\"")
                && !message.contains("token-secret"),
            "{message}"
        );
        // The same mistake made half in the environment.
        let message = error_with(&log("nats_token = \"t\""), &[("MNEME_NATS_USER", "mneme")]);
        assert!(message.contains("log.nats_token is set and so is log.nats_user"), "{message}");
    }

    #[test]
    fn the_environment_overrides_the_nats_password() {
        let text = log("nats_user = \"mneme\"\nnats_password = \"from-file\"");
        let config = parse_with(&text, &[("MNEME_NATS_PASSWORD", "from-environment")]).unwrap();
        assert!(matches!(
            config.nats_credentials(),
            Some(Credentials::UserPassword { password, .. }) if password == "from-environment"
        ));
        let config = parse_with(&log(""), &[("MNEME_NATS_TOKEN", "t")]).unwrap();
        assert!(matches!(config.nats_credentials(), Some(Credentials::Token(token)) if token == "t"));
    }

    #[test]
    fn secrets_are_redacted_from_the_debug_of_the_whole_config() {
        let text = format!(
            "{}{}[log]\nnats_user = \"mneme\"\nnats_password = \"nats-password-secret\"\n",
            tokens(&token("ci", SECRET)),
            token("ops", "")
        );
        let config = parse_with(&text, &[("MNEME_HTTP_TOKEN_OPS", OTHER_SECRET)]).unwrap();
        let debug = format!("{config:?}");
        for secret in [SECRET, OTHER_SECRET, "nats-password-secret"] {
            assert!(!debug.contains(secret), "{secret} in {debug}");
        }
        assert!(debug.contains("<redacted>") && debug.contains("mneme"), "{debug}");
        let credentials = format!("{:?}", config.nats_credentials());
        assert!(!credentials.contains("nats-password-secret"), "{credentials}");
    }

    #[test]
    fn an_unquoted_secret_is_not_echoed_by_a_parse_error() {
        let message = error_of(&tokens(&format!("[[http.tokens]]\nname = \"ci\"\ntoken = {SECRET}\n")));
        assert!(message.contains("http.tokens.token at line 7"), "{message}");
        assert!(!message.contains(SECRET), "{message}");
        let message = error_of(&log("nats_password = 1234567890123"));
        assert!(message.contains("log.nats_password at line 4") && !message.contains("1234567890123"), "{message}");
    }

    /// The shipped file keeps its token and NATS credential examples
    /// commented out, so that it runs open on loopback; uncommented, with
    /// the secrets from the environment as it advises, they must work.
    #[test]
    fn the_commented_access_examples_in_swarm_toml_are_valid() {
        let mut uncommented = String::new();
        let mut in_token_example = false;
        for line in include_str!("../../../swarm.toml").lines() {
            in_token_example = (in_token_example && !line.trim().is_empty()) || line == "# [[http.tokens]]";
            let example = in_token_example || line.starts_with("# nats_user = ");
            uncommented.push_str(if example { line.strip_prefix("# ").unwrap_or(line) } else { line });
            uncommented.push('\n');
        }
        let variables = [
            ("MNEME_HTTP_TOKEN_CODER_KEY", SECRET),
            ("MNEME_HTTP_TOKEN_OPERATOR", OTHER_SECRET),
            ("MNEME_NATS_PASSWORD", "pw"),
        ];
        let config = parse_with(&uncommented, &variables).unwrap();
        let names: Vec<&str> = config.api_tokens().iter().map(|token| token.name.as_str()).collect();
        assert_eq!(names, ["coder-key", "operator"]);
        assert_eq!(config.api_tokens()[0].agent.as_deref(), Some("coder"));
        assert!(matches!(config.nats_credentials(), Some(Credentials::UserPassword { .. })));
    }
}
