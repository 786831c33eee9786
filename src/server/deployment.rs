//! The swarms one process holds: `mneme serve --config a.toml --config
//! b.toml` (or a directory of swarm files) starts one of each, side by
//! side, behind one HTTP API. What they may not share is checked here,
//! before anything is opened.
//!
//! - Every swarm has its own name and its own data dir (log, snapshots,
//!   text index, id key): two swarms in one folder would mix them.
//! - The HTTP listener is the process's: every file that sets `[http] bind`
//!   must agree. The process-wide limits of `[http]` (request size,
//!   queries in flight, streams, publish rates) are the first file's.
//! - A token secret opens one swarm: the same secret in two files would
//!   open both, and is refused.
//! - The system layer (swarm `system`, above every swarm) keeps its data in
//!   the first file's `[log] system_data_dir` (`<data_dir>/system` by
//!   default), which no swarm may use.

use std::collections::BTreeMap;

use anyhow::bail;
use mneme_actors::SwarmConfig;

/// Refuses a deployment whose swarms would share what must be their own.
pub fn check(configs: &[SwarmConfig]) -> anyhow::Result<()> {
    let Some(first) = configs.first() else { bail!("no swarm to serve: give at least one --config") };
    let mut names: BTreeMap<&str, usize> = BTreeMap::new();
    let mut data_dirs: BTreeMap<std::path::PathBuf, &str> = BTreeMap::new();
    let mut secrets: BTreeMap<&str, (&str, &str)> = BTreeMap::new();
    let system_data_dir = normalised(&first.system_data_dir());
    for (index, config) in configs.iter().enumerate() {
        let name = config.swarm.name.as_str();
        if normalised(&config.log.data_dir) == system_data_dir {
            bail!(
                "swarm {name:?} keeps its data in {}, where the deployment's system layer keeps its own: set [log] \
                 system_data_dir (or data_dir) elsewhere",
                config.log.data_dir.display()
            );
        }
        if names.insert(name, index).is_some() {
            bail!("swarm {name:?} is configured twice: each --config must name a swarm of its own ([swarm] name)");
        }
        let data_dir = normalised(&config.log.data_dir);
        if let Some(other) = data_dirs.insert(data_dir, name) {
            bail!(
                "swarms {other:?} and {name:?} both keep their data in {}: give each its own [log] data_dir, or \
                 pass --data-dir DIR to keep each swarm in DIR/<swarm>",
                config.log.data_dir.display()
            );
        }
        if config.http.bind != first.http.bind {
            bail!(
                "swarm {name:?} binds the HTTP API to {}, swarm {:?} to {}: one process has one HTTP listener; set \
                 the same [http] bind in every file, or pass --http",
                config.http.bind,
                first.swarm.name,
                first.http.bind
            );
        }
        for token in config.api_tokens() {
            if let Some((other_swarm, other_token)) = secrets.insert(token.secret.as_str(), (name, &token.name)) {
                bail!(
                    "token {:?} of swarm {name:?} has the same secret as token {other_token:?} of swarm \
                     {other_swarm:?}: a secret opens one swarm; give each its own",
                    token.name
                );
            }
        }
    }
    Ok(())
}

/// A data dir as compared: absolute, without `.` components.
fn normalised(path: &std::path::Path) -> std::path::PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map(|dir| dir.join(path)).unwrap_or_else(|_| path.to_path_buf())
    };
    absolute.components().filter(|component| !matches!(component, std::path::Component::CurDir)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn swarm(name: &str, data_dir: &str, extra: &str) -> SwarmConfig {
        let text = format!("[swarm]\nname = \"{name}\"\n[log]\ndata_dir = \"{data_dir}\"\n{extra}");
        SwarmConfig::parse(&text, "swarm.toml").expect("a valid configuration")
    }

    #[test]
    fn swarms_with_their_own_names_and_folders_are_served_together() {
        check(&[swarm("design", "/tmp/d", ""), swarm("dev", "/tmp/v", "")]).expect("accepted");
    }

    #[test]
    fn a_shared_name_folder_listener_or_secret_is_refused_naming_both() {
        let twice = check(&[swarm("dev", "/tmp/a", ""), swarm("dev", "/tmp/b", "")]).unwrap_err().to_string();
        assert!(twice.contains("\"dev\" is configured twice"), "{twice}");
        let folder = check(&[swarm("a", "/tmp/x", ""), swarm("b", "/tmp/./x", "")]).unwrap_err().to_string();
        assert!(folder.contains("\"a\" and \"b\"") && folder.contains("--data-dir"), "{folder}");
        let bind = "[http]\nbind = \"127.0.0.1:7800\"\n";
        let listener = check(&[swarm("a", "/tmp/x", ""), swarm("b", "/tmp/y", bind)]).unwrap_err().to_string();
        assert!(listener.contains("127.0.0.1:7800") && listener.contains("one HTTP listener"), "{listener}");
        let token = |name: &str| format!("[[http.tokens]]\nname = \"{name}\"\ntoken = \"same-secret-0123456789\"\n");
        let secret =
            check(&[swarm("a", "/tmp/x", &token("ops")), swarm("b", "/tmp/y", &token("ci"))]).unwrap_err().to_string();
        assert!(secret.contains("\"ci\" of swarm \"b\"") && !secret.contains("same-secret"), "{secret}");
    }
}
