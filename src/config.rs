//! Policy and server settings from `--config F` (YAML). Every field has a
//! default; unknown keys are an error that names the key.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

pub mod preemption;
pub mod scale_in;
pub mod scheduling;
pub mod upstream;

pub use preemption::{PreemptionAnswer, PreemptionSettings};
pub use scale_in::ScaleInSettings;
pub use scheduling::{Role, SchedulingSettings};
pub use upstream::Upstream;

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Config {
    pub server: ServerSettings,
    pub scheduling: SchedulingSettings,
    pub live: LiveSettings,
    pub preemption: PreemptionSettings,
    pub scale_in: ScaleInSettings,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct ServerSettings {
    /// Body limit for `/scheduler/*`: a full 5,000-node NodeList is tens of MB.
    pub scheduler_body_limit_bytes: usize,
    /// Body limit for `/admission/*` and other routes.
    pub admission_body_limit_bytes: usize,
    /// Requests running longer are answered 503.
    pub request_timeout_seconds: u64,
    /// How long SIGTERM waits for in-flight requests.
    pub shutdown_grace_seconds: u64,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            scheduler_body_limit_bytes: 128 << 20,
            admission_body_limit_bytes: 8 << 20,
            request_timeout_seconds: 30,
            shutdown_grace_seconds: 20,
        }
    }
}

/// The live API source and the bind verb.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct LiveSettings {
    /// A pod bound by kube-arbiter counts in the view this long before the
    /// watch must confirm it; unconfirmed, it is dropped.
    pub assume_ttl_seconds: u64,
    /// A watch out of step for longer than this fails `/readyz`.
    pub stale_after_seconds: u64,
    /// Watch events are batched and a new view published at most this often.
    pub publish_interval_millis: u64,
    /// The most a filter/prioritize waits for pods it could count that
    /// kube-scheduler placed but has not bound yet (docs/burst-safety.md);
    /// 0 never waits.
    pub in_flight_wait_millis: u64,
    /// The most a bind, an admission review or an explanation waits for
    /// the API server when the view has not shown an object yet
    /// (docs/live-source.md, "When the view has not seen it yet"): below
    /// kube-scheduler's extender `httpTimeout` and the webhooks'
    /// `timeoutSeconds` (5 s in manifests/), so the answer is ours.
    pub read_through_timeout_millis: u64,
}

impl Default for LiveSettings {
    fn default() -> Self {
        Self {
            assume_ttl_seconds: 30,
            stale_after_seconds: 60,
            publish_interval_millis: 5,
            in_flight_wait_millis: 1000,
            read_through_timeout_millis: 2000,
        }
    }
}

impl LiveSettings {
    pub fn assume_ttl(&self) -> Duration {
        Duration::from_secs(self.assume_ttl_seconds)
    }

    pub fn stale_after(&self) -> Duration {
        Duration::from_secs(self.stale_after_seconds)
    }

    pub fn publish_interval(&self) -> Duration {
        Duration::from_millis(self.publish_interval_millis)
    }

    pub fn in_flight_wait(&self) -> Duration {
        Duration::from_millis(self.in_flight_wait_millis)
    }

    pub fn read_through_timeout(&self) -> Duration {
        Duration::from_millis(self.read_through_timeout_millis)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("config file {path}: {message}")]
    Invalid { path: String, message: String },
}

impl Config {
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text).map_err(|message| ConfigError::Invalid {
            path: path.display().to_string(),
            message,
        })
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let config: Self = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
        config.scheduling.validate()?;
        config.scale_in.validate()?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_gives_defaults() {
        assert_eq!(Config::parse("").unwrap(), Config::default());
    }

    #[test]
    fn unknown_key_is_an_error_naming_the_key() {
        let err = Config::parse("server:\n  bodyLimit: 3\n").unwrap_err();
        assert!(err.contains("bodyLimit"), "{err}");
    }

    #[test]
    fn preemption_answer_defaults_to_all_and_accepts_best() {
        assert_eq!(Config::default().preemption.answer, PreemptionAnswer::All);
        let c = Config::parse("preemption:\n  answer: best\n").unwrap();
        assert_eq!(c.preemption.answer, PreemptionAnswer::Best);
        assert!(Config::parse("preemption:\n  answer: some\n").is_err());
        assert!(Config::parse("preemption:\n  nodes: 3\n").is_err());
    }

    #[test]
    fn partial_sections_keep_other_defaults() {
        let c = Config::parse("server:\n  requestTimeoutSeconds: 5\n").unwrap();
        assert_eq!(c.server.request_timeout_seconds, 5);
        assert_eq!(c.server.admission_body_limit_bytes, 8 << 20);
    }

    #[test]
    fn live_section_sets_the_sync_bounds() {
        let c =
            Config::parse("live:\n  assumeTtlSeconds: 10\n  publishIntervalMillis: 2\n").unwrap();
        assert_eq!(c.live.assume_ttl(), Duration::from_secs(10));
        assert_eq!(c.live.publish_interval(), Duration::from_millis(2));
        assert_eq!(c.live.stale_after_seconds, 60);
        assert_eq!(c.live.in_flight_wait(), Duration::from_secs(1));
        let c = Config::parse("live:\n  inFlightWaitMillis: 0\n").unwrap();
        assert!(c.live.in_flight_wait().is_zero());
        assert!(Config::parse("live:\n  ttl: 1\n").is_err());
    }

    #[test]
    fn scale_in_section_turns_the_writer_off_and_checks_its_timings() {
        assert!(Config::default().scale_in.manage_deletion_cost);
        let c = Config::parse("scaleIn:\n  manageDeletionCost: false\n").unwrap();
        assert!(!c.scale_in.manage_deletion_cost);
        let err = Config::parse("scaleIn:\n  intervalMillis: 10000\n").unwrap_err();
        assert!(err.contains("leaseDurationSeconds"), "{err}");
        assert!(Config::parse("scaleIn:\n  patchesPerSecond: 0\n").is_err());
        assert_eq!(Config::default().scale_in.patches_per_interval(), 20);
    }
}
